#!/usr/bin/env python3
"""A plain-Python spend service: the peer bench/spends.sh measures receipt-ledger's wallet against (issue 40).

What a competent engineer would write in an afternoon with aiohttp and psycopg 3 (async, a connection pool): one
process, one asyncio event loop, serving

  POST /v1/users/{user_id}/spends   with an Idempotency-Key header (1 to 255 printable ASCII characters, bare or as
                      the IETF draft's quoted string) and a JSON object {"item", "amount", "book"?, "reference"?}
                      (item a string of 1 to 64 characters, amount a positive integer below 2^63, book absent, null
                      or "production", reference absent, null or a string of at most 256 characters); anything else
                      is 400 {"error": {"code", "message"}} with the ledger's codes. Each spend is one transaction on
                      a pooled connection:
                        UPDATE balances SET amount = amount - $n WHERE user_id = $u AND item = $i AND amount >= $n
                            RETURNING amount
                        INSERT INTO spend_requests (user_id, idempotency_key, ..., status, body) VALUES (...)
                            ON CONFLICT DO NOTHING RETURNING 1
                        COMMIT
                      A balance too small (no row updated) is 409 insufficient_balance {"balance"} and is stored too
                      (final, as the ledger's). When the key's row already exists (a replay, or the same key racing:
                      the INSERT waits for the other transaction and then inserts nothing), the transaction is rolled
                      back (the UPDATE with it) and the stored answer is sent again with Idempotent-Replayed: true, or
                      422 idempotency_key_reused when the stored request had other content. A database error is 503
                      database_unavailable with Retry-After (nothing committed, or the same key answers it).
                      The answer has the ledger's shape for the fields the peer has: {"user_id", "idempotency_key",
                      "item", "book", "amount", "balance", "reference"} (no attribution).
  GET /healthz, GET /readyz         200 once the pool has its connections.

It does much less than receipt-ledger's wallet (docs/CREDITING.md, "The wallet"), and is a benchmark peer, not a
wallet to run: no lots (no attribution of spends to purchases, so no `amount_consumed` for refund requests, no
first in, first out), no grants API (balances are set up by whoever runs it: the benchmark inserts them), no books
(production only), no debt or clawback policy, no history, no key in flight check, no item catalog, no API keys, no
metrics, no group commit of its own (PostgreSQL's WAL flush shares one fsync among the commits that wait for it).
So its figures bound what a conditional UPDATE and an idempotency row per spend cost through asyncio and psycopg,
not what the ledger's rules cost.

Settings: SPEND_PEER_DSN (libpq connection string, required), SPEND_PEER_LISTEN (0.0.0.0:8082; port 0 picks one),
SPEND_PEER_POOL (connections, default 32).

    SPEND_PEER_DSN='host=... dbname=...' SPEND_PEER_LISTEN=127.0.0.1:0 bench/spend-peer.py

Creates its tables when missing. Logs JSON lines on stderr; {"msg":"HTTP server listening","port":N} once it
accepts requests. SIGTERM or SIGINT: stops accepting, answers what is in flight, closes the pool, exits 0.
"""
import asyncio
import json
import os
import signal
import sys
import time

import psycopg
from aiohttp import web
from psycopg_pool import AsyncConnectionPool

SCHEMA = """
CREATE TABLE IF NOT EXISTS balances (
    user_id text NOT NULL,
    item text NOT NULL,
    amount bigint NOT NULL CHECK (amount >= 0),
    PRIMARY KEY (user_id, item)
);
CREATE TABLE IF NOT EXISTS spend_requests (
    user_id text NOT NULL,
    idempotency_key text NOT NULL,
    item text NOT NULL,
    amount bigint NOT NULL,
    reference text,
    status integer NOT NULL,
    body text NOT NULL,
    at_ms bigint NOT NULL,
    PRIMARY KEY (user_id, idempotency_key)
);
"""
SPEND = "UPDATE balances SET amount = amount - %s WHERE user_id = %s AND item = %s AND amount >= %s RETURNING amount"
BALANCE = "SELECT amount FROM balances WHERE user_id = %s AND item = %s"
RECORD = """INSERT INTO spend_requests (user_id, idempotency_key, item, amount, reference, status, body, at_ms)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1"""
STORED = "SELECT item, amount, reference, status, body FROM spend_requests WHERE user_id = %s AND idempotency_key = %s"
MAX_BODY_BYTES = 16_384
MAX_AMOUNT = 2**63 - 1


def log(level, message, **fields):
    fields = {"level": level, "msg": message, "ts_ms": int(time.time() * 1000), **fields}
    sys.stderr.write(json.dumps(fields, separators=(",", ":")) + "\n")
    sys.stderr.flush()


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def error(status, code, message, retry_after=None, **extra):
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return web.Response(status=status, text=dumps({"error": {"code": code, "message": message, **extra}}),
                        content_type="application/json", headers=headers)


def printable(text):
    return all(0x20 <= ord(c) <= 0x7E for c in text)


def no_controls(text):
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text)


class BadRequest(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def idempotency_key(header):
    if not header:
        raise BadRequest("idempotency_key_missing", "send an Idempotency-Key header: a unique key per spend")
    if len(header) > 255 or not printable(header):
        raise BadRequest("invalid_idempotency_key", "Idempotency-Key is 1 to 255 printable ASCII characters")
    if not header.startswith('"'):
        return header
    if len(header) < 3 or not header.endswith('"'):
        raise BadRequest("invalid_idempotency_key", "Idempotency-Key is not a valid quoted string")
    key, escaped = [], False
    for c in header[1:-1]:
        if escaped:
            if c not in '"\\':
                raise BadRequest("invalid_idempotency_key", "Idempotency-Key is not a valid quoted string")
            key.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            raise BadRequest("invalid_idempotency_key", "Idempotency-Key is not a valid quoted string")
        else:
            key.append(c)
    if escaped or not key:
        raise BadRequest("invalid_idempotency_key", "Idempotency-Key is not a valid quoted string")
    return "".join(key)


def spend_of(body):
    """(item, amount, reference) a request body asks for; BadRequest saying why not."""
    try:
        request = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("invalid_json", "the body is not JSON") from None
    if not isinstance(request, dict):
        raise BadRequest("invalid_request", "the body is not a JSON object")
    unknown = sorted(set(request) - {"item", "amount", "book", "reference"})
    if unknown:
        raise BadRequest("invalid_request", f"unknown member {unknown[0]!r}")
    item = request.get("item")
    if not isinstance(item, str) or not 0 < len(item) <= 64 or not no_controls(item):
        raise BadRequest("invalid_item", "item is required: 1 to 64 characters, no control characters")
    amount = request.get("amount")
    if type(amount) is not int or not 0 < amount <= MAX_AMOUNT:
        raise BadRequest("invalid_amount", "amount is required: a positive whole number of units")
    if request.get("book") not in (None, "production"):
        raise BadRequest("invalid_book", "this service has the production book only")
    reference = request.get("reference")
    if reference is not None and (not isinstance(reference, str) or len(reference) > 256
                                  or not no_controls(reference)):
        raise BadRequest("invalid_reference", "reference is a string of at most 256 characters")
    return item, amount, reference


class Replay(Exception):
    """The key is already recorded: roll the transaction back and answer what was stored."""


class Peer:
    def __init__(self, environment):
        self.dsn = environment.get("SPEND_PEER_DSN") or sys.exit("SPEND_PEER_DSN is required")
        host, _, port = environment.get("SPEND_PEER_LISTEN", "0.0.0.0:8082").rpartition(":")
        self.host, self.port = host or "0.0.0.0", int(port)
        self.pool_size = int(environment.get("SPEND_PEER_POOL", "32"))
        self.pool = None

    async def spend(self, request):
        user_id = request.match_info["user_id"]
        if not 0 < len(user_id) <= 256 or not no_controls(user_id):
            return error(400, "invalid_identifier", "user_id is 1 to 256 characters, no control characters")
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return error(413, "body_too_large", f"the body is larger than {MAX_BODY_BYTES} bytes")
        try:
            key = idempotency_key(request.headers.get("Idempotency-Key"))
            item, amount, reference = spend_of(await request.read())
        except BadRequest as bad:
            return error(400, bad.code, str(bad))
        try:
            return await self.apply(user_id, key, item, amount, reference)
        except Replay:
            return await self.replay(user_id, key, item, amount, reference)
        except psycopg.Error as failure:
            log("warning", "a spend was not applied", error=str(failure).splitlines()[0] if str(failure) else "")
            return error(503, "database_unavailable", "the database did not answer; retry with the same key",
                         retry_after=1)

    async def apply(self, user_id, key, item, amount, reference):
        async with self.pool.connection() as connection, connection.transaction():
            row = await (await connection.execute(SPEND, (amount, user_id, item, amount))).fetchone()
            if row is not None:
                status = 200
                body = dumps({"user_id": user_id, "idempotency_key": key, "item": item, "book": "production",
                              "amount": amount, "balance": row[0], "reference": reference})
            else:
                balance = await (await connection.execute(BALANCE, (user_id, item))).fetchone()
                status = 409
                body = dumps({"error": {"code": "insufficient_balance",
                                        "message": "the balance cannot pay it; nothing was spent",
                                        "balance": balance[0] if balance else 0}})
            recorded = await connection.execute(
                RECORD, (user_id, key, item, amount, reference, status, body, int(time.time() * 1000)))
            if await recorded.fetchone() is None:
                raise Replay()  # leaving the block rolls the UPDATE back
        return web.Response(status=status, text=body, content_type="application/json")

    async def replay(self, user_id, key, item, amount, reference):
        async with self.pool.connection() as connection:
            stored = await (await connection.execute(STORED, (user_id, key))).fetchone()
        if stored is None:  # cannot be: the row was there a moment ago and rows are never deleted
            return error(503, "database_unavailable", "retry with the same key", retry_after=1)
        stored_item, stored_amount, stored_reference, status, body = stored
        if (stored_item, stored_amount, stored_reference) != (item, amount, reference):
            return error(422, "idempotency_key_reused", "this Idempotency-Key was used for another spend")
        return web.Response(status=status, text=body, content_type="application/json",
                            headers={"Idempotent-Replayed": "true"})

    async def healthy(self, request):
        return web.json_response({"status": "ok"})

    async def run(self):
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as connection:
            await connection.execute(SCHEMA)
        self.pool = AsyncConnectionPool(self.dsn, min_size=self.pool_size, max_size=self.pool_size, open=False)
        await self.pool.open(wait=True, timeout=30)
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post("/v1/users/{user_id}/spends", self.spend)
        app.router.add_get("/healthz", self.healthy)
        app.router.add_get("/readyz", self.healthy)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, backlog=1024)
        await site.start()
        log("info", "HTTP server listening", host=self.host, port=runner.addresses[0][1], pool=self.pool_size)
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stopping.set)
        await stopping.wait()
        await runner.cleanup()  # stops accepting, lets the handlers in flight answer
        await self.pool.close()
        log("info", "spend-peer stopped")


def main():
    if len(sys.argv) > 1:
        print(__doc__)
        sys.exit(0 if sys.argv[1] in ("-h", "--help") else 2)
    asyncio.run(Peer(os.environ).run())


if __name__ == "__main__":
    main()
