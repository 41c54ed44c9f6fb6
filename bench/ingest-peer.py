#!/usr/bin/env python3
"""A plain-Python receipt front door: the peer bench/ingest.sh measures receipt-ingest against (issue 43).

What a competent engineer would write in an afternoon with aiohttp and confluent-kafka (librdkafka): one process,
one asyncio event loop, serving

  POST /v1/receipts   a JSON object (Content-Type application/json, at most 1 MiB: else 415 / 413) with exactly one
                      of receipt_data (standard base64; line breaks removed), signed_transaction (a compact JWS: three
                      base64url parts) and transaction_id (digits); submission_id, order_id, user_id,
                      expected_transaction_id, expected_product_id and expected_app_account_token strings when
                      present (submission_id at most 128 characters; a UUID when absent). Anything else: 400 with
                      {"error": {"code", "message"}}, the ingest's codes.
                      The submission message of the contract (schema_version 1, submitted_at_ms, members sorted as the
                      ingest writes them) goes to RECEIPTS_TOPIC, keyed by user_id, else order_id, else submission_id,
                      headers submission-id and schema-version, from an idempotent producer (acks=all); the answer is
                      202 {"submission_id"} only after the delivery report said Kafka has it: the handler awaits a
                      future that the delivery callback resolves (the callbacks run on a thread that polls the
                      producer and hand the result to the loop). Producer queue full: 503 kafka_queue_full; a failed
                      delivery (none within 10 s): 503 kafka_unavailable; both with Retry-After.
  GET /healthz, GET /readyz   200 (the producer reached the cluster before the server started listening).

It does much less than receipt-ingest, and is a benchmark peer, not a front door to run: no API keys or per-key proof
rules, no aliases of existing clients (receipt, orderNo, transactionId, sandbox), no idempotency (a submission_id
reused with another receipt is written again, never 409; no Idempotency-Key), no result index (no wait_ms, no
GET /v1/receipts/{id}, no follower of the results topic), no App Store Server Notifications endpoint, no JWS sent as
receipt_data, no metrics, no readiness that follows an outage. So its figures bound what an asyncio HTTP service
with an acknowledged Kafka write costs per request, not what the ingest's rules cost.

Settings: KAFKA_BOOTSTRAP_SERVERS, KAFKA_<PROPERTY> (any librdkafka property; linger.ms defaults to 2 ms, the
ingest's), RECEIPTS_TOPIC (iap.receipts.submitted), INGEST_LISTEN (0.0.0.0:8080; port 0 picks one).

    KAFKA_BOOTSTRAP_SERVERS=HOST:PORT INGEST_LISTEN=127.0.0.1:0 bench/ingest-peer.py

Logs JSON lines on stderr; {"msg":"HTTP server listening","port":N} once it accepts requests. SIGTERM or SIGINT:
stops accepting, answers what is in flight, flushes the producer, exits 0.
"""
import asyncio
import base64
import binascii
import json
import os
import re
import signal
import sys
import threading
import time
import uuid

from aiohttp import web
from confluent_kafka import KafkaException, Producer

MAX_BODY_BYTES = 1024 * 1024
DELIVERY_TIMEOUT_MS = 10_000
PROOFS = ("receipt_data", "signed_transaction", "transaction_id")
OPTIONAL_STRINGS = ("order_id", "user_id", "expected_transaction_id", "expected_product_id",
                    "expected_app_account_token")
JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
DIGITS = re.compile(r"[0-9]{1,32}")
NOT_PROPERTIES = ("KAFKA_SERVICE_", "KAFKA_PORT")


def log(level, message, **fields):
    fields = {"level": level, "msg": message, "ts_ms": int(time.time() * 1000), **fields}
    sys.stderr.write(json.dumps(fields, separators=(",", ":")) + "\n")
    sys.stderr.flush()


def error(status, code, message, retry_after=None):
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return web.json_response({"error": {"code": code, "message": message}}, status=status, headers=headers)


class BadRequest(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def submission_of(body):
    """The submission message (a dict) a request body asks for; BadRequest saying why not."""
    try:
        request = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("invalid_json", "the body is not valid JSON") from None
    if not isinstance(request, dict):
        raise BadRequest("invalid_json", "the body must be a JSON object")
    proofs = [name for name in PROOFS if request.get(name) is not None]
    if not proofs:
        raise BadRequest("missing_receipt", "one of receipt_data, signed_transaction, transaction_id is required")
    if len(proofs) > 1:
        raise BadRequest("multiple_proofs", "exactly one of receipt_data, signed_transaction, transaction_id")
    proof = proofs[0]
    value = request[proof]
    if not isinstance(value, str):
        raise BadRequest("invalid_field", f"{proof} must be a string")
    if proof == "receipt_data":
        value = "".join(value.split())
        try:
            if not value or not base64.b64decode(value, validate=True):
                raise ValueError
        except (binascii.Error, ValueError):
            raise BadRequest("invalid_receipt", "receipt_data is not base64") from None
    elif proof == "signed_transaction" and not JWS.fullmatch(value):
        raise BadRequest("invalid_signed_transaction", "signed_transaction is not a compact JWS")
    elif proof == "transaction_id" and not DIGITS.fullmatch(value):
        raise BadRequest("invalid_transaction_id", "transaction_id must be Apple's numeric id")
    for name in OPTIONAL_STRINGS:
        if request.get(name) is not None and not isinstance(request[name], str):
            raise BadRequest("invalid_field", f"{name} must be a string")
    submission_id = request.get("submission_id")
    if submission_id is None:
        submission_id = str(uuid.uuid4())
    elif not isinstance(submission_id, str) or not 0 < len(submission_id) <= 128:
        raise BadRequest("invalid_submission_id", "submission_id must be a string of 1 to 128 characters")
    submission = {name: request[name] for name in OPTIONAL_STRINGS if request.get(name) is not None}
    submission.update({proof: value, "schema_version": 1, "submission_id": submission_id,
                       "submitted_at_ms": int(time.time() * 1000)})
    return submission


class Peer:
    def __init__(self, environment):
        if not environment.get("KAFKA_BOOTSTRAP_SERVERS"):
            sys.exit("KAFKA_BOOTSTRAP_SERVERS is required")
        properties = {
            name[len("KAFKA_"):].lower().replace("_", "."): value for name, value in environment.items()
            if name.startswith("KAFKA_") and not name.startswith(NOT_PROPERTIES)
        }
        properties.pop("fetch.wait.max.ms", None)  # a consumer's property (bench/lib.sh exports it for all)
        self.topic = environment.get("RECEIPTS_TOPIC", "iap.receipts.submitted")
        host, _, port = environment.get("INGEST_LISTEN", "0.0.0.0:8080").rpartition(":")
        self.host, self.port = host or "0.0.0.0", int(port)
        self.producer = Producer({"linger.ms": 2, **properties, "acks": "all", "enable.idempotence": True,
                                  "message.timeout.ms": DELIVERY_TIMEOUT_MS})
        self.polling = True
        self.poll_thread = threading.Thread(target=self.poll, name="producer-poll", daemon=True)
        self.loop = None

    def poll(self):
        """Serves delivery reports: each callback runs here and hands its result to the loop."""
        while self.polling:
            self.producer.poll(0.1)

    async def write(self, key, value, headers):
        """Resolves once Kafka acknowledged the message (acks=all); raises KafkaException when it did not."""
        delivered = self.loop.create_future()

        def settle(failure):
            if delivered.done():
                return
            if failure is None:
                delivered.set_result(None)
            else:
                delivered.set_exception(KafkaException(failure))

        self.producer.produce(self.topic, value=value, key=key, headers=headers,
                              on_delivery=lambda failure, message: self.loop.call_soon_threadsafe(settle, failure))
        await delivered

    async def submit(self, request):
        if request.content_type != "application/json":
            return error(415, "unsupported_media_type", "the body must be application/json")
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return error(413, "body_too_large", f"the body is larger than {MAX_BODY_BYTES} bytes")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return error(413, "body_too_large", f"the body is larger than {MAX_BODY_BYTES} bytes")
        try:
            submission = submission_of(body)
        except BadRequest as bad:
            return error(400, bad.code, str(bad))
        submission_id = submission["submission_id"]
        key = submission.get("user_id") or submission.get("order_id") or submission_id
        value = json.dumps(submission, separators=(",", ":"), sort_keys=True).encode()
        try:
            await self.write(key.encode(), value, [("submission-id", submission_id.encode()),
                                                   ("schema-version", b"1")])
        except BufferError:
            return error(503, "kafka_queue_full", "too many submissions waiting for Kafka", retry_after=1)
        except KafkaException as failure:
            log("warning", "a submission was not written", submission_id=submission_id, error=str(failure))
            return error(503, "kafka_unavailable", "Kafka did not acknowledge the submission", retry_after=5)
        return web.json_response({"submission_id": submission_id}, status=202)

    async def healthy(self, request):
        return web.json_response({"status": "ok"})

    async def run(self):
        self.loop = asyncio.get_running_loop()
        # Reach the cluster before taking requests (what /readyz answers for).
        try:
            await self.loop.run_in_executor(None, lambda: self.producer.list_topics(self.topic, timeout=10))
        except KafkaException as failure:
            sys.exit(f"cannot reach Kafka: {failure}")
        self.poll_thread.start()
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post("/v1/receipts", self.submit)
        app.router.add_get("/healthz", self.healthy)
        app.router.add_get("/readyz", self.healthy)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, backlog=1024)
        await site.start()
        port = runner.addresses[0][1]
        log("info", "HTTP server listening", host=self.host, port=port, topic=self.topic)
        stopping = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(signum, stopping.set)
        await stopping.wait()
        await runner.cleanup()  # stops accepting, lets the handlers in flight answer
        self.polling = False
        self.poll_thread.join()
        left = self.producer.flush(10)
        log("info", "ingest-peer stopped", undelivered=left)


def main():
    if len(sys.argv) > 1:
        print(__doc__)
        sys.exit(0 if sys.argv[1] in ("-h", "--help") else 2)
    asyncio.run(Peer(os.environ).run())


if __name__ == "__main__":
    main()
