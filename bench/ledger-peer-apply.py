#!/usr/bin/env python3
"""The Python peer's statements (bench/ledger-peer.py: the same SQL, imported from it) applied to N verified results
of the shape ledger-apply-bench applies (one distinct consumable purchase each, 1,000 users, 10 gems), in batches,
without Kafka: the peer's side of bench/postgres-callgrind.sh, which counts what PostgreSQL executes for each.

    bench/ledger-peer-apply.py COUNT DSN [BATCH]
"""
import importlib.util
import os
import sys

import psycopg

spec = importlib.util.spec_from_file_location("peer", os.path.join(os.path.dirname(__file__), "ledger-peer.py"))
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)

count, dsn = int(sys.argv[1]), sys.argv[2]
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 500
db = psycopg.connect(dsn, autocommit=False)
with db.transaction():
    db.execute(peer.SCHEMA)
credits = [(f"apple:production:bench-{i}", f"user-{i % 1000}", "gems_10", "gems", 10, 0) for i in range(count)]
for start in range(0, count, batch):
    rows = credits[start:start + batch]
    with db.transaction():
        new = db.execute(peer.INSERT_PURCHASES, [list(column) for column in zip(*rows)]).fetchall()
        balances = {}
        for user, item, amount in new:
            balances[(user, item)] = balances.get((user, item), 0) + amount
        keys = sorted(balances)
        db.execute(peer.UPSERT_BALANCES, ([k[0] for k in keys], [k[1] for k in keys], [balances[k] for k in keys]))
        # As ledger-apply-bench: eight partitions, offsets moved once per batch.
        db.execute(peer.UPSERT_OFFSETS, (["iap.receipts.results"] * 8, list(range(8)), [(start + len(rows)) // 8] * 8))
total = db.execute("SELECT coalesce(sum(amount), 0) FROM balances").fetchone()[0]
if total != count * 10:
    sys.exit(f"balances wrong: {total} gems, expected {count * 10}")
print(f"{count} results in batches of {batch} (balances exact)")
