import COpenSSL

/// Reading and verifying OCSP responses (RFC 6960 §4.2) about one certificate.
public enum OCSPResponse {
    /// Clock difference tolerated between us and the responder when judging `thisUpdate` and `nextUpdate`.
    public static let defaultAllowedSkewSeconds: Int64 = 300

    /// The verified answer of the DER `OCSPResponse` about `certificate` (issued by `issuer`).
    ///
    /// Accepted only when: the response status is `successful` and it is a basic response; its signature verifies
    /// and its signer is `issuer` itself or a responder certificate `issuer` issued with the ocspSigning extended key
    /// usage, whose chain validates to one of `trustedRoots` at `atEpochSeconds` (no "explicitly trusted responder"
    /// fallback); it holds a single response for the SHA-1 `CertID` of (`certificate`, `issuer`); and that response
    /// is valid at `atEpochSeconds` within `allowedSkewSeconds` (`thisUpdate` not after it, `nextUpdate`, when
    /// present, not before it).
    ///
    /// - Throws: `OCSPError` whose kind says which check failed (`.unsuccessful` for `tryLater` and the like).
    public static func verify(
        der: [UInt8], certificate: Certificate, issuer: Certificate, trustedRoots: [Certificate],
        atEpochSeconds: Int64, allowedSkewSeconds: Int64 = defaultAllowedSkewSeconds
    ) throws(OCSPError) -> OCSPStatusAnswer {
        guard let response = OCSPASN1.response(der) else {
            OpenSSLErrorQueue.clear()
            throw OCSPError(.malformed, "the \(der.count) bytes are not a DER OCSP response")
        }
        defer { OCSP_RESPONSE_free(response) }
        let responseStatus = OCSP_response_status(response)
        guard responseStatus == OCSP_RESPONSE_STATUS_SUCCESSFUL else {
            let name = String(cString: OCSP_response_status_str(Int(responseStatus)))
            throw OCSPError(
                .unsuccessful,
                "the OCSP responder answered '\(name)' (response status \(responseStatus)), not a status")
        }
        guard let basic = OCSP_response_get1_basic(response) else {
            OpenSSLErrorQueue.clear()
            throw OCSPError(.malformed, "the OCSP response is successful but holds no basic response")
        }
        defer { OCSP_BASICRESP_free(basic) }
        try verifySigner(basic, issuer: issuer, trustedRoots: trustedRoots, atEpochSeconds: atEpochSeconds)

        guard let id = OCSP_cert_to_id(Digests.shared.sha1, certificate.pointer, issuer.pointer) else {
            throw OCSPError(.operationFailed, OpenSSLErrorQueue.describe("could not build the OCSP CertID"))
        }
        defer { OCSP_CERTID_free(id) }
        var status: Int32 = -1
        var reason: Int32 = -1
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        guard OCSP_resp_find_status(basic, id, &status, &reason, &revokedAt, &thisUpdate, &nextUpdate) == 1 else {
            OpenSSLErrorQueue.clear()
            throw OCSPError(
                .noMatchingResponse,
                "the OCSP response holds no answer about '\(certificate.subject)' "
                    + "(serial \(certificate.serialNumberHex))")
        }
        guard let thisEpoch = OCSPASN1.epochSeconds(thisUpdate) else {
            throw OCSPError(.malformed, "the OCSP answer's thisUpdate is unreadable")
        }
        var nextEpoch: Int64?
        if let nextUpdate {
            guard let value = OCSPASN1.epochSeconds(nextUpdate) else {
                throw OCSPError(.malformed, "the OCSP answer's nextUpdate is unreadable")
            }
            nextEpoch = value
        }
        guard thisEpoch <= atEpochSeconds + allowedSkewSeconds else {
            throw OCSPError(
                .notValidAtTime,
                "the OCSP answer's thisUpdate (\(thisEpoch)) is after \(atEpochSeconds) s since 1970 by more than "
                    + "\(allowedSkewSeconds) s (check the clocks)")
        }
        if let nextEpoch, nextEpoch < atEpochSeconds - allowedSkewSeconds {
            throw OCSPError(
                .notValidAtTime,
                "the OCSP answer is stale: its nextUpdate (\(nextEpoch)) is before \(atEpochSeconds) s since 1970")
        }
        let answer: OCSPCertificateStatus
        switch status {
        case V_OCSP_CERTSTATUS_GOOD:
            answer = .good
        case V_OCSP_CERTSTATUS_REVOKED:
            answer = .revoked(
                revokedAt: OCSPASN1.epochSeconds(revokedAt) ?? thisEpoch, reason: reason >= 0 ? Int(reason) : nil)
        default:
            answer = .unknown
        }
        return OCSPStatusAnswer(status: answer, thisUpdate: thisEpoch, nextUpdate: nextEpoch)
    }

    /// OpenSSL's `OCSP_basic_verify` against a store of `trustedRoots` at `atEpochSeconds`, with `issuer` offered
    /// as a possible signer (Apple's responses for the intermediate are signed by a root-delegated responder that
    /// they embed; a CA signing directly need not embed itself).
    private static func verifySigner(
        _ basic: OpaquePointer, issuer: Certificate, trustedRoots: [Certificate], atEpochSeconds: Int64
    ) throws(OCSPError) {
        guard !trustedRoots.isEmpty else {
            throw OCSPError(.untrustedSigner, "no trusted root certificates to verify the OCSP responder against")
        }
        guard let store = X509_STORE_new() else {
            throw OCSPError(.operationFailed, OpenSSLErrorQueue.describe("could not allocate a certificate store"))
        }
        defer { X509_STORE_free(store) }
        for root in trustedRoots where X509_STORE_add_cert(store, root.pointer) != 1 {
            OpenSSLErrorQueue.clear()  // a duplicate root is harmless
        }
        X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store), time_t(atEpochSeconds))
        guard let candidates = cossl_sk_X509_new_null() else {
            throw OCSPError(.operationFailed, OpenSSLErrorQueue.describe("could not allocate a certificate list"))
        }
        defer { cossl_sk_X509_free(candidates) }
        guard cossl_sk_X509_push(candidates, issuer.pointer) > 0 else {
            throw OCSPError(.operationFailed, OpenSSLErrorQueue.describe("could not build the certificate list"))
        }
        guard OCSP_basic_verify(basic, candidates, store, cossl_ocsp_flags_verify()) == 1 else {
            throw OCSPError(
                .untrustedSigner,
                OpenSSLErrorQueue.describe(
                    "the OCSP response is not signed by '\(issuer.subject)' nor by a responder it delegated "
                        + "(ocspSigning) that chains to a trusted root"))
        }
        OpenSSLErrorQueue.clear()
    }
}
