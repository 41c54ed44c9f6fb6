#!/usr/bin/env python3
"""Every metric the alerts (deploy/monitoring/alerts.yaml, components/*/alerts.yaml) and the Grafana dashboards
(deploy/monitoring/dashboards/*.json, components/*/dashboards/*.json, row panels included) query is one the services export, read from their live
/metrics (files given on the command line), and the ingest and the verifier export *_build_info. Every label a
query groups by (`by (...)`), filters on (`{label=...}`) or shows in a legend (`{{label}}`) is one that the live
series of its metrics carry (or one Prometheus adds when scraping: namespace, pod, job, instance). Every aggregation
in an alert keeps `namespace` (production and sandbox alert apart), and every ledger metric is queried somewhere.

Metric names are taken from each PromQL expression by Prometheus' own parser (`promtool query ...` cannot parse
offline, so the names are the identifiers promtool's `check rules` accepted, minus functions, keywords and labels):
a series name is an identifier followed by `{`, `[`, `)` or whitespace that is not a function call, an aggregation,
a keyword or a label name inside braces or by/without/on/ignoring lists.

Every alert's runbook_url is an anchor of docs/OPERATIONS.md.

docs/OPERATIONS.md against the same live /metrics, so its listings cannot drift: it names every metric family the
services export, and every metric the first column of its tables names (the metrics and alert tables) is exported.

Usage: scripts/check-monitoring.py <ingest.metrics> <verifier.metrics> <ledger.metrics>
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
    "kube_deployment_spec_replicas": "kube-state-metrics (kube-prometheus-stack): replicas a Deployment wants",
    "kube_job_status_failed": "kube-state-metrics: a Job's failed pods (the reconciliation CronJob's Jobs)",
    "kube_job_status_succeeded": "kube-state-metrics: a Job's succeeded pods",
    "kubelet_volume_stats_available_bytes": "the kubelet (kube-prometheus-stack): free bytes of a PersistentVolumeClaim",
    "kubelet_volume_stats_capacity_bytes": "the kubelet: size of a PersistentVolumeClaim",
    # CloudNativePG's exporter on the ledger database's instances (its default monitoring queries).
    "cnpg_pg_replication_lag": "CloudNativePG: a standby's replay lag in seconds",
    "cnpg_backends_total": "CloudNativePG: backends by database, user and state",
    "cnpg_pg_settings_setting": "CloudNativePG: PostgreSQL settings (max_connections)",
    "cnpg_pg_database_xid_age": "CloudNativePG: age of a database's oldest unfrozen transaction id",
    "cnpg_collector_last_available_backup_timestamp": "CloudNativePG: when the newest backup completed",
    "cnpg_pg_stat_archiver_last_archived_time": "CloudNativePG: the last WAL segment archived",
    "cnpg_pg_stat_archiver_last_failed_time": "CloudNativePG: the last failed WAL archive attempt",
}
# Metrics that other branches add to the services (merged separately). Until they are exported, queries of them are
# not checked against live series; once exported they are checked like every other (and this entry can go).
# Labels Prometheus attaches when it scrapes (PodMonitor: namespace, pod, job, instance, container, endpoint).
SCRAPE_LABELS = {"namespace", "pod", "job", "instance", "container", "service"}
AGGREGATIONS = ("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
                "quantile")
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or", "unless",
            "inf", "nan", "le"}


def series_labels(paths):
    """Metric name -> every label name its live series carry."""
    labels = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                match = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})? ", line)
                if match and not line.startswith("#"):
                    names = set(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', match.group(3) or ""))
                    labels.setdefault(match.group(1), set()).update(names)
    return labels


def used_labels(expression, legend=""):
    """Labels an expression groups by, filters on, and its legend shows."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)
    used = set()
    for clause in re.findall(r"\b(?:by|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", text):
        used.update(name.strip() for name in clause.split(",") if name.strip())
    for matchers in re.findall(r"\{([^}]*)\}", text):
        used.update(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", matchers))
    used.update(re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", legend))
    return used


def unscoped_aggregations(expression):
    """Aggregations that drop the namespace label (none may, in an alert)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)
    problems = []
    for match in re.finditer(r"\b(" + "|".join(AGGREGATIONS) + r")\s*(by|without)?\s*(\(([^()]*)\))?\s*\(", text):
        operator, kind, labels = match.group(1), match.group(2), match.group(4) or ""
        names = {name.strip() for name in labels.split(",")}
        if kind == "by" and "namespace" not in names or kind == "without" and "namespace" in names or kind is None:
            # `sum(x) by (...)`: the clause after the parentheses.
            tail = re.match(r"\s*by\s*\(([^)]*)\)", text[_closing(text, match.end() - 1) + 1:])
            if kind is None and tail and "namespace" in {n.strip() for n in tail.group(1).split(",")}:
                continue
            problems.append(f"{operator} {kind or ''} ({labels})".replace("  ", " "))
    return problems


def _closing(text, start):
    depth = 0
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return len(text) - 1


def panels_of(panels):
    """Every panel, including those inside (collapsed) rows."""
    for panel in panels:
        yield panel
        yield from panels_of(panel.get("panels", []))


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


def documentation_findings(paths, available):
    """docs/OPERATIONS.md against the live /metrics: every exported family is named, every tabled metric exported."""
    with open(os.path.join(ROOT, "docs/OPERATIONS.md"), encoding="utf-8") as handle:
        text = handle.read()
    findings = []
    families = set()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            families.update(re.findall(r"^# TYPE (\S+) ", handle.read(), re.MULTILINE))
    prefixes = {family.split("_")[0] for family in families}
    for family in sorted(families):
        if not re.search(r"(?<![A-Za-z0-9_])" + re.escape(family) + r"(?![A-Za-z0-9_])", text):
            findings.append(f"{family} is exported but docs/OPERATIONS.md does not describe it")
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        for name in re.findall(r"`([a-z][a-z0-9]*_[a-z0-9_]+)(?:\{[^`]*\})?`", line.split("|")[1]):
            # A metric of ours: its first word is one an exported family starts with (ingest_, kafka_, ...).
            if name.split("_")[0] in prefixes and name not in available and name not in EXTERNAL:
                findings.append(f"docs/OPERATIONS.md names {name} in a table, but no service exports it")
    return findings


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
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    available = exported(sys.argv[1:])
    live_labels = series_labels(sys.argv[1:])
    findings = []
    for prefix, path in (("ingest", sys.argv[1]), ("verifier", sys.argv[2])):
        if f"{prefix}_build_info" not in exported([path]):
            findings.append(f"{path} has no {prefix}_build_info")
    queries = []
    with open(os.path.join(ROOT, "docs/OPERATIONS.md"), encoding="utf-8") as handle:
        # GitHub's heading anchors: lower case, punctuation other than - and _ dropped, spaces as -.
        anchors = {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
                   for heading in re.findall(r"^#+ (.*)$", handle.read(), re.MULTILINE)}
    alert_files = [os.path.join(ROOT, "deploy/monitoring/alerts.yaml")] + sorted(
        glob.glob(os.path.join(ROOT, "deploy/monitoring/components/*/alerts.yaml")))
    for alert_file in alert_files:
        with open(alert_file, encoding="utf-8") as handle:
            groups = yaml.safe_load(handle)["groups"]
        for group in groups:
            for rule in group["rules"]:
                queries.append((f"alert {rule['alert']}", rule["expr"], ""))
                for aggregation in unscoped_aggregations(rule["expr"]):
                    findings.append(f"alert {rule['alert']}: {aggregation} drops namespace: production and sandbox "
                                    "would be summed together")
                if "absent(" in rule["expr"] and "namespace" not in rule["expr"]:
                    findings.append(f"alert {rule['alert']}: absent() alone sees every namespace as one")
                url = rule.get("annotations", {}).get("runbook_url", "")
                if not url.split("#")[0].endswith("docs/OPERATIONS.md") or url.split("#")[-1] not in anchors:
                    findings.append(f"alert {rule['alert']}: runbook_url {url!r} is not an anchor of docs/OPERATIONS.md")
                if rule.get("labels", {}).get("severity") not in ("page", "ticket"):
                    findings.append(f"alert {rule['alert']}: severity must be page or ticket")
    dashboards = glob.glob(os.path.join(ROOT, "deploy/monitoring/dashboards/*.json")) + glob.glob(
        os.path.join(ROOT, "deploy/monitoring/components/*/dashboards/*.json"))
    for path in dashboards:
        with open(path, encoding="utf-8") as handle:
            dashboard = json.load(handle)
        for panel in panels_of(dashboard["panels"]):
            for target in panel.get("targets", []):
                queries.append((f"{os.path.basename(path)} panel '{panel['title']}'", target["expr"],
                                target.get("legendFormat", "")))
        for variable in dashboard.get("templating", {}).get("list", []):
            query = variable.get("query")
            if isinstance(query, dict):
                inner = re.search(r"label_values\((\w+)", query.get("query", ""))
                if inner:
                    queries.append((f"{os.path.basename(path)} variable {variable['name']}", inner.group(1), ""))
    used = set()
    for where, expression, legend in queries:
        names = metric_names(expression)
        if not names:
            findings.append(f"{where}: no metric name found in {expression!r}")
        for name in names:
            used.add(name)
            if name not in available and name not in EXTERNAL:
                findings.append(f"{where}: {name} is not exported by receipt-ingest, receipt-verifier or receipt-ledger")
        ours = [name for name in names if name in live_labels]
        # Only where every metric of the query has live series (a family with none, such as verifier_partition_paused
        # while nothing is paused, says nothing about its labels).
        if ours and len(ours) == len(names & available) and not (names & set(EXTERNAL)):
            carried = set().union(*(live_labels[name] for name in ours)) | SCRAPE_LABELS
            for label in sorted(used_labels(expression, legend) - carried - {"le"} - {""}):
                findings.append(f"{where}: label {label} is on no live series of {', '.join(sorted(ours))}")
    ledger_metrics = {name for name in exported([sys.argv[3]]) if name.startswith("ledger_")}
    families = {re.sub(r"_(bucket|sum|count)$", "", name) if re.sub(r"_(bucket|sum|count)$", "", name) in ledger_metrics
                else name for name in ledger_metrics}
    for base in sorted(families):
        if not {base, base + "_bucket", base + "_sum", base + "_count"} & used:
            findings.append(f"{base} (receipt-ledger) is queried by no alert and no dashboard panel")
    findings.extend(documentation_findings(sys.argv[1:], available))
    for name in ("process_resident_memory_bytes", "process_open_fds", "process_cpu_seconds_total"):
        for path in sys.argv[1:]:
            if name not in exported([path]):
                findings.append(f"{path} has no {name}")
    for message in findings:
        print(f"check-monitoring: {message}")
    print(f"check-monitoring: {len(queries)} queries ({len(dashboards)} dashboard(s) and the alerts) name "
          f"{len(used)} metrics; {len(available)} exported; {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
