import ReceiptModel
import SignedData

/// Verifies the signed data in Apple's answers like any signed data the verifier takes: `AppleSignedDataVerifier`
/// anchored to `APPLE_ROOT_CERTIFICATES` (chain, markers, ES256 at the payload's `signedDate`), then the app and the
/// environment: a transaction of another bundle id, or signed for another environment than the one asked, is not
/// this app's answer.
public struct SignedAnswers: Sendable {
    public let verifier: AppleSignedDataVerifier
    public let bundleId: String
    public let environment: AppStoreEnvironment

    public init(verifier: AppleSignedDataVerifier, bundleId: String, environment: AppStoreEnvironment) {
        self.verifier = verifier
        self.bundleId = bundleId
        self.environment = environment
    }

    /// Why a signed answer was not accepted (never quoting it).
    public struct Unverified: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        /// True when the answer was not judged at all: the revocation status of its signing chain could not be had
        /// (OCSP responder down). That is `unavailable` (exit 4: try again), not `unverified` (exit 5).
        public var statusUnavailable = false

        /// The exit code this makes of the command.
        public var exitCode: AdminExitCode { statusUnavailable ? .unavailable : .unverified }
    }

    private static func unverified(_ what: String, _ error: SignedDataError) -> Unverified {
        error.isRetryable
            ? Unverified(description: "\(what) could not be verified now: \(error.message)", statusUnavailable: true)
            : Unverified(description: "\(what) did not verify: \(error.message)")
    }

    public func transaction(_ jws: String) -> Result<TransactionFacts, Unverified> {
        let payload: JWSTransactionPayload
        do {
            payload = try verifier.verify(jws, as: JWSTransactionPayload.self) { $0.signedDate }.payload
        } catch {
            return .failure(Self.unverified("a signed transaction", error))
        }
        if let problem = check(bundleId: payload.bundleId ?? "(none)", environment: payload.environment) {
            return .failure(Unverified(description: "a signed transaction \(problem)"))
        }
        return .success(TransactionFacts(payload, environment: environment))
    }

    public func renewal(_ jws: String) -> Result<RenewalFacts, Unverified> {
        let payload: JWSRenewalInfoPayload
        do {
            payload = try verifier.verify(jws, as: JWSRenewalInfoPayload.self) { $0.signedDate }.payload
        } catch {
            return .failure(Self.unverified("a signed renewal info", error))
        }
        if let problem = check(bundleId: nil, environment: payload.environment) {
            return .failure(Unverified(description: "a signed renewal info \(problem)"))
        }
        return .success(RenewalFacts(payload))
    }

    /// A signed notification (the TEST notification of Get Test Notification Status).
    public func notification(_ jws: String) -> Result<NotificationPayload, Unverified> {
        let payload: NotificationPayload
        do {
            payload = try verifier.verify(jws, as: NotificationPayload.self) { $0.signedDate }.payload
        } catch {
            return .failure(Self.unverified("the signed notification", error))
        }
        if let problem = check(bundleId: payload.data?.bundleId ?? "(none)", environment: payload.data?.environment) {
            return .failure(Unverified(description: "the signed notification \(problem)"))
        }
        return .success(payload)
    }

    private func check(bundleId actual: String?, environment signed: SignedEnvironment?) -> String? {
        if let actual, actual != bundleId { return "is of bundle id '\(actual)', not \(bundleId)" }
        guard signed?.rawValue == environment.rawValue else {
            return "names environment '\(signed?.rawValue ?? "none")', not \(environment.rawValue)"
        }
        return nil
    }
}
