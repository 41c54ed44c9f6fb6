#!/usr/bin/env bash
# The verifier's own work per message as a repeatable figure (issue 26): verifier-path-bench (release; each
# submission's bytes through MessageTriage, one verifyReceipt round against the fake App Store's canned answer, the
# result record encoded; no Kafka, no libcurl, no network, no threads of its own) under `valgrind --tool=callgrind`
# for two message counts. Instructions per message = (I(N2) - I(N1)) / (N2 - N1): start-up (the dynamic loader,
# building the bench's messages) cancels out. Callgrind counts instructions, not time, so the figure is the same on
# a busy machine. Also prints where the instructions per message go (inclusive, by the same difference).
#
#   bench/verifier-callgrind.sh [--counts N1,N2]     (default 2000,4000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

COUNTS=2000,4000
while [ $# -gt 0 ]; do
    case "$1" in
        --counts) COUNTS="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
N1="${COUNTS%,*}"
N2="${COUNTS#*,}"
[ "$N2" -gt "$N1" ] || { echo "--counts N1,N2 needs N2 > N1" >&2; exit 2; }
command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null

bench_build verifier-path-bench
bench_workspace
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg) (instruction counts do not depend on it)"
# Swift seeds its hashing per process: dictionary probes (JSON objects, headers) then differ from run to run by
# about 1% of the count. A fixed seed makes the same binary give the same figure.
export SWIFT_DETERMINISTIC_HASHING=1
for count in "$N1" "$N2"; do
    valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.$count" \
        "$BIN/verifier-path-bench" "$count" >"$WORK/run.$count" 2>"$WORK/valgrind.$count.log" || {
        cat "$WORK/run.$count" "$WORK/valgrind.$count.log" >&2
        exit 1
    }
    echo "  $(cat "$WORK/run.$count")"
    callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$WORK/callgrind.$count" 2>/dev/null | swift demangle --simplified \
        >"$WORK/annotate.$count"
done
python3 - "$WORK/annotate.$N1" "$N1" "$WORK/annotate.$N2" "$N2" <<'PY'
import re, sys

def read(path):
    """The program total and each function's inclusive count (the largest entry of a name: a function listed
    under several files or recursion levels is counted once)."""
    total, functions = None, {}
    for line in open(path, errors="replace"):
        if "Auto-annotated source" in line:
            break  # per-line call counts follow, with the call count in the name
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)", line)
        if not m:
            continue
        value, name = int(m.group(1).replace(",", "")), m.group(2)
        if "PROGRAM TOTALS" in name:
            total = value
            continue
        name = re.sub(r"^[^:]*:", "", name.split(" [")[0], count=1)
        functions[name] = max(functions.get(name, 0), value)
    return total, functions

t1, f1 = read(sys.argv[1])
t2, f2 = read(sys.argv[3])
n1, n2 = int(sys.argv[2]), int(sys.argv[4])
print(f"  {(t2 - t1) / (n2 - n1):,.0f} instructions per message (callgrind, ({t2:,} - {t1:,}) / ({n2} - {n1}))")
parts = [
    ("the whole path (SubmissionMessagePath.process)", r"^SubmissionMessagePath\.process\("),
    ("decoding and validating the submission (Submission.decodeValidated)", r"^static Submission\.decodeValidated\("),
    ("  of which Foundation's JSONSerialization", r"^static JSONSerialization\.jsonObject\(with:options:\)$"),
    ("the verifyReceipt request body (VerifyReceiptRequestBody.make)", r"VerifyReceiptRequestBody\.make\("),
    ("reading Apple's answer (VerifyReceiptResponse.decode)", r"static VerifyReceiptResponse\.decode\("),
    ("the verdict rules (VerdictRules.evaluate)", r"static VerdictRules\.evaluate\("),
    ("the result record (OutputFactory.verdictResult)", r"^OutputFactory\.verdictResult\("),
    ("  of which its JSON (VerificationResultJSON.encode)", r"static VerificationResultJSON\.encode\("),
    ("  of which the submission's fingerprint (SHA256.hex)", r"^static SHA256\.hex"),
    ("malloc", r"^malloc$"),
    ("free", r"^free$"),
]
for label, pattern in parts:
    matches = [name for name in f2 if re.search(pattern, name)]
    if not matches:
        # A function the optimizer inlined has no entry of its own: said so, not printed as 0.
        print(f"  (inlined or not called): {label}")
        continue
    # The largest: one function is listed under several names (its file, its binary, specializations).
    per = max(f2[name] - f1.get(name, 0) for name in matches) / (n2 - n1)
    print(f"  {per:,.0f} per message: {label}")
PY
