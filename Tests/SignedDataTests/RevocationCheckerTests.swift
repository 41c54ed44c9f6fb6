import Crypto
import Dispatch
import Glibc
import ServiceSupport
@_spi(Testing) import SignedData
import TestPKI
import TestSupport
import Testing

@Suite("RevocationChecker")
struct RevocationCheckerTests {
    /// A PKI, its responder (the transport: no network) and a verifier whose checker shares their manual clock.
    struct Harness {
        let pki: TestSigningPKI
        let clock: ManualClock
        let responder: TestOCSPResponder
        let checker: RevocationChecker
        let verifier: AppleSignedDataVerifier
        let metrics = MetricsRegistry()

        init(
            maxAgeSeconds: Int64 = 3_600, validitySeconds: Int64 = 12 * 3_600, timeoutMs: Int = 10_000,
            responderURL: String? = "http://ocsp.test/ocsp"
        ) throws {
            pki = try TestSigningPKI.mint()
            clock = ManualClock(wallMilliseconds: pki.signedDateMs)
            responder = pki.ocspResponder(validitySeconds: validitySeconds, clock: clock)
            checker = RevocationChecker(
                trustedRoots: [pki.rootCertificate], transport: responder,
                configuration: RevocationChecker.Configuration(
                    responderURL: responderURL, maxAgeSeconds: maxAgeSeconds, timeoutMs: timeoutMs,
                    retryIntervalSeconds: 10),
                clock: clock, metrics: metrics)
            verifier = AppleSignedDataVerifier(trustedRoots: [pki.rootCertificate], revocation: checker)
        }

        func jws(_ transactionId: String = "2000000123456789") throws -> String {
            try pki.sign(payload: SignedDataFixtures.transactionPayload(
                signedDateMs: pki.signedDateMs, transactionId: transactionId))
        }

        func counter(_ line: String) -> Int {
            let prefix = line + " "
            return metrics.render().split(separator: "\n").first { $0.hasPrefix(prefix) }
                .flatMap { Int(Double($0.dropFirst(prefix.count)) ?? -1) } ?? 0
        }
    }

    @Test("a good chain verifies; leaf and intermediate are asked once, later messages are answered from the cache")
    func goodAndCached() throws {
        let harness = try Harness()
        _ = try harness.verifier.verify(try harness.jws())
        #expect(harness.responder.requestCount == 2)
        for index in 0..<5 { _ = try harness.verifier.verify(try harness.jws("200000012345678\(index)")) }
        #expect(harness.responder.requestCount == 2)
        #expect(harness.checker.cachedStatus(of: harness.pki.leaf.certificate) == .good)
        #expect(harness.counter("verifier_ocsp_cache_hits_total") == 10)
        #expect(harness.counter("verifier_ocsp_checks_total{certificate=\"leaf\",result=\"good\"}") == 6)
        #expect(harness.counter("verifier_ocsp_fetches_total{result=\"answered\"}") == 2)
        // A second verifier given the same checker shares its answers.
        let other = AppleSignedDataVerifier(trustedRoots: [harness.pki.rootCertificate], revocation: harness.checker)
        _ = try other.verify(try harness.jws())
        #expect(harness.responder.requestCount == 2)
    }

    @Test("a revoked leaf or intermediate refuses the data as invalid_signature, also on a chain-cache hit")
    func revoked() throws {
        let harness = try Harness()
        _ = try harness.verifier.verify(try harness.jws())  // chain cached, answers good
        harness.responder.setRevoked(harness.pki.leaf.certificate.serialNumberHex)
        harness.clock.passTime(.seconds(3_601))  // the good answers expire
        let error = #expect(throws: SignedDataError.self) { try harness.verifier.verify(try harness.jws()) }
        #expect(error?.kind == .certificateRevoked)
        #expect(error?.isRetryable == false)
        #expect(error?.contractReason == "invalid_signature")
        #expect(error?.message.contains("leaf certificate") == true)
        #expect(error?.message.contains("revoked") == true)
        #expect(harness.counter("verifier_ocsp_checks_total{certificate=\"leaf\",result=\"revoked\"}") == 1)

        let intermediate = try Harness()
        intermediate.responder.setRevoked(intermediate.pki.intermediate.authority.certificate.serialNumberHex)
        let refused = #expect(throws: SignedDataError.self) { try intermediate.verifier.verify(try intermediate.jws()) }
        #expect(refused?.kind == .certificateRevoked)
        #expect(refused?.message.contains("intermediate certificate") == true)
    }

    @Test("an unreachable responder makes verification retryable, never a refusal nor a pass; it recovers")
    func unavailable() throws {
        let harness = try Harness()
        harness.responder.mode = .fail
        let error = #expect(throws: SignedDataError.self) { try harness.verifier.verify(try harness.jws()) }
        #expect(error?.kind == .revocationStatusUnavailable)
        #expect(error?.isRetryable == true)
        #expect(error?.contractReason == "apple_unavailable")
        #expect(harness.responder.requestCount == 1)
        // Within the retry interval the responder is not asked again: the check fails at once.
        _ = #expect(throws: SignedDataError.self) { try harness.verifier.verify(try harness.jws()) }
        #expect(harness.responder.requestCount == 1)
        harness.responder.mode = .answer
        harness.clock.passTime(.seconds(11))
        _ = try harness.verifier.verify(try harness.jws())
        #expect(harness.counter("verifier_ocsp_checks_total{certificate=\"intermediate\",result=\"unavailable\"}") == 2)
        #expect(harness.counter("verifier_ocsp_fetches_total{result=\"failed\"}") == 1)
    }

    @Test("tryLater and a response that does not verify are no answer (retryable), not a refusal")
    func unusableResponses() throws {
        let harness = try Harness()
        harness.responder.mode = .tryLater
        let error = #expect(throws: SignedDataError.self) { try harness.verifier.verify(try harness.jws()) }
        #expect(error?.kind == .revocationStatusUnavailable)
        #expect(error?.message.contains("trylater") == true)

        // A responder that knows another PKI only: it answers "unauthorized" about ours.
        let other = try TestSigningPKI.mint()
        let clock = ManualClock(wallMilliseconds: harness.pki.signedDateMs)
        let checker = RevocationChecker(
            trustedRoots: [harness.pki.rootCertificate], transport: other.ocspResponder(clock: clock),
            configuration: RevocationChecker.Configuration(responderURL: "http://ocsp.test/"), clock: clock)
        let verifier = AppleSignedDataVerifier(trustedRoots: [harness.pki.rootCertificate], revocation: checker)
        let wrong = #expect(throws: SignedDataError.self) { try verifier.verify(try harness.jws()) }
        #expect(wrong?.kind == .revocationStatusUnavailable)
    }

    @Test("a responder slower than the timeout is retryable; its late answer is kept for the next message")
    func timeout() throws {
        let harness = try Harness(timeoutMs: 50)
        harness.responder.mode = .hold
        let error = #expect(throws: SignedDataError.self) { try harness.verifier.verify(try harness.jws()) }
        #expect(error?.kind == .revocationStatusUnavailable)
        #expect(error?.message.contains("within 50 ms") == true)
        #expect(harness.responder.heldCount == 1)
        harness.responder.mode = .answer  // the held request is answered now
        #expect(harness.checker.cachedStatus(of: harness.pki.intermediate.authority.certificate) == .good)
        _ = try harness.verifier.verify(try harness.jws())
        #expect(harness.responder.requestCount == 2)
    }

    @Test("answers are refreshed in the background from half their life; an expired answer is not used")
    func refreshAheadAndExpiry() throws {
        let harness = try Harness(maxAgeSeconds: 100)
        _ = try harness.verifier.verify(try harness.jws())
        #expect(harness.responder.requestCount == 2)
        harness.clock.passTime(.seconds(40))
        _ = try harness.verifier.verify(try harness.jws())
        #expect(harness.responder.requestCount == 2)  // not yet half-way
        harness.clock.passTime(.seconds(20))
        _ = try harness.verifier.verify(try harness.jws())  // answered from the cache, refreshed behind it
        #expect(harness.responder.requestCount == 4)
        // The refreshed answers live another 100 s; with the responder down they are still used until then.
        harness.responder.mode = .fail
        harness.clock.passTime(.seconds(90))
        _ = try harness.verifier.verify(try harness.jws())
        harness.clock.passTime(.seconds(11))
        let error = #expect(throws: SignedDataError.self) { try harness.verifier.verify(try harness.jws()) }
        #expect(error?.kind == .revocationStatusUnavailable)
    }

    @Test("an answer is used no longer than its nextUpdate, even below the max age")
    func nextUpdateBoundsTheCache() throws {
        let harness = try Harness(maxAgeSeconds: 3_600, validitySeconds: 30)
        _ = try harness.verifier.verify(try harness.jws())
        harness.clock.passTime(.seconds(31))
        harness.responder.mode = .fail
        let error = #expect(throws: SignedDataError.self) { try harness.verifier.verify(try harness.jws()) }
        #expect(error?.kind == .revocationStatusUnavailable)
    }

    @Test("concurrent checks without an answer share one fetch per certificate")
    func singleFlight() throws {
        let harness = try Harness()
        harness.responder.mode = .hold
        let jws = try harness.jws()
        let failures = Locked(0)
        let done = DispatchGroup()
        for _ in 0..<8 {
            DispatchQueue.global().async(group: done) {
                do { _ = try harness.verifier.verify(jws) } catch { failures.withLock { $0 += 1 } }
            }
        }
        // The first check's request for the intermediate is held; release it (and answer what follows) once seen.
        #expect(waitUntil { harness.responder.heldCount > 0 })
        harness.responder.mode = .answer
        #expect(done.wait(timeout: .now() + .seconds(20)) == .success)
        #expect(failures.withLock { $0 } == 0)
        // One fetch for the intermediate and one for the leaf, whatever the interleaving.
        #expect(harness.responder.requestCount == 2)
    }

    @Test("a certificate without an OCSP URL and no APPLE_OCSP_RESPONDER_URL cannot be checked: retryable, named")
    func noResponderURL() throws {
        let harness = try Harness(responderURL: nil)
        let error = #expect(throws: SignedDataError.self) { try harness.verifier.verify(try harness.jws()) }
        #expect(error?.kind == .revocationStatusUnavailable)
        #expect(error?.message.contains("APPLE_OCSP_RESPONDER_URL") == true)
        #expect(harness.responder.requestCount == 0)
    }

    @Test("without a checker (APPLE_REVOCATION_CHECK=off) nothing is asked")
    func off() throws {
        let harness = try Harness()
        _ = try harness.pki.verifier().verify(try harness.jws())
        #expect(harness.responder.requestCount == 0)
    }

    @Test("the verifier reports the chains in use for expiry metrics")
    func chainsInUse() throws {
        let harness = try Harness()
        _ = try harness.verifier.verify(try harness.jws())
        let chains = harness.verifier.chainsInUse
        #expect(chains.count == 1)
        #expect(chains.first?.certificates.map(\.notAfter) == [
            harness.pki.leaf.certificate.notAfter, harness.pki.intermediate.authority.certificate.notAfter,
            harness.pki.rootCertificate.notAfter,
        ])
    }
}
