import Testing

@testable import ServiceSupport

@Suite struct SettingsTests {
    @Test func defaultsApplyWhenUnsetOrBlank() throws {
        let settings = Settings(environment: ["BLANK": "  "])
        #expect(settings.string("MISSING", default: "x") == "x")
        #expect(settings.string("BLANK") == nil)
        #expect(try settings.int("MISSING", default: 5) == 5)
    }

    @Test func parseErrorsNameTheVariable() {
        let settings = Settings(environment: ["LIMIT": "many", "FLAG": "maybe", "MODE": "other", "ADDR": "nope"])
        #expect(throws: ConfigurationError(variable: "LIMIT", problem: "'many' is not a whole number")) {
            try settings.int("LIMIT", default: 1)
        }
        #expect(throws: ConfigurationError.self) { try settings.bool("FLAG", default: false) }
        #expect(throws: ConfigurationError.self) { try settings.choice("MODE", from: ["accept", "reject"], default: "accept") }
        #expect(throws: ConfigurationError.self) { try settings.listenAddress("ADDR", default: "0.0.0.0:1") }
        #expect(throws: ConfigurationError(variable: "REQUIRED", problem: "is required")) {
            try settings.required("REQUIRED")
        }
    }

    @Test func rangesAreEnforced() {
        let settings = Settings(environment: ["N": "0"])
        #expect(throws: ConfigurationError.self) { try settings.int("N", default: 1, range: 1...10) }
    }

    @Test func listsAndChoicesAreNormalized() throws {
        let settings = Settings(environment: ["IDS": " com.a , ,com.b,", "POLICY": "REJECT", "ON": "yes"])
        #expect(settings.list("IDS") == ["com.a", "com.b"])
        #expect(try settings.choice("POLICY", from: ["accept", "reject"], default: "accept") == "reject")
        #expect(try settings.bool("ON", default: false))
    }

    @Test func listenAddressesParse() throws {
        #expect(ListenAddress("0.0.0.0:8080") == ListenAddress(host: "0.0.0.0", port: 8080))
        #expect(ListenAddress(":9090") == ListenAddress(host: "0.0.0.0", port: 9090))
        #expect(ListenAddress("localhost") == nil)
        #expect(ListenAddress("127.0.0.1:99999") == nil)
    }
}
