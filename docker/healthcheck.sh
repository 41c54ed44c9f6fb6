#!/bin/bash
# Container health check without curl in the image: GET /healthz over bash's /dev/tcp, healthy on HTTP 200.
# The port is the one the container's own service listens on: HEALTHCHECK_PORT when set (the fake App Store:
# --port), else the process running as PID 1 and its listen setting: receipt-ingest INGEST_LISTEN (8080),
# receipt-verifier VERIFIER_METRICS_LISTEN (9090), receipt-ledger LEDGER_LISTEN (8081).
# scripts/check-deployment.py computes the same for every compose service and compares it with what it serves.
set -euo pipefail
port="${HEALTHCHECK_PORT:-}"
if [ -z "$port" ]; then
    service="$(tr '\0' '\n' </proc/1/cmdline | head -1)"
    case "${service##*/}" in
        receipt-verifier) listen="${VERIFIER_METRICS_LISTEN:-0.0.0.0:9090}" ;;
        receipt-ledger) listen="${LEDGER_LISTEN:-0.0.0.0:8081}" ;;
        *) listen="${INGEST_LISTEN:-0.0.0.0:8080}" ;;
    esac
    port="${listen##*:}"
fi
exec 3<>"/dev/tcp/127.0.0.1/${port}"
printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
read -r -t 2 status_line <&3
[[ "$status_line" == HTTP/1.?\ 200* ]]
