#!/usr/bin/env bash
# Prints one plain closing line, "tests: N passed, N failed", from `swift test` output (Swift Testing and XCTest),
# so the count of tests run is unambiguous in CI logs. Exits non-zero when nothing ran or something failed.
set -euo pipefail
log="$1"
swift_testing=$(grep -aE 'Test run with [0-9]+ tests? ' "$log" | tail -1 || true)
total=$(sed -nE 's/.*Test run with ([0-9]+) tests?.*/\1/p' <<<"$swift_testing")
total=${total:-0}
failed=$(grep -aE ' Test .* failed after' "$log" | grep -acv 'Test run with' || true)
xctest_run=$(grep -aE 'Executed [0-9]+ tests?' "$log" | tail -1 | sed -nE 's/.*Executed ([0-9]+) tests?, with ([0-9]+) failures?.*/\1 \2/p' || true)
if [ -n "$xctest_run" ]; then
    read -r xctest_total xctest_failed <<<"$xctest_run"
    total=$((total + xctest_total))
    failed=$((failed + xctest_failed))
fi
passed=$((total - failed))
echo "tests: ${passed} passed, ${failed} failed"
[ "$total" -gt 0 ] && [ "$failed" -eq 0 ]
