#!/usr/bin/env python3
"""Checks that a client guide (docs/clients/ios.md) names only what the ingest's API defines.

Every request and response field name, query parameter, header, outcome, reason and error code the guide uses must
exist in schemas/openapi.yaml or the message schemas it refers to (result.schema.json, transaction.schema.json, ...).
What is checked in the guide:

- ```json blocks: every object key (the blocks must be valid JSON);
- ```swift blocks: dictionary keys ("name": ...), subscripts (["name"]), CodingKeys (case x = "name"), query items
  (URLQueryItem(name: "name" ...)) and header fields (forHTTPHeaderField: "Name"); string literals compared with
  == or used in `case "..."` patterns (outcomes, reasons, error codes);
- prose: every `snake_case` token in backticks (at least one underscore).

Usage: check-client-guide.py [GUIDE] [SCHEMAS_DIR]; prints what is unknown and exits 1, else prints a count.
"""
import json
import os
import re
import sys

import yaml


def schema_names(schemas_dir):
    """Property names, parameter and header names, enum and const values, and backticked or `code:` tokens."""
    known = set()
    seen_files = set()

    def walk(node, origin):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    known.update(value.keys())
                elif key == "required" and isinstance(value, list):
                    known.update(v for v in value if isinstance(v, str))
                elif key in ("enum",) and isinstance(value, list):
                    known.update(v for v in value if isinstance(v, str))
                elif key == "const" and isinstance(value, str):
                    known.add(value)
                elif key == "headers" and isinstance(value, dict):
                    known.update(value.keys())
                elif key == "$ref" and isinstance(value, str) and not value.startswith("#"):
                    load(os.path.join(os.path.dirname(origin), value.split("#", 1)[0]))
                if key == "parameters" and isinstance(value, list):
                    for parameter in value:
                        if isinstance(parameter, dict) and "name" in parameter:
                            known.add(parameter["name"])
                if key == "code" and isinstance(value, str):
                    known.add(value)
                if key in ("description", "summary") and isinstance(value, str):
                    known.update(re.findall(r"`([A-Za-z0-9_.-]+)`", value))
                walk(value, origin)
        elif isinstance(node, list):
            for value in node:
                walk(value, origin)

    def load(path):
        path = os.path.normpath(path)
        if path in seen_files:
            return
        seen_files.add(path)
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle) if path.endswith((".yaml", ".yml")) else json.load(handle)
        walk(document, path)

    openapi = os.path.join(schemas_dir, "openapi.yaml")
    load(openapi)
    # Headers HTTP itself implies: the media type of the JSON bodies, and the bearer scheme's header.
    with open(openapi, encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    schemes = (document.get("components") or {}).get("securitySchemes") or {}
    if any(s.get("type") == "http" and s.get("scheme") == "bearer" for s in schemes.values()):
        known.add("Authorization")
    if "application/json" in json.dumps(document.get("paths")):
        known.add("Content-Type")
    return known, seen_files


def json_keys(value, out):
    if isinstance(value, dict):
        for key, item in value.items():
            out.append(key)
            json_keys(item, out)
    elif isinstance(value, list):
        for item in value:
            json_keys(item, out)


SWIFT_PATTERNS = [
    re.compile(r'"([A-Za-z_][A-Za-z0-9_-]*)"\s*:(?!:)'),  # dictionary keys
    re.compile(r'\[\s*"([A-Za-z_][A-Za-z0-9_-]*)"\s*\]'),  # subscripts
    re.compile(r'case\s+\w+\s*=\s*"([A-Za-z_][A-Za-z0-9_-]*)"'),  # CodingKeys
    re.compile(r'URLQueryItem\(\s*name:\s*"([A-Za-z_][A-Za-z0-9_-]*)"'),  # query items
    re.compile(r'forHTTPHeaderField:\s*"([A-Za-z][A-Za-z0-9-]*)"'),  # request headers
    re.compile(r'value\(forHTTPHeaderField:\s*"([A-Za-z][A-Za-z0-9-]*)"'),  # response headers
    re.compile(r'==\s*"([a-z][a-z0-9_]*)"'),  # compared values (outcome, reason, code)
    re.compile(r'case\s+((?:"[a-z][a-z0-9_]*"\s*,?\s*)+):'),  # switch cases over values
]


def guide_names(text):
    """(name, line number, where) for every API name the guide uses."""
    names = []
    fence = re.compile(r"^```(\w*)\s*$")
    language = None
    block = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        match = fence.match(line.strip())
        if match and language is None:
            language, block, start = (match.group(1) or "text"), [], number
            continue
        if match and language is not None and match.group(1) == "":
            body = "\n".join(block)
            if language == "json":
                try:
                    parsed = json.loads(body)
                except json.JSONDecodeError as error:
                    raise SystemExit(f"check-client-guide: line {start}: a json block is not valid JSON: {error}")
                keys = []
                json_keys(parsed, keys)
                names.extend((key, start, "json block") for key in keys)
            elif language == "swift":
                for offset, code_line in enumerate(block, 1):
                    code = code_line.split("//", 1)[0]
                    for pattern in SWIFT_PATTERNS:
                        for found in pattern.findall(code):
                            for name in re.findall(r'"([^"]+)"', found) if found.startswith('"') else [found]:
                                names.append((name, start + offset, "swift block"))
            language = None
            continue
        if language is not None:
            block.append(line)
        else:
            for token in re.findall(r"`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`", line):
                names.append((token, number, "prose"))
    if language is not None:
        raise SystemExit(f"check-client-guide: line {start}: a code block is not closed")
    return names


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    guide = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "docs", "clients", "ios.md")
    schemas_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "schemas")
    known, files = schema_names(schemas_dir)
    with open(guide, encoding="utf-8") as handle:
        names = guide_names(handle.read())
    known_lower = {name.lower() for name in known}
    unknown = [(n, line, where) for n, line, where in names if n not in known and n.lower() not in known_lower]
    if unknown:
        for name, line, where in unknown:
            print(f"check-client-guide: {guide}:{line}: '{name}' ({where}) is not in {schemas_dir}/openapi.yaml "
                  "or the schemas it refers to")
        sys.exit(1)
    if len(names) < 20:
        print(f"check-client-guide: only {len(names)} names found in {guide}: is the guide's code still checked?")
        sys.exit(1)
    print(f"check-client-guide: {len(set(n for n, _, _ in names))} names in {os.path.basename(guide)} "
          f"all defined in {len(files)} schema files")


if __name__ == "__main__":
    main()
