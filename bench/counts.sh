#!/usr/bin/env bash
# The repeatable figures (issue 26): instructions per verifier message and per ingest POST, counted with callgrind in
# process (bench/verifier-callgrind.sh, bench/ingest-callgrind.sh), and the verifier's libcurl client per Apple call
# (bench/appstore-client-callgrind.sh, issue 43). The same on a busy machine; a few minutes.
#
#   bench/counts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== the verifier's instructions per message"
bash bench/verifier-callgrind.sh
echo "== the verifier's HTTP client's instructions per Apple call"
bash bench/appstore-client-callgrind.sh
echo "== the ingest's instructions per POST"
bash bench/ingest-callgrind.sh
