#!/usr/bin/env python3
"""A plain-Python crediting service: the peer bench/ledger.sh measures receipt-ledger against (issue 26).

What a competent engineer would write in an afternoon with confluent-kafka (librdkafka) and psycopg 3: consume the
results topic in batches of --batch (500), and apply each batch to PostgreSQL in one transaction, exactly once:

  1. INSERT INTO purchases ... SELECT unnest(...) ON CONFLICT (credit_key) DO NOTHING RETURNING: one row per purchase
     (credit_key), so a purchase is credited once however often it arrives; only the rows newly inserted come back;
  2. balances upserted once per (user, item) of the batch, from those new rows only (INSERT ... unnest ... ON CONFLICT
     DO UPDATE SET amount = balances.amount + excluded.amount);
  3. the batch's next offsets upserted into consumer_offsets (never moved backwards);
  4. COMMIT. On assignment the consumer seeks each partition to the offset stored there (the beginning when none
     is): a crash loses the uncommitted batch, which is read and applied again. The group's Kafka offsets are
     committed after each batch, for lag only. A database error rolls the batch back and retries it with backoff.

What it credits: `verified` results, each transaction with `creditable: true` whose `credit` is an item
({"item": I, "amount": A}), A × quantity of I to the result's user_id (else client_id).

It does much less than receipt-ledger (docs/CREDITING.md), and is a benchmark peer, not a crediting service to run:
no purchase events (debit, recredit, revoke, credit events, event_id dedupe), no owners (first claim wins is only
"first insert wins", no refused claims, no owner links, no pending claims for results without a user), no
entitlements, no dead letters (a message it cannot read is skipped and counted), no HTTP API, no metrics. So its
figures bound how fast the crediting's writes can reach PostgreSQL, not what the ledger's rules cost.

    bench/ledger-peer.py --bootstrap HOST:PORT --topic T --group G --dsn 'host=... dbname=...' [--batch 500]

Logs JSON lines on stderr; "ledger-peer started" once subscribed. SIGTERM or SIGINT: finishes its batch and exits.
"""
import argparse
import json
import signal
import sys
import time

import psycopg
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

SCHEMA = """
CREATE TABLE IF NOT EXISTS purchases (
    credit_key text PRIMARY KEY,
    user_id text NOT NULL,
    product_id text,
    item text NOT NULL,
    amount bigint NOT NULL,
    credited_at_ms bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS balances (
    user_id text NOT NULL,
    item text NOT NULL,
    amount bigint NOT NULL,
    PRIMARY KEY (user_id, item)
);
CREATE TABLE IF NOT EXISTS consumer_offsets (
    topic text NOT NULL,
    partition integer NOT NULL,
    next_offset bigint NOT NULL,
    PRIMARY KEY (topic, partition)
);
"""

INSERT_PURCHASES = """
INSERT INTO purchases (credit_key, user_id, product_id, item, amount, credited_at_ms)
SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[])
ON CONFLICT (credit_key) DO NOTHING
RETURNING user_id, item, amount
"""

UPSERT_BALANCES = """
INSERT INTO balances (user_id, item, amount)
SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[])
ON CONFLICT (user_id, item) DO UPDATE SET amount = balances.amount + excluded.amount
"""

UPSERT_OFFSETS = """
INSERT INTO consumer_offsets (topic, partition, next_offset)
SELECT * FROM unnest(%s::text[], %s::int[], %s::bigint[])
ON CONFLICT (topic, partition) DO UPDATE SET next_offset = greatest(consumer_offsets.next_offset, excluded.next_offset)
"""


def log(message, **fields):
    fields["msg"] = message
    fields["ts_ms"] = int(time.time() * 1000)
    sys.stderr.write(json.dumps(fields, separators=(",", ":")) + "\n")
    sys.stderr.flush()


def credits_of(value, timestamp_ms):
    """The item credits of one result: (credit_key, user, product_id, item, amount, at_ms) tuples."""
    result = json.loads(value)
    if not isinstance(result, dict) or result.get("outcome") != "verified":
        return ()
    user = result.get("user_id") or result.get("client_id")
    if not isinstance(user, str) or not user:
        return ()  # owners are looked up by receipt-ledger; the peer does not
    credits = []
    for transaction in result.get("transactions") or ():
        if not isinstance(transaction, dict) or transaction.get("creditable") is not True:
            continue
        if transaction.get("is_upgraded") is True:
            continue
        credit = transaction.get("credit")
        key = transaction.get("credit_key")
        quantity = transaction.get("quantity")
        if not isinstance(credit, dict) or not isinstance(key, str):
            continue
        item, amount = credit.get("item"), credit.get("amount")
        if not isinstance(item, str) or type(amount) is not int or amount <= 0:
            continue  # entitlements, null credits and unknown shapes: not the peer's business
        if type(quantity) is not int or quantity <= 0:
            continue
        credits.append((key, user, transaction.get("product_id"), item, amount * quantity, timestamp_ms))
    return credits


class Peer:
    def __init__(self, args):
        self.args = args
        self.stopping = False
        self.skipped = 0
        self.db = self.connect()
        with self.db.transaction():
            self.db.execute(SCHEMA)
        self.consumer = Consumer({
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": args.fetch_wait_max_ms,
            "queued.max.messages.kbytes": 16384,
        })

    def connect(self):
        # Not autocommit: every batch is one transaction, committed explicitly.
        return psycopg.connect(self.args.dsn, autocommit=False)

    def on_assign(self, consumer, partitions):
        """Start each assigned partition at the offset stored with the rows (the beginning when none is)."""
        topics = [p.topic for p in partitions]
        numbers = [p.partition for p in partitions]
        while True:
            try:
                with self.db.transaction():
                    rows = self.db.execute(
                        "SELECT topic, partition, next_offset FROM consumer_offsets"
                        " WHERE (topic, partition) IN (SELECT * FROM unnest(%s::text[], %s::int[]))",
                        (topics, numbers)).fetchall()
                break
            except psycopg.Error as error:
                log("cannot read stored offsets; retrying", error=str(error))
                self.reconnect()
                time.sleep(0.5)
        stored = {(topic, partition): offset for topic, partition, offset in rows}
        for p in partitions:
            p.offset = stored.get((p.topic, p.partition), OFFSET_BEGINNING)
        consumer.assign(partitions)
        log("partitions assigned", partitions=[f"{p.topic}/{p.partition}@{p.offset}" for p in partitions])

    def reconnect(self):
        try:
            self.db.close()
        except psycopg.Error:
            pass
        try:
            self.db = self.connect()
        except psycopg.Error as error:
            log("cannot connect to the database", error=str(error))

    def apply(self, messages):
        """One transaction: the purchases new to the ledger, their balances, and the batch's offsets."""
        rows = {}
        next_offsets = {}
        for message in messages:
            next_offsets[(message.topic(), message.partition())] = message.offset() + 1
            _, timestamp_ms = message.timestamp()
            try:
                for credit in credits_of(message.value(), timestamp_ms if timestamp_ms > 0 else int(time.time() * 1000)):
                    rows.setdefault(credit[0], credit)  # the first of the batch wins, as the first insert does
            except (ValueError, TypeError, AttributeError):
                self.skipped += 1
        delay = 0.1
        while True:
            try:
                with self.db.transaction():
                    if rows:
                        columns = list(zip(*rows.values()))
                        inserted = self.db.execute(INSERT_PURCHASES, [list(c) for c in columns]).fetchall()
                        totals = {}
                        for user, item, amount in inserted:
                            totals[(user, item)] = totals.get((user, item), 0) + amount
                        if totals:
                            users, items = zip(*totals)
                            self.db.execute(UPSERT_BALANCES, (list(users), list(items), list(totals.values())))
                    topics, partitions = zip(*next_offsets)
                    self.db.execute(UPSERT_OFFSETS, (list(topics), list(partitions), list(next_offsets.values())))
                break
            except psycopg.Error as error:
                log("cannot apply a batch; retrying", error=str(error), retry_in_ms=int(delay * 1000))
                if self.db.closed or isinstance(error, psycopg.OperationalError):
                    self.reconnect()
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        # For lag and monitoring only: the offsets that count are the ones committed with the rows.
        try:
            self.consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in next_offsets.items()], asynchronous=True)
        except KafkaException:
            pass

    def run(self):
        self.consumer.subscribe([self.args.topic], on_assign=self.on_assign)
        log("ledger-peer started", topic=self.args.topic, group=self.args.group, batch=self.args.batch)
        while not self.stopping:
            messages = self.consumer.consume(num_messages=self.args.batch, timeout=0.1)
            batch = []
            for message in messages:
                error = message.error()
                if error is None:
                    batch.append(message)
                elif error.fatal():
                    raise KafkaException(error)
                else:
                    log("consumer error", error=str(error))
            if batch:
                self.apply(batch)
        self.consumer.close()
        self.db.close()
        log("ledger-peer stopped", skipped=self.skipped)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--fetch-wait-max-ms", type=int, default=10)
    args = parser.parse_args()
    peer = Peer(args)

    def stop(signum, frame):
        peer.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    peer.run()


if __name__ == "__main__":
    main()
