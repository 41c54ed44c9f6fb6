#!/usr/bin/env python3
"""Every metric the alerts (deploy/monitoring/alerts.yaml) and the Grafana dashboard
(deploy/monitoring/dashboards/*.json) query is one the services export, read from their live /metrics
(files given on the command line), and both export *_build_info.

Metric names are taken from each PromQL expression by Prometheus' own parser (`promtool query ...` cannot parse
offline, so the names are the identifiers promtool's `check rules` accepted, minus functions, keywords and labels):
a series name is an identifier followed by `{`, `[`, `)` or whitespace that is not a function call, an aggregation,
a keyword or a label name inside braces or by/without/on/ignoring lists.

Every alert's runbook_url is an anchor of docs/OPERATIONS.md.

Usage: scripts/check-monitoring.py <ingest.metrics> <verifier.metrics>
"""
import glob
import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Series that come from Prometheus itself or from other exporters, not from these services.
EXTERNAL = {
    "up": "Prometheus' scrape health",
    "kafka_consumergroup_lag": "the Kafka Exporter (Strimzi's kafkaExporter), broker-side group lag",
}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or", "unless",
            "inf", "nan", "le"}


def exported(paths):
    names = set()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                match = re.match(r"# TYPE (\S+) (\w+)", line)
                if match:
                    name, kind = match.groups()
                    names.add(name)
                    if kind == "histogram":
                        names.update({name + "_bucket", name + "_sum", name + "_count"})
    return names


def metric_names(expression):
    expression = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)          # string literals
    expression = re.sub(r"\{[^}]*\}", "{}", expression)                   # label matchers
    expression = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expression)
    expression = re.sub(r"\[[^\]]*\]", "[]", expression)                  # ranges and subqueries
    expression = re.sub(r"\$\w+", "1", expression)                        # Grafana variables
    expression = re.sub(r"\boffset\s+\w+", " ", expression)              # offset 15m
    expression = re.sub(r"\b\d+(\.\d+)?(e[+-]?\d+)?[smhdwy]?\b", "0", expression)  # numbers, durations
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expression):
        name = match.group(0)
        following = expression[match.end():].lstrip()[:1]
        if following == "(" or name in KEYWORDS or re.fullmatch(r"\d+[smhdwy]?", name):
            continue
        names.add(name)
    return names


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    available = exported(sys.argv[1:])
    findings = []
    for prefix, path in (("ingest", sys.argv[1]), ("verifier", sys.argv[2])):
        if f"{prefix}_build_info" not in exported([path]):
            findings.append(f"{path} has no {prefix}_build_info")
    queries = []
    with open(os.path.join(ROOT, "docs/OPERATIONS.md"), encoding="utf-8") as handle:
        # GitHub's heading anchors: lower case, punctuation other than - and _ dropped, spaces as -.
        anchors = {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
                   for heading in re.findall(r"^#+ (.*)$", handle.read(), re.MULTILINE)}
    with open(os.path.join(ROOT, "deploy/monitoring/alerts.yaml"), encoding="utf-8") as handle:
        for group in yaml.safe_load(handle)["groups"]:
            for rule in group["rules"]:
                queries.append((f"alert {rule['alert']}", rule["expr"]))
                url = rule.get("annotations", {}).get("runbook_url", "")
                if not url.split("#")[0].endswith("docs/OPERATIONS.md") or url.split("#")[-1] not in anchors:
                    findings.append(f"alert {rule['alert']}: runbook_url {url!r} is not an anchor of docs/OPERATIONS.md")
                if rule.get("labels", {}).get("severity") not in ("page", "ticket"):
                    findings.append(f"alert {rule['alert']}: severity must be page or ticket")
    dashboards = glob.glob(os.path.join(ROOT, "deploy/monitoring/dashboards/*.json"))
    for path in dashboards:
        with open(path, encoding="utf-8") as handle:
            dashboard = json.load(handle)
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                queries.append((f"{os.path.basename(path)} panel '{panel['title']}'", target["expr"]))
        for variable in dashboard.get("templating", {}).get("list", []):
            query = variable.get("query")
            if isinstance(query, dict):
                inner = re.search(r"label_values\((\w+)", query.get("query", ""))
                if inner:
                    queries.append((f"{os.path.basename(path)} variable {variable['name']}", inner.group(1)))
    used = set()
    for where, expression in queries:
        names = metric_names(expression)
        if not names:
            findings.append(f"{where}: no metric name found in {expression!r}")
        for name in names:
            used.add(name)
            if name not in available and name not in EXTERNAL:
                findings.append(f"{where}: {name} is not exported by receipt-ingest or receipt-verifier")
    for message in findings:
        print(f"check-monitoring: {message}")
    print(f"check-monitoring: {len(queries)} queries ({len(dashboards)} dashboard(s) and the alerts) name "
          f"{len(used)} metrics; {len(available)} exported; {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
