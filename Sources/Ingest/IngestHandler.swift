import Foundation
import HTTPServer
import Kafka
import ReceiptModel
import ServiceRuntime
import ServiceSupport
import Synchronization

/// The ingest's HTTP endpoints. Runs on the HTTP server's threads: the route, API key and media type are decided
/// from the request head before any body is read (`admit`); validation and the Kafka enqueue happen inline (both
/// are quick); the answer to a submission comes later, from Kafka's delivery report (and, with `wait_ms`, from the
/// result index when the verdict arrives or a timer when it does not: a waiting request holds no thread).
final class IngestHandler: HTTPHandler {
    let settings: IngestSettings
    let publisher: any SubmissionPublisher
    let results: ResultIndex
    private let resultFeed: (any ResultFeed)?
    let authenticator: APIKeyAuthenticator
    let metrics: IngestMetrics
    let logger: Logger
    /// Set when draining starts: `/readyz` turns false so load balancers stop sending traffic.
    let isDraining = Atomic<Bool>(false)
    /// Set once the producer has reached a broker: from then on `/readyz` no longer follows Kafka's reachability.
    let hasReachedKafka = Atomic<Bool>(false)
    /// Answers `kafka_timeout` (with the submission id) for requests Kafka has not reported on within
    /// `kafkaAnswerTimeoutMs`; whoever `claim`s a `PendingKafkaAnswer` first answers it. An entry answered by its
    /// report stays until its deadline passes, then is dropped.
    let kafkaDeadlines: DeadlineSweeper<PendingKafkaAnswer>

    /// How long a request waits for Kafka's report before the handler answers `kafka_timeout` itself: librdkafka's
    /// `message.timeout.ms` plus 1 s (librdkafka checks message timeouts about once a second, and its own report is
    /// the better answer). `IngestService` keeps the HTTP server's deadline and stop grace beyond this, so the answer
    /// carries the submission id.
    static func kafkaAnswerTimeoutMs(_ settings: IngestSettings) -> Int {
        settings.effectiveDeliveryTimeoutMs + 1000
    }

    init(
        settings: IngestSettings, publisher: any SubmissionPublisher, results: ResultIndex,
        resultFeed: (any ResultFeed)?, metrics: IngestMetrics, logger: Logger
    ) {
        self.settings = settings
        self.publisher = publisher
        self.results = results
        self.resultFeed = resultFeed
        self.authenticator = APIKeyAuthenticator(keys: settings.apiKeys)
        self.metrics = metrics
        self.logger = logger
        let retryAfter = settings.retryAfterSeconds
        let deliveryTimeoutMs = settings.effectiveDeliveryTimeoutMs
        let answerTimeoutMs = Self.kafkaAnswerTimeoutMs(settings)
        // Overshoot at most ~5% of the timeout, between 10 and 100 ms.
        let tickMs = min(max(answerTimeoutMs / 20, 10), 100)
        kafkaDeadlines = DeadlineSweeper(
            timeout: .milliseconds(max(0, answerTimeoutMs)), tick: .milliseconds(tickMs),
            label: "ingest-kafka-answer-deadlines"
        ) { expired in
            for pending in expired {
                guard let respond = pending.claim() else { continue }
                Self.answerLate(pending, respond: respond, retryAfter: retryAfter,
                                deliveryTimeoutMs: deliveryTimeoutMs, metrics: metrics, logger: logger)
            }
        }
    }

    /// Answers `kafka_timeout` for a request whose delivery report did not come in time (already claimed for it).
    private static func answerLate(
        _ pending: PendingKafkaAnswer, respond: HTTPResponder, retryAfter: Int, deliveryTimeoutMs: Int,
        metrics: IngestMetrics, logger: Logger
    ) {
        let answer = APIError.kafkaWrite(
            .noReport(afterMs: deliveryTimeoutMs), of: pending.kind, id: pending.id, retryAfter: retryAfter,
            deliveryTimeoutMs: deliveryTimeoutMs)
        switch pending.kind {
        case .submission: metrics.recordRejection(code: answer.code)
        case .notification: metrics.notificationsUnavailable.increment()
        }
        logger.warning(
            "no delivery report from Kafka in time; answered kafka_timeout",
            ["kind": .string(pending.kind.rawValue), "id": .string(pending.id)])
        respond(answer.response)
    }

    /// Decides from the head: unknown route (404), wrong method (405), missing or wrong API key (401), a body that
    /// is not JSON (415), and each route's body limit. Refusals here never read the body.
    func admit(_ head: HTTPRequestHead) -> HTTPAdmission {
        let route = IngestRoute(path: head.path)
        guard route != .notFound else { return .respond(APIError.notFound.response) }
        guard route.allowedMethods.contains(head.method) else {
            return .respond(APIError.methodNotAllowed(allowed: route.allowedMethods).response)
        }
        if route.needsAPIKey, authenticator.authenticate(authorizationHeader: head.headers["authorization"]) == nil {
            metrics.recordRejection(code: APIError.unauthorized.code)
            return .respond(APIError.unauthorized.response)
        }
        switch route {
        case .submitReceipt:
            if let contentType = head.headers["content-type"], !Self.isJSON(contentType) {
                let error = APIError.unsupportedMediaType(contentType)
                metrics.recordRejection(code: error.code)
                return .respond(error.response)
            }
            return .acceptBody(maxBodyBytes: settings.maxBodyBytes)
        case .appleNotification:
            return .acceptBody(maxBodyBytes: settings.notificationMaxBodyBytes)
        case .lookupReceipt, .health, .readiness, .metrics, .notFound:
            return .acceptBody(maxBodyBytes: 0)
        }
    }

    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        let route = IngestRoute(path: request.path)
        guard route != .notFound else { return respond(APIError.notFound.response) }
        guard route.allowedMethods.contains(request.method) else {
            return respond(APIError.methodNotAllowed(allowed: route.allowedMethods).response)
        }
        // Admitted already; authenticating again only says who the caller is (constant time, a few keys).
        var caller = Caller.unrestricted
        if route.needsAPIKey {
            guard let authenticated = authenticator.authenticate(authorizationHeader: request.headers["authorization"])
            else {
                metrics.recordRejection(code: APIError.unauthorized.code)
                return respond(APIError.unauthorized.response)
            }
            caller = authenticated
        }
        switch route {
        case .submitReceipt:
            submit(request, caller: caller, respond: respond)
        case .lookupReceipt(let id):
            respond(lookup(id, caller: caller))
        case .appleNotification:
            receiveNotification(request, respond: respond)
        case .health:
            respond(Health().livenessResponse)
        case .readiness:
            respond(Health(readiness: readinessProblem()).readinessResponse)
        case .metrics:
            respond(HealthEndpoints.metricsResponse(metrics.registry))
        case .notFound:
            respond(APIError.notFound.response)
        }
    }

    /// Not ready while draining, before the producer first reached a broker, and while the read-back of recent
    /// results is under way. A Kafka outage after that keeps the pod ready: every replica sees the same outage, and
    /// taking them all out of the Service would turn the documented `503` + `Retry-After` (which clients and Apple
    /// retry) into refused connections.
    func readinessProblem() -> String? {
        if isDraining.load(ordering: .relaxed) { return "draining" }
        if !hasReachedKafka.load(ordering: .relaxed) {
            guard publisher.isConnected else { return "no Kafka broker reachable" }
            hasReachedKafka.store(true, ordering: .relaxed)
        }
        if let resultFeed, !resultFeed.isCaughtUp { return "reading back recent results" }
        return nil
    }

    // MARK: - POST /v1/receipts

    private func submit(_ request: HTTPRequest, caller: Caller, respond: @escaping HTTPResponder) {
        let submission: Submission
        let waitMs: Int
        do throws(APIError) {
            // The media type was checked from the head (`admit`).
            let parsed = try SubmissionRequest.parse(request.body)
            // Before anything else: a refused kind never reaches the result index or Kafka.
            let kind = ProofKind(parsed.proof)
            if let refusal = settings.keyProofs.refusal(
                of: kind, for: caller, authenticationEnabled: !settings.apiKeys.isEmpty) {
                metrics.recordProofRefusal(client: caller.clientId ?? "", proof: kind)
                throw refusal
            }
            let id = try SubmissionId.resolve(
                body: parsed.submissionId, idempotencyKey: request.headers["idempotency-key"])
            submission = parsed.submission(id: id, clientId: caller.clientId, submittedAtMs: SystemTime.wallMilliseconds())
            waitMs = try Self.waitMilliseconds(request.query["wait_ms"], maximum: settings.maxWaitMs)
        } catch {
            reject(error, bodyBytes: request.body.count, respond: respond)
            return
        }
        let id = submission.submissionId
        let reservation: ResultIndex.Reservation
        switch results.admit(id, fingerprint: submission.fingerprint, caller: caller) {
        case .foreign:
            reject(.submissionIdTaken(), bodyBytes: request.body.count, respond: respond)
            return
        case .conflict:
            logger.info("submission_id reused with another fingerprint", ["submission_id": .string(id)])
            reject(.submissionConflict().about(id), bodyBytes: request.body.count, respond: respond)
            return
        case .answer(let result):
            // A resubmission whose final verdict is known: answer it, and write nothing to Kafka again.
            metrics.answeredFromIndex.increment()
            logger.debug("resubmission answered from the result index", ["submission_id": .string(id)])
            respond(Self.resultResponse(result))
            return
        case .write(let reserved):
            reservation = reserved
        }
        let value = SubmissionJSON.encode(submission)
        guard publisher.isConnected else {
            results.abandoned(reservation)
            reject(kafkaWriteAnswer(.noBroker, id: id), bodyBytes: request.body.count, respond: respond)
            return
        }
        publish(submission, value: value, reservation: reservation, caller: caller, waitMs: waitMs, respond: respond)
    }

    private func publish(
        _ submission: Submission, value: [UInt8], reservation: ResultIndex.Reservation, caller: Caller, waitMs: Int,
        respond: @escaping HTTPResponder
    ) {
        let id = submission.submissionId
        let headers = [
            KafkaHeader(name: MessageHeaders.submissionId, string: id),
            KafkaHeader(name: MessageHeaders.schemaVersion, string: String(submission.schemaVersion)),
        ]
        let started = SystemTime.monotonicNanoseconds()
        let bytes = value.count
        metrics.waitingForKafka.increment()
        let pending = PendingKafkaAnswer(id: id, respond: respond)
        kafkaDeadlines.register(pending)
        do throws(KafkaError) {
            try publisher.publish(
                topic: settings.receiptsTopic, key: Array(submission.partitionKey.utf8), value: value,
                headers: headers
            ) { [self] result in
                // On the Kafka poll thread: record and hand the answer to the HTTP server, nothing more. The handler
                // is captured, not copies of its settings and metrics (structs of many references: each copy
                // retained and released every one of them, per request).
                metrics.waitingForKafka.decrement()
                metrics.kafkaDeliverySeconds.observeSeconds(since: started)
                // nil when the handler answered kafka_timeout already because the report came late (a success is
                // still recorded: the submission is in Kafka, and a retry with the same id finds it pending).
                let answer = pending.claim()
                switch result {
                case .success(let report):
                    metrics.kafkaDelivered.increment()
                    if logger.isEnabled(.debug) {
                        logger.debug(
                            "submission accepted",
                            ["submission_id": .string(id), "bytes": .int(bytes),
                             "partition": .int(Int(report.partition)), "offset": .int(Int(report.offset))])
                    }
                    results.accepted(reservation)
                    guard let answer else { return }
                    guard waitMs > 0 else { return answer(Self.acceptedResponse(id)) }
                    results.wait(for: id, caller: caller, timeoutMs: waitMs) { [self] outcome in
                        switch outcome {
                        case .verdict(let result):
                            metrics.waitsVerdict.increment()
                            answer(Self.resultResponse(result))
                        case .timedOut:
                            metrics.waitsTimedOut.increment()
                            answer(Self.acceptedResponse(id))
                        }
                    }
                case .failure(let error):
                    metrics.kafkaFailed.increment()
                    let failure = KafkaWriteFailure.failed(error)
                    // A timed-out message may still be written (idempotent producer): its id stays reserved.
                    if !failure.mayHaveBeenWritten { results.abandoned(reservation) }
                    guard let answer else { return }
                    let refusal = APIError.kafkaWrite(
                        failure, of: .submission, id: id, retryAfter: settings.retryAfterSeconds,
                        deliveryTimeoutMs: settings.effectiveDeliveryTimeoutMs)
                    metrics.recordRejection(code: refusal.code)
                    logger.warning(
                        "submission not acknowledged by Kafka",
                        ["submission_id": .string(id), "kafka_code": .int(Int(error.code.rawValue)),
                         "kafka_error": .string(error.message)])
                    answer(refusal.response)
                }
            }
        } catch {
            _ = pending.claim()  // refused at once: nothing for the deadline to answer
            results.abandoned(reservation)
            metrics.waitingForKafka.decrement()
            metrics.kafkaRefused.increment()
            let answer = kafkaWriteAnswer(.refused(error), id: id)
            metrics.recordRejection(code: answer.code)
            logger.warning(
                "submission refused by the Kafka producer",
                ["submission_id": .string(id), "kafka_code": .int(Int(error.code.rawValue)),
                 "kafka_error": .string(error.message)])
            respond(answer.response)
        }
    }

    /// `APIError.kafkaWrite` with this handler's settings.
    func kafkaWriteAnswer(
        _ failure: KafkaWriteFailure, of kind: PendingKafkaAnswer.Kind = .submission, id: String
    ) -> APIError {
        APIError.kafkaWrite(
            failure, of: kind, id: id, retryAfter: settings.retryAfterSeconds,
            deliveryTimeoutMs: settings.effectiveDeliveryTimeoutMs)
    }

    func reject(_ error: APIError, bodyBytes: Int, respond: HTTPResponder) {
        metrics.recordRejection(code: error.code)
        let fields: KeyValuePairs<String, LogValue> = [
            "status": .int(error.status), "code": .string(error.code), "body_bytes": .int(bodyBytes),
        ]
        if error.status >= 500 {
            logger.warning("submission refused", fields)
        } else {
            logger.info("submission rejected", fields)
        }
        respond(error.response)
    }

    /// `application/json`, or any `application/...+json` type, with any parameters (ASCII, any case). Runs on every
    /// submission: bytes only, no Foundation string work.
    static func isJSON(_ contentType: String) -> Bool {
        var contentType = contentType
        return contentType.withUTF8 { bytes in
            var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            var start = 0
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            let mediaType = UnsafeBufferPointer(rebasing: bytes[start..<end])
            let prefix: StaticString = "application/"
            guard matchesLowercased(mediaType.prefix(prefix.utf8CodeUnitCount), prefix) else { return false }
            let subtype = mediaType.dropFirst(prefix.utf8CodeUnitCount)
            return matchesLowercased(subtype, "json")
                || (subtype.count > 5 && matchesLowercased(subtype.suffix(5), "+json"))
        }
    }

    /// Whether `bytes`, ASCII letters lower-cased, are `literal` (lower case).
    private static func matchesLowercased(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ literal: StaticString) -> Bool {
        guard bytes.count == literal.utf8CodeUnitCount else { return false }
        return literal.withUTF8Buffer { expected in
            zip(bytes, expected).allSatisfy { byte, lower in
                ((0x41...0x5A).contains(byte) ? byte | 0x20 : byte) == lower
            }
        }
    }
}
