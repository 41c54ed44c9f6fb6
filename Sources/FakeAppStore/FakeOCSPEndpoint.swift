import Foundation
import HTTPServer
import ServiceSupport
import SignedData
import TestPKI

/// The fake's OCSP responder for its own signing chain (`POST /ocsp`, as Apple's `http://ocsp.apple.com/...`
/// answers: `application/ocsp-request` in, `application/ocsp-response` out; point `APPLE_OCSP_RESPONDER_URL` at it)
/// and its switches (`GET/POST /admin/ocsp`): `mode=answer|fail|try-later|hold` (fail: 503; hold: no answer until
/// the client gives up) and `revoked=leaf,intermediate` (the certificates answered `revoked`; empty for none).
///
/// Answers need the intermediate's and root's keys: a minted identity has them, one loaded from files has them when
/// `fake-appstore mint-pki` wrote `intermediate-key.pem` and `root-key.pem` next to the chain; without them `/ocsp`
/// answers 503.
struct FakeOCSPEndpoint: Sendable {
    let signing: FakeSigningIdentity
    let logger: Logger
    /// The roles last marked revoked (for `GET /admin/ocsp`).
    private let revokedRoles = Locked<Set<String>>([])

    init(signing: FakeSigningIdentity, logger: Logger) {
        self.signing = signing
        self.logger = logger
    }

    /// Handles the request when it is one of the endpoint's; false otherwise.
    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) -> Bool {
        switch (request.method, request.path) {
        case ("POST", "/ocsp"):
            answer(request, respond: respond)
        case ("GET", "/admin/ocsp"):
            respond(state())
        case ("POST", "/admin/ocsp"):
            respond(configure(request))
        default:
            return false
        }
        return true
    }

    private func answer(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        guard let responder = signing.ocspResponder else {
            respond(.text(503, "the fake has no CA keys for its signing chain: no OCSP answers\n"))
            return
        }
        switch responder.mode {
        case .fail:
            _ = responder.respond(to: request.body)  // counted
            respond(.text(503, "OCSP responder unavailable (fake: mode fail)\n"))
        case .hold:
            _ = responder.respond(to: request.body)
            // No answer: the client's timeout (or the server's response deadline) ends the request.
        case .answer, .tryLater:
            guard let der = responder.respond(to: request.body) else {
                respond(.text(400, "not a DER OCSP request\n"))
                return
            }
            respond(HTTPResponse(status: 200, headers: [("Content-Type", "application/ocsp-response")], body: der))
        }
    }

    private func configure(_ request: HTTPRequest) -> HTTPResponse {
        guard let responder = signing.ocspResponder else {
            return .json(409, "{\"error\":{\"code\":\"no_ca_keys\",\"message\":\"no OCSP responder\"}}")
        }
        if let raw = request.query["mode"] {
            guard let mode = TestOCSPResponder.Mode(rawValue: raw) else {
                let modes = TestOCSPResponder.Mode.allCases.map(\.rawValue).joined(separator: ", ")
                return .json(400, "{\"error\":{\"code\":\"bad_mode\",\"message\":\"mode is one of \(modes)\"}}")
            }
            responder.mode = mode
        }
        if let raw = request.query["revoked"] {
            let roles = Set(raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            guard roles.isSubset(of: ["leaf", "intermediate"]) else {
                return .json(
                    400,
                    "{\"error\":{\"code\":\"bad_revoked\",\"message\":\"revoked lists leaf and/or intermediate\"}}")
            }
            let chain = signing.signer.chain
            responder.setRevoked(chain[0].serialNumberHex, roles.contains("leaf"))
            if chain.count > 1 { responder.setRevoked(chain[1].serialNumberHex, roles.contains("intermediate")) }
            revokedRoles.withLock { $0 = roles }
        }
        logger.info("OCSP responder configured", ["mode": .string(responder.mode.rawValue)])
        return state()
    }

    private func state() -> HTTPResponse {
        guard let responder = signing.ocspResponder else {
            return .json(200, "{\"available\":false}")
        }
        let revoked = revokedRoles.withLock { $0 }.sorted().map { JSONText.quoted($0) }.joined(separator: ",")
        return .json(
            200,
            "{\"available\":true,\"mode\":\(JSONText.quoted(responder.mode.rawValue)),"
                + "\"requests\":\(responder.requestCount),\"revoked\":[\(revoked)]}")
    }
}
