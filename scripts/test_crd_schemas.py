#!/usr/bin/env python3
"""The hand-written CRD schemas in deploy/crds catch what the operators' API server would reject.

Each case takes one of this project's own Strimzi or CloudNativePG objects, which must pass as they are, breaks one
field the way a hand edit would (a typo, a field or value Strimzi v1 dropped, an unquoted `on`), and expects
scripts/check-deployment.py's schema check to report it at that field. Run by `make test`:

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""
import copy
import importlib.util
import os
import unittest

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("check_deployment", os.path.join(ROOT, "scripts", "check-deployment.py"))
check_deployment = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_deployment)


def documents(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return [document for document in yaml.safe_load_all(handle) if document]


def first(path, kind):
    return next(document for document in documents(path) if document["kind"] == kind)


def findings_for(document):
    check_deployment.findings.clear()
    check_deployment.check_json_schema("test", document)
    found = list(check_deployment.findings)
    check_deployment.findings.clear()
    return found


class CrdSchemaTests(unittest.TestCase):
    def assertRejected(self, document, where):
        found = findings_for(document)
        self.assertTrue(any(f"at {where}:" in message for message in found),
                        f"expected a finding at {where}, got {found}")

    def test_the_project_objects_pass(self):
        for path in ("deploy/kafka/strimzi/topics.yaml", "deploy/kafka/strimzi/users.yaml",
                     "deploy/kafka/strimzi-cluster/kafka.yaml", "deploy/postgres/cluster.yaml"):
            for document in documents(path):
                with self.subTest(path=path, name=document["metadata"]["name"]):
                    self.assertEqual(findings_for(document), [])

    def test_kafka_topic_typo(self):
        topic = copy.deepcopy(first("deploy/kafka/strimzi/topics.yaml", "KafkaTopic"))
        topic["spec"]["partitons"] = topic["spec"].pop("partitions")
        self.assertRejected(topic, "spec")

    def test_kafka_topic_config_is_not_an_object(self):
        topic = copy.deepcopy(first("deploy/kafka/strimzi/topics.yaml", "KafkaTopic"))
        topic["spec"]["config"]["retention.ms"] = {"days": 7}
        self.assertRejected(topic, "spec.config.retention.ms")

    def test_kafka_user_typo(self):
        user = copy.deepcopy(first("deploy/kafka/strimzi/users.yaml", "KafkaUser"))
        user["spec"]["authorisation"] = user["spec"].pop("authorization")
        self.assertRejected(user, "spec")

    def test_kafka_user_acl_singular_operation_removed_in_v1(self):
        user = copy.deepcopy(first("deploy/kafka/strimzi/users.yaml", "KafkaUser"))
        acl = user["spec"]["authorization"]["acls"][0]
        acl["operation"] = acl.pop("operations")[0]
        self.assertRejected(user, "spec.authorization.acls.0")

    def test_kafka_user_pattern_type_is_strimzis_spelling(self):
        user = copy.deepcopy(first("deploy/kafka/strimzi/users.yaml", "KafkaUser"))
        user["spec"]["authorization"]["acls"][0]["resource"]["patternType"] = "prefixed"  # kafka-acls.sh's word
        self.assertRejected(user, "spec.authorization.acls.0.resource.patternType")

    def test_kafka_user_unknown_authentication(self):
        user = copy.deepcopy(first("deploy/kafka/strimzi/users.yaml", "KafkaUser"))
        user["spec"]["authentication"]["type"] = "scram-sha-256"
        self.assertRejected(user, "spec.authentication.type")

    def test_kafka_fields_v1_removed(self):
        kafka = first("deploy/kafka/strimzi-cluster/kafka.yaml", "Kafka")
        for mutate, where in (
                (lambda k: k["spec"]["kafka"]["listeners"][0].update(authentication={"type": "oauth"}),
                 "spec.kafka.listeners.0.authentication.type"),
                (lambda k: k["spec"]["kafka"].update(authorization={"type": "keycloak"}),
                 "spec.kafka.authorization.type"),
                (lambda k: k["spec"]["kafka"].update(resources={"requests": {"memory": "4Gi"}}), "spec.kafka"),
                (lambda k: k["spec"]["entityOperator"].update(tlsSidecar={}), "spec.entityOperator"),
                (lambda k: k["spec"].update(zookeeper={"replicas": 3}), "spec")):
            broken = copy.deepcopy(kafka)
            mutate(broken)
            with self.subTest(where=where):
                self.assertRejected(broken, where)

    def test_kafka_node_pool(self):
        pool = first("deploy/kafka/strimzi-cluster/kafka.yaml", "KafkaNodePool")
        broken = copy.deepcopy(pool)
        broken["spec"]["roles"] = ["brokers"]
        self.assertRejected(broken, "spec.roles.0")
        broken = copy.deepcopy(pool)
        broken["spec"]["storage"]["volumes"][0]["overrides"] = [{"broker": 0, "class": "fast"}]
        self.assertRejected(broken, "spec.storage.volumes.0")

    def test_cluster_typo(self):
        cluster = first("deploy/postgres/cluster.yaml", "Cluster")
        for mutate, where in (
                (lambda c: c["spec"]["postgresql"].update(parameter=c["spec"]["postgresql"].pop("parameters")),
                 "spec.postgresql"),
                (lambda c: c["spec"]["postgresql"]["synchronous"].update(
                    dataDurabilty=c["spec"]["postgresql"]["synchronous"].pop("dataDurability")),
                 "spec.postgresql.synchronous"),
                (lambda c: c["spec"]["bootstrap"]["initdb"].update(ownr=c["spec"]["bootstrap"]["initdb"].pop("owner")),
                 "spec.bootstrap.initdb")):
            broken = copy.deepcopy(cluster)
            mutate(broken)
            with self.subTest(where=where):
                self.assertRejected(broken, where)

    def test_cluster_unquoted_on_is_a_boolean(self):
        cluster = copy.deepcopy(first("deploy/postgres/cluster.yaml", "Cluster"))
        cluster["spec"]["postgresql"]["parameters"]["synchronous_commit"] = True  # YAML 1.1 reads `on` as true
        self.assertRejected(cluster, "spec.postgresql.parameters.synchronous_commit")


if __name__ == "__main__":
    unittest.main()
