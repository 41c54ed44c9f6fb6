#!/bin/bash
# Container health check without curl in the image: GET /healthz over bash's /dev/tcp, healthy on HTTP 200.
set -euo pipefail
port="${HEALTHCHECK_PORT:-8080}"
exec 3<>"/dev/tcp/127.0.0.1/${port}"
printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
read -r -t 2 status_line <&3
[[ "$status_line" == HTTP/1.?\ 200* ]]
