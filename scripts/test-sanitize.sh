#!/usr/bin/env bash
# Runs the unit and in-process test suites under ThreadSanitizer and, separately, AddressSanitizer (with leak
# detection), each in its own build directory. A data race, a memory error or a leak fails the run.
#   SANITIZERS="thread address"   which ones (default both)
#   SANITIZE_FILTER=regex         only these suites (default: every test target but IntegrationTests, whose
#                                 pipelines of separate processes are not in-process code)
# Executables that tests start as separate processes (embedded-kafka, fake-appstore, the services) come from the
# normal build: the sanitizers watch the test process.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizers="${SANITIZERS:-thread address}"
filter="${SANITIZE_FILTER:-ServiceSupportTests|ReceiptModelTests|CryptoTests|SignedDataTests|KafkaTests|HTTPServerTests|AppStoreTests|IngestTests|VerifierTests|ReplayTests}"

swift build -Xswiftc -warnings-as-errors
export RECEIPTS_BIN_DIR
RECEIPTS_BIN_DIR="$(swift build --show-bin-path)"

# librdkafka starts threads and locks with C11 <threads.h>, which glibc implements without the pthread entry points
# TSan intercepts: this shim routes them through pthreads so TSan sees librdkafka's threads and locks.
shim=.build/sanitizers/c11-threads-as-pthreads.so
mkdir -p .build/sanitizers
gcc -O2 -shared -fPIC -Wall -Werror -o "$shim" scripts/sanitizers/c11-threads-as-pthreads.c -lpthread

status=0
for sanitizer in $sanitizers; do
    build_path=".build/sanitize-$sanitizer"
    log=".build/sanitizers/$sanitizer.log"
    echo "sanitize: building the tests with -sanitize=$sanitizer"
    swift build --build-tests --build-path "$build_path" -Xswiftc "-sanitize=$sanitizer" -Xswiftc -warnings-as-errors \
        2>&1 | grep -vE "Cannot export local symbol '__(asan|tsan)" | tail -3
    echo "sanitize: running under $sanitizer (log: $log)"
    case "$sanitizer" in
    thread)
        run() { LD_PRELOAD="$PWD/$shim" TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4" "$@"; } ;;
    address)
        run() { ASAN_OPTIONS="detect_leaks=1 detect_stack_use_after_return=1 strict_string_checks=1" \
                LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp print_suppressions=0" "$@"; } ;;
    *) echo "sanitize: unknown sanitizer $sanitizer"; exit 2 ;;
    esac
    # TSan starts its reports with "WARNING: ThreadSanitizer", ASan and LSan with "==<pid>==ERROR: ...".
    report="^(==[0-9]+==)?(WARNING|ERROR): (ThreadSanitizer|AddressSanitizer|LeakSanitizer)"
    # --disable-xctest: every test is Swift Testing; XCTest's empty pass would only add XCTest's own leaks at exit.
    if run swift test --skip-build --build-path "$build_path" --disable-xctest --no-parallel --filter "$filter" \
        >"$log" 2>&1 \
        && ! grep -qE "$report" "$log"; then
        grep -E "^✔ Test run with|^Test Suite .All tests. passed" "$log" | tail -1 | sed "s/^/sanitize: $sanitizer: /"
    else
        echo "sanitize: $sanitizer FAILED"
        grep -E -A12 "$report|^SUMMARY|✘ Test run" "$log" \
            | head -60
        status=1
    fi
done
exit $status
