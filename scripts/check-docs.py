#!/usr/bin/env python3
"""The docs' listings against what they list, so that none can drift from the code (make test):

- routes: every `METHOD /path` that README.md or docs/ names is an operation of schemas/openapi.yaml (the ingest) or
  schemas/ledger-openapi.yaml (the ledger), and README.md's "HTTP API" section names every operation of the
  ingest's OpenAPI (the ledger's API is listed by its OpenAPI alone; the docs point to it);
- settings: every row of docs/OPERATIONS.md's settings tables is a variable the code reads, every variable the code
  reads through `Settings` is in those tables (or named in docs/OPERATIONS.md's text), and a default the code states
  as a literal number or string is the one the table gives;
- the target graph: the diagram between docs/ARCHITECTURE.md's `target-graph` markers is the one Package.swift gives
  (`swift package dump-package`); `--write` regenerates it after a change of targets or dependencies.

Metrics are checked against the services' live /metrics by scripts/check-monitoring.py (every metric family the
services export is in docs/OPERATIONS.md, every metric its tables name is exported).

Usage: scripts/check-docs.py [--write]      (exit status 1 on any finding)
"""
import glob
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPENAPIS = ("schemas/openapi.yaml", "schemas/ledger-openapi.yaml")
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
GRAPH_START = "<!-- target-graph: generated from Package.swift by scripts/check-docs.py --write; do not edit -->"
GRAPH_END = "<!-- /target-graph -->"
findings = []


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return handle.read()


def finding(message):
    findings.append(message)


def docs():
    """README.md and every Markdown file under docs/, by path."""
    paths = ["README.md"] + sorted(os.path.relpath(path, ROOT)
                                   for path in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return {path: read(path) for path in paths}


# MARK: Routes

def operations(path):
    """(METHOD, path template) of every operation an OpenAPI document defines."""
    spec = yaml.safe_load(read(path))
    return {(method.upper(), route) for route, item in (spec.get("paths") or {}).items()
            for method in item if method in METHODS}


def template_pattern(route):
    """A path template as a regex: `{name}` stands for one segment."""
    return re.compile("^" + re.sub(r"\\\{[^/]*?\\\}", "[^/]+", re.escape(route)) + "$")


def named_routes(text):
    """(METHOD, path) of every `METHOD /path` a text names: our paths only (`/v1/...` and the health endpoints),
    placeholders (`{id}`, `<id>`) kept as one segment, the query dropped."""
    routes = []
    for match in re.finditer(r"\b(GET|PUT|POST|DELETE|PATCH|HEAD) (/[A-Za-z0-9_\-./{}<>]*)", text):
        path = match.group(2).rstrip(".")
        if path.startswith("/v1/") or path in ("/healthz", "/readyz", "/metrics"):
            routes.append((match.group(1), re.sub(r"<[^>/]*>", "{placeholder}", path)))
    return routes


def matches(route, known):
    method, path = route
    return any(method == known_method and template_pattern(template).match(path) for known_method, template in known)


def check_routes(texts):
    known = set()
    for path in OPENAPIS:
        known |= operations(path)
    for path, text in texts.items():
        for route in named_routes(text):
            if not matches(route, known):
                finding(f"{path}: {route[0]} {route[1]} is not an operation of {' or '.join(OPENAPIS)}")
    section = re.search(r"^### HTTP API.*?(?=^#{1,3} )", texts["README.md"], re.MULTILINE | re.DOTALL)
    listed = {(method, path) for method, path in named_routes(section.group(0) if section else "")}
    for method, template in sorted(operations(OPENAPIS[0])):
        if not any(method == listed_method and template_pattern(template).match(listed_path)
                   for listed_method, listed_path in listed):
            finding(f"README.md, HTTP API: {method} {template} ({OPENAPIS[0]}) is not listed")


# MARK: Settings

SETTINGS_READ = re.compile(
    r"\.(int|string|required|double|bool|list|choice)\(\s*\"([A-Z][A-Z0-9_]+)\""
    r"(?:,\s*from:[^,]+)?(?:,\s*default:\s*([^,)\n]+))?")


def literal(text):
    """The value of a default the code states as a literal (`30_000`, `1 << 20`, `"info"`, `true`), else None."""
    text = text.strip()
    if re.fullmatch(r"\d[\d_]*", text):
        return str(int(text.replace("_", "")))
    shifted = re.fullmatch(r"(\d+) << (\d+)", text)
    if shifted:
        return str(int(shifted.group(1)) << int(shifted.group(2)))
    if re.fullmatch(r'"[^"]*"', text):
        return text[1:-1]
    if text in ("true", "false"):
        return text
    return None


def check_settings(operations_text):
    sources = {os.path.relpath(path, ROOT): read(os.path.relpath(path, ROOT))
               for path in glob.glob(os.path.join(ROOT, "Sources", "**", "*.swift"), recursive=True)}
    code = "".join(sources.values())
    rows = {}
    for match in re.finditer(r"^\| `([A-Z][A-Z0-9_]+)` \| ([^|]*)\|", operations_text, re.MULTILINE):
        rows.setdefault(match.group(1), match.group(2).strip())
    for name in sorted(rows):
        # KAFKA_<PROPERTY> rows document librdkafka properties, passed through by name (KafkaConfiguration).
        if f'"{name}"' not in code and not name.startswith("KAFKA_"):
            finding(f"docs/OPERATIONS.md: setting {name} is read by no code")
    for path, text in sorted(sources.items()):
        for match in SETTINGS_READ.finditer(text):
            name, default = match.group(2), match.group(3)
            if name not in rows:
                if f"`{name}`" not in operations_text:
                    finding(f"{path}: setting {name} is not in docs/OPERATIONS.md")
                continue
            value = literal(default) if default else None
            documented = re.match(r"`([^`]*)`", rows[name])
            if value is not None and documented and documented.group(1) != value:
                finding(f"docs/OPERATIONS.md: {name}'s default is `{documented.group(1)}`, the code's {value} ({path})")


# MARK: Target graph

def package():
    swift = os.environ.get("SWIFT", "swift")
    output = subprocess.run([swift, "package", "dump-package"], cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(output.stdout)


def target_graph(manifest):
    """Package.swift's targets and their dependencies as a Mermaid flowchart, tests and benchmarks left out, each
    edge implied by a longer path left out too (the reach of a change is the same; the picture is readable)."""
    kinds = {target["name"]: target["type"] for target in manifest["targets"]
             if target["type"] != "test" and not (target.get("path") or "").startswith(("bench/", "Tests/"))}
    edges = {name: set() for name in kinds}
    for target in manifest["targets"]:
        if target["name"] not in kinds:
            continue
        for dependency in target["dependencies"]:
            for kind in ("byName", "target", "product"):
                if kind in dependency and dependency[kind][0] in kinds:
                    edges[target["name"]].add(dependency[kind][0])

    def reaches(start):
        seen, stack = set(), list(edges[start])
        while stack:
            name = stack.pop()
            if name not in seen:
                seen.add(name)
                stack.extend(edges[name])
        return seen

    reduced = {name: {dependency for dependency in direct
                      if not any(dependency in reaches(other) for other in direct - {dependency})}
               for name, direct in edges.items()}

    def node(name):
        return re.sub(r"[^A-Za-z0-9]", "_", name)

    groups = (("executables", "executable"), ("libraries", "regular"), ("C libraries", "system"))
    lines = ["```mermaid", "flowchart TB"]
    for title, kind in groups:
        lines.append(f'    subgraph {node(title)}["{title}"]')
        lines.extend(f'        {node(name)}["{name}"]' for name in sorted(kinds) if kinds[name] == kind)
        lines.append("    end")
    for name in sorted(reduced):
        lines.extend(f"    {node(name)} --> {node(dependency)}" for dependency in sorted(reduced[name]))
    lines.append("```")
    return "\n".join(lines)


def check_target_graph(architecture, write):
    start, end = architecture.find(GRAPH_START), architecture.find(GRAPH_END)
    if start < 0 or end < start:
        finding(f"docs/ARCHITECTURE.md: no target graph between {GRAPH_START!r} and {GRAPH_END!r}")
        return
    generated = target_graph(package())
    current = architecture[start + len(GRAPH_START):end].strip("\n")
    if current == generated:
        return
    if write:
        text = architecture[:start + len(GRAPH_START)] + "\n" + generated + "\n" + architecture[end:]
        with open(os.path.join(ROOT, "docs/ARCHITECTURE.md"), "w", encoding="utf-8") as handle:
            handle.write(text)
        print("check-docs: docs/ARCHITECTURE.md's target graph regenerated from Package.swift")
    else:
        finding("docs/ARCHITECTURE.md: the target graph is not Package.swift's; run scripts/check-docs.py --write")


def main(arguments):
    if arguments not in ([], ["--write"]):
        print(__doc__)
        return 2
    texts = docs()
    check_routes(texts)
    check_settings(texts["docs/OPERATIONS.md"])
    check_target_graph(texts["docs/ARCHITECTURE.md"], write=arguments == ["--write"])
    for message in findings:
        print(f"check-docs: {message}")
    print(f"check-docs: routes, settings and the target graph: {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
