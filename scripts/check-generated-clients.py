#!/usr/bin/env python3
"""schemas/ as code generators read it: generated clients and models compile and read real messages exactly.

1. The rules a generator needs and no validator checks: every integer that can pass 2^31 (epoch milliseconds, Kafka
   offsets, prices, amounts, balances, Apple's numeric ids) says `format: int64`, in the message schemas and both
   OpenAPIs; no object is left without properties or a declared `additionalProperties`; schemas/openapi.yaml's copy
   of the result schemas is what scripts/render-openapi.py makes of them.
2. openapi-generator (PyPI openapi-generator-cli, its own jar) makes Java clients (`-g java --library native`:
   java.net.http and Jackson) of schemas/openapi.yaml and schemas/ledger-openapi.yaml and Java models of the message
   schemas (through a small OpenAPI document naming them); javac compiles all three against Jackson (the copy inside
   openapi-generator's jar: Debian has no jackson-datatype-jsr310, which the generated client needs) and Debian's
   jakarta-annotation-api. openapi-python-client makes Python clients of both OpenAPIs, datamodel-code-generator
   pydantic models of the message schemas.
3. Every example in the schemas and every message in schemas/samples/ (real messages, written by the real binaries:
   scripts/capture-samples.sh) is decoded with each generated model that reads it and written back; every value
   must come back exactly (a 64-bit millisecond date read into a 32-bit field fails, one read into a double comes
   back changed), and purchase_date_ms 1764489500000 of result.schema.json's example is asserted by name.

What was generated and compiled is kept under .build/generated-clients and reused while the schemas, this script,
the harness and the generators' versions are unchanged: about 60 s when they changed, 5 s when not.

Usage: scripts/check-generated-clients.py      (exit status 1 on any finding)
"""
import glob
import hashlib
import importlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(ROOT, "schemas")
WORK = os.path.join(ROOT, ".build", "generated-clients")
HARNESS = os.path.join(ROOT, "scripts", "generated-clients", "DecodeWithGeneratedJava.java")
JAKARTA_ANNOTATIONS = "/usr/share/java/jakarta-annotation-api.jar"
GENERATORS = ("openapi-generator-cli", "openapi-python-client", "datamodel-code-generator")
# The message schemas by the topic they describe, and the model names the generators give them.
MESSAGES = {
    "submission": ("submission.schema.json", "Submission", "PurchaseSubmissionSchemaVersion1"),
    "result": ("result.schema.json", "VerificationResult", "VerificationResultSchemaVersion1"),
    "retry": ("retry.schema.json", "RetryRecord", "RetryRecordSchemaVersion1"),
    "dlq": ("dlq.schema.json", "DeadLetterRecord", "DeadLetterRecordSchemaVersion1"),
    "notification": ("notification.schema.json", "NotificationRecord",
                     "AppStoreServerNotificationRecordSchemaVersion1"),
    "event": ("event.schema.json", "PurchaseEvent", "PurchaseEventSchemaVersion1"),
}
# Integers that can pass 2^31 by their name: epoch milliseconds, offsets, money and counts of it, Apple's numeric ids.
INT64_NAMES = re.compile(r"(_ms|offset|price|amount\w*|balances?|id|identifier)$", re.IGNORECASE)

findings = []


def finding(message):
    findings.append(message)


# ---- 1. rules ----------------------------------------------------------------------------------------------------
def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle) if path.endswith(".json") else yaml.safe_load(handle)


def check_rules():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "render-openapi.py"), "--check"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        finding(out.stdout.strip() or out.stderr.strip())

    def walk(file, node, path, name):
        if isinstance(node, dict):
            types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
            if "integer" in types and INT64_NAMES.search(name or "") and node.get("format") != "int64":
                finding(f"schemas/{file} {path}: integer {name} can pass 2^31 but has no format: int64 (generated "
                        "Java, Kotlin and Go clients would read it into 32 bits)")
            if "object" in types and "properties" not in node and "additionalProperties" not in node \
                    and "$ref" not in node and "oneOf" not in node and "allOf" not in node:
                finding(f"schemas/{file} {path}: an object with neither properties nor additionalProperties (give "
                        "generators a shape: its members, or additionalProperties: true for a map)")
            for key, value in node.items():
                if key in ("examples", "example"):
                    continue
                child = name
                if path.endswith("/properties") or path.endswith("/schemas"):
                    child = key
                elif key == "additionalProperties":
                    child = name
                walk(file, value, f"{path}/{key}", child)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(file, item, f"{path}[{index}]", name)
    for path in sorted(glob.glob(os.path.join(SCHEMAS, "*.schema.json"))) + \
            [os.path.join(SCHEMAS, "openapi.yaml"), os.path.join(SCHEMAS, "ledger-openapi.yaml")]:
        walk(os.path.basename(path), load(path), "", None)


# ---- 2. generate and compile -------------------------------------------------------------------------------------
def run(command, what, cwd=None):
    out = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    if out.returncode != 0:
        log = (out.stdout + out.stderr).strip().splitlines()
        finding(f"{what} failed ({' '.join(command[:3])} ...):\n" + "\n".join(log[-40:]))
        return False
    return True


def fingerprint():
    digest = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(SCHEMAS, "*.json")) + glob.glob(os.path.join(SCHEMAS, "*.yaml"))) \
            + [os.path.abspath(__file__), HARNESS]:
        digest.update(path.encode())
        with open(path, "rb") as handle:
            digest.update(handle.read())
    for package in GENERATORS:
        digest.update(f"{package}={importlib.metadata.version(package)}".encode())
    digest.update(subprocess.run(["javac", "-version"], capture_output=True, text=True).stdout.encode())
    return digest.hexdigest()


def generator_jar():
    import openapi_generator_cli
    return os.path.join(os.path.dirname(openapi_generator_cli.__file__), "openapi-generator.jar")


def java_classpath():
    return os.pathsep.join([os.path.join(WORK, "java-classes"), os.path.join(WORK, "jackson"), JAKARTA_ANNOTATIONS])


def generate_and_compile():
    """Everything under WORK, from scratch. Returns True when every step succeeded."""
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    # The message schemas as one OpenAPI document's components (openapi-generator reads OpenAPI, not bare JSON
    # Schema); the result's transactions come in through its reference.
    messages_spec = os.path.join(WORK, "messages-openapi.yaml")
    with open(messages_spec, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"openapi": "3.1.0", "info": {"title": "receipt-verification messages", "version": "1"},
                        "paths": {}, "components": {"schemas": {
                            java: {"$ref": os.path.join(SCHEMAS, file)} for file, java, _ in MESSAGES.values()}}},
                       handle)
    configs = []
    for name, spec in (("ingest", os.path.join(SCHEMAS, "openapi.yaml")),
                       ("ledger", os.path.join(SCHEMAS, "ledger-openapi.yaml")), ("messages", messages_spec)):
        config = os.path.join(WORK, f"java-{name}.config.yaml")
        with open(config, "w", encoding="utf-8") as handle:
            yaml.safe_dump({
                "generatorName": "java", "library": "native", "inputSpec": spec,
                "outputDir": os.path.join(WORK, f"java-{name}"), "invokerPackage": f"org.receipts.{name}",
                "apiPackage": f"org.receipts.{name}.api", "modelPackage": f"org.receipts.{name}.model",
                # java.time dates, no jackson-databind-nullable (not packaged here), jakarta annotations (Debian's).
                "additionalProperties": {"dateLibrary": "java8", "openApiNullable": False, "useJakartaEe": True,
                                         "hideGenerationTimestamp": True},
                "globalProperties": {"apiTests": "false", "modelTests": "false", "apiDocs": "false",
                                     "modelDocs": "false"},
            }, handle)
        configs.append(config)
    ok = run(["java", "-jar", generator_jar(), "batch", "--fail-fast"] + configs, "openapi-generator (Java)")
    # Jackson, as openapi-generator's own jar carries it.
    with zipfile.ZipFile(generator_jar()) as jar:
        for member in jar.namelist():
            if member.startswith("com/fasterxml/jackson/") and member.endswith(".class"):
                jar.extract(member, os.path.join(WORK, "jackson"))
    if not os.path.exists(JAKARTA_ANNOTATIONS):
        finding(f"{JAKARTA_ANNOTATIONS} is missing: run scripts/install-deps.sh (libjakarta-annotation-api-java)")
        return False
    sources = glob.glob(os.path.join(WORK, "java-*", "src", "main", "java", "**", "*.java"), recursive=True)
    os.makedirs(os.path.join(WORK, "java-classes"))
    ok = ok and run(["javac", "-nowarn", "-encoding", "UTF-8", "-d", os.path.join(WORK, "java-classes"),
                     "-cp", java_classpath()] + sources + [HARNESS], "javac of the generated Java")
    # Python: openapi-python-client for the OpenAPIs, datamodel-code-generator for the message schemas (only the
    # *.schema.json files: the directory also holds the OpenAPIs and a README).
    for name, spec in (("ingest", "openapi.yaml"), ("ledger", "ledger-openapi.yaml")):
        config = os.path.join(WORK, f"python-{name}.config.yaml")
        with open(config, "w", encoding="utf-8") as handle:
            yaml.safe_dump({"project_name_override": f"receipts-{name}-client",
                            "package_name_override": f"receipts_{name}_client"}, handle)
        ok = run(["openapi-python-client", "generate", "--path", os.path.join(SCHEMAS, spec), "--config", config,
                  "--output-path", os.path.join(WORK, f"python-{name}", f"receipts_{name}_client"), "--meta", "none",
                  "--overwrite"],
                 f"openapi-python-client ({spec})") and ok
    message_schemas = os.path.join(WORK, "message-schemas")
    os.makedirs(message_schemas)
    for path in glob.glob(os.path.join(SCHEMAS, "*.schema.json")):
        shutil.copy(path, message_schemas)
    os.makedirs(os.path.join(WORK, "python-messages"))
    ok = run(["datamodel-codegen", "--input", message_schemas, "--input-file-type", "jsonschema",
              "--output", os.path.join(WORK, "python-messages", "receipts_messages"),
              "--output-model-type", "pydantic_v2.BaseModel", "--formatters", "builtin"],
             "datamodel-code-generator (message schemas)") and ok
    return ok


# ---- 3. decode -----------------------------------------------------------------------------------------------------
def documents():
    """(kind, where, document): every example of the schemas and every captured real message."""
    found = []
    for kind, (file, _, _) in MESSAGES.items():
        for index, example in enumerate(load(os.path.join(SCHEMAS, file)).get("examples", [])):
            found.append((kind, f"{file} example {index}", example))
    openapi = load(os.path.join(SCHEMAS, "openapi.yaml"))
    for name in ("VerifiedResult", "VerifiedAppTransactionResult"):
        found.append(("result", f"openapi.yaml example {name}", openapi["components"]["examples"][name]["value"]))
    ledger = load(os.path.join(SCHEMAS, "ledger-openapi.yaml"))
    for name, example in ledger["components"]["examples"].items():
        if name in ("User", "Purchase"):
            found.append((name.lower(), f"ledger-openapi.yaml example {name}", example["value"]))
    samples = sorted(glob.glob(os.path.join(SCHEMAS, "samples", "*.jsonl")))
    if not samples:
        finding("schemas/samples/ has no captured messages (scripts/capture-samples.sh)")
    for path in samples:
        kind = os.path.basename(path).split(".")[0]
        if kind not in MESSAGES:
            finding(f"schemas/samples/{os.path.basename(path)}: not a message kind ({', '.join(MESSAGES)})")
            continue
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    found.append((kind, f"samples/{os.path.basename(path)} line {number}", json.loads(line)))
    return found


def differences(original, decoded, path="$"):
    """Where `decoded` (a model written back) does not give back `original`'s values exactly. A null may come back
    absent (generated models leave unset members out); every other value must come back with its type."""
    if isinstance(original, dict):
        if not isinstance(decoded, dict):
            return [f"{path}: an object came back as {decoded!r}"]
        found = []
        for key, value in original.items():
            if key not in decoded:
                if value is not None:
                    found.append(f"{path}.{key}: missing (the model has no such member)")
            else:
                found += differences(value, decoded[key], f"{path}.{key}")
        return found
    if isinstance(original, list):
        if not isinstance(decoded, list) or len(decoded) != len(original):
            return [f"{path}: a list of {len(original)} came back as {decoded!r}"]
        return [item for index, value in enumerate(original) for item in differences(value, decoded[index],
                                                                                      f"{path}[{index}]")]
    if type(original) is not type(decoded) or original != decoded:
        return [f"{path}: {original!r} came back as {decoded!r}"]
    return []


def decode_java(inputs):
    """Every document through the generated Java models; returns {where: written-back JSON}."""
    java_models = {kind: [f"org.receipts.messages.model.{java}"] for kind, (_, java, _) in MESSAGES.items()}
    java_models["result"].append("org.receipts.ingest.model.VerificationResult")
    java_models["user"] = ["org.receipts.ledger.model.User"]
    java_models["purchase"] = ["org.receipts.ledger.model.Purchase"]
    directory = os.path.join(WORK, "documents")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    manifest, wheres = [], {}
    for index, (kind, where, document) in enumerate(inputs):
        path = os.path.join(directory, f"{index}.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(document, handle)
        for model in java_models[kind]:
            manifest.append(f"{model}\t{path}")
            wheres.setdefault(path, []).append((model, where, document))
    with open(os.path.join(WORK, "documents.tsv"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(manifest) + "\n")
    out = subprocess.run(["java", "-cp", java_classpath(), "DecodeWithGeneratedJava",
                          os.path.join(WORK, "documents.tsv")], capture_output=True, text=True)
    lines = out.stdout.splitlines()
    if len(lines) != len(manifest):
        finding(f"the Java decoder answered {len(lines)} of {len(manifest)} documents:\n{out.stderr.strip()[-2000:]}")
    decoded = {}
    for line, entry in zip(lines, manifest):
        model = entry.split("\t")[0]
        path, _, rest = line.partition("\t")
        where, document = next((w, d) for m, w, d in wheres[path] if m == model)
        if rest.startswith("ERROR\t"):
            finding(f"generated Java {model} cannot read {where}: {rest[6:]}")
            continue
        for difference in differences(document, json.loads(rest)):
            finding(f"generated Java {model}, {where}: {difference}")
        decoded[(model, where)] = json.loads(rest)
    return decoded


def decode_python(inputs):
    """Every document through the generated Python clients and models; returns {(model, where): written back}."""
    for name in ("python-ingest", "python-ledger", "python-messages"):
        sys.path.insert(0, os.path.join(WORK, name))
    decoded = {}
    try:
        ingest = importlib.import_module("receipts_ingest_client.models")
        ledger = importlib.import_module("receipts_ledger_client.models")
        readers = {kind: [] for kind in list(MESSAGES) + ["user", "purchase"]}
        for kind, (file, _, python) in MESSAGES.items():
            module = importlib.import_module("receipts_messages." + file.replace(".schema.json", "_schema"))
            model = getattr(module, python)
            readers[kind].append((f"receipts_messages {python}", lambda d, m=model: m.model_validate(d).model_dump(
                mode="json", by_alias=True)))
        readers["result"].append(("receipts_ingest_client VerificationResult",
                                  lambda d: ingest.VerificationResult.from_dict(d).to_dict()))
        readers["user"].append(("receipts_ledger_client User", lambda d: ledger.User.from_dict(d).to_dict()))
        readers["purchase"].append(("receipts_ledger_client Purchase",
                                    lambda d: ledger.Purchase.from_dict(d).to_dict()))
    except (ImportError, AttributeError) as error:
        finding(f"the generated Python cannot be imported: {error}")
        return decoded
    for kind, where, document in inputs:
        for model, read in readers[kind]:
            try:
                back = read(json.loads(json.dumps(document)))
            except Exception as error:  # a generated model's own validation error, whatever its class
                finding(f"generated Python {model} cannot read {where}: {type(error).__name__}: {error}")
                continue
            for difference in differences(document, back):
                finding(f"generated Python {model}, {where}: {difference}")
            decoded[(model, where)] = back
    return decoded


def check_samples_against_schemas(inputs):
    """The captured messages are what the contract says (so a stale capture cannot pass for a real message)."""
    from jsonschema import Draft202012Validator
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012
    base = "https://receipt-verification.invalid/schemas/"
    registry = Registry().with_resources(
        (base + os.path.basename(path), DRAFT202012.create_resource(load(path)))
        for path in glob.glob(os.path.join(SCHEMAS, "*.schema.json")))
    for kind, where, document in inputs:
        if where.startswith("samples/"):
            validator = Draft202012Validator({"$ref": base + MESSAGES[kind][0]}, registry=registry)
            for error in validator.iter_errors(document):
                finding(f"schemas/{where} does not match {MESSAGES[kind][0]} at {error.json_path}: {error.message}")


def main():
    started = time.monotonic()
    for tool in ("java", "javac", "openapi-python-client", "datamodel-codegen"):
        if shutil.which(tool) is None:
            finding(f"{tool} is not installed (scripts/install-deps.sh)")
    check_rules()
    if findings:
        return report(started, reused=False)
    key = fingerprint()
    key_file = os.path.join(WORK, "fingerprint")
    reused = os.path.exists(key_file) and open(key_file, encoding="utf-8").read() == key
    if not reused:
        if not generate_and_compile():
            return report(started, reused)
        with open(key_file, "w", encoding="utf-8") as handle:
            handle.write(key)
    inputs = documents()
    check_samples_against_schemas(inputs)
    java = decode_java(inputs)
    python = decode_python(inputs)
    # The issue's own case by name: the example's purchase date, in milliseconds past 2^31, read exactly.
    where = "result.schema.json example 0"
    for decoded, model in ((java, "org.receipts.messages.model.VerificationResult"),
                           (java, "org.receipts.ingest.model.VerificationResult"),
                           (python, "receipts_ingest_client VerificationResult")):
        value = ((decoded.get((model, where)) or {}).get("transactions") or [{}])[0].get("purchase_date_ms")
        if value != 1764489500000:
            finding(f"{model} reads the example's purchase_date_ms as {value!r}, not 1764489500000")
    print(f"check-generated-clients: {len(inputs)} documents ({sum(1 for _, w, _ in inputs if w.startswith('samples/'))}"
          f" captured messages) decoded by {len({m for m, _ in java})} generated Java and "
          f"{len({m for m, _ in python})} generated Python models")
    return report(started, reused)


def report(started, reused):
    for message in findings:
        print(f"check-generated-clients: {message}")
    print(f"check-generated-clients: {len(findings)} findings ({time.monotonic() - started:.0f} s"
          f"{', generated code reused' if reused else ''})")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
