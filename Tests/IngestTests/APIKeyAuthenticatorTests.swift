import Ingest
import Testing

@Suite("API keys")
struct APIKeyAuthenticatorTests {
    private let keys = [APIKey(key: "alpha-key"), APIKey(key: "beta-key")]

    @Test("no keys configured: everything passes, unrestricted")
    func open() {
        let authenticator = APIKeyAuthenticator(keys: [])
        #expect(authenticator.isOpen)
        #expect(authenticator.authorizes(authorizationHeader: nil))
        #expect(authenticator.authenticate(authorizationHeader: nil) == .unrestricted)
    }

    @Test("any configured key is accepted as a Bearer token")
    func accepted() {
        let authenticator = APIKeyAuthenticator(keys: keys)
        #expect(!authenticator.isOpen)
        #expect(authenticator.authorizes(authorizationHeader: "Bearer alpha-key"))
        #expect(authenticator.authorizes(authorizationHeader: "bearer beta-key"))
        #expect(authenticator.authorizes(authorizationHeader: "Bearer   beta-key "))
    }

    @Test("wrong, partial, longer, missing or non-Bearer credentials are refused", arguments: [
        nil, "", "Bearer", "Bearer ", "Bearer alpha", "Bearer alpha-key2", "Bearer ALPHA-KEY", "Basic alpha-key",
        "alpha-key", "Bearer billing:k1", "Bearer billing",
    ])
    func refused(header: String?) {
        let authenticator = APIKeyAuthenticator(
            keys: keys + [APIKey(name: "billing", key: "k1")])
        #expect(!authenticator.authorizes(authorizationHeader: header))
        #expect(authenticator.authenticate(authorizationHeader: header) == nil)
    }

    @Test("a named key is its client; an unnamed key in the same list is unrestricted; every key of a name is it")
    func namedKeys() {
        let authenticator = APIKeyAuthenticator(keys: [
            APIKey(name: "billing", key: "k1"), APIKey(name: "support", key: "k2"), APIKey(key: "k3"),
            APIKey(name: "billing", key: "k4"),
        ])
        #expect(authenticator.hasNamedKeys)
        #expect(authenticator.authenticate(authorizationHeader: "Bearer k1") == .client("billing"))
        #expect(authenticator.authenticate(authorizationHeader: "Bearer k2") == .client("support"))
        #expect(authenticator.authenticate(authorizationHeader: "Bearer k3") == .unrestricted)
        #expect(authenticator.authenticate(authorizationHeader: "Bearer k4") == .client("billing"))
    }

    @Test("visibility: unrestricted sees everything, a client only its own client_id")
    func visibility() {
        #expect(Caller.unrestricted.maySee(clientId: nil))
        #expect(Caller.unrestricted.maySee(clientId: "billing"))
        #expect(Caller.client("billing").maySee(clientId: "billing"))
        #expect(!Caller.client("billing").maySee(clientId: "support"))
        #expect(!Caller.client("billing").maySee(clientId: nil))
        #expect(Caller.client("billing").clientId == "billing")
        #expect(Caller.unrestricted.clientId == nil)
    }
}
