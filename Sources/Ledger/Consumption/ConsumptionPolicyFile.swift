import Foundation
import LedgerRules
import ReceiptModel
import ServiceSupport

/// The deployment's refund policy (`LEDGER_CONSUMPTION_POLICY_FILE`), JSON:
///
/// ```json
/// {"sample_content_provided": false,
///  "rules": [{"when": {"delivered": false}, "preference": "GRANT_FULL"},
///            {"when": {"product_type": "auto_renewable"}, "preference": "GRANT_PRORATED"},
///            {"when": {"delivered": true, "consumed_above_percent": 80}, "preference": "DECLINE"},
///            {"when": {"product_type": "consumable", "delivered": true, "consumed_above_percent": 0,
///                      "consumed_at_most_percent": 10}, "preference": "GRANT_PRORATED"}]}
/// ```
/// Rules are tried in order; the first whose every condition holds gives Apple's `refundPreference`; when none
/// does, no preference is sent. Percentages may have up to three decimals (Apple counts thousandths of a percent).
/// `product_type` and `consumption_request_reason` take one value or a list. Unknown members and values are errors
/// (a misspelt condition must not silently match everything), and so is a rule that can give a preference Apple
/// refuses (`ConsumptionRules.refusedCase(of:)`: a `GRANT_PRORATED` that can meet a consumable consumed 0 %, say),
/// named by its position.
enum ConsumptionPolicyFile {
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    static func load(path: String) throws(Invalid) -> ConsumptionRules.Policy {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Invalid(description: "cannot read \(path)")
        }
        return try parse(Array(data))
    }

    static func parse(_ bytes: [UInt8]) throws(Invalid) -> ConsumptionRules.Policy {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw Invalid(description: "not JSON: \(error)")
        }
        guard case .object(let top) = document else { throw Invalid(description: "the policy is not a JSON object") }
        try onlyKnown(top, ["sample_content_provided", "rules"], in: "the policy")
        var policy = ConsumptionRules.Policy()
        switch top["sample_content_provided"] {
        case nil: break
        case .bool(let value)?: policy.sampleContentProvided = value
        default: throw Invalid(description: "sample_content_provided is not true or false")
        }
        switch top["rules"] {
        case nil: break
        case .array(let rules)?:
            for (index, rule) in rules.enumerated() { policy.rules.append(try parseRule(rule, index: index)) }
        default: throw Invalid(description: "rules is not an array")
        }
        return policy
    }

    private static func parseRule(_ value: JSONValue, index: Int) throws(Invalid) -> ConsumptionRules.PolicyRule {
        let name = "rules[\(index)]"
        guard case .object(let members) = value else { throw Invalid(description: "\(name) is not an object") }
        try onlyKnown(members, ["when", "preference"], in: name)
        guard case .string(let text)? = members["preference"],
            let preference = ConsumptionRules.RefundPreference(rawValue: text)
        else {
            let known = ConsumptionRules.RefundPreference.allCases.map(\.rawValue).joined(separator: ", ")
            throw Invalid(description: "\(name).preference is not one of \(known)")
        }
        var rule = ConsumptionRules.PolicyRule(preference: preference)
        guard let when = members["when"] else { return rule }
        guard case .object(let conditions) = when else { throw Invalid(description: "\(name).when is not an object") }
        try onlyKnown(
            conditions,
            ["delivered", "consumed_above_percent", "consumed_at_most_percent", "product_type", "consumption_request_reason"],
            in: "\(name).when")
        switch conditions["delivered"] {
        case nil: break
        case .bool(let value)?: rule.delivered = value
        default: throw Invalid(description: "\(name).when.delivered is not true or false")
        }
        rule.consumedAbove = try percentage(conditions["consumed_above_percent"], "\(name).when.consumed_above_percent")
        rule.consumedAtMost = try percentage(
            conditions["consumed_at_most_percent"], "\(name).when.consumed_at_most_percent")
        if let kinds = try names(
            conditions["product_type"], "\(name).when.product_type",
            known: ProductKind.allCases.map(\.rawValue) + [unknownProductType])
        {
            rule.productKinds = Set(kinds.map { $0 == unknownProductType ? nil : ProductKind(rawValue: $0) })
        }
        if let reasons = try names(
            conditions["consumption_request_reason"], "\(name).when.consumption_request_reason",
            known: ConsumptionRules.requestReasons)
        {
            rule.requestReasons = Set(reasons)
        }
        if let refused = ConsumptionRules.refusedCase(of: rule) {
            throw Invalid(
                description: "\(name) gives \(rule.preference.rawValue) where Apple refuses it: for "
                    + "\(ConsumptionRules.describe(refused.facts)), \(refused.why). Narrow its conditions "
                    + "(product_type, delivered, consumed_above_percent, consumed_at_most_percent): docs/CREDITING.md, "
                    + "\"Refund requests\"")
        }
        return rule
    }

    /// The `product_type` condition's value for a purchase whose kind the ledger does not know.
    static let unknownProductType = "unknown"

    /// A condition naming one value or a list of them, each one of `known`.
    private static func names(_ value: JSONValue?, _ name: String, known: [String]) throws(Invalid) -> [String]? {
        let items: [JSONValue]
        switch value {
        case nil: return nil
        case .string(let text)?: items = [.string(text)]
        case .array(let list)? where !list.isEmpty: items = list
        default: throw Invalid(description: "\(name) is not a string or a non-empty list of strings")
        }
        var names: [String] = []
        for item in items {
            guard case .string(let text) = item, known.contains(text) else {
                throw Invalid(description: "\(name) has a value that is not one of \(known.joined(separator: ", "))")
            }
            names.append(text)
        }
        return names
    }

    /// A percentage in thousandths of a percent.
    private static func percentage(_ value: JSONValue?, _ name: String) throws(Invalid) -> Int64? {
        let percent: Double
        switch value {
        case nil: return nil
        case .integer(let number)?: percent = Double(number)
        case .number(let number)?: percent = number
        default: throw Invalid(description: "\(name) is not a number")
        }
        let thousandths = (percent * 1_000).rounded()
        guard percent >= 0, percent <= 100, abs(thousandths - percent * 1_000) < 1e-6 else {
            throw Invalid(description: "\(name) is not a percentage from 0 to 100 with at most three decimals")
        }
        return Int64(thousandths)
    }

    private static func onlyKnown(_ members: [String: JSONValue], _ known: Set<String>, in name: String)
        throws(Invalid)
    {
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            throw Invalid(description: "\(name) has an unknown member '\(unknown)' (known: \(known.sorted().joined(separator: ", ")))")
        }
    }
}
