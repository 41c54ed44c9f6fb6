#!/usr/bin/env bash
# The JWS verification benchmark: App Store signed-data verification with a minted Apple-shaped PKI, warm cache
# (the steady state: parsing plus one ECDSA P-256 verification) on 1 and on all cores, cold (the chain validated
# every time), and SHA-256 of a submission. Prints verifications/s and µs per verification. Release build.
#
#   bench/jws.sh [--seconds S] [--threads N]
set -euo pipefail
cd "$(dirname "$0")/.."

source bench/lib.sh
bench_build jws-bench

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OpenSSL: $(openssl version 2>/dev/null || echo unknown)"
"$BIN/jws-bench" "$@"
