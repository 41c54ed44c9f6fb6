#!/usr/bin/env python3
"""A plain-Python receipt verifier: the peer bench/verifier.sh measures receipt-verifier against (issue 43).

What a competent engineer would write in an afternoon with confluent-kafka (librdkafka), asyncio and aiohttp:

  1. a consumer in the group VERIFIER_GROUP_ID reads RECEIPTS_TOPIC; at most VERIFIER_MAX_IN_FLIGHT (512)
     submissions are being verified at once (the consumer is not read while that many are);
  2. each submission is checked (JSON object, schema_version 1, a submission_id, exactly one of receipt_data,
     signed_transaction and transaction_id, optional fields strings) and its receipt posted to Apple's verifyReceipt
     (APPLE_VERIFY_RECEIPT_URL; 21007 goes to APPLE_SANDBOX_VERIFY_RECEIPT_URL, 21008 back) over one aiohttp session
     with a connection per call in flight;
  3. Apple's status decides: 0 (and 21006) -> the receipt's bundle_id must be in ALLOWED_BUNDLE_IDS
     (bundle_mismatch), Sandbox must be allowed by SANDBOX_POLICY (sandbox_not_allowed), the expected transaction and
     product must be there (transaction_not_found, product_mismatch), some in_app transaction (no_purchases), not all
     of them refunded (refunded), else verified; 21001, 21003, 21010 and 21100-21199 not retryable -> rejected
     invalid_receipt; 21000 and 21004 -> failed config_error; anything else (21002, 21005, 21009, other HTTP
     statuses, timeouts, connection errors) is retried in place, three more times with backoff, then failed
     apple_unavailable. A message that is not a valid submission is failed malformed_submission;
  4. one result per submission on RESULTS_TOPIC, keyed like the submission, headers submission-id and outcome, a
     JSON object of the contract's shape (schemas/result.schema.json: every required member, those only signed data
     fills null; each transaction with its ids, dates, quantity, credit_key, creditable), from an idempotent
     producer (acks=all);
  5. a submission's offset is committed once its result's delivery report came back and every earlier offset of its
     partition is done too (contiguous per partition), so a crash re-verifies what was not acknowledged (duplicates,
     never losses). SIGTERM or SIGINT: stops reading, finishes what is in flight, commits, exits 0.

It does much less than receipt-verifier, and is a benchmark peer, not a verifier to run: receipts only (a
signed_transaction or transaction_id is a failed config_error result: no JWS checks, no App Store Server API); no
retry topic (Apple's outages are retried in place, holding a slot, then end as failed), no DLQ records, no circuit
breaker, no product catalog (credit is null, no unknown_product), no app account token policy, refunds read from
in_app's cancellation dates only (no latest_receipt_info evidence, no fail-closed reading of odd fields: a field it
cannot read is skipped), no upgrade or family-sharing rules, no purchase events from notifications, no health or
metrics endpoints. So its figures bound what an asyncio verifyReceipt client with Kafka on both sides costs, not
what the verifier's rules cost.

Settings: the contract's environment variables, read as receipt-verifier reads them (so verifier-bench starts it
with --verifier bench/verifier-peer.py, exactly as it starts the verifier): KAFKA_BOOTSTRAP_SERVERS,
KAFKA_<PROPERTY> (any librdkafka property, on the consumer and the producer), RECEIPTS_TOPIC, RESULTS_TOPIC,
VERIFIER_GROUP_ID, VERIFIER_MAX_IN_FLIGHT, APPLE_VERIFY_RECEIPT_URL, APPLE_SANDBOX_VERIFY_RECEIPT_URL,
APPLE_SHARED_SECRET, APPLE_TIMEOUT_MS, ALLOWED_BUNDLE_IDS, SANDBOX_POLICY. Others are ignored.

    KAFKA_BOOTSTRAP_SERVERS=HOST:PORT ALLOWED_BUNDLE_IDS=com.example.game bench/verifier-peer.py

Logs JSON lines on stderr; "verifier-peer started" once subscribed.
"""
import asyncio
import collections
import concurrent.futures
import hashlib
import json
import os
import signal
import sys
import threading
import time

import aiohttp
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

PROOFS = ("receipt_data", "signed_transaction", "transaction_id")
OPTIONAL_STRINGS = ("order_id", "user_id", "client_id", "expected_transaction_id", "expected_product_id",
                    "expected_app_account_token")
RETRIES = 3
# Members of a result transaction that only signed transactions carry: null from verifyReceipt, as the schema says.
SIGNED_ONLY = dict.fromkeys((
    "revocation_type", "revocation_percentage", "price", "currency", "transaction_reason", "offer_discount_type",
    "offer_period", "billing_plan_type", "commitment_info", "app_transaction_id", "offer_type", "offer_identifier",
    "storefront", "storefront_id"))
# librdkafka properties the contract's KAFKA_* variables must not reach (Kubernetes service links).
NOT_PROPERTIES = ("KAFKA_SERVICE_", "KAFKA_PORT")


def log(level, message, **fields):
    fields = {"level": level, "msg": message, "ts_ms": int(time.time() * 1000), **fields}
    sys.stderr.write(json.dumps(fields, separators=(",", ":")) + "\n")
    sys.stderr.flush()


def kafka_properties(environment):
    """KAFKA_<PROPERTY> variables as librdkafka properties (KAFKA_FETCH_WAIT_MAX_MS -> fetch.wait.max.ms)."""
    properties = {}
    for name, value in environment.items():
        if name.startswith("KAFKA_") and not name.startswith(NOT_PROPERTIES):
            properties[name[len("KAFKA_"):].lower().replace("_", ".")] = value
    return properties


class Settings:
    def __init__(self, environment):
        if not environment.get("KAFKA_BOOTSTRAP_SERVERS"):
            sys.exit("KAFKA_BOOTSTRAP_SERVERS is required")
        self.allowed_bundle_ids = {b.strip() for b in environment.get("ALLOWED_BUNDLE_IDS", "").split(",") if b.strip()}
        if not self.allowed_bundle_ids:
            sys.exit("ALLOWED_BUNDLE_IDS is required")
        self.kafka = kafka_properties(environment)
        self.receipts_topic = environment.get("RECEIPTS_TOPIC", "iap.receipts.submitted")
        self.results_topic = environment.get("RESULTS_TOPIC", "iap.receipts.results")
        self.group_id = environment.get("VERIFIER_GROUP_ID", "iap-verifier")
        self.max_in_flight = int(environment.get("VERIFIER_MAX_IN_FLIGHT", "512"))
        self.production_url = environment.get("APPLE_VERIFY_RECEIPT_URL", "https://buy.itunes.apple.com/verifyReceipt")
        self.sandbox_url = environment.get(
            "APPLE_SANDBOX_VERIFY_RECEIPT_URL", "https://sandbox.itunes.apple.com/verifyReceipt")
        self.shared_secret = environment.get("APPLE_SHARED_SECRET", "")
        self.timeout_s = int(environment.get("APPLE_TIMEOUT_MS", "30000")) / 1000
        self.sandbox_policy = environment.get("SANDBOX_POLICY", "accept")
        if self.max_in_flight <= 0 or self.sandbox_policy not in ("accept", "reject"):
            sys.exit("VERIFIER_MAX_IN_FLIGHT must be positive and SANDBOX_POLICY accept or reject")


class Malformed(Exception):
    pass


def read_submission(value):
    """The submission as a dict, or Malformed saying why not."""
    try:
        submission = json.loads(value)
    except (ValueError, TypeError) as error:
        raise Malformed(f"not JSON: {error}") from None
    if not isinstance(submission, dict):
        raise Malformed("not a JSON object")
    if submission.get("schema_version") != 1:
        raise Malformed("schema_version is not 1")
    if not isinstance(submission.get("submission_id"), str) or not submission["submission_id"]:
        raise Malformed("no submission_id")
    proofs = [p for p in PROOFS if submission.get(p) is not None]
    if len(proofs) != 1:
        raise Malformed("exactly one of receipt_data, signed_transaction, transaction_id is needed")
    if not isinstance(submission[proofs[0]], str):
        raise Malformed(f"{proofs[0]} is not a string")
    for name in OPTIONAL_STRINGS:
        if submission.get(name) is not None and not isinstance(submission[name], str):
            raise Malformed(f"{name} is not a string")
    return submission


def as_int(value):
    """verifyReceipt's numbers come as strings ("1", "1539946248000"); None when absent or unreadable."""
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def transaction_of(entry, environment):
    """One in_app entry as a result transaction; None when it lacks the ids a transaction needs."""
    if not isinstance(entry, dict):
        return None
    transaction_id, product_id = entry.get("transaction_id"), entry.get("product_id")
    purchase_ms = as_int(entry.get("purchase_date_ms"))
    if not isinstance(transaction_id, str) or not isinstance(product_id, str) or purchase_ms is None:
        return None
    original = entry.get("original_transaction_id") or transaction_id
    period = entry.get("web_order_line_item_id")
    expires_ms = as_int(entry.get("expires_date_ms"))
    cancelled_ms = as_int(entry.get("cancellation_date_ms"))
    upgraded = entry.get("is_upgraded") == "true"
    purchase = f"period:{period}" if period else original
    return {
        "transaction_id": transaction_id,
        "original_transaction_id": original,
        "product_id": product_id,
        "quantity": as_int(entry.get("quantity")) or 1,
        "purchase_date_ms": purchase_ms,
        "expires_date_ms": expires_ms,
        "cancellation_date_ms": cancelled_ms,
        "cancellation_reason": entry.get("cancellation_reason"),
        "web_order_line_item_id": period,
        "in_app_ownership_type": entry.get("in_app_ownership_type"),
        "is_trial_period": entry.get("is_trial_period") == "true",
        "app_account_token": entry.get("app_account_token"),
        "product_type": "auto_renewable" if period or expires_ms is not None else None,
        **SIGNED_ONLY,
        "credit_key": f"apple:{environment.lower()}:{purchase}",
        "creditable": cancelled_ms is None and not upgraded,
        "not_creditable_reason": "refunded" if cancelled_ms is not None else "upgraded" if upgraded else None,
        "credit": None,
        "is_upgraded": upgraded,
    }


class Verdict:
    def __init__(self, outcome, reason=None, message=None, apple_status=None, environment=None, bundle_id=None,
                 transactions=(), attempts=0):
        self.outcome, self.reason, self.message = outcome, reason, message
        self.apple_status, self.environment, self.bundle_id = apple_status, environment, bundle_id
        self.transactions, self.attempts = list(transactions), attempts


class PartitionWindow:
    """The offsets of one assigned partition read and not yet committable, in order. Dropped (live = False) when the
    partition is revoked: what finishes afterwards is not committed by this member."""

    def __init__(self):
        self.pending = collections.deque()
        self.done = set()
        self.committable = None
        self.committed = None
        self.live = True

    def add(self, offset):
        self.pending.append(offset)

    def finish(self, offset):
        self.done.add(offset)
        while self.pending and self.pending[0] in self.done:
            first = self.pending.popleft()
            self.done.discard(first)
            self.committable = first + 1


class Peer:
    def __init__(self, settings):
        self.settings = settings
        self.loop = None
        self.stopping = False
        self.fatal = None
        self.in_flight = 0
        self.capacity = asyncio.Event()
        self.windows = {}  # (topic, partition) -> PartitionWindow, touched on the loop's thread only
        self.counts = collections.Counter()
        self.consumer_thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="consumer")
        self.consumer = Consumer({
            **settings.kafka,
            "group.id": settings.group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "on_commit": self.on_commit,
        })
        producer_properties = {
            key: value for key, value in settings.kafka.items()
            if not key.startswith(("session.", "fetch.", "group.", "heartbeat.", "max.poll", "auto.offset"))
        }
        self.producer = Producer({**producer_properties, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": settings.kafka.get("linger.ms", "5")})
        self.producer_polling = True
        self.producer_thread = threading.Thread(target=self.poll_producer, name="producer-poll", daemon=True)

    # ---- Kafka, on the consumer's thread (every consumer call is made there, one at a time) --------------------

    def fetch(self, commits, count):
        """Commits the offsets that became contiguous, then reads up to `count` messages (100 ms at most)."""
        if commits:
            self.consumer.commit(offsets=commits, asynchronous=True)
        return self.consumer.consume(num_messages=count, timeout=0.1) if count > 0 else []

    def on_revoke(self, consumer, partitions):
        """Commits what is done of the partitions going away (synchronously) and forgets their windows."""
        commits = asyncio.run_coroutine_threadsafe(self.revoked(partitions), self.loop).result()
        if commits:
            try:
                consumer.commit(offsets=commits, asynchronous=False)
            except KafkaException as error:
                log("warning", "cannot commit revoked partitions' offsets", error=str(error))
        log("info", "partitions revoked", partitions=[f"{p.topic}/{p.partition}" for p in partitions])

    def on_assign(self, consumer, partitions):
        log("info", "partitions assigned", partitions=[f"{p.topic}/{p.partition}" for p in partitions])

    def on_commit(self, error, partitions):
        if error is not None:
            log("warning", "offset commit failed; the partition's next commit carries it", error=str(error))

    def poll_producer(self):
        """Serves delivery reports (their callbacks run here and hand the result to the loop)."""
        while self.producer_polling:
            self.producer.poll(0.1)

    # ---- on the loop --------------------------------------------------------------------------------------------

    async def revoked(self, partitions):
        commits = []
        for p in partitions:
            window = self.windows.pop((p.topic, p.partition), None)
            if window is None:
                continue
            window.live = False
            if window.committable is not None and window.committable != window.committed:
                commits.append(TopicPartition(p.topic, p.partition, window.committable))
        return commits

    def advanced_offsets(self):
        commits = []
        for (topic, partition), window in self.windows.items():
            if window.committable is not None and window.committable != window.committed:
                commits.append(TopicPartition(topic, partition, window.committable))
                window.committed = window.committable
        return commits

    async def produce(self, topic, key, value, headers):
        """Resolves once Kafka acknowledged the record (acks=all); raises KafkaException when it did not."""
        delivered = self.loop.create_future()

        def report(error, message):
            self.loop.call_soon_threadsafe(settle, error)

        def settle(error):
            if delivered.done():
                return
            if error is None:
                delivered.set_result(None)
            else:
                delivered.set_exception(KafkaException(error))

        while True:
            try:
                self.producer.produce(topic, value=value, key=key, headers=headers, on_delivery=report)
                break
            except BufferError:  # the producer's queue is full: wait for deliveries
                await asyncio.sleep(0.005)
        await delivered

    async def call_apple(self, session, receipt):
        """Apple's verdict on a receipt, with redirects between environments and retries of outages."""
        body = {"receipt-data": receipt}
        if self.settings.shared_secret:
            body["password"] = self.settings.shared_secret
        payload = json.dumps(body).encode()
        url, attempts, retries, status = self.settings.production_url, 0, 0, None
        while True:
            attempts += 1
            answer, problem = None, None
            try:
                async with session.post(url, data=payload, headers={"Content-Type": "application/json"}) as response:
                    if response.status == 200:
                        answer = await response.json(content_type=None)
                    else:
                        problem = f"HTTP {response.status}"
            except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as error:
                problem = f"{type(error).__name__}: {error}"
            if answer is not None:
                status = answer.get("status") if isinstance(answer, dict) else None
                if status in (0, 21006):
                    return self.judge(answer, url, attempts)
                if status == 21007 and url != self.settings.sandbox_url and attempts < 6:
                    url = self.settings.sandbox_url
                    continue
                if status == 21008 and url != self.settings.production_url and attempts < 6:
                    url = self.settings.production_url
                    continue
                if status in (21001, 21003, 21010) or (
                        isinstance(status, int) and 21100 <= status <= 21199 and not answer.get("is_retryable")):
                    return Verdict("rejected", "invalid_receipt", f"Apple status {status}", status, attempts=attempts)
                if status in (21000, 21004):
                    return Verdict("failed", "config_error", f"Apple status {status}", status, attempts=attempts)
                problem = f"Apple status {status}"
            if retries >= RETRIES:
                return Verdict("failed", "apple_unavailable", problem, status, attempts=attempts)
            retries += 1
            await asyncio.sleep(0.25 * 2 ** retries)

    def judge(self, answer, url, attempts):
        receipt = answer.get("receipt") if isinstance(answer.get("receipt"), dict) else {}
        environment = answer.get("environment")
        if environment not in ("Production", "Sandbox"):
            environment = "Sandbox" if url == self.settings.sandbox_url else "Production"
        bundle_id = receipt.get("bundle_id")
        verdict = lambda outcome, reason, message, transactions=(): Verdict(  # noqa: E731
            outcome, reason, message, answer.get("status"), environment, bundle_id, transactions, attempts)
        if bundle_id not in self.settings.allowed_bundle_ids:
            return verdict("rejected", "bundle_mismatch", f"bundle {bundle_id!r} is not allowed")
        if environment == "Sandbox" and self.settings.sandbox_policy == "reject":
            return verdict("rejected", "sandbox_not_allowed", "a sandbox receipt")
        entries = receipt.get("in_app") or answer.get("latest_receipt_info") or []
        transactions = [t for t in (transaction_of(e, environment) for e in entries) if t is not None]
        if not transactions:
            return verdict("rejected", "no_purchases" if not entries else "invalid_receipt", "no usable transaction")
        return verdict("verified", None, None, transactions)

    def expectations(self, submission, verdict):
        """The submission's expected transaction and product narrow a verified verdict."""
        if verdict.outcome != "verified":
            return verdict
        expected_id, expected_product = submission.get("expected_transaction_id"), submission.get("expected_product_id")
        transactions = verdict.transactions
        if expected_id is not None:
            transactions = [t for t in transactions if t["transaction_id"] == expected_id]
            if not transactions:
                verdict.outcome, verdict.reason, verdict.transactions = "rejected", "transaction_not_found", []
                return verdict
        if expected_product is not None:
            if not any(t["product_id"] == expected_product for t in transactions):
                verdict.outcome, verdict.reason = "rejected", "product_mismatch"
            transactions = [t for t in transactions if t["product_id"] == expected_product] or transactions
        verdict.transactions = transactions
        if verdict.outcome == "verified" and not any(t["cancellation_date_ms"] is None for t in transactions):
            verdict.outcome, verdict.reason = "rejected", "refunded"
        if verdict.outcome == "rejected":
            for t in verdict.transactions:
                t["creditable"] = False
                t["not_creditable_reason"] = t["not_creditable_reason"] or "rejected"
        return verdict

    async def verify(self, session, message):
        """The result (a dict) for one consumed message."""
        header_id = next((v.decode(errors="replace") for k, v in message.headers() or ()
                          if k == "submission-id" and v), None)
        try:
            submission = read_submission(message.value())
        except Malformed as error:
            submission_id = header_id or f"{message.topic()}/{message.partition()}/{message.offset()}"
            return self.result({"submission_id": submission_id}, "", Verdict(
                "failed", "malformed_submission", str(error)))
        if submission.get("receipt_data") is None:
            proof = "signed_transaction" if submission.get("signed_transaction") is not None else "transaction_id"
            return self.result(submission, submission.get(proof), Verdict(
                "failed", "config_error", f"the peer verifies receipts only, not a {proof}"))
        receipt = "".join(submission["receipt_data"].split())
        verdict = self.expectations(submission, await self.call_apple(session, receipt))
        return self.result(submission, receipt, verdict)

    def result(self, submission, proof, verdict):
        expectations = "\n".join(submission.get(n) or "" for n in (
            "expected_transaction_id", "expected_product_id", "expected_app_account_token"))
        return {
            "schema_version": 1,
            "submission_id": submission["submission_id"],
            "order_id": submission.get("order_id"),
            "user_id": submission.get("user_id"),
            "client_id": submission.get("client_id"),
            "outcome": verdict.outcome,
            "reason": verdict.reason,
            "source": "verify_receipt",
            "message": verdict.message,
            "apple_status": verdict.apple_status,
            "environment": verdict.environment,
            "bundle_id": verdict.bundle_id,
            "transactions": verdict.transactions,
            "submission_fingerprint": hashlib.sha256(f"{proof}\n{expectations}".encode()).hexdigest(),
            "attempts": verdict.attempts,
            "verified_at_ms": int(time.time() * 1000),
        }

    async def handle(self, session, message, window):
        try:
            result = await self.verify(session, message)
            self.counts[result["outcome"]] += 1
            await self.produce(
                self.settings.results_topic, message.key(), json.dumps(result, separators=(",", ":")).encode(),
                [("submission-id", result["submission_id"].encode()), ("outcome", result["outcome"].encode())])
            window.finish(message.offset())
        except Exception as error:  # a result Kafka refused, or a defect: stop without committing past it
            if self.fatal is None:
                self.fatal = error
                log("error", "cannot write a result; stopping (what was not committed is verified again)",
                    error=f"{type(error).__name__}: {error}", offset=message.offset(), partition=message.partition())
            self.stopping = True
        finally:
            self.in_flight -= 1
            self.capacity.set()

    async def run(self):
        self.loop = asyncio.get_running_loop()
        self.producer_thread.start()
        for signum in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(signum, self.stop)
        self.consumer.subscribe([self.settings.receipts_topic], on_assign=self.on_assign, on_revoke=self.on_revoke)
        log("info", "verifier-peer started", topic=self.settings.receipts_topic, group=self.settings.group_id,
            max_in_flight=self.settings.max_in_flight)
        connector = aiohttp.TCPConnector(limit=self.settings.max_in_flight)
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
        tasks = set()
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            while not self.stopping:
                while self.in_flight >= self.settings.max_in_flight and not self.stopping:
                    self.capacity.clear()
                    await self.capacity.wait()
                if self.stopping:
                    break
                room = min(self.settings.max_in_flight - self.in_flight, 1000)
                messages = await self.loop.run_in_executor(self.consumer_thread, self.fetch,
                                                           self.advanced_offsets(), room)
                for message in messages:
                    error = message.error()
                    if error is not None:
                        if error.fatal():
                            raise KafkaException(error)
                        log("warning", "consumer error", error=str(error))
                        continue
                    key = (message.topic(), message.partition())
                    window = self.windows.get(key)
                    if window is None:
                        window = self.windows[key] = PartitionWindow()
                    window.add(message.offset())
                    self.in_flight += 1
                    task = asyncio.create_task(self.handle(session, message, window))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            # Stopping: finish what is in flight, then commit it.
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        await self.loop.run_in_executor(self.consumer_thread, self.close_consumer)
        self.producer_polling = False
        self.producer_thread.join()
        self.producer.flush(10)
        log("info", "verifier-peer stopped", **self.counts)

    def close_consumer(self):
        """The last contiguous offsets (also after a fatal error: everything below them was acknowledged)."""
        commits = self.advanced_offsets()
        if commits:
            try:
                self.consumer.commit(offsets=commits, asynchronous=False)
            except KafkaException as error:
                log("warning", "cannot commit the last offsets", error=str(error))
        self.consumer.close()  # revokes (on_revoke runs on this thread, the loop answers it)

    def stop(self):
        self.stopping = True
        self.capacity.set()


def main():
    if len(sys.argv) > 1:
        print(__doc__)
        sys.exit(0 if sys.argv[1] in ("-h", "--help") else 2)
    peer = Peer(Settings(os.environ))
    asyncio.run(peer.run())
    sys.exit(1 if peer.fatal is not None else 0)


if __name__ == "__main__":
    main()
