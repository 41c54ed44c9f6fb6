#!/usr/bin/env python3
"""Static checks of the deployment files, runnable without a Docker engine or a cluster.

1. docker/Dockerfile's RUNTIME_PACKAGES is exactly the set of Debian packages that provide the shared libraries the
   built executables need once the Swift runtime is linked statically (as the Dockerfile builds them).
2. docker/compose.yaml and docker/k8s/*.yaml parse, and reference only images, ports and settings that exist;
   every Apple endpoint they configure is https, or plain http on loopback only (the rule the verifier enforces at
   start); the Kubernetes manifests validate against the Kubernetes schemas (kubernetes-validate) and the Dockerfile
   passes hadolint.
3. Every setting named in the docs exists in the code, and every setting the code reads is documented.

Usage: scripts/check-deployment.py <bin-dir>     (exit status 1 on any finding)
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from urllib.parse import urlparse

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXECUTABLES = ["receipt-ingest", "receipt-verifier", "fake-appstore", "receipt-replay", "receipt-tail",
               "receipt-notifications-backfill"]
SETTING_PREFIXES = ("KAFKA_", "RECEIPTS_", "RESULTS_", "RETRY_", "DLQ_", "INGEST_", "VERIFIER_", "APPLE_",
                    "ALLOWED_", "SANDBOX_", "LOG_", "FAKE_APPSTORE_", "REPLAY_", "RESULT_INDEX_",
                    "NOTIFICATIONS_", "EVENTS_", "PRODUCT_", "SIGNED_", "RECEIPT_")
# Allowed outside the code: read by docker/healthcheck.sh, or librdkafka pass-through (KAFKA_<PROPERTY>).
NON_CODE_SETTINGS = {"HEALTHCHECK_PORT"}
# Strings in the code that look like settings but are Apple's values (notification subtypes).
NOT_SETTINGS = {"PRODUCT_NOT_FOR_SALE"}
OFFICIAL_IMAGES = re.compile(r"^(apache/kafka|swift|debian):[\w.\-]+$")

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


def check_compose(bin_dir, known):
    compose = yaml.safe_load(read("docker/compose.yaml"))
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
            listen = environment.get("INGEST_LISTEN") or environment.get("VERIFIER_METRICS_LISTEN")
            if listen and ports and listen.split(":")[-1] not in ports:
                finding(f"compose service {name}: listens on {listen} but publishes {ports}")
            health = str(environment.get("HEALTHCHECK_PORT", ""))
            served = [listen.split(":")[-1]] if listen else []
            if "--port" in arguments:
                served.append(str(arguments[arguments.index("--port") + 1]))
            if health and served and health not in served:
                finding(f"compose service {name}: HEALTHCHECK_PORT {health} is not a port it serves {served}")


def check_kubernetes(known):
    documents = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docker", "k8s", "*.yaml"))):
        with open(path, encoding="utf-8") as handle:
            for document in yaml.safe_load_all(handle):
                if document:
                    documents.append((os.path.basename(path), document))
    kustomization = next((d for f, d in documents if d.get("kind") == "Kustomization"), None)
    if kustomization is None:
        finding("docker/k8s has no kustomization.yaml")
        return
    for resource in kustomization.get("resources", []):
        if not os.path.exists(os.path.join(ROOT, "docker", "k8s", resource)):
            finding(f"kustomization lists {resource}, which does not exist")
    image_names = {image["name"] for image in kustomization.get("images", [])}
    config_maps = {d["metadata"]["name"]: d for f, d in documents if d.get("kind") == "ConfigMap"}
    secrets = {d["metadata"]["name"]: d for f, d in documents if d.get("kind") == "Secret"}
    # ConfigMaps and Secrets given to containers with envFrom are settings; others are mounted as files.
    as_environment = set()
    for file, document in documents:
        if document.get("kind") == "Deployment":
            for container in document["spec"]["template"]["spec"]["containers"]:
                for source in container.get("envFrom", []):
                    reference = source.get("configMapRef") or source.get("secretRef")
                    as_environment.add(reference["name"])
    for name, config_map in config_maps.items():
        for variable, value in config_map.get("data", {}).items():
            if name in as_environment and not is_known_setting(variable, known):
                finding(f"ConfigMap {name}: setting {variable} is not read by any code")
            check_apple_url(f"ConfigMap {name}", variable, value)
    for name, secret in secrets.items():
        for variable in secret.get("stringData", {}):
            if name in as_environment and not is_known_setting(variable, known):
                finding(f"Secret {name}: setting {variable} is not read by any code")
    deployments = {d["metadata"]["name"]: d for f, d in documents if d.get("kind") == "Deployment"}
    for file, document in documents:
        kind = document.get("kind")
        if kind == "Deployment":
            for container in document["spec"]["template"]["spec"]["containers"]:
                if container["image"] not in image_names:
                    finding(f"{file}: image {container['image']} is not in kustomization images")
                port_names = {port["name"]: port["containerPort"] for port in container.get("ports", [])}
                for probe in ("readinessProbe", "livenessProbe"):
                    port = container.get(probe, {}).get("httpGet", {}).get("port")
                    if port is not None and port not in port_names and port not in port_names.values():
                        finding(f"{file}: {probe} uses port {port}, which the container does not declare")
                    path = container.get(probe, {}).get("httpGet", {}).get("path")
                    if path not in (None, "/healthz", "/readyz"):
                        finding(f"{file}: {probe} path {path} is not /healthz or /readyz")
                for variable in container.get("env", []):
                    check_apple_url(file, variable["name"], variable.get("value"))
                    if not is_known_setting(variable["name"], known):
                        finding(f"{file}: setting {variable['name']} is not read by any code")
                    listen = variable.get("value", "")
                    if variable["name"].endswith("_LISTEN") and int(listen.split(":")[-1]) not in port_names.values():
                        finding(f"{file}: {variable['name']}={listen} but the container ports are {port_names}")
                for source in container.get("envFrom", []):
                    reference = source.get("configMapRef") or source.get("secretRef")
                    if reference["name"] not in config_maps and reference["name"] not in secrets:
                        finding(f"{file}: envFrom {reference['name']} is defined nowhere in docker/k8s")
        if kind in ("PodDisruptionBudget", "Service"):
            selector = document["spec"]["selector"]
            labels = selector.get("matchLabels", selector)
            if not any(d["spec"]["selector"]["matchLabels"] == labels for d in deployments.values()):
                finding(f"{file}: {kind} {document['metadata']['name']} selects no Deployment")
        if kind == "ScaledObject":
            target = document["spec"]["scaleTargetRef"]["name"]
            if target not in deployments:
                finding(f"{file}: ScaledObject targets {target}, which is not a Deployment here")


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
    manifests = sorted(glob.glob(os.path.join(ROOT, "docker", "k8s", "*.yaml")))
    out = subprocess.run(["kubernetes-validate", "--strict", "--quiet"] + manifests, capture_output=True, text=True)
    errors = [line for line in (out.stdout + out.stderr).splitlines() if line.startswith("ERROR")]
    if out.returncode != 0 and errors:
        finding("kubernetes-validate docker/k8s:\n" + "\n".join(errors))


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
    for message in findings:
        print(f"deployment check: {message}")
    print(f"deployment checks: {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
