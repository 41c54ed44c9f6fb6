@testable import Ledger
import LedgerRules
import Testing

/// The refund policy file as the ledger reads it at start: conditions on product type and Apple's reason, every
/// misspelling refused, and every rule that can give a preference Apple refuses refused with its position.
@Suite struct ConsumptionPolicyFileTests {
    typealias C = ConsumptionRules

    static func parse(_ text: String) throws(ConsumptionPolicyFile.Invalid) -> C.Policy {
        try ConsumptionPolicyFile.parse(Array(text.utf8))
    }

    @Test func productTypeAndReasonConditionsTakeOneValueOrAList() throws {
        let policy = try Self.parse(
            """
            {"rules": [{"when": {"product_type": "auto_renewable"}, "preference": "GRANT_PRORATED"},
                       {"when": {"product_type": ["consumable", "unknown"],
                                 "consumption_request_reason": ["UNINTENDED_PURCHASE", "LEGAL"]},
                        "preference": "GRANT_FULL"},
                       {"when": {"consumption_request_reason": "OTHER"}, "preference": "DECLINE"}]}
            """)
        #expect(policy.rules == [
            C.PolicyRule(productKinds: [.autoRenewable], preference: .grantProrated),
            C.PolicyRule(
                productKinds: [.consumable, nil], requestReasons: ["UNINTENDED_PURCHASE", "LEGAL"],
                preference: .grantFull),
            C.PolicyRule(requestReasons: ["OTHER"], preference: .decline),
        ])
    }

    /// (policy, words the refusal must contain): the position of the rule, and what is wrong.
    static let refused: [(String, [String])] = [
        // The dev policy before round 5: 0 % consumed matched GRANT_PRORATED, which Apple refuses.
        (
            #"{"rules": [{"when": {"delivered": false}, "preference": "GRANT_FULL"},"#
                + #"{"when": {"delivered": true, "consumed_at_most_percent": 10}, "preference": "GRANT_PRORATED"}]}"#,
            ["rules[1]", "GRANT_PRORATED", "a consumable purchase, delivered, 0 % consumed", "above 0"]
        ),
        (
            #"{"rules": [{"when": {"product_type": "consumable", "consumed_above_percent": 0}, "#
                + #""preference": "GRANT_PRORATED"}]}"#,
            ["rules[0]", "100 % consumed"]
        ),
        (
            #"{"rules": [{"when": {"product_type": "unknown", "consumed_above_percent": 5, "#
                + #""consumed_at_most_percent": 50}, "preference": "GRANT_PRORATED"}]}"#,
            ["rules[0]", "unknown product type"]
        ),
        (#"{"rules": [{"when": {"product_type": "subscription"}, "preference": "DECLINE"}]}"#,
         ["rules[0].when.product_type", "auto_renewable"]),
        (#"{"rules": [{"when": {"product_type": []}, "preference": "DECLINE"}]}"#, ["rules[0].when.product_type"]),
        (#"{"rules": [{"when": {"consumption_request_reason": "unintended"}, "preference": "GRANT_FULL"}]}"#,
         ["rules[0].when.consumption_request_reason", "UNINTENDED_PURCHASE"]),
        (#"{"rules": [{"when": {"product_types": "consumable"}, "preference": "DECLINE"}]}"#,
         ["unknown member 'product_types'"]),
    ]

    @Test(arguments: refused)
    func refusedPolicies(_ text: String, _ words: [String]) {
        do {
            _ = try Self.parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            for word in words { #expect(error.description.contains(word), "\(error.description)") }
        }
    }
}
