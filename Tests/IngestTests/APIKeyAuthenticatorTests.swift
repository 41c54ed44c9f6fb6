import Ingest
import Testing

@Suite("API keys")
struct APIKeyAuthenticatorTests {
    @Test("no keys configured: everything passes")
    func open() {
        let authenticator = APIKeyAuthenticator(keys: [])
        #expect(authenticator.isOpen)
        #expect(authenticator.authorizes(authorizationHeader: nil))
    }

    @Test("any configured key is accepted as a Bearer token")
    func accepted() {
        let authenticator = APIKeyAuthenticator(keys: ["alpha-key", "beta-key"])
        #expect(!authenticator.isOpen)
        #expect(authenticator.authorizes(authorizationHeader: "Bearer alpha-key"))
        #expect(authenticator.authorizes(authorizationHeader: "bearer beta-key"))
        #expect(authenticator.authorizes(authorizationHeader: "Bearer   beta-key "))
    }

    @Test("wrong, partial, longer, missing or non-Bearer credentials are refused", arguments: [
        nil, "", "Bearer", "Bearer ", "Bearer alpha", "Bearer alpha-key2", "Bearer ALPHA-KEY", "Basic alpha-key",
        "alpha-key",
    ])
    func refused(header: String?) {
        let authenticator = APIKeyAuthenticator(keys: ["alpha-key", "beta-key"])
        #expect(!authenticator.authorizes(authorizationHeader: header))
    }
}
