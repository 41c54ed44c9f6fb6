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

callgrind_counts_option "$@"
bench_build verifier-path-bench
bench_workspace
callgrind_two_counts verifier-path-bench
python3 bench/callgrind-per-item.py message "$WORK/annotate.$N1" "$N1" "$WORK/annotate.$N2" "$N2" \
    'the whole path (SubmissionMessagePath.process)=^SubmissionMessagePath\.process\(' \
    'decoding and validating the submission (Submission.decodeValidated)=^static Submission\.decodeValidated\(' \
    '  of which Foundation'"'"'s JSONSerialization=^static JSONSerialization\.jsonObject\(with:options:\)$' \
    'the verifyReceipt request body (VerifyReceiptRequestBody.make)=VerifyReceiptRequestBody\.make\(' \
    'reading Apple'"'"'s answer (VerifyReceiptBackend.interpret, VerifyReceiptResponse.decode included)=static VerifyReceiptBackend\.interpret\(' \
    '  of which the lean reading (VerifyReceiptResponse.init(lean:))=VerifyReceiptResponse\.init\(lean:\)' \
    'the verdict rules (VerdictRules.evaluate)=static VerdictRules\.evaluate\(' \
    'the result record (OutputFactory.verdictResult)=^OutputFactory\.verdictResult\(' \
    '  of which its JSON (VerificationResultJSON.encode)=static VerificationResultJSON\.encode\(' \
    '  of which the submission'"'"'s fingerprint (SHA256.hex)=^static SHA256\.hex' \
    'the lean parser, every caller (JSONParser.parse)=^static JSONParser\.parse(NotingNumbers)?\(' \
    'malloc=^malloc$' \
    'free=^free$'
