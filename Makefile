# The two commands a newcomer needs: `make dev` runs the system, `make test` runs the tests.
SWIFT ?= swift
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# Warnings are errors everywhere, so a developer sees what CI sees.
SWIFT_FLAGS ?= -Xswiftc -warnings-as-errors

.PHONY: deps build build-release test test-unit dev bench test-sanitize fuzz conformance clean

deps:
	@scripts/install-deps.sh

# The build stamp beside the binaries (BuildInfo: *_build_info{version,revision}); outside git, the defaults.
define write-build-stamp
	@printf 'version=%s\nrevision=%s\n' "$$(git describe --tags --always --dirty 2>/dev/null)" \
	    "$$(git rev-parse HEAD 2>/dev/null)" >"$$($(SWIFT) build $(1) --show-bin-path)/build-info"
endef

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)
	$(call write-build-stamp,)

build-release: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS)
	$(call write-build-stamp,-c release)

# Builds every product (the integration tests start the real executables), runs all tests one suite at a time
# (process tests have timing bounds that other suites on the same 2 cores would disturb), then checks the
# schemas as code generators read them (Java and Python clients and models generated, compiled, and reading every
# example and captured real message exactly: about 60 s when schemas/ changed, 15 s when the cached code is reused),
# the example consumer (examples/consumer) over real messages and a throwaway PostgreSQL (about 40 s),
# the deployment files against the built binaries, the code and the docs (kustomize renders, CRD models; first
# scripts/test_crd_schemas.py shows that the hand-written CRD schemas report a mistyped field), the monitoring
# files (promtool: alert unit tests, /metrics of the three services live, the ledger over a throwaway PostgreSQL;
# dashboard queries and their labels; about 35 s), runs the HTTP APIs (ingest, ledger) against their OpenAPIs (about 2 minutes), the short chaos run (about 2 minutes: verifier, ingest and ledger
# kills, a broker freeze and an Apple outage under load, checked by an independent reader down to every user's
# balance) and a short, repeatable fuzzing pass (TEST_FUZZ_RUNS
# inputs per target from a fixed seed, about 1.5 minutes after the first build; `make fuzz` explores freely).
TEST_FUZZ_RUNS ?= 8000
test: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	RECEIPTS_BIN_DIR="$$($(SWIFT) build --show-bin-path)" $(SWIFT) test --skip-build --no-parallel 2>&1 | tee .build/test-output.log
	@scripts/test-summary.sh .build/test-output.log
	python3 -m unittest discover -s scripts -p 'test_*.py'
	SWIFT="$(SWIFT)" python3 scripts/check-docs.py
	python3 scripts/check-generated-clients.py
	@scripts/check-example-consumer.sh "$$($(SWIFT) build --show-bin-path)"
	python3 scripts/check-deployment.py "$$($(SWIFT) build --show-bin-path)"
	@scripts/check-monitoring.sh "$$($(SWIFT) build --show-bin-path)"
	@scripts/api-conformance.sh "$$($(SWIFT) build --show-bin-path)"
	CHAOS_SHORT=1 CHAOS_BIN="$$($(SWIFT) build --show-bin-path)" bench/chaos.sh
	@FUZZ_RUNS=$(TEST_FUZZ_RUNS) scripts/fuzz.sh

# The pure suites only (no Kafka, no PostgreSQL, no executables started; the rules' tables among them): seconds once
# built, for the edit-test loop. `make test` runs them too.
UNIT_SUITES := ServiceSupportTests|ServiceRuntimeTests|ReceiptModelTests|ReplayTests|CryptoTests|SignedDataTests|LedgerRulesTests|NotificationBackfillTests|AdminTests.AdminArgumentsTests|AdminTests.AdminReportTests|AdminTests.AppleCallerTests
test-unit: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build --filter '$(UNIT_SUITES)' 2>&1 | tee .build/test-unit-output.log
	@scripts/test-summary.sh .build/test-unit-output.log

dev: build-release
	@scripts/dev.sh

# The unit and in-process suites under ThreadSanitizer, then AddressSanitizer with leak detection, a build directory
# each (about 6 minutes on 2 cores once both are built; a first build takes longer). Not part of `make test`: too slow
# for CI's budget. SANITIZERS="thread" or "address" and SANITIZE_FILTER='<suites>' narrow it.
test-sanitize: deps
	@scripts/test-sanitize.sh

# libFuzzer + AddressSanitizer on every parser of outside bytes, FUZZ_SECONDS (default 60) per target.
fuzz: deps
	@scripts/fuzz.sh

# The HTTP API against schemas/openapi.yaml with schemathesis (CONFORMANCE_EXAMPLES, CONFORMANCE_SEED).
conformance: build
	@scripts/api-conformance.sh

bench: build-release
	@bench/run-all.sh

clean:
	$(SWIFT) package clean
