#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with AddressSanitizer and runs each for FUZZ_SECONDS (default 60).
# Fails on any crash, leak, timeout or violated property; the input that broke it is kept in .build/fuzz-artifacts/
# (add it to fuzz/corpus/<target>/ with the fix, as a regression seed).
#   FUZZ_SECONDS=N        time per target
#   FUZZ_RUNS=N           instead: exactly N inputs per target from seed FUZZ_SEED (default 1) and the kept corpus
#                         only, so the same commit explores the same inputs every time (make test: a run that
#                         fails once fails always, and never by luck; make fuzz explores freely)
#   FUZZ_TARGETS="a b"    only these targets (default: every fuzz-* target in fuzz/Package.swift)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-60}"
runs="${FUZZ_RUNS:-}"
if [ -n "$runs" ]; then
    budget=(-runs="$runs" -seed="${FUZZ_SEED:-1}")
    budget_text="$runs inputs (seed ${FUZZ_SEED:-1})"
else
    budget=(-max_total_time="$seconds")
    budget_text="${seconds}s"
fi
build_path=.build/fuzz
started=$SECONDS
mkdir -p .build
# SwiftPM keeps the fuzz package's build description (the source files of the targets it takes from the project, a
# path dependency) across builds and does not see a file added to one of those targets: the build then fails with
# "cannot find type" for the new file's declarations. When the project's list of source files changed since the last
# fuzz build, the description is dropped and made again (compiled objects are kept).
sources_stamp="$(find Sources -name '*.swift' | LC_ALL=C sort | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$build_path/.sources-stamp" 2>/dev/null)" != "$sources_stamp" ]; then
    rm -f "$build_path/debug.yaml" "$build_path/build.db"
fi
# A failed build stops the run (the previous binaries would otherwise be fuzzed as if they were current).
if ! swift build --package-path fuzz --build-path "$build_path" -Xswiftc -sanitize=fuzzer,address \
    -Xswiftc -warnings-as-errors >.build/fuzz-build.log 2>&1; then
    grep -vE "Cannot export local symbol '__asan" .build/fuzz-build.log | tail -40
    echo "fuzz: the fuzz targets do not build (log: .build/fuzz-build.log)"
    exit 1
fi
grep -E "^Build complete" .build/fuzz-build.log || true
echo "$sources_stamp" >"$build_path/.sources-stamp"
bin="$(swift build --package-path fuzz --build-path "$build_path" --show-bin-path)"
built=$SECONDS

targets="${FUZZ_TARGETS:-$(grep -oE 'name: "fuzz-[a-z0-9-]+"' fuzz/Package.swift | sed -E 's/name: "(.*)"/\1/')}"
mkdir -p .build/fuzz-artifacts
failed=()
for target in $targets; do
    [ -x "$bin/$target" ] || { echo "fuzz: $target was not built"; failed+=("$target"); continue; }
    # A scratch corpus (grown by this run) seeded from the kept one, so the repository's seeds stay small; emptied
    # first for a counted run, whose inputs must not depend on earlier runs.
    work=".build/fuzz-corpus/$target"
    [ -z "$runs" ] || rm -rf "$work"
    mkdir -p "$work"
    echo "fuzz: $target for $budget_text"
    if ! "$bin/$target" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -dict=fuzz/json.dict -print_final_stats=1 -artifact_prefix=".build/fuzz-artifacts/$target-" \
        "$work" "fuzz/corpus/$target" >".build/fuzz-artifacts/$target.log" 2>&1; then
        echo "fuzz: $target FAILED (log: .build/fuzz-artifacts/$target.log)"
        grep -E "ERROR|SUMMARY|property violated|Test unit written" ".build/fuzz-artifacts/$target.log" | head -20
        failed+=("$target")
    else
        grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" ".build/fuzz-artifacts/$target.log" \
            | tr '\n' ' ' | sed "s/^/fuzz: $target ok: /"
        echo
    fi
done
echo "fuzz: $(wc -w <<<"$targets") targets, build $((built - started)) s, $((SECONDS - started)) s in all"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]}"
    exit 1
fi
echo "fuzz: every target ran $budget_text without a finding"
