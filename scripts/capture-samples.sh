#!/usr/bin/env bash
# Writes schemas/samples/: real messages of each topic, as the built binaries write them (scripts/sample-system.sh:
# the ingest and the verifier over the mock Kafka cluster and the fake App Store, a few purchases and Apple
# notifications), one JSON document per line, by topic kind. scripts/check-generated-clients.py decodes them with
# the generated clients and checks them against the schemas; run this again when the messages change (about 15 s).
# The retry topic has no sample: a retry record needs an Apple outage timed against the verifier's rounds.
# Usage: scripts/capture-samples.sh [<bin-dir>]
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${1:-$(swift build --show-bin-path)}"
work=.build/capture-samples
rm -rf "$work"
mkdir -p "$work"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT
. scripts/sample-system.sh

sample_system_start
sample_system_traffic
# A submission the ingest would refuse, written straight to the topic: the verifier's failed result and DLQ record.
python3 - "$KAFKA_BOOTSTRAP" <<'PY'
import sys
from confluent_kafka import Producer
producer = Producer({"bootstrap.servers": sys.argv[1]})
producer.produce("iap.receipts.submitted", key=b"sample-5",
                 value=b'{"schema_version":1,"submission_id":"sample-5","user_id":"sample-user-5","submitted_at_ms":1764489600000}')
producer.flush(10)
PY
mkdir -p schemas/samples
sample_system_read iap.receipts.submitted 5 "$work/submission.all"
# The samples are the ingest's own submissions; the hand-written malformed one is only the DLQ's input.
grep -v '"submission_id":"sample-5"' "$work/submission.all" >schemas/samples/submission.jsonl
sample_system_read iap.receipts.results 5 schemas/samples/result.jsonl
sample_system_read iap.receipts.dlq 1 schemas/samples/dlq.jsonl
sample_system_read iap.notifications.submitted 2 schemas/samples/notification.jsonl
sample_system_read iap.purchase.events 2 schemas/samples/event.jsonl
wc -l schemas/samples/*.jsonl
