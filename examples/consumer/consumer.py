#!/usr/bin/env python3
"""A results-and-events consumer to copy: credits purchases exactly once into its own PostgreSQL database.

It reads the verifier's results (RESULTS_TOPIC) and purchase events (EVENTS_TOPIC) in one consumer group and applies
them by docs/CREDITING.md's rules, kept small: verified results and `credit` events credit each `creditable`
transaction once per `credit_key` (`credit` x `quantity`: items to a balance, entitlements until `expires_date_ms`),
`debit` takes back what was credited (its `revocation_percentage` share, rounded half up) and ends the entitlement,
`recredit` gives back what the last debit took, `revoke` ends a family-shared entitlement, `subscription_status`
moves an entitlement's expiry. Owners: the result's `user_id` (else `client_id`); a `credit` event belongs to the
owner of its `app_account_token`, else (no token) of its `original_transaction_id`, and waits while there is none.
Sandbox purchases go to their own book. Events are deduplicated on `event_id`, money on the purchase's state; money
events of a purchase take effect in Apple's `signed_date_ms` order.

Exactly once: every batch is one database transaction that locks the batch's partitions' rows of
`consumer_offsets`, skips what is below their `next_offset`, applies the rest and stores the new `next_offset`s;
Kafka's committed offsets follow after the commit, for lag monitoring only. On assignment each partition starts at
its stored offset. A crash anywhere loses only the uncommitted transaction, whose messages are read again. A message
that cannot be read (not JSON, another `schema_version`) is recorded in `dead_letters` in the same transaction:
never a silent drop, never a stuck partition.

Usage: consumer.py --bootstrap HOST:PORT --database 'postgresql://...' [--group billing-credits]
                   [--results-topic iap.receipts.results] [--events-topic iap.purchase.events] [--batch 500]
                   [--kafka-property key=value ...] [--idle-exit-seconds N] [--crash-after N]
(--idle-exit-seconds and --crash-after are for tests: stop once nothing arrived for N seconds; exit abruptly in the
middle of the Nth message's transaction, as a SIGKILL would.)
"""
import argparse
import json
import os
import sys
import time

import psycopg
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

SCHEMA = """
CREATE TABLE IF NOT EXISTS consumer_offsets (
    topic text NOT NULL, partition integer NOT NULL, next_offset bigint NOT NULL,
    PRIMARY KEY (topic, partition));
CREATE TABLE IF NOT EXISTS purchases (
    credit_key text PRIMARY KEY, owner text, book text NOT NULL, state text NOT NULL,
    item text, amount_credited bigint NOT NULL DEFAULT 0, amount_debited bigint NOT NULL DEFAULT 0,
    entitlement text, expires_date_ms bigint, last_money_signed_ms bigint,
    original_transaction_id text, app_account_token text);
CREATE TABLE IF NOT EXISTS balances (
    owner text NOT NULL, book text NOT NULL, item text NOT NULL, amount bigint NOT NULL,
    PRIMARY KEY (owner, book, item));
CREATE TABLE IF NOT EXISTS entitlements (
    owner text NOT NULL, book text NOT NULL, entitlement text NOT NULL, credit_key text NOT NULL,
    expires_date_ms bigint, ended boolean NOT NULL DEFAULT false, PRIMARY KEY (credit_key));
CREATE TABLE IF NOT EXISTS owner_links (kind text NOT NULL, id text NOT NULL, owner text NOT NULL,
    PRIMARY KEY (kind, id));
CREATE TABLE IF NOT EXISTS pending_credits (event_id text PRIMARY KEY, kind text NOT NULL, id text NOT NULL,
    transaction jsonb NOT NULL, environment text NOT NULL);
CREATE TABLE IF NOT EXISTS applied_events (event_id text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS dead_letters (topic text NOT NULL, partition integer NOT NULL, "offset" bigint NOT NULL,
    reason text NOT NULL, raw bytea, PRIMARY KEY (topic, partition, "offset"));
"""


def credit_key(environment, transaction):
    """The purchase's key, derived here rather than trusted (schemas/README.md: older results carry another form)."""
    env = (environment or "production").lower()
    line = transaction.get("web_order_line_item_id")
    if line and line.strip("0"):
        return f"apple:{env}:period:{line}"
    return f"apple:{env}:{transaction.get('original_transaction_id') or transaction['transaction_id']}"


class Ledger:
    """The rules over one open transaction (`cursor`)."""

    def __init__(self, cursor):
        self.cursor = cursor

    def owner_of(self, transaction):
        """A credit event's owner: its app account token's, else (no token) its original transaction id's."""
        token = transaction.get("app_account_token")
        kind, ident = ("token", token) if token else ("original", transaction.get("original_transaction_id"))
        row = self.cursor.execute("SELECT owner FROM owner_links WHERE kind = %s AND id = %s", (kind, ident)).fetchone()
        return (row[0] if row else None), kind, ident

    def link(self, owner, transaction):
        for kind, ident in (("token", transaction.get("app_account_token")),
                            ("original", transaction.get("original_transaction_id"))):
            if ident:
                self.cursor.execute("INSERT INTO owner_links VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                                    (kind, ident, owner))
                # Credit events that waited for this owner.
                for event_id, waiting, env in self.cursor.execute(
                        "DELETE FROM pending_credits WHERE kind = %s AND id = %s RETURNING event_id, transaction, "
                        "environment", (kind, ident)).fetchall():
                    self.credit(owner, env, waiting)

    def credit(self, owner, environment, transaction):
        if not transaction.get("creditable"):
            return
        key = credit_key(environment, transaction)
        book = "sandbox" if (environment or "").lower() == "sandbox" else "production"
        credit = transaction.get("credit") or {}
        quantity = transaction.get("quantity") or 1
        item, amount = credit.get("item"), (credit.get("amount") or 0) * quantity
        entitlement = credit.get("entitlement")
        # A debit may have come first (the topics are read in any order): the purchase exists, debited, and the
        # credit is refused. Otherwise the first credit of the key wins.
        inserted = self.cursor.execute(
            "INSERT INTO purchases (credit_key, owner, book, state, item, amount_credited, entitlement, "
            "expires_date_ms, original_transaction_id, app_account_token) "
            "VALUES (%s, %s, %s, 'credited', %s, %s, %s, %s, %s, %s) ON CONFLICT (credit_key) DO NOTHING RETURNING 1",
            (key, owner, book, item, amount if item else 0, entitlement, transaction.get("expires_date_ms"),
             transaction.get("original_transaction_id"), transaction.get("app_account_token"))).fetchone()
        if not inserted:
            return
        if item and amount:
            self.add(owner, book, item, amount)
        if entitlement:
            self.cursor.execute("INSERT INTO entitlements VALUES (%s, %s, %s, %s, %s, false)",
                                (owner, book, entitlement, key, transaction.get("expires_date_ms")))

    def add(self, owner, book, item, amount):
        self.cursor.execute(
            "INSERT INTO balances VALUES (%s, %s, %s, %s) ON CONFLICT (owner, book, item) "
            "DO UPDATE SET amount = balances.amount + EXCLUDED.amount", (owner, book, item, amount))

    def money_event(self, event):
        """debit, recredit, revoke: in Apple's signed_date_ms order per purchase."""
        transaction = event["transaction"]
        key = credit_key(event["environment"], transaction)
        signed = event["signed_date_ms"]
        row = self.cursor.execute(
            "SELECT owner, book, state, item, amount_credited, amount_debited, last_money_signed_ms "
            "FROM purchases WHERE credit_key = %s FOR UPDATE", (key,)).fetchone()
        if row is None:
            if event["type"] == "debit":
                # Kept, so that the credit arriving later is refused.
                self.cursor.execute(
                    "INSERT INTO purchases (credit_key, book, state, last_money_signed_ms) VALUES (%s, %s, 'debited', %s)",
                    (key, "sandbox" if event["environment"] == "Sandbox" else "production", signed))
            return
        owner, book, state, item, credited, debited, last = row
        if last is not None and signed < last:
            return  # signed before the last applied money event of this purchase: recorded by Apple, moves nothing
        if event["type"] == "debit" and state != "debited":
            share = transaction.get("revocation_percentage")
            taken = credited if share is None else (credited * share + 50000) // 100000
            if item and taken:
                self.add(owner, book, item, -taken)
            self.cursor.execute("UPDATE entitlements SET ended = true WHERE credit_key = %s", (key,))
            self.cursor.execute("UPDATE purchases SET state = 'debited', amount_debited = %s, "
                                "last_money_signed_ms = %s WHERE credit_key = %s", (taken, signed, key))
        elif event["type"] == "recredit" and state == "debited" and owner is not None:
            if item and debited:
                self.add(owner, book, item, debited)
            self.cursor.execute("UPDATE entitlements SET ended = false WHERE credit_key = %s", (key,))
            self.cursor.execute("UPDATE purchases SET state = 'recredited', amount_debited = 0, "
                                "last_money_signed_ms = %s WHERE credit_key = %s", (signed, key))
        elif event["type"] == "revoke":
            self.cursor.execute("UPDATE entitlements SET ended = true WHERE credit_key = %s", (key,))
            self.cursor.execute("UPDATE purchases SET last_money_signed_ms = %s WHERE credit_key = %s", (signed, key))

    def apply(self, topic_kind, message):
        if topic_kind == "result":
            if message["outcome"] != "verified":
                return
            owner = message.get("user_id") or message.get("client_id")
            if owner is None:
                return  # nobody to credit: a backend that sends no user_id
            for transaction in message["transactions"]:
                self.link(owner, transaction)
                self.credit(owner, message["environment"], transaction)
            return
        if self.cursor.execute("INSERT INTO applied_events VALUES (%s) ON CONFLICT DO NOTHING RETURNING 1",
                               (message["event_id"],)).fetchone() is None:
            return  # the same event again (Apple retries, Kafka redelivers)
        kind, transaction = message["type"], message.get("transaction")
        if kind == "credit" and transaction:
            owner, link_kind, ident = self.owner_of(transaction)
            if owner is None:
                self.cursor.execute("INSERT INTO pending_credits VALUES (%s, %s, %s, %s, %s)",
                                    (message["event_id"], link_kind, ident or "", json.dumps(transaction),
                                     message["environment"]))
            else:
                self.credit(owner, message["environment"], transaction)
        elif kind in ("debit", "recredit", "revoke") and transaction:
            self.money_event(message)
        elif kind == "subscription_status" and transaction:
            self.cursor.execute("UPDATE entitlements SET expires_date_ms = %s WHERE credit_key = %s",
                                (transaction.get("expires_date_ms"), credit_key(message["environment"], transaction)))
        # consumption_request, test, info: nothing to credit.


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--database", required=True, help="a libpq connection string")
    parser.add_argument("--group", default="billing-credits")
    parser.add_argument("--results-topic", default="iap.receipts.results")
    parser.add_argument("--events-topic", default="iap.purchase.events")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--kafka-property", action="append", default=[], help="key=value, e.g. security.protocol")
    parser.add_argument("--idle-exit-seconds", type=float)
    parser.add_argument("--crash-after", type=int)
    arguments = parser.parse_args()

    # Autocommit outside the explicit transaction of each batch.
    database = psycopg.connect(arguments.database, autocommit=True)
    database.execute(SCHEMA)
    kinds = {arguments.results_topic: "result", arguments.events_topic: "event"}
    config = {"bootstrap.servers": arguments.bootstrap, "group.id": arguments.group, "enable.auto.commit": False,
              "auto.offset.reset": "earliest"}
    config.update(item.split("=", 1) for item in arguments.kafka_property)
    consumer = Consumer(config)

    assigned = []

    def start_at_stored_offsets(consumer, partitions):
        stored = dict(((topic, partition), offset) for topic, partition, offset in database.execute(
            "SELECT topic, partition, next_offset FROM consumer_offsets").fetchall())
        for partition in partitions:
            partition.offset = stored.get((partition.topic, partition.partition), OFFSET_BEGINNING)
        consumer.assign(partitions)
        assigned.append(time.monotonic())

    consumer.subscribe(list(kinds), on_assign=start_at_stored_offsets)
    applied, last_message = 0, time.monotonic()
    try:
        while True:
            messages = [m for m in consumer.consume(arguments.batch, timeout=0.5) if m.error() is None]
            if not messages:
                if arguments.idle_exit_seconds and assigned and \
                        time.monotonic() - max(last_message, assigned[-1]) > arguments.idle_exit_seconds:
                    break
                continue
            last_message = time.monotonic()
            with database.transaction(), database.cursor() as cursor:
                ledger = Ledger(cursor)
                positions = {}
                for key in sorted({(m.topic(), m.partition()) for m in messages}):
                    cursor.execute("INSERT INTO consumer_offsets VALUES (%s, %s, 0) ON CONFLICT DO NOTHING", key)
                    positions[key] = cursor.execute(
                        "SELECT next_offset FROM consumer_offsets WHERE topic = %s AND partition = %s FOR UPDATE",
                        key).fetchone()[0]
                for message in messages:
                    key = (message.topic(), message.partition())
                    if message.offset() < positions[key]:
                        continue  # applied before a crash or by another instance before a rebalance
                    applied += 1
                    if arguments.crash_after and applied == arguments.crash_after:
                        os._exit(3)  # mid-transaction, as a SIGKILL: nothing of this batch is kept
                    try:
                        document = json.loads(message.value())
                        if document.get("schema_version") != 1:
                            raise ValueError(f"schema_version {document.get('schema_version')!r}")
                    except ValueError as error:
                        cursor.execute("INSERT INTO dead_letters VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                                       (*key, message.offset(), str(error)[:500], message.value()))
                    else:
                        ledger.apply(kinds[message.topic()], document)
                    positions[key] = message.offset() + 1
                for (topic, partition), offset in positions.items():
                    cursor.execute("UPDATE consumer_offsets SET next_offset = %s WHERE topic = %s AND partition = %s",
                                   (offset, topic, partition))
            # After the commit: the group's offsets, for lag dashboards only (the database's are the ones used).
            try:
                consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in positions.items()],
                                asynchronous=True)
            except KafkaException:
                pass  # a rebalance in between: the next commit carries them
    finally:
        consumer.close()
        database.close()
    print(f"applied {applied} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
