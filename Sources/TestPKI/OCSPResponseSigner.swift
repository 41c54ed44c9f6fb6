import COpenSSL
import Crypto

/// Signs OCSP responses about the certificates one authority issued: signed by the authority itself, or by a
/// responder certificate it delegated (`CertificateAuthority.issueOCSPResponder`). Also makes the unsigned
/// non-successful responses (`tryLater`, ...).
///
/// - Important: test and development only (tests, the fake App Store's responder). Production only verifies.
public struct OCSPResponseSigner: Sendable {
    /// The non-successful response statuses (RFC 6960 §4.2.1).
    public enum UnsuccessfulStatus: Int32, Sendable, CaseIterable {
        case malformedRequest = 1
        case internalError = 2
        case tryLater = 3
        case unauthorized = 6
    }

    /// The certificate (and key) that signs.
    public let signer: MintedCertificate
    /// The authority whose certificates it answers about.
    public let issuer: Certificate

    /// Responses signed by the issuing authority itself.
    public init(authority: CertificateAuthority) {
        signer = authority.authority
        issuer = authority.authority.certificate
    }

    /// Responses signed by `responder` (a delegated responder or, for negative tests, any certificate) about the
    /// certificates of `issuer`.
    public init(responder: MintedCertificate, issuer: Certificate) {
        signer = responder
        self.issuer = issuer
    }

    /// A successful response with one answer per (certificate, status), valid from `thisUpdate` to `nextUpdate`
    /// (seconds since 1970; nil leaves `nextUpdate` out). The certificates need not be this issuer's (for tests of
    /// responses about something else): each `CertID` names `issuer`.
    public func sign(
        _ answers: [(certificate: Certificate, status: OCSPCertificateStatus)], thisUpdate: Int64, nextUpdate: Int64?
    ) throws(CryptoError) -> [UInt8] {
        var ids: [OpaquePointer] = []
        defer { ids.forEach { OCSP_CERTID_free($0) } }
        for answer in answers {
            guard let id = OCSP_cert_to_id(Digests.shared.sha1, answer.certificate.pointer, issuer.pointer) else {
                throw CryptoError.openSSL(.operationFailed, "could not build an OCSP CertID")
            }
            ids.append(id)
        }
        let pairs: [(OpaquePointer, OCSPCertificateStatus)] = Array(zip(ids, answers.map(\.status)))
        return try signAnswers(pairs, thisUpdate: thisUpdate, nextUpdate: nextUpdate)
    }

    /// The response to a DER `OCSPRequest`: each `CertID` about this issuer's certificates gets `status(serialHex)`;
    /// nil when the request asks about none of them (another authority's responder should answer).
    ///
    /// - Throws: `CryptoError.Kind.invalidArgument` when the bytes are not a DER OCSP request.
    public func respond(
        toRequest der: [UInt8], thisUpdate: Int64, nextUpdate: Int64?,
        status: (_ serialHex: String) -> OCSPCertificateStatus
    ) throws(CryptoError) -> [UInt8]? {
        guard let request = OCSPASN1.request(der) else {
            throw CryptoError.openSSL(.invalidArgument, "the \(der.count) bytes are not a DER OCSP request")
        }
        defer { OCSP_REQUEST_free(request) }
        guard let issuerId = OCSP_cert_to_id(Digests.shared.sha1, nil, issuer.pointer) else {
            throw CryptoError.openSSL(.operationFailed, "could not build the issuer's OCSP CertID")
        }
        defer { OCSP_CERTID_free(issuerId) }
        var answers: [(OpaquePointer, OCSPCertificateStatus)] = []
        for index in 0..<max(0, OCSP_request_onereq_count(request)) {
            guard let one = OCSP_request_onereq_get0(request, index), let id = OCSP_onereq_get0_id(one),
                OCSP_id_issuer_cmp(issuerId, id) == 0
            else { continue }
            var buffer = [CChar](repeating: 0, count: 128)
            let length = cossl_ocsp_certid_serial_hex(id, &buffer, Int32(buffer.count))
            let serial = String(
                decoding: buffer.prefix(Int(max(0, length))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            answers.append((id, status(serial)))  // owned by the request; add1_status copies it
        }
        OpenSSLErrorQueue.clear()
        guard !answers.isEmpty else { return nil }
        return try signAnswers(answers, thisUpdate: thisUpdate, nextUpdate: nextUpdate)
    }

    /// An unsigned response with a non-successful status (no answer about any certificate).
    public static func unsuccessful(_ status: UnsuccessfulStatus) throws(CryptoError) -> [UInt8] {
        guard let response = OCSP_response_create(status.rawValue, nil) else {
            throw CryptoError.openSSL(.operationFailed, "could not create an OCSP response")
        }
        defer { OCSP_RESPONSE_free(response) }
        return try encode(response)
    }

    private func signAnswers(
        _ answers: [(OpaquePointer, OCSPCertificateStatus)], thisUpdate: Int64, nextUpdate: Int64?
    ) throws(CryptoError) -> [UInt8] {
        guard let basic = OCSP_BASICRESP_new() else {
            throw CryptoError.openSSL(.operationFailed, "could not allocate an OCSP basic response")
        }
        defer { OCSP_BASICRESP_free(basic) }
        var times: [UnsafeMutablePointer<ASN1_GENERALIZEDTIME>] = []
        defer { times.forEach { ASN1_GENERALIZEDTIME_free($0) } }
        func time(_ seconds: Int64) throws(CryptoError) -> UnsafeMutablePointer<ASN1_GENERALIZEDTIME> {
            guard let value = ASN1_GENERALIZEDTIME_set(nil, time_t(seconds)) else {
                throw CryptoError.openSSL(.operationFailed, "could not encode time \(seconds)")
            }
            times.append(value)
            return value
        }
        let thisTime = try time(thisUpdate)
        var nextTime: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        if let nextUpdate { nextTime = try time(nextUpdate) }
        for (id, status) in answers {
            let added: OpaquePointer?
            switch status {
            case .good:
                added = OCSP_basic_add1_status(
                    basic, id, V_OCSP_CERTSTATUS_GOOD, cossl_ocsp_reason_none(), nil, thisTime, nextTime)
            case .revoked(let revokedAt, let reason):
                added = OCSP_basic_add1_status(
                    basic, id, V_OCSP_CERTSTATUS_REVOKED, reason.map { Int32($0) } ?? cossl_ocsp_reason_none(),
                    try time(revokedAt), thisTime, nextTime)
            case .unknown:
                added = OCSP_basic_add1_status(
                    basic, id, V_OCSP_CERTSTATUS_UNKNOWN, cossl_ocsp_reason_none(), nil, thisTime, nextTime)
            }
            guard added != nil else { throw CryptoError.openSSL(.operationFailed, "could not add an OCSP answer") }
        }
        let digest = signer.privateKey.curve == .p384 ? Digests.shared.sha384 : Digests.shared.sha256
        // A CA signing for itself need not embed its certificate (the verifier knows the issuer); a delegated
        // responder must embed its own, as Apple's responders do.
        let flags: UInt = signer.certificate == issuer ? UInt(OCSP_NOCERTS) : 0
        guard OCSP_basic_sign(basic, signer.certificate.pointer, signer.privateKey.key.pointer, digest, nil, flags) == 1
        else {
            throw CryptoError.openSSL(.operationFailed, "could not sign the OCSP response")
        }
        guard let response = OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, basic) else {
            throw CryptoError.openSSL(.operationFailed, "could not create an OCSP response")
        }
        defer { OCSP_RESPONSE_free(response) }
        return try Self.encode(response)
    }

    private static func encode(_ response: OpaquePointer) throws(CryptoError) -> [UInt8] {
        guard let (der, _) = DERCoding.encode({ i2d_OCSP_RESPONSE(response, $0) }) else {
            throw CryptoError.openSSL(.operationFailed, "could not encode the OCSP response")
        }
        return der
    }
}
