"""Derives apple-models.json (next to this file) from Apple's Java library's model classes, once.

    python3 derive-apple-models.py /path/to/app-store-server-library-java > apple-models.json

For every model reachable from the answers the fake App Store imitates (ROOTS), the JSON member names Apple's
library (de)serializes (`@JsonProperty(SERIALIZED_NAME_...)`) and their wire types, read from the field
declarations (a bare `@JsonProperty` names the member after its field): String and UUID -> "string", Integer/Long/int/long -> "integer", Boolean -> "boolean",
List<T> -> ["T"], Map -> "object", another model class -> its name. Nothing of the library's code is copied: only
member names and types, which are Apple's documented wire format. The commit read is recorded in the output.
"""
import json
import re
import subprocess
import sys

ROOTS = [
    "JWSTransactionDecodedPayload", "JWSRenewalInfoDecodedPayload", "AppTransaction",
    "ResponseBodyV2DecodedPayload", "ResponseBodyV2", "TransactionInfoResponse", "HistoryResponse",
    "StatusResponse", "OrderLookupResponse", "RefundHistoryResponse", "NotificationHistoryResponse",
    "CheckTestNotificationResponse", "SendTestNotificationResponse", "ExtendRenewalDateResponse",
    "MassExtendRenewalDateResponse", "MassExtendRenewalDateStatusResponse", "AppTransactionInfoResponse",
    "ErrorPayload",
]
MODEL_DIR = "src/main/java/com/apple/itunes/storekit/model"
SCALARS = {
    "String": "string", "UUID": "string", "Integer": "integer", "Long": "integer", "int": "integer",
    "long": "integer", "Boolean": "boolean", "boolean": "boolean",
}


def source(repo, name):
    return subprocess.run(["git", "-C", repo, "show", f"HEAD:{MODEL_DIR}/{name}.java"], check=True,
                          capture_output=True, text=True).stdout


def wire_type(java_type):
    java_type = java_type.strip()
    if java_type in SCALARS:
        return SCALARS[java_type]
    list_of = re.fullmatch(r"List<(\w+)>", java_type)
    if list_of:
        return [wire_type(list_of.group(1))]
    if java_type.startswith("Map<"):
        return "object"
    return java_type


def members(text):
    constants = dict(re.findall(r'String (SERIALIZED_NAME_\w+) = "([^"]+)"', text))
    found = {}
    pattern = (r"@JsonProperty\((?:value\s*=\s*)?(SERIALIZED_NAME_\w+)[^)]*\)\s*(?:@\w+(?:\([^)]*\))?\s*)*"
               r"(?:private|protected)\s+([\w<>, ]+?)\s+\w+\s*[=;]")
    for constant, java_type in re.findall(pattern, text):
        found[constants[constant]] = wire_type(java_type)
    # A bare @JsonProperty names the member after the field (ErrorPayload).
    for java_type, field in re.findall(r"@JsonProperty\s+(?:private|protected)\s+([\w<>, ]+?)\s+(\w+)\s*[=;]", text):
        found[field] = wire_type(java_type)
    return found


def main(repo):
    commit = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    models, pending = {}, list(ROOTS)
    while pending:
        name = pending.pop()
        if name in models:
            continue
        models[name] = members(source(repo, name))
        for value in models[name].values():
            inner = value[0] if isinstance(value, list) else value
            if inner not in ("string", "integer", "boolean", "object"):
                pending.append(inner)
    output = {
        "source": {"repository": "apple/app-store-server-library-java", "commit": commit, "path": MODEL_DIR,
                   "license": "MIT (LICENSE next to this file)"},
        "models": {name: models[name] for name in sorted(models)},
    }
    json.dump(output, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
