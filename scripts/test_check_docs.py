#!/usr/bin/env python3
"""scripts/check-docs.py finds the drift it is there for: a route the OpenAPIs do not have, a setting no code reads or
one the docs leave out, a default that differs, a target graph that is not Package.swift's. Each case breaks one
thing in a copy of the real text and expects exactly that finding. Run by `make test`:

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""
import importlib.util
import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("check_docs", os.path.join(ROOT, "scripts", "check-docs.py"))
check_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_docs)


class CheckDocsTests(unittest.TestCase):
    def setUp(self):
        check_docs.findings.clear()
        self.texts = check_docs.docs()

    def tearDown(self):
        check_docs.findings.clear()

    def test_the_docs_as_they_are_pass(self):
        check_docs.check_routes(self.texts)
        check_docs.check_settings(self.texts["docs/OPERATIONS.md"])
        self.assertEqual(check_docs.findings, [])

    def test_a_route_the_openapis_do_not_have_is_named(self):
        self.texts["docs/CREDITING.md"] += "\nAsk `POST /v1/users/{user_id}/refunds` for it.\n"
        check_docs.check_routes(self.texts)
        self.assertEqual(check_docs.findings, [
            "docs/CREDITING.md: POST /v1/users/{user_id}/refunds is not an operation of schemas/openapi.yaml or "
            "schemas/ledger-openapi.yaml"])

    def test_a_wrong_method_is_named_and_placeholders_and_queries_match_their_template(self):
        self.assertEqual(check_docs.named_routes("`GET /v1/users/<user>` and `POST /v1/receipts?wait_ms=5000`."),
                         [("GET", "/v1/users/{placeholder}"), ("POST", "/v1/receipts")])
        self.texts["README.md"] += "\n`DELETE /v1/receipts/s-1`, `GET /v1/users/u-1`\n"
        check_docs.check_routes(self.texts)
        self.assertEqual(check_docs.findings, [
            "README.md: DELETE /v1/receipts/s-1 is not an operation of schemas/openapi.yaml or "
            "schemas/ledger-openapi.yaml"])

    def test_an_ingest_route_missing_from_the_readme_listing_is_named(self):
        readme = self.texts["README.md"]
        start = readme.index("### HTTP API")
        section = readme[start:readme.index("### Kafka messages")]
        self.texts["README.md"] = readme.replace(section, section.replace("GET /v1/receipts/{submission_id}", "x"))
        check_docs.check_routes(self.texts)
        self.assertEqual(check_docs.findings, [
            "README.md, HTTP API: GET /v1/receipts/{submission_id} (schemas/openapi.yaml) is not listed"])

    def test_a_setting_no_code_reads_a_missing_one_and_a_wrong_default_are_named(self):
        operations = self.texts["docs/OPERATIONS.md"]
        broken = (operations.replace("| `LEDGER_SHUTDOWN_TIMEOUT_MS` | `30000` |", "| `LEDGER_SHUTDOWN_TIMEOUT_MS` | `3000` |")
                  .replace("`INGEST_MAX_WAIT_MS`", "`INGEST_MAX_WAITING_MS`"))
        self.assertNotEqual(broken, operations)
        check_docs.check_settings(broken)
        self.assertEqual(sorted(check_docs.findings), [
            "Sources/Ingest/IngestSettings.swift: setting INGEST_MAX_WAIT_MS is not in docs/OPERATIONS.md",
            "docs/OPERATIONS.md: LEDGER_SHUTDOWN_TIMEOUT_MS's default is `3000`, the code's 30000 "
            "(Sources/Ledger/Service/LedgerSettings.swift)",
            "docs/OPERATIONS.md: setting INGEST_MAX_WAITING_MS is read by no code",
        ])

    def test_literal_defaults_are_read_as_the_docs_write_them(self):
        self.assertEqual([check_docs.literal(text) for text in ("30_000", "1 << 20", '"info"', "true", "max(4, n)")],
                         ["30000", "1048576", "info", "true", None])

    def test_the_target_graph_leaves_out_tests_benchmarks_and_implied_edges(self):
        manifest = {"targets": [
            {"name": "CLib", "type": "system", "dependencies": []},
            {"name": "Support", "type": "regular", "dependencies": [{"byName": ["CLib", None]}]},
            {"name": "Layer", "type": "regular", "dependencies": [{"byName": ["Support", None]}]},
            {"name": "tool", "type": "executable",
             "dependencies": [{"byName": ["Layer", None]}, {"byName": ["Support", None]}]},
            {"name": "tool-bench", "type": "executable", "path": "bench/tool-bench",
             "dependencies": [{"byName": ["Layer", None]}]},
            {"name": "LayerTests", "type": "test", "dependencies": [{"byName": ["Layer", None]}]},
        ]}
        graph = check_docs.target_graph(manifest)
        self.assertIn("    tool --> Layer", graph)
        self.assertNotIn("tool --> Support", graph)  # implied by tool -> Layer -> Support
        self.assertNotIn("bench", graph)
        self.assertNotIn("LayerTests", graph)
        self.assertIn("    Support --> CLib", graph)


if __name__ == "__main__":
    unittest.main()
