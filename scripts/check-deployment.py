#!/usr/bin/env python3
"""Static checks of the deployment files, runnable without a Docker engine or a cluster.

1. docker/Dockerfile's RUNTIME_PACKAGES is exactly the set of Debian packages that provide the shared libraries the
   built executables need once the Swift runtime is linked statically (as the Dockerfile builds them).
2. docker/compose.yaml parses and references only images, ports and settings that exist. Every kustomization
   (docker/k8s base, overlays and Jobs, deploy/kafka/strimzi*, deploy/monitoring) renders with `kubectl kustomize`;
   the rendered services reference only settings the code reads, Secrets secrets.example.yaml describes and https
   Apple endpoints (or loopback http); they meet Pod Security "restricted" and disable service links; and the
   numbers that must agree do: grace periods against the code's shutdown bounds, the ingest's memory limit against
   docs/OPERATIONS.md's bound, APPLE_SERVER_API_MAX_RPS x KEDA's maxReplicaCount against Apple's 50/s,
   maxReplicaCount against the partitions, KEDA's triggers against the topics, group, bootstrap servers, the
   consumer's auto.offset.reset and the CA, record sizes against librdkafka's and the topics' limits, the image tag
   against BuildInfo.version, deploy/kafka's generated files and docs/OPERATIONS.md's topic table against
   deploy/kafka/topics.yaml. Core kinds validate with kubernetes-validate, KEDA and Prometheus Operator kinds against
   models of their CRDs; the Dockerfile passes hadolint.
3. Every setting named in the docs exists in the code, and every setting the code reads is documented.
4. docker/compose.yaml is the whole system (compose specification's schema via check-jsonschema; topics from the
   generated script; the ledger over its PostgreSQL; Prometheus scraping each service with the alerts loaded, its
   config through promtool; Grafana provisioned with the dashboard; every health check asking a port served).
5. On a cluster: every namespaced object names its namespace; Strimzi (kafka.strimzi.io/v1) and CloudNativePG
   objects validate against deploy/crds; core kinds against Kubernetes 1.31; no ServiceAccount tokens; replicas
   spread; KEDA alone owns the verifiers' replica count; a NetworkPolicy per process allowing exactly its peers
   (Kafka from KAFKA_BOOTSTRAP_SERVERS, DNS, Apple for the callers, PostgreSQL for the ledger, ingress to the ports
   served); the ledger's database URL from an existing Secret and its grace period against the code; the ledger's
   CloudNativePG Cluster keeps commits through a failover (synchronous_commit on, a required synchronous standby);
   the example Strimzi cluster has the listener, authentication, authorization, operators, brokers and Kafka
   Exporter groups the rest assumes; the topic followers' group-id prefix is granted to each principal that runs one.

Usage: scripts/check-deployment.py <bin-dir>     (exit status 1 on any finding)
"""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from urllib.parse import urlparse

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXECUTABLES = ["receipt-ingest", "receipt-verifier", "receipt-ledger", "fake-appstore", "receipt-replay",
               "receipt-tail", "receipt-notifications-backfill", "receipt-admin", "receipt-reconcile"]
SETTING_PREFIXES = ("KAFKA_", "RECEIPTS_", "RESULTS_", "RETRY_", "DLQ_", "INGEST_", "VERIFIER_", "APPLE_",
                    "ALLOWED_", "SANDBOX_", "LOG_", "FAKE_APPSTORE_", "REPLAY_", "RESULT_INDEX_",
                    "NOTIFICATIONS_", "EVENTS_", "PRODUCT_", "SIGNED_", "RECEIPT_", "LEDGER_", "RECONCILE_")
# Allowed outside the code: read by docker/healthcheck.sh, or librdkafka pass-through (KAFKA_<PROPERTY>).
NON_CODE_SETTINGS = {"HEALTHCHECK_PORT"}
# Strings in the code that look like settings but are Apple's values (notification subtypes) or a tool's argument
# placeholders (receipt-admin mass-extend-status PRODUCT_ID REQUEST_ID).
NOT_SETTINGS = {"PRODUCT_NOT_FOR_SALE", "PRODUCT_ID"}
# Docker's official images, or the upstream projects' own (Apache Kafka, Prometheus, Grafana), each with a version tag.
OFFICIAL_IMAGES = re.compile(r"^(apache/kafka|swift|debian|postgres|prom/prometheus|grafana/grafana):[\w.\-]+$")
# The port docker/healthcheck.sh checks when HEALTHCHECK_PORT is not set: the PID 1 service's listen setting.
HEALTH_LISTEN = {"receipt-ingest": ("INGEST_LISTEN", "8080"), "receipt-verifier": ("VERIFIER_METRICS_LISTEN", "9090"),
                 "receipt-ledger": ("LEDGER_LISTEN", "8081")}

findings = []


def finding(message):
    findings.append(message)


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return handle.read()


# ---- 1. runtime libraries --------------------------------------------------------------------------------------
def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def resolved(path):
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    libraries = {}
    for line in out.splitlines():
        match = re.match(r"\s*(\S+) => (\S+)", line)
        if match:
            libraries[match.group(1)] = match.group(2)
    return libraries


def package_of(path):
    real = os.path.realpath(path)
    for candidate in (path, real, real.replace("/usr/lib/", "/lib/"), path.replace("/lib/", "/usr/lib/")):
        out = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout.split(":")[0].strip()
    return None


def check_runtime_packages(bin_dir):
    toolchain_marker = "/swift/"
    packages = set()
    for name in EXECUTABLES:
        binary = os.path.join(bin_dir, name)
        if not os.path.exists(binary):
            finding(f"{binary} is not built; cannot check its runtime libraries")
            continue
        locations = resolved(binary)
        # The binary's own system libraries, plus those the Swift runtime needs (statically linked into the image's
        # binaries, so its system dependencies become the binary's own).
        pending = [binary]
        seen = set()
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            for library in needed(current):
                location = locations.get(library)
                if library.startswith("ld-linux"):
                    location = location or "/lib64/" + library
                if location is None:
                    finding(f"{name}: cannot resolve {library}")
                    continue
                if toolchain_marker in location:
                    pending.append(location)
                else:
                    package = package_of(location)
                    if package is None:
                        finding(f"{name}: no Debian package provides {location}")
                    else:
                        packages.add(package.split(":")[0])
    dockerfile = read("docker/Dockerfile")
    match = re.search(r'ARG RUNTIME_PACKAGES="([^"]*)"', dockerfile)
    if not match:
        finding("docker/Dockerfile has no ARG RUNTIME_PACKAGES")
        return
    declared = set(match.group(1).split())
    if declared != packages:
        finding("docker/Dockerfile RUNTIME_PACKAGES differs from what the binaries link: "
                f"missing {sorted(packages - declared)}, not needed {sorted(declared - packages)}")


# ---- settings the code reads ------------------------------------------------------------------------------------
def code_settings():
    names = set()
    pattern = re.compile(r'"([A-Z][A-Z0-9_]+)"')
    for path in glob.glob(os.path.join(ROOT, "Sources", "**", "*.swift"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            for name in pattern.findall(handle.read()):
                if name.startswith(SETTING_PREFIXES) and name != "KAFKA_" and name not in NOT_SETTINGS:
                    names.add(name)
    return names


def is_known_setting(name, known):
    if name in known or name in NON_CODE_SETTINGS:
        return True
    # KAFKA_<PROPERTY> passes any librdkafka property through.
    return name.startswith("KAFKA_") and re.fullmatch(r"KAFKA_[A-Z0-9_]+", name) is not None


def help_text(bin_dir, name, subcommand=None):
    binary = os.path.join(bin_dir, name)
    if not os.path.exists(binary):
        return ""
    out = subprocess.run([binary] + ([subcommand] if subcommand else []) + ["--help"], capture_output=True, text=True,
                         timeout=20)
    return out.stdout + out.stderr


# ---- 2. compose and Kubernetes -------------------------------------------------------------------------------
def env_names(environment):
    if isinstance(environment, dict):
        return [key for key in environment.keys() if key != "<<"]
    if isinstance(environment, list):
        return [item.split("=")[0] for item in environment]
    return []


APPLE_URL_SETTINGS = ("APPLE_VERIFY_RECEIPT_URL", "APPLE_SANDBOX_VERIFY_RECEIPT_URL", "APPLE_SERVER_API_URL",
                      "APPLE_SERVER_API_SANDBOX_URL")


def check_apple_url(where, name, value):
    """The verifier refuses plain http to anything but loopback: a deployment file doing so would not start."""
    if name not in APPLE_URL_SETTINGS or not isinstance(value, str):
        return
    url = urlparse(value)
    if url.scheme == "https":
        return
    if url.scheme == "http" and (url.hostname in ("localhost", "::1") or (url.hostname or "").startswith("127.")):
        return
    finding(f"{where}: {name}={value} is neither https nor loopback http; the verifier refuses it at start")


def command_of(service):
    """The executable a compose service runs and its arguments: the entrypoint itself, or what a
    `/bin/sh -c "... && exec BINARY ARGS"` entrypoint execs."""
    entrypoint = service.get("entrypoint") or []
    if isinstance(entrypoint, str):
        entrypoint = [entrypoint]
    if len(entrypoint) >= 3 and os.path.basename(entrypoint[0]) == "sh" and entrypoint[1] == "-c":
        script = entrypoint[2]
        exec_part = script.rsplit("exec ", 1)[-1] if "exec " in script else script
        words = shlex.split(exec_part)
        return (os.path.basename(words[0]) if words else None), words[1:]
    binary = os.path.basename(entrypoint[0]) if entrypoint else None
    return binary, list(entrypoint[1:]) + list(service.get("command") or [])


def check_compose_system(compose):
    """docker/compose.yaml is the whole system: the compose specification's schema, every service, topics generated
    from deploy/kafka/topics.yaml, Prometheus scraping each service with the alerts loaded, Grafana with the dashboard."""
    if shutil.which("check-jsonschema") is None:
        finding("check-jsonschema is not installed (scripts/install-deps.sh installs it)")
    else:
        out = subprocess.run(["check-jsonschema", "--builtin-schema", "vendor.compose-spec",
                              os.path.join(ROOT, "docker/compose.yaml")], capture_output=True, text=True)
        if out.returncode != 0:
            finding("docker/compose.yaml against the compose specification:\n" + (out.stdout + out.stderr).strip())
    services = compose.get("services", {})
    runs = {}
    for name, service in services.items():
        binary, _ = command_of(service)
        runs.setdefault(binary, []).append(name)
    for binary in ("receipt-ingest", "receipt-verifier", "receipt-ledger", "fake-appstore"):
        if binary not in runs:
            finding(f"docker/compose.yaml runs no {binary}")

    def mounts(service):
        found = {}
        for volume in service.get("volumes", []):
            parts = volume.split(":") if isinstance(volume, str) else [volume.get("source"), volume.get("target")]
            if len(parts) >= 2:
                found[parts[1]] = os.path.normpath(os.path.join("docker", parts[0])) if parts[0].startswith(".") \
                    else parts[0]
        return found
    by_image = {service.get("image", "").split(":")[0]: (name, service) for name, service in services.items()}
    # Topics: the generated script, not a copy.
    creator = services.get("create-topics", {})
    script = next((target for target, source in mounts(creator).items()
                   if source == "deploy/kafka/create-topics-and-acls.sh"), None)
    if script is None or script not in " ".join(creator.get("entrypoint") or []):
        finding("compose service create-topics must run deploy/kafka/create-topics-and-acls.sh (generated from "
                "deploy/kafka/topics.yaml), not topics of its own")
    topics = {topic["name"] for topic in topics_spec()["topics"]}
    anchors = compose.get("x-kafka-client", {})
    for variable in ("RECEIPTS_TOPIC", "RESULTS_TOPIC", "RETRY_TOPIC", "DLQ_TOPIC", "NOTIFICATIONS_TOPIC", "EVENTS_TOPIC"):
        if anchors.get(variable) not in topics:
            finding(f"docker/compose.yaml: {variable}={anchors.get(variable)} is not a topic of deploy/kafka/topics.yaml")
    # The ledger's database.
    ledger = services.get(runs.get("receipt-ledger", [None])[0] or "", {})
    url = urlparse(str((ledger.get("environment") or {}).get("LEDGER_DATABASE_URL", "")))
    if url.hostname not in services or "postgres" not in services.get(url.hostname, {}).get("image", ""):
        finding(f"compose: LEDGER_DATABASE_URL names host {url.hostname}, not the compose PostgreSQL service")
    elif ledger.get("depends_on", {}).get(url.hostname, {}).get("condition") != "service_healthy":
        finding("compose: the ledger must wait for its PostgreSQL to be healthy")
    # Prometheus.
    prometheus_name, prometheus = by_image.get("prom/prometheus", (None, None))
    if prometheus is None:
        finding("docker/compose.yaml runs no Prometheus")
    else:
        volumes = mounts(prometheus)
        config_target = next((a.split("=", 1)[1] for a in prometheus.get("command", []) if a.startswith("--config.file=")),
                             "/etc/prometheus/prometheus.yml")
        config_path = volumes.get(config_target)
        if not config_path or not os.path.exists(os.path.join(ROOT, config_path)):
            finding(f"compose Prometheus: its config {config_target} is not mounted from a file of the repository")
        else:
            out = subprocess.run(["promtool", "check", "config", "--syntax-only", os.path.join(ROOT, config_path)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                finding(f"promtool check config {config_path}:\n{(out.stdout + out.stderr).strip()}")
            config = yaml.safe_load(read(config_path))
            loaded = set()
            for rule_file in config.get("rule_files", []):
                source = volumes.get(rule_file) or ""
                if not re.fullmatch(r"deploy/monitoring/(components/[\w-]+/)?alerts\.yaml", source):
                    finding(f"compose Prometheus: rule file {rule_file} is not one of deploy/monitoring's alerts.yaml")
                loaded.add(source)
            # compose runs the ledger and its refund responder: their alerts too (no reconciliation CronJob there).
            for source in ("deploy/monitoring/alerts.yaml", "deploy/monitoring/components/ledger/alerts.yaml",
                           "deploy/monitoring/components/refund-responder/alerts.yaml"):
                if source not in loaded:
                    finding(f"compose Prometheus does not load {source}")
            jobs = {job["job_name"]: job for job in config.get("scrape_configs", [])}
            for binary in ("receipt-ingest", "receipt-verifier", "receipt-ledger"):
                job = jobs.get(binary)
                if job is None:
                    finding(f"compose Prometheus: no scrape job {binary} (the alerts and the dashboard select job=...)")
                    continue
                targets = {target: group.get("labels", {}) for group in job.get("static_configs", [])
                           for target in group.get("targets", [])}
                setting, default = HEALTH_LISTEN[binary]
                expected = {f"{name}:{str((services[name].get('environment') or {}).get(setting, '0.0.0.0:' + default)).split(':')[-1]}"
                            for name in runs.get(binary, [])}
                if set(targets) != expected:
                    finding(f"compose Prometheus job {binary} scrapes {sorted(targets)}, the services are {sorted(expected)}")
                for target, labels in targets.items():
                    if "namespace" not in labels or "pod" not in labels:
                        finding(f"compose Prometheus target {target}: needs namespace and pod labels (the alerts group "
                                "by them)")
    # Grafana.
    grafana_name, grafana = by_image.get("grafana/grafana", (None, None))
    if grafana is None:
        finding("docker/compose.yaml runs no Grafana")
    else:
        volumes = mounts(grafana)
        provisioning = volumes.get("/etc/grafana/provisioning")
        if not provisioning:
            finding("compose Grafana: /etc/grafana/provisioning is not mounted from the repository")
        else:
            providers = [provider for path in glob.glob(os.path.join(ROOT, provisioning, "dashboards", "*.yaml"))
                         for provider in yaml.safe_load(open(path, encoding="utf-8")).get("providers", [])]
            paths = {provider.get("options", {}).get("path") for provider in providers}
            if not any(volumes.get(path) == "deploy/monitoring/dashboards" for path in paths):
                finding("compose Grafana: no dashboard provider reads deploy/monitoring/dashboards")
            sources = [source for path in glob.glob(os.path.join(ROOT, provisioning, "datasources", "*.yaml"))
                       for source in yaml.safe_load(open(path, encoding="utf-8")).get("datasources", [])]
            if not any(urlparse(source.get("url", "")).hostname == prometheus_name
                       and urlparse(source.get("url", "")).port == 9090 for source in sources):
                finding(f"compose Grafana: no data source points at the Prometheus service {prometheus_name}:9090")


def shutdown_bound(binary, environment):
    """Seconds a service may take from SIGTERM to exit (the code's bounds, as for the pods' grace periods)."""
    def setting(name, default):
        return int(environment.get(name) or documented_default(name, default))
    if binary == "receipt-ingest":
        stop_grace = code_int("Sources/Ingest/IngestService.swift",
                              r"stopGracePeriod = \.milliseconds\(handlerTimeoutMs \+ (\d+)\)", "the HTTP server's stop grace")
        answer = code_int("Sources/Ingest/IngestHandler.swift", r"effectiveDeliveryTimeoutMs \+ (\d+)",
                          "the handler's answer timeout")
        delivery_ms = setting("INGEST_KAFKA_DELIVERY_TIMEOUT_MS", 10000)
        return ((delivery_ms + answer + stop_grace) / 1000 + ingest_flush_seconds(delivery_ms)
                + parts_bound("Sources/Ingest/IngestService.swift"))
    if binary == "receipt-verifier":
        return (setting("VERIFIER_SHUTDOWN_TIMEOUT_MS", 20000) / 1000
                + parts_bound("Sources/Verifier/Service/VerifierService.swift"))
    if binary == "receipt-ledger":
        return (setting("LEDGER_SHUTDOWN_TIMEOUT_MS", 30000) / 1000
                + parts_bound("Sources/Ledger/Service/LedgerService.swift"))
    return 0


def seconds(duration):
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(duration or "10s"))
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0) if match else 0


def check_compose_numbers(compose):
    """The same numbers as on Kubernetes: stop grace periods against the code, record sizes against librdkafka's."""
    anchors = compose.get("x-kafka-client", {})
    for name, service in compose.get("services", {}).items():
        binary, _ = command_of(service)
        environment = service.get("environment") or {}
        bound = shutdown_bound(binary, environment)
        if bound and seconds(service.get("stop_grace_period")) < bound:
            finding(f"compose service {name}: stop_grace_period {service.get('stop_grace_period', '10s')} is below "
                    f"{binary}'s shutdown bound {bound} s (docker would SIGKILL it mid-drain)")
        if binary in ("receipt-ingest", "receipt-verifier") and \
                int(environment.get("KAFKA_MESSAGE_MAX_BYTES", anchors.get("KAFKA_MESSAGE_MAX_BYTES", 1000000))) < \
                max(int(topic["config"].get("max.message.bytes", 0)) for topic in topics_spec()["topics"]):
            finding(f"compose service {name}: KAFKA_MESSAGE_MAX_BYTES is below the largest topic record "
                    "(librdkafka would refuse DLQ records locally)")


def check_compose(bin_dir, known):
    compose = yaml.safe_load(read("docker/compose.yaml"))
    check_compose_system(compose)
    check_compose_numbers(compose)
    services = compose.get("services", {})
    built_image = None
    for name, service in services.items():
        if "build" in service:
            built_image = service.get("image")
            dockerfile = service["build"].get("dockerfile")
            if not os.path.exists(os.path.join(ROOT, "docker", service["build"].get("context", "."), dockerfile)):
                finding(f"compose service {name}: dockerfile {dockerfile} does not exist")
    for name, service in services.items():
        image = service.get("image")
        if image and image != built_image and not OFFICIAL_IMAGES.match(image):
            finding(f"compose service {name}: image {image} is neither built here nor an official image")
        binary, arguments = command_of(service)
        if binary in EXECUTABLES:
            helps = help_text(bin_dir, binary)
            subcommand = arguments[0] if arguments and not arguments[0].startswith("-") else None
            if subcommand:
                helps = help_text(bin_dir, binary, subcommand)
            for argument in arguments:
                if isinstance(argument, str) and argument.startswith("--") and argument not in helps:
                    finding(f"compose service {name}: {binary} has no option {argument} (not in its --help)")
            for variable in env_names(service.get("environment")):
                if not is_known_setting(variable, known):
                    finding(f"compose service {name}: setting {variable} is not read by any code")
            environment = service.get("environment") or {}
            if isinstance(environment, dict):
                for variable, value in environment.items():
                    check_apple_url(f"compose service {name}", variable, value)
            ports = [str(port).split(":")[-1] for port in service.get("ports", [])]
            environment = service.get("environment") or {}
            setting, default = HEALTH_LISTEN.get(binary, (None, None))
            listen = environment.get(setting, f"0.0.0.0:{default}") if setting else None
            if listen and ports and listen.split(":")[-1] not in ports:
                finding(f"compose service {name}: listens on {listen} but publishes {ports}")
            served = [listen.split(":")[-1]] if listen else []
            if "--port" in arguments:
                served.append(str(arguments[arguments.index("--port") + 1]))
            health = str(environment.get("HEALTHCHECK_PORT", "") or (served[0] if listen else ""))
            if (service.get("healthcheck") or {}).get("disable"):
                pass
            elif not health:
                finding(f"compose service {name}: {binary} has no port docker/healthcheck.sh would find "
                        "(set HEALTHCHECK_PORT)")
            elif served and health not in served:
                finding(f"compose service {name}: its health check asks port {health}, it serves {served}")


# The optional parts (kustomize Components): the overlays and deploy/monitoring include them; each is also rendered
# and checked with parts left out ("<directory> without <part>+<part>"), the base alone being the ingest and verifiers.
OPTIONAL_PARTS = ("ledger", "refund-responder", "reconcile")
WITHOUT = {
    "docker/k8s/overlays/production": [OPTIONAL_PARTS, ("refund-responder", "reconcile"), ("reconcile",),
                                       ("refund-responder",)],
    "docker/k8s/overlays/sandbox": [OPTIONAL_PARTS],
    "deploy/monitoring": [OPTIONAL_PARTS, ("refund-responder", "reconcile")],
}
KUSTOMIZATIONS = ["docker/k8s/base", "docker/k8s/jobs", "docker/k8s/overlays/production",
                  "docker/k8s/overlays/production/jobs", "docker/k8s/overlays/sandbox",
                  "docker/k8s/overlays/sandbox/jobs", "deploy/kafka/strimzi", "deploy/kafka/strimzi-sandbox",
                  "deploy/kafka/strimzi-cluster", "deploy/postgres", "deploy/postgres-sandbox", "deploy/monitoring",
                  "docker/k8s/overlays/production-gateway-api", "examples/consumer"] + [
    f"{directory} without {'+'.join(parts)}" for directory, variants in WITHOUT.items() for parts in variants]
# The oldest Kubernetes the manifests support (docs/OPERATIONS.md, "Supported versions"): validated against it.
KUBERNETES_VERSION = "1.31.0"
RENDERED = {}


def without_parts(directory, parts, work):
    """A copy of docker/ and deploy/ under `work` whose `directory` kustomization lists none of `parts` among its
    components; returns the copy's directory."""
    for tree in ("docker", "deploy"):
        if not os.path.exists(os.path.join(work, tree)):
            shutil.copytree(os.path.join(ROOT, tree), os.path.join(work, tree))
    path = os.path.join(work, directory, "kustomization.yaml")
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines(True)
    kept = [line for line in lines if not any(re.fullmatch(r"\s*- (\.\./)*components/" + re.escape(part) + r"\s*", line)
                                              for part in parts)]
    if len(lines) - len(kept) != len(parts):
        finding(f"{directory}/kustomization.yaml does not list the components {', '.join(parts)} one per line")
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(kept)
    return os.path.join(work, directory)


def render(directory):
    """`kubectl kustomize` of a directory (kustomize v5 inside kubectl), as a list of documents; "<directory> without
    <part>+<part>" renders it with those optional parts left out of its components."""
    if directory in RENDERED:
        return RENDERED[directory]
    if shutil.which("kubectl") is None:
        finding("kubectl is not installed: cannot render the kustomizations (scripts/install-deps.sh)")
        RENDERED[directory] = []
        return []
    source, _, parts = directory.partition(" without ")
    if not os.path.exists(os.path.join(ROOT, source, "kustomization.yaml")):
        RENDERED[directory] = []
        return []
    import tempfile
    with tempfile.TemporaryDirectory() as work:
        path = without_parts(source, parts.split("+"), work) if parts else os.path.join(ROOT, source)
        out = subprocess.run(["kubectl", "kustomize", path], capture_output=True, text=True)
    if out.returncode != 0:
        finding(f"kubectl kustomize {directory} failed:\n{out.stderr.strip()}")
        RENDERED[directory] = []
        return []
    RENDERED[directory] = [document for document in yaml.safe_load_all(out.stdout) if document]
    return RENDERED[directory]


def pod_template(document):
    """The pod template of a Deployment, a Job or a CronJob (its Job template's)."""
    if document.get("kind") == "CronJob":
        return document["spec"]["jobTemplate"]["spec"]["template"]
    return document["spec"]["template"]


def pod_templates(documents):
    for document in documents:
        if document.get("kind") in ("Deployment", "Job", "CronJob"):
            yield document, pod_template(document)["spec"]


def topics_spec():
    with open(os.path.join(ROOT, "deploy/kafka/topics.yaml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def code_int(path, pattern, what, within=None):
    """An integer the code states (group 1 of `pattern`), in the function whose declaration `within` starts."""
    text = read(path)
    if within:
        start = text.find(within)
        text = text[start:text.find("\n    }\n", start)] if start >= 0 else ""
    match = re.search(pattern, text)
    if not match:
        finding(f"{path}: cannot find {what} (pattern {pattern!r}); update scripts/check-deployment.py")
        return 0
    return int(match.group(1))


def parts_bound(path):
    """Seconds the parts a service registers (`parts.add("...", bound: .seconds(N)...`, `parts.makeProducer(...,
    closeBound: .seconds(N))`) may take to close, summed: what closing adds to a drain's own bound
    (`ServiceParts.bound`)."""
    bounds = re.findall(r'(?:parts\.add\("[^"]+", bound|closeBound): \.seconds\((\d+)\)', read(path))
    if not bounds:
        finding(f"{path}: cannot find the parts' close bounds (parts.add(..., bound: .seconds(N))); "
                "update scripts/check-deployment.py")
    return sum(int(bound) for bound in bounds)


INGEST_FLUSH_BOUND = "var drainBound: Duration { .milliseconds(settings.effectiveDeliveryTimeoutMs) }"


def ingest_flush_seconds(delivery_ms):
    """The ingest's drain flushes its producer within `drainBound`, the delivery timeout."""
    if INGEST_FLUSH_BOUND not in read("Sources/Ingest/IngestService.swift"):
        finding("Sources/Ingest/IngestService.swift: drainBound is no longer the delivery timeout; "
                "update scripts/check-deployment.py")
    return delivery_ms / 1000


def documented_default(name, fallback):
    """The default docs/OPERATIONS.md's settings tables give `name` (a number in backticks)."""
    match = re.search(r"^\| `" + re.escape(name) + r"` \| `(\d+)`", read("docs/OPERATIONS.md"), re.MULTILINE)
    if not match:
        finding(f"docs/OPERATIONS.md gives no numeric default for {name}")
        return fallback
    return int(match.group(1))


def memory_bytes(quantity):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 1000, "M": 1000 ** 2, "G": 1000 ** 3}
    for suffix, factor in units.items():
        if str(quantity).endswith(suffix):
            return int(float(str(quantity)[: -len(suffix)]) * factor)
    return int(quantity)


def check_rendered_services(directory, documents, known):
    """One rendered set of services (an overlay or the base) against the code, the docs and the topics."""
    settings = {}
    for document in documents:
        if document.get("kind") == "ConfigMap" and document["metadata"]["name"].startswith("receipt-settings"):
            settings = document.get("data", {})
            for variable, value in settings.items():
                if not is_known_setting(variable, known):
                    finding(f"{directory}: ConfigMap setting {variable} is not read by any code")
                check_apple_url(f"{directory} ConfigMap", variable, value)
    secrets = {d["metadata"]["name"]: d for d in yaml.safe_load_all(read("docker/k8s/secrets.example.yaml")) if d}
    config_maps = {d["metadata"]["name"] for d in documents if d.get("kind") == "ConfigMap"}
    deployments = {d["metadata"]["name"]: d for d in documents if d.get("kind") == "Deployment"}
    for name, secret in secrets.items():
        for variable in secret.get("stringData", {}):
            if variable.isupper() and not is_known_setting(variable, known):
                finding(f"docker/k8s/secrets.example.yaml: Secret {name} sets {variable}, which no code reads")
    for owner, pod in pod_templates(documents):
        where = f"{directory}: {owner['kind']} {owner['metadata']['name']}"
        # Pod Security Standards "restricted", and no service-link variables.
        if pod.get("enableServiceLinks") is not False:
            finding(f"{where}: set enableServiceLinks: false (service links of a Service named kafka... inject KAFKA_*)")
        context = pod.get("securityContext", {})
        if context.get("runAsNonRoot") is not True:
            finding(f"{where}: securityContext.runAsNonRoot must be true (Pod Security restricted)")
        if context.get("seccompProfile", {}).get("type") not in ("RuntimeDefault", "Localhost"):
            finding(f"{where}: securityContext.seccompProfile.type must be RuntimeDefault (Pod Security restricted)")
        volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
        for container in pod["containers"]:
            security = container.get("securityContext", {})
            if security.get("allowPrivilegeEscalation") is not False or \
                    security.get("capabilities", {}).get("drop") != ["ALL"]:
                finding(f"{where}: container {container['name']} must set allowPrivilegeEscalation: false and drop ALL")
            ports = {port["name"]: port["containerPort"] for port in container.get("ports", [])}
            for probe in ("readinessProbe", "livenessProbe"):
                get = container.get(probe, {}).get("httpGet", {})
                if get and get.get("port") not in ports and get.get("port") not in ports.values():
                    finding(f"{where}: {probe} uses port {get.get('port')}, which the container does not declare")
                if get and get.get("path") not in ("/healthz", "/readyz"):
                    finding(f"{where}: {probe} path {get.get('path')} is not /healthz or /readyz")
            for variable in container.get("env", []):
                check_apple_url(where, variable["name"], variable.get("value"))
                if not is_known_setting(variable["name"], known):
                    finding(f"{where}: setting {variable['name']} is not read by any code")
                if variable["name"].endswith("_LISTEN") and \
                        int(variable.get("value", "0").split(":")[-1]) not in ports.values():
                    finding(f"{where}: {variable['name']}={variable.get('value')} but the container ports are {ports}")
            for source in container.get("envFrom", []):
                reference = source.get("configMapRef") or source.get("secretRef")
                if reference["name"] not in config_maps and reference["name"] not in secrets:
                    finding(f"{where}: envFrom {reference['name']} is neither rendered nor in secrets.example.yaml")
            mounts = {mount["mountPath"]: mount["name"] for mount in container.get("volumeMounts", [])}
            for mount in mounts.values():
                secret_name = volumes.get(mount, {}).get("secret", {}).get("secretName")
                if secret_name and secret_name not in secrets:
                    finding(f"{where}: mounts Secret {secret_name}, which secrets.example.yaml does not describe")
            # TLS to Kafka: the CA file the settings name must be mounted.
            ca = settings.get("KAFKA_SSL_CA_LOCATION")
            if ca and not any(ca.startswith(path.rstrip("/") + "/") for path in mounts):
                finding(f"{where}: KAFKA_SSL_CA_LOCATION={ca} is not inside any volume the container mounts")
    if not deployments:
        return
    # Grace periods against the code's shutdown bounds.
    ingest = deployments.get("receipt-ingest")
    if ingest:
        pod = ingest["spec"]["template"]["spec"]
        container = pod["containers"][0]
        pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
        pause = int(pre_stop[-1]) if pre_stop and pre_stop[-1].isdigit() else 0
        if pause < 3:
            finding(f"{directory}: receipt-ingest needs a preStop pause (>= 3 s) so endpoints stop routing first")
        delivery_ms = int(settings.get("INGEST_KAFKA_DELIVERY_TIMEOUT_MS",
                                       documented_default("INGEST_KAFKA_DELIVERY_TIMEOUT_MS", 10000)))
        service = "Sources/Ingest/IngestService.swift"
        # IngestService.drain(within: drainBound), called by ServiceMain on SIGTERM: the HTTP server's stop grace
        # (IngestHandler.kafkaAnswerTimeoutMs + 500 ms), the owned producer's flush (within drainBound, the delivery
        # timeout), then its parts' closes (the results follower, the producer).
        stop_grace = code_int(service, r"stopGracePeriod = \.milliseconds\(handlerTimeoutMs \+ (\d+)\)",
                              "the HTTP server's stop grace")
        answer = code_int("Sources/Ingest/IngestHandler.swift", r"effectiveDeliveryTimeoutMs \+ (\d+)",
                          "the handler's answer timeout")
        bound = (pause + (delivery_ms + answer + stop_grace) / 1000 + ingest_flush_seconds(delivery_ms)
                 + parts_bound(service))
        if pod.get("terminationGracePeriodSeconds", 30) < bound:
            finding(f"{directory}: receipt-ingest terminationGracePeriodSeconds "
                    f"{pod.get('terminationGracePeriodSeconds', 30)} is below its shutdown bound {bound} s")
        # docs/OPERATIONS.md "Memory bound": 60 MB + connections x 20 KiB + buffered bodies + producer queue +
        # result index (+ 1 KiB bookkeeping per entry).
        def setting(name):
            return int(settings.get(name, documented_default(name, 0)))
        need = (60 * 1000 ** 2 + setting("INGEST_MAX_CONNECTIONS") * 20 * 1024 + setting("INGEST_MAX_BUFFERED_BYTES")
                + setting("KAFKA_QUEUE_BUFFERING_MAX_KBYTES") * 1024 + setting("RESULT_INDEX_MAX_BYTES")
                + setting("RESULT_INDEX_MAX_ENTRIES") * 1024)
        limit = memory_bytes(container.get("resources", {}).get("limits", {}).get("memory", 0))
        if limit < need:
            finding(f"{directory}: receipt-ingest memory limit {limit} B is below docs/OPERATIONS.md's bound at these "
                    f"settings ({need} B)")
    verifier = deployments.get("receipt-verifier")
    if verifier:
        pod = verifier["spec"]["template"]["spec"]
        shutdown_ms = int(settings.get("VERIFIER_SHUTDOWN_TIMEOUT_MS",
                                       documented_default("VERIFIER_SHUTDOWN_TIMEOUT_MS", 20000)))
        # VerifierService.drain(within: drainBound), drainBound being VERIFIER_SHUTDOWN_TIMEOUT_MS, then its parts'
        # closes (consumer, producer flush and close).
        bound = shutdown_ms / 1000 + parts_bound("Sources/Verifier/Service/VerifierService.swift")
        if pod.get("terminationGracePeriodSeconds", 30) < bound:
            finding(f"{directory}: receipt-verifier terminationGracePeriodSeconds "
                    f"{pod.get('terminationGracePeriodSeconds', 30)} is below its shutdown bound {bound} s")
    # KEDA against the topics, the settings, Apple's limit and the consumer.
    spec = topics_spec()
    partitions = {topic["name"]: topic["partitions"] for topic in spec["topics"]}
    for document in documents:
        if document.get("kind") == "ScaledObject":
            scaled = document["spec"]
            if scaled["scaleTargetRef"]["name"] not in deployments:
                finding(f"{directory}: ScaledObject targets {scaled['scaleTargetRef']['name']}, not a Deployment here")
            maximum = scaled["maxReplicaCount"]
            rps = float(settings.get("APPLE_SERVER_API_MAX_RPS", documented_default("APPLE_SERVER_API_MAX_RPS", 50)))
            if rps * maximum > 50:
                finding(f"{directory}: APPLE_SERVER_API_MAX_RPS {rps} x maxReplicaCount {maximum} exceeds Apple's 50/s")
            consumed = {settings.get("RECEIPTS_TOPIC"), settings.get("NOTIFICATIONS_TOPIC")}
            triggered = set()
            for trigger in scaled["triggers"]:
                metadata = trigger["metadata"]
                triggered.add(metadata["topic"])
                if metadata["topic"] in partitions and maximum > partitions[metadata["topic"]]:
                    finding(f"{directory}: maxReplicaCount {maximum} exceeds the partitions of {metadata['topic']}")
                if metadata.get("consumerGroup") != settings.get("VERIFIER_GROUP_ID", "iap-verifier"):
                    finding(f"{directory}: KEDA trigger group {metadata.get('consumerGroup')} is not VERIFIER_GROUP_ID")
                if metadata.get("bootstrapServers") != settings.get("KAFKA_BOOTSTRAP_SERVERS"):
                    finding(f"{directory}: KEDA bootstrapServers differ from KAFKA_BOOTSTRAP_SERVERS")
                reset = re.search(r'"auto\.offset\.reset": "(\w+)"', read("Sources/Kafka/KafkaConsumer.swift"))
                if not reset or metadata.get("offsetResetPolicy") != reset.group(1):
                    finding(f"{directory}: KEDA offsetResetPolicy {metadata.get('offsetResetPolicy')} is not the "
                            "consumer's auto.offset.reset")
                if metadata.get("excludePersistentLag") != "true":
                    finding(f"{directory}: KEDA trigger on {metadata['topic']} would scale to max in an Apple outage "
                            "(excludePersistentLag)")
                if metadata.get("tls") == "enable":
                    auth = next((d for d in documents if d.get("kind") == "TriggerAuthentication"
                                 and d["metadata"]["name"] == trigger["authenticationRef"]["name"]), None)
                    if auth is None or "ca" not in {ref["parameter"] for ref in auth["spec"].get("secretTargetRef", [])}:
                        finding(f"{directory}: KEDA trigger uses TLS without the cluster CA (parameter ca)")
            if triggered != consumed:
                finding(f"{directory}: KEDA triggers on {sorted(triggered)}, the verifiers consume {sorted(consumed)}")
    # Record sizes: librdkafka's producer limit and the topics' limits against the largest records written.
    producer_limit = int(settings.get("KAFKA_MESSAGE_MAX_BYTES", 1000000))
    envelope = 64 * 1024
    body = int(settings.get("INGEST_MAX_BODY_BYTES", documented_default("INGEST_MAX_BODY_BYTES", 1 << 20)))
    dlq_record = code_int("Sources/ReceiptModel/MessageLimits.swift", r"maximumValueBytes = (\d+) << 20",
                          "the verifier's read limit") * (1 << 20) * 4 // 3 + envelope
    sizes = {topic["name"]: int(topic["config"].get("max.message.bytes", 1048588)) for topic in spec["topics"]}
    for topic, need in ((settings.get("RECEIPTS_TOPIC"), body + envelope), (settings.get("RETRY_TOPIC"), body + envelope),
                        (settings.get("DLQ_TOPIC"), dlq_record)):
        if topic in sizes and sizes[topic] < need:
            finding(f"deploy/kafka/topics.yaml: {topic} max.message.bytes {sizes[topic]} is below {need}")
        if producer_limit < need:
            finding(f"{directory}: KAFKA_MESSAGE_MAX_BYTES {producer_limit} is below the largest record for {topic} "
                    f"({need} B): librdkafka would refuse it locally")
    for variable in ("RECEIPTS_TOPIC", "RESULTS_TOPIC", "RETRY_TOPIC", "DLQ_TOPIC", "NOTIFICATIONS_TOPIC", "EVENTS_TOPIC"):
        if settings.get(variable) not in partitions:
            finding(f"{directory}: {variable}={settings.get(variable)} is not a topic of deploy/kafka/topics.yaml")


def check_kubernetes(known):
    for directory in KUSTOMIZATIONS:
        if not os.path.exists(os.path.join(ROOT, directory.partition(" without ")[0], "kustomization.yaml")):
            finding(f"{directory}/kustomization.yaml does not exist")
            continue
        documents = render(directory)
        if directory.startswith("docker/k8s"):
            check_rendered_services(directory, documents, known)
    tags = {image.get("newTag") for path in ["docker/k8s/base/kustomization.yaml"] + sorted(
                glob.glob(os.path.join(ROOT, "docker/k8s/components/*/kustomization.yaml")))
            for image in yaml.safe_load(read(path)).get("images", [])}
    version = re.search(r'public static let releaseVersion = "([^"]+)"', read("Sources/ServiceSupport/BuildInfo.swift"))
    if not version or tags != {version.group(1)}:
        finding(f"docker/k8s base and components image tags {tags} are not BuildInfo.version "
                f"{version.group(1) if version else None}")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "deploy/kafka/render.py"), "--check"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        finding(out.stdout.strip() or out.stderr.strip())
    # The docs' topic table says what deploy/kafka/topics.yaml decides.
    operations = read("docs/OPERATIONS.md")
    for topic in topics_spec()["topics"]:
        row = re.search(r"^\| `" + re.escape(topic["name"]) + r"` \|(.*)$", operations, re.MULTILINE)
        if not row:
            finding(f"docs/OPERATIONS.md's topic table has no row for {topic['name']}")
            continue
        days = int(topic["config"]["retention.ms"]) // 86_400_000
        expected = [f"{topic['partitions']} |", f"{days} days", f"{topic['replicas']} |",
                    f"{topic['config']['min.insync.replicas']} |"]
        cells = [cell.strip() for cell in row.group(1).split("|")]
        numbers = {"partitions": str(topic["partitions"]), "replicas": str(topic["replicas"]),
                   "min.insync.replicas": str(topic["config"]["min.insync.replicas"]),
                   "max.message.bytes": str(topic["config"]["max.message.bytes"])}
        for name, value in numbers.items():
            if not any(cell.split(" ")[0].strip("`") == value for cell in cells):
                finding(f"docs/OPERATIONS.md topic {topic['name']}: no cell says {name} {value}")
        if not any(cell.startswith(f"{days} days") for cell in cells):
            finding(f"docs/OPERATIONS.md topic {topic['name']}: retention is not {days} days")
        del expected


# ---- 3. docs versus code ----------------------------------------------------------------------------------------
def check_docs(known):
    documented = set()
    for path in ("README.md", "docs/OPERATIONS.md"):
        if not os.path.exists(os.path.join(ROOT, path)):
            finding(f"{path} does not exist")
            continue
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)(?:=[^`]*)?`", read(path)):
            if name.startswith(SETTING_PREFIXES):
                documented.add(name)
                if not is_known_setting(name, known) and not name.endswith("_"):
                    finding(f"{path} names setting {name}, which no code reads")
    operations = read("docs/OPERATIONS.md") if os.path.exists(os.path.join(ROOT, "docs/OPERATIONS.md")) else ""
    for name in sorted(known):
        if f"`{name}`" not in operations:
            finding(f"setting {name} is read by the code but not documented in docs/OPERATIONS.md")


# ---- 4. well-kept linters ---------------------------------------------------------------------------------------
def check_with_linters():
    """hadolint (Dockerfile) and kubernetes-validate (the manifests against Kubernetes' own schemas), both from PyPI
    (scripts/install-deps.sh). Kinds Kubernetes does not define (KEDA, Kustomization) have no schema there."""
    for tool in ("hadolint", "kubernetes-validate"):
        if shutil.which(tool) is None:
            finding(f"{tool} is not installed (scripts/install-deps.sh installs it)")
            return
    out = subprocess.run(["hadolint", os.path.join(ROOT, "docker/Dockerfile")], capture_output=True, text=True)
    if out.returncode != 0:
        finding("hadolint docker/Dockerfile:\n" + (out.stdout + out.stderr).strip())
    # Every rendered kustomization: the core kinds against Kubernetes' schemas (kubernetes-validate), the others
    # against their operators' CRD models (check_custom_resource).
    import tempfile
    with tempfile.TemporaryDirectory() as work:
        core = []
        validated = set()
        for directory in KUSTOMIZATIONS:
            for index, document in enumerate(render(directory)):
                # The renderings with optional parts left out repeat most objects: each distinct one once.
                content = json.dumps(document, sort_keys=True)
                if content in validated:
                    continue
                validated.add(content)
                path = os.path.join(work, f"{directory.replace('/', '_').replace(' ', '_')}-{index}.yaml")
                with open(path, "w", encoding="utf-8") as handle:
                    yaml.safe_dump(document, handle)
                if "." not in document.get("apiVersion", "").split("/")[0] or \
                        document["apiVersion"].split("/")[0].endswith(".k8s.io"):
                    core.append(path)
                else:
                    check_custom_resource(directory, document, path)
        out = subprocess.run(["kubernetes-validate", "--strict", "--quiet", "--kubernetes-version", KUBERNETES_VERSION]
                             + core, capture_output=True, text=True)
        errors = [line for line in (out.stdout + out.stderr).splitlines() if line.startswith("ERROR")]
        if out.returncode != 0 and errors:
            finding("kubernetes-validate (rendered kustomizations):\n" + "\n".join(errors))


# Kinds outside Kubernetes: KEDA's and the Prometheus Operator's against pydantic models generated from the operators'
# own CRD schemas (cloudcoil-models-keda, cloudcoil-models-prometheus-operator on PyPI, pinned to the oldest versions
# supported). Those models ignore unknown fields, so a field the model does not give back is reported as unknown (a
# typo such as maxReplicaCont). Strimzi's and CloudNativePG's against the JSON Schemas in deploy/crds (README.md
# there: no package ships those CRDs).
CRD_MODELS = {
    ("keda.sh/v1alpha1", "ScaledObject"): "cloudcoil.models.keda.v1alpha1",
    ("keda.sh/v1alpha1", "TriggerAuthentication"): "cloudcoil.models.keda.v1alpha1",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "cloudcoil.models.prometheus_operator.v1",
    ("monitoring.coreos.com/v1", "PodMonitor"): "cloudcoil.models.prometheus_operator.v1",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "cloudcoil.models.prometheus_operator.v1",
}
JSON_SCHEMAS = {
    "kafka.strimzi.io/v1": "deploy/crds/strimzi-v1.schema.yaml",
    "postgresql.cnpg.io/v1": "deploy/crds/cloudnative-pg-v1.schema.yaml",
    "gateway.networking.k8s.io/v1": "deploy/crds/gateway-api-v1.schema.yaml",
}


def check_json_schema(directory, document):
    """A Strimzi or CloudNativePG object against the definition of its kind in deploy/crds."""
    import jsonschema
    schema = yaml.safe_load(read(JSON_SCHEMAS[document["apiVersion"]]))
    name = f"{directory}: {document['kind']} {document['metadata'].get('name')}"
    if document["kind"] not in schema["$defs"]:
        finding(f"{name}: {JSON_SCHEMAS[document['apiVersion']]} defines no {document['kind']}")
        return
    validator = jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{document['kind']}"})
    for error in sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path)):
        path = ".".join(str(part) for part in error.absolute_path) or "(top)"
        finding(f"{name} does not match its CRD schema at {path}: {error.message}")


def unknown_fields(given, dumped, path=""):
    if isinstance(given, dict) and isinstance(dumped, dict):
        for key, value in given.items():
            if key not in dumped:
                yield f"{path}.{key}".lstrip(".")
            else:
                yield from unknown_fields(value, dumped[key], f"{path}.{key}")
    elif isinstance(given, list) and isinstance(dumped, list):
        for index, (value, other) in enumerate(zip(given, dumped)):
            yield from unknown_fields(value, other, f"{path}[{index}]")


def check_custom_resource(directory, document, path):
    del path
    key = (document["apiVersion"], document["kind"])
    if document["apiVersion"] in JSON_SCHEMAS:
        check_json_schema(directory, document)
        return
    module_name = CRD_MODELS.get(key)
    if module_name is None:
        finding(f"{directory}: no CRD model to check {key[1]} ({key[0]}) with; add one to CRD_MODELS")
        return
    try:
        import importlib
        model = getattr(importlib.import_module(module_name), key[1])
    except ImportError:
        finding(f"{module_name} is not installed (scripts/install-deps.sh installs it)")
        return
    name = f"{directory}: {key[1]} {document['metadata']['name']}"
    try:
        parsed = model.model_validate(document)
    except Exception as error:  # pydantic.ValidationError: the message lists every field that does not fit
        finding(f"{name} does not match its CRD schema: {error}")
        return
    dumped = parsed.model_dump(by_alias=True, exclude_none=True, mode="json")
    for field in unknown_fields(document, dumped):
        finding(f"{name}: field {field} is not in the CRD's schema")


# ---- 5. what a platform engineer checks on a cluster ------------------------------------------------------------
# Kinds that live outside namespaces; everything else a kustomization renders must name its namespace, or
# `kubectl apply` puts it in the context's namespace, away from its Service, Secrets and policies.
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume",
                  "StorageClass", "PriorityClass", "IngressClass", "ValidatingWebhookConfiguration",
                  "MutatingWebhookConfiguration", "APIService"}
SERVICES = ("receipt-ingest", "receipt-verifier", "receipt-ledger")
# The processes that call Apple over https, and those with a topic follower (its group id prefix must be granted).
CALLS_APPLE = {"receipt-verifier", "receipt-ledger", "receipt-notifications-backfill", "receipt-admin", "receipt-reconcile"}
# The processes that verify Apple's signed data and so ask Apple's OCSP responder (http, port 80) about its signing
# chain, unless their pod sets APPLE_REVOCATION_CHECK=off.
CHECKS_REVOCATION = {"receipt-verifier", "receipt-admin", "receipt-reconcile"}
# The processes that read (or write) the ledger's PostgreSQL.
USES_LEDGER_DATABASE = {"receipt-ledger", "receipt-reconcile"}
FOLLOWERS = {"receipt-ingest": "RESULTS_TOPIC", "receipt-replay": "DLQ_TOPIC", "receipt-tail": "RESULTS_TOPIC"}


def check_namespaces(directory, documents):
    for document in documents:
        if document.get("kind") in CLUSTER_SCOPED:
            continue
        if not document.get("metadata", {}).get("namespace"):
            finding(f"{directory}: {document.get('kind')} {document['metadata'].get('name')} has no namespace "
                    "(it would land in the kubectl context's namespace)")


def selects(selector, labels):
    return all(labels.get(key) == value for key, value in (selector.get("matchLabels") or {}).items())


def bootstrap_of(settings):
    host, _, port = (settings.get("KAFKA_BOOTSTRAP_SERVERS") or "").split(",")[0].rpartition(":")
    parts = host.split(".")
    return (parts[1] if len(parts) > 2 and parts[2] == "svc" else None), (int(port) if port.isdigit() else None)


def check_pods_on_a_cluster(directory, documents):
    """Pod hardening, spreading, KEDA ownership of replicas, and NetworkPolicies against what each process talks to."""
    settings = next((d.get("data", {}) for d in documents if d.get("kind") == "ConfigMap"
                     and d["metadata"]["name"].startswith("receipt-settings")), {})
    scaled = {d["spec"]["scaleTargetRef"]["name"] for d in documents if d.get("kind") == "ScaledObject"}
    policies = [d for d in documents if d.get("kind") == "NetworkPolicy"]
    kafka_namespace, kafka_port = bootstrap_of(settings)
    for owner, pod in pod_templates(documents):
        name = owner["metadata"]["name"]
        where = f"{directory}: {owner['kind']} {name}"
        if pod.get("automountServiceAccountToken") is not False:
            finding(f"{where}: set automountServiceAccountToken: false (no process calls the Kubernetes API)")
        if owner["kind"] == "Deployment":
            if name in scaled and "replicas" in owner["spec"]:
                finding(f"{where}: a ScaledObject owns its replica count; spec.replicas would reset it on every apply")
            if (name in scaled or owner["spec"].get("replicas", 1) > 1) and not any(
                    constraint.get("topologyKey") == "kubernetes.io/hostname"
                    for constraint in pod.get("topologySpreadConstraints", [])):
                finding(f"{where}: several replicas but no topologySpreadConstraints over kubernetes.io/hostname")
        if directory.endswith("/jobs") or directory == "docker/k8s/jobs":
            continue  # the Jobs' policies come with the services (base), not with the Jobs
        labels = pod_template(owner)["metadata"].get("labels", {})
        covering = [policy for policy in policies if selects(policy["spec"]["podSelector"], labels)]
        if not covering:
            finding(f"{where}: no NetworkPolicy selects its pods")
            continue
        policy = covering[0]["spec"]
        if set(policy.get("policyTypes", [])) != {"Ingress", "Egress"}:
            finding(f"{where}: its NetworkPolicy must restrict both Ingress and Egress")
        egress = policy.get("egress", [])

        def allows(port, test=lambda peer: True):
            return any(any(p.get("port") == port for p in rule.get("ports", []))
                       and any(test(peer) for peer in rule.get("to", [{}])) for rule in egress)
        if not allows(53, lambda peer: peer.get("namespaceSelector", {}).get("matchLabels", {}).get(
                "kubernetes.io/metadata.name") == "kube-system"):
            finding(f"{where}: its NetworkPolicy allows no DNS (kube-system, port 53)")
        if kafka_port and not allows(kafka_port, lambda peer: peer.get("namespaceSelector", {}).get(
                "matchLabels", {}).get("kubernetes.io/metadata.name") == kafka_namespace):
            finding(f"{where}: its NetworkPolicy allows no egress to Kafka ({kafka_namespace}:{kafka_port}, "
                    "KAFKA_BOOTSTRAP_SERVERS)")
        apple = allows(443, lambda peer: "ipBlock" in peer)
        calls_apple = name in CALLS_APPLE
        if name == "receipt-ledger":
            # Only its refund responder calls Apple (the refund-responder component turns it on).
            calls_apple = any(variable.get("name") == "LEDGER_CONSUMPTION_RESPONSES" and variable.get("value") != "off"
                              for container in pod["containers"] for variable in container.get("env", []))
        if calls_apple and not apple:
            finding(f"{where}: calls Apple but its NetworkPolicy allows no egress on 443")
        if not calls_apple and apple:
            finding(f"{where}: never calls Apple but its NetworkPolicy allows egress to the internet on 443")
        ocsp = allows(80, lambda peer: "ipBlock" in peer)
        revocation_off = any(variable.get("name") == "APPLE_REVOCATION_CHECK" and variable.get("value") == "off"
                             for container in pod["containers"] for variable in container.get("env", []))
        checks_revocation = name in CHECKS_REVOCATION and not revocation_off
        if checks_revocation and not ocsp:
            finding(f"{where}: checks revocation with Apple's OCSP responder (http, port 80) but its NetworkPolicy "
                    "allows no egress on 80")
        if not checks_revocation and ocsp:
            finding(f"{where}: makes no OCSP requests but its NetworkPolicy allows egress to the internet on 80")
        if name in USES_LEDGER_DATABASE:
            clusters = {d["metadata"]["name"] for d in render("deploy/postgres") if d.get("kind") == "Cluster"}
            if not allows(5432, lambda peer: peer.get("podSelector", {}).get("matchLabels", {}).get("cnpg.io/cluster")
                          in clusters):
                finding(f"{where}: its NetworkPolicy allows no egress to the PostgreSQL Cluster {sorted(clusters)}")
        for container in pod["containers"]:
            for port in container.get("ports", []):
                if not any(any(p.get("port") == port["containerPort"] for p in rule.get("ports", []))
                           for rule in policy.get("ingress", [])):
                    finding(f"{where}: port {port['containerPort']} ({port['name']}) is served but no ingress rule "
                            "allows it (Prometheus and the Service's clients could not reach it)")


def check_ledger(directory, documents):
    """The ledger's Deployment: its database URL from a Secret that exists, and its grace period against the code."""
    ledger = next((d for d in documents if d.get("kind") == "Deployment"
                   and d["metadata"]["name"] == "receipt-ledger"), None)
    if ledger is None:
        return
    pod = ledger["spec"]["template"]["spec"]
    container = pod["containers"][0]
    secrets = {d["metadata"]["name"] for d in yaml.safe_load_all(read("docker/k8s/secrets.example.yaml")) if d}
    made_by_cnpg = {d["metadata"]["name"] + "-app" for d in render("deploy/postgres") if d.get("kind") == "Cluster"}
    url = next((v for v in container.get("env", []) if v["name"] == "LEDGER_DATABASE_URL"), None)
    reference = (url or {}).get("valueFrom", {}).get("secretKeyRef")
    if not reference:
        finding(f"{directory}: receipt-ledger must read LEDGER_DATABASE_URL from a Secret (it holds the password)")
    elif reference["name"] not in secrets | made_by_cnpg:
        finding(f"{directory}: LEDGER_DATABASE_URL from Secret {reference['name']}, which neither "
                f"secrets.example.yaml describes nor deploy/postgres's CloudNativePG Cluster makes {sorted(made_by_cnpg)}")
    elif reference["name"] in made_by_cnpg and reference["key"] != "uri":
        finding(f"{directory}: CloudNativePG's app Secret has the connection URI under key uri, not {reference['key']}")
    settings_text = read("Sources/Ledger/Service/LedgerSettings.swift")
    match = re.search(r'"LEDGER_SHUTDOWN_TIMEOUT_MS", default: (\d+)', settings_text)
    env = {v["name"]: v.get("value") for v in container.get("env", [])}
    shutdown_ms = int(env.get("LEDGER_SHUTDOWN_TIMEOUT_MS") or (match.group(1) if match else 0))
    if not match:
        finding("Sources/Ledger/Service/LedgerSettings.swift: cannot find LEDGER_SHUTDOWN_TIMEOUT_MS's default")
    pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    pause = int(pre_stop[-1]) if pre_stop and pre_stop[-1].isdigit() else 0
    bound = pause + shutdown_ms / 1000 + parts_bound("Sources/Ledger/Service/LedgerService.swift")
    if pod.get("terminationGracePeriodSeconds", 30) < bound:
        finding(f"{directory}: receipt-ledger terminationGracePeriodSeconds {pod.get('terminationGracePeriodSeconds', 30)}"
                f" is below its shutdown bound {bound} s")
    if env.get("LEDGER_GROUP_ID", "iap-ledger") not in topics_spec()["principals"]["receipt-ledger"]["groups"]:
        finding(f"{directory}: receipt-ledger's group {env.get('LEDGER_GROUP_ID')} is not granted to its principal")
    check_refund_responder(directory, documents, pod, container, env)


def mounted_file(pod, container, path):
    """The volume (and the key inside it) that puts `path` into the container, or (None, None)."""
    volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        prefix = mount["mountPath"].rstrip("/") + "/"
        if path.startswith(prefix):
            return volumes.get(mount["name"]), path[len(prefix):]
    return None, None


def check_refund_responder(directory, documents, pod, container, env):
    """The ledger's refund responder: a mode the code knows; the policy file mounted from a rendered ConfigMap that
    has it (its content is checked by LedgerSettingsTests through the ledger's own parser); in send mode, the App
    Store Server API key's settings and the key file mounted where they say."""
    mode = env.get("LEDGER_CONSUMPTION_RESPONSES", "off")
    if mode not in ("off", "dry-run", "send"):
        finding(f"{directory}: receipt-ledger LEDGER_CONSUMPTION_RESPONSES={mode} is not off, dry-run or send")
    policy = env.get("LEDGER_CONSUMPTION_POLICY_FILE")
    if policy:
        volume, key = mounted_file(pod, container, policy)
        name = (volume or {}).get("configMap", {}).get("name")
        config_map = next((d for d in documents if d.get("kind") == "ConfigMap"
                           and d["metadata"]["name"] == name), None)
        if config_map is None:
            finding(f"{directory}: receipt-ledger LEDGER_CONSUMPTION_POLICY_FILE={policy} is not in a mounted, "
                    "rendered ConfigMap")
        elif key not in config_map.get("data", {}):
            finding(f"{directory}: ConfigMap {name} has no {key} (LEDGER_CONSUMPTION_POLICY_FILE={policy})")
        else:
            try:
                json.loads(config_map["data"][key])
            except ValueError as error:
                finding(f"{directory}: ConfigMap {name} {key} is not JSON: {error}")
    if mode == "send":
        sources = {(source.get("secretRef") or {}).get("name") for source in container.get("envFrom", [])}
        if "receipt-apple-server-api" not in sources and "APPLE_KEY_ID" not in env:
            finding(f"{directory}: receipt-ledger sends consumption information but has no App Store Server API key "
                    "settings (secretRef receipt-apple-server-api)")
    if "receipt-apple-server-api" in {(s.get("secretRef") or {}).get("name") for s in container.get("envFrom", [])}:
        example = next(d for d in yaml.safe_load_all(read("docker/k8s/secrets.example.yaml"))
                       if d and d["metadata"]["name"] == "receipt-apple-server-api")
        key_file = example.get("stringData", {}).get("APPLE_PRIVATE_KEY_FILE", "")
        volume, key = mounted_file(pod, container, key_file)
        if (volume or {}).get("secret", {}).get("secretName") != "receipt-apple-server-api-key":
            finding(f"{directory}: receipt-ledger reads APPLE_PRIVATE_KEY_FILE={key_file} but does not mount "
                    "Secret receipt-apple-server-api-key there")


def present_parts(documents):
    """The optional parts a rendering holds, by the object each one brings."""
    brings = {"ledger": ("Deployment", "receipt-ledger"), "reconcile": ("CronJob", "receipt-reconcile"),
              "refund-responder": ("ConfigMap", "receipt-refund-policy")}
    names = {(d.get("kind"), d["metadata"]["name"]) for d in documents}
    return {part for part, key in brings.items() if key in names}


def referenced_secrets(node):
    """Every Secret name a rendered object refers to (envFrom, env, volumes, KEDA's TriggerAuthentication)."""
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "secretName" and isinstance(value, str):
                found.add(value)
            elif key in ("secretRef", "secretKeyRef") and isinstance(value, dict) and "name" in value:
                found.add(value["name"])
            elif key == "secretTargetRef" and isinstance(value, list):
                found.update(item.get("name") for item in value if isinstance(item, dict))
            found |= referenced_secrets(value)
    elif isinstance(node, list):
        for item in node:
            found |= referenced_secrets(item)
    return found


def check_optional_parts(directory, documents):
    """The base is the ingest and the verifiers alone; a rendering without a part has nothing of it, not even a
    reference to its Secrets; the refund responder and the reconciliation come only with the ledger."""
    parts = present_parts(documents)
    _, _, left_out = directory.partition(" without ")
    expected_absent = set(left_out.split("+")) if left_out else set()
    if directory in ("docker/k8s/base", "docker/k8s/jobs") or "/jobs" in directory:
        expected_absent = set(OPTIONAL_PARTS)
    for part in sorted(parts & expected_absent):
        finding(f"{directory}: renders the optional part {part}, which it should leave out")
    for part in ("refund-responder", "reconcile"):
        if part in parts and "ledger" not in parts:
            finding(f"{directory}: includes {part} without the ledger component it needs")
    labelled = {d["metadata"]["name"]: d["metadata"].get("labels", {}).get("receipt-verification/component")
                for d in yaml.safe_load_all(read("docker/k8s/secrets.example.yaml")) if d}
    for document in documents:
        for secret in sorted(referenced_secrets(document)):
            part = labelled.get(secret)
            if part and part not in parts:
                finding(f"{directory}: {document['kind']} {document['metadata']['name']} needs Secret {secret}, which "
                        f"belongs to the optional part {part} (secrets.example.yaml), not rendered here")


def check_database():
    """The ledger's durability rule (docs/OPERATIONS.md, receipt-ledger): a commit must survive a failover. And it is
    operated: backed up to an object store on a schedule with a retention, scraped by a PodMonitor of our own."""
    documents = render("deploy/postgres")
    clusters = [d for d in documents if d.get("kind") == "Cluster"]
    scheduled = [d for d in documents if d.get("kind") == "ScheduledBackup"]
    monitors = [d for d in render("deploy/monitoring") if d.get("kind") == "PodMonitor"]
    for cluster in clusters:
        name, spec = cluster["metadata"]["name"], cluster["spec"]
        backup = spec.get("backup", {})
        if not backup.get("barmanObjectStore", {}).get("destinationPath") or not backup.get("retentionPolicy"):
            finding(f"deploy/postgres: Cluster {name} has no object store backup with a retentionPolicy")
        if not any(s["spec"]["cluster"]["name"] == name and s["spec"].get("method", "barmanObjectStore")
                   == "barmanObjectStore" for s in scheduled):
            finding(f"deploy/postgres: no ScheduledBackup of Cluster {name} to its object store")
        if spec.get("monitoring", {}).get("enablePodMonitor"):
            finding(f"deploy/postgres: Cluster {name} uses the deprecated monitoring.enablePodMonitor; the PodMonitor "
                    "belongs in deploy/monitoring")
        if not any(m["spec"]["selector"].get("matchLabels", {}).get("cnpg.io/cluster") == name for m in monitors):
            finding(f"deploy/monitoring: no PodMonitor scrapes the CloudNativePG Cluster {name} (cnpg.io/cluster)")
    backup_secrets = {reference for cluster in clusters for reference in referenced_secrets(cluster)}
    examples = {d["metadata"]["name"] for d in yaml.safe_load_all(read("docker/k8s/secrets.example.yaml")) if d}
    for secret in sorted(backup_secrets - examples):
        finding(f"deploy/postgres refers to Secret {secret}, which docker/k8s/secrets.example.yaml does not describe")
    if not clusters:
        finding("deploy/postgres renders no CloudNativePG Cluster for the ledger")
    for cluster in clusters:
        postgresql = cluster["spec"].get("postgresql", {})
        parameters = postgresql.get("parameters", {})
        where = f"deploy/postgres: Cluster {cluster['metadata']['name']}"
        if parameters.get("synchronous_commit", "on") not in ("on", "remote_apply"):
            finding(f"{where}: synchronous_commit={parameters['synchronous_commit']} loses acknowledged commits")
        for parameter in ("fsync", "full_page_writes"):
            if parameters.get(parameter, "on") != "on":
                finding(f"{where}: {parameter} must stay on")
        synchronous = postgresql.get("synchronous", {})
        if cluster["spec"]["instances"] < 2 or synchronous.get("number", 0) < 1 or \
                synchronous.get("dataDurability", "required") != "required":
            finding(f"{where}: needs a synchronous standby (instances >= 2, postgresql.synchronous.number >= 1, "
                    "dataDurability required): a failover to an asynchronous one loses commits the ledger applied")


def check_kafka_cluster():
    """The example Strimzi cluster has what the services' settings, the KafkaUsers and the topics assume."""
    documents = render("deploy/kafka/strimzi-cluster")
    kafka = next((d for d in documents if d.get("kind") == "Kafka"), None)
    if kafka is None:
        finding("deploy/kafka/strimzi-cluster renders no Strimzi Kafka")
        return
    name, namespace = kafka["metadata"]["name"], kafka["metadata"].get("namespace")
    settings = dict(line.split("=", 1) for line in read("docker/k8s/settings/settings.env").splitlines()
                    if "=" in line and not line.startswith("#"))
    host, _, port = settings["KAFKA_BOOTSTRAP_SERVERS"].split(",")[0].rpartition(":")
    if host != f"{name}-kafka-bootstrap.{namespace}.svc":
        finding(f"settings.env KAFKA_BOOTSTRAP_SERVERS {host} is not Strimzi's bootstrap Service of {name} in {namespace}")
    listener = next((item for item in kafka["spec"]["kafka"]["listeners"] if str(item["port"]) == port), None)
    if listener is None:
        finding(f"deploy/kafka/strimzi-cluster: no listener on port {port} (KAFKA_BOOTSTRAP_SERVERS)")
    else:
        tls = settings.get("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT") in ("SSL", "SASL_SSL")
        if listener.get("tls") != tls:
            finding(f"deploy/kafka/strimzi-cluster: listener {listener['name']} tls={listener.get('tls')}, the "
                    f"services use {settings.get('KAFKA_SECURITY_PROTOCOL')}")
        mechanism = settings.get("KAFKA_SASL_MECHANISM", "").lower()
        if (listener.get("authentication") or {}).get("type") != mechanism:
            finding(f"deploy/kafka/strimzi-cluster: listener {listener['name']} authenticates with "
                    f"{(listener.get('authentication') or {}).get('type')}, the services with {mechanism}")
    users = [d for d in render("deploy/kafka/strimzi") if d.get("kind") == "KafkaUser"]
    for user in users:
        if user["metadata"]["labels"].get("strimzi.io/cluster") != name:
            finding(f"deploy/kafka/strimzi: KafkaUser {user['metadata']['name']} belongs to another cluster")
        if user["spec"]["authentication"]["type"] != (listener or {}).get("authentication", {}).get("type"):
            finding(f"deploy/kafka/strimzi: KafkaUser {user['metadata']['name']} authenticates otherwise than the listener")
    if users and (kafka["spec"]["kafka"].get("authorization") or {}).get("type") != "simple":
        finding("deploy/kafka/strimzi-cluster: the KafkaUsers' ACLs need spec.kafka.authorization type simple")
    for operator in ("topicOperator", "userOperator"):
        if operator not in kafka["spec"].get("entityOperator", {}):
            finding(f"deploy/kafka/strimzi-cluster: no {operator} (the KafkaTopics and KafkaUsers would not apply)")
    brokers = sum(pool["spec"]["replicas"] for pool in documents if pool.get("kind") == "KafkaNodePool"
                  and "broker" in pool["spec"]["roles"] and pool["metadata"]["labels"].get("strimzi.io/cluster") == name)
    most = max(topic["replicas"] for topic in topics_spec()["topics"])
    if brokers < most:
        finding(f"deploy/kafka/strimzi-cluster: {brokers} brokers, but topics want {most} replicas")
    groups = (kafka["spec"].get("kafkaExporter") or {}).get("groupRegex", "")
    for group in ("iap-verifier", "iap-ledger"):
        if not re.fullmatch(groups, group):
            finding(f"deploy/kafka/strimzi-cluster: the Kafka Exporter's groupRegex leaves out {group} (broker-side lag)")


def check_follower_grants():
    """The topic followers' group ids (the code's prefix) are granted to the principals that run them."""
    match = re.search(r'effective\["group.id"\] = "(follower-)\\\(topic\)(-)', read("Sources/Kafka/KafkaTopicFollower.swift"))
    if not match:
        finding("Sources/Kafka/KafkaTopicFollower.swift: the follower's group id is no longer follower-<topic>-...: "
                "update deploy/kafka/topics.yaml's group_prefixes and scripts/check-deployment.py")
        return
    settings = dict(line.split("=", 1) for line in read("docker/k8s/settings/settings.env").splitlines()
                    if "=" in line and not line.startswith("#"))
    principals = topics_spec()["principals"]
    for principal, setting in FOLLOWERS.items():
        prefix = f"follower-{settings[setting]}-"
        grants = (principals.get(principal) or {}).get("group_prefixes") or {}
        if "Read" not in grants.get(prefix, []) or "Describe" not in grants.get(prefix, []):
            finding(f"deploy/kafka/topics.yaml: {principal} follows {settings[setting]} with group ids {prefix}..., "
                    "but has no Read and Describe on that group prefix")


def check_scraped_namespaces():
    """The PodMonitors scrape every namespace an overlay deploys the services to, and every service is scraped."""
    namespaces = {d["metadata"]["name"] for directory in ("docker/k8s/overlays/production", "docker/k8s/overlays/sandbox")
                  for d in render(directory) if d.get("kind") == "Namespace"}
    # The services' PodMonitors (the Kafka Exporter's scrapes the Kafka clusters' namespaces).
    monitors = [d for d in render("deploy/monitoring") if d.get("kind") == "PodMonitor"
                and "app.kubernetes.io/name" in d["spec"]["selector"].get("matchLabels", {})]
    for monitor in monitors:
        selected = set(monitor["spec"].get("namespaceSelector", {}).get("matchNames")
                       or [monitor["metadata"].get("namespace")])
        if not monitor["spec"].get("namespaceSelector", {}).get("any") and namespaces - selected:
            finding(f"deploy/monitoring: PodMonitor {monitor['metadata']['name']} does not scrape "
                    f"{sorted(namespaces - selected)}")
    scraped = {monitor["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/name") for monitor in monitors}
    for service in SERVICES:
        if service not in scraped:
            finding(f"deploy/monitoring: no PodMonitor scrapes {service}")


def check_platform():
    check_scraped_namespaces()
    for directory in KUSTOMIZATIONS:
        documents = render(directory)
        check_namespaces(directory, documents)
        if directory.startswith("docker/k8s"):
            check_pods_on_a_cluster(directory, documents)
            check_ledger(directory, documents)
            check_optional_parts(directory, documents)
    check_database()
    check_kafka_cluster()
    check_follower_grants()


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    bin_dir = sys.argv[1]
    known = code_settings()
    check_runtime_packages(bin_dir)
    check_compose(bin_dir, known)
    check_kubernetes(known)
    check_docs(known)
    check_with_linters()
    check_platform()
    for message in findings:
        print(f"deployment check: {message}")
    print(f"deployment checks: {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
