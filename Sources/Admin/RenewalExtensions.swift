import AppStoreServerAPI
import HTTPClient
import ReceiptModel
import ServiceSupport

/// `extend-renewal`, `mass-extend` and `mass-extend-status`: Extend a Subscription Renewal Date, for one
/// subscription or every active subscriber of a product, and the mass extension's progress. A dry run prints the
/// request and sends nothing.
enum RenewalExtensions {
    static func extendPath(_ originalTransactionId: String) -> String {
        "/inApps/v1/subscriptions/extend/" + originalTransactionId
    }

    static let massPath = "/inApps/v1/subscriptions/extend/mass"

    static func dryRun(
        _ command: String, method: HTTPMethod, path: String, environment: AppStoreEnvironment,
        body: JSONValue, fields: [String: JSONValue]
    ) -> AdminReport {
        var members = fields
        members["dry_run"] = .bool(true)
        members["request"] = .object([
            "method": .string(method.rawValue), "path": .string(path), "environment": .string(environment.rawValue),
            "body": body,
        ])
        return AdminReport(
            command: command, exitCode: .ok,
            lines: ["dry run: would send \(method.rawValue) \(path) (\(environment.rawValue)) \(body.line)"],
            fields: members)
    }

    static func extendOne(
        originalTransactionId: String, _ request: ExtendRenewalDateRequest, dryRun: Bool, _ context: AdminContext
    ) async -> AdminReport {
        let name = "extend-renewal"
        let fields: [String: JSONValue] = [
            "original_transaction_id": .string(originalTransactionId),
            "environment": .string(context.environment.rawValue),
            "request_identifier": .string(request.requestIdentifier),
        ]
        if dryRun {
            return Self.dryRun(
                name, method: .put, path: extendPath(originalTransactionId), environment: context.environment,
                body: RequestBody.json(request), fields: fields)
        }
        let answer = await context.caller.call(.extendRenewal, .put) { deadline in
            await context.client.extendRenewalDate(
                originalTransactionId: originalTransactionId, request, bundleId: context.bundleId,
                environment: context.environment, deadline: deadline)
        }
        switch answer {
        case .failure(let error): return AdminContext.failure(name, error, fields: fields)
        case .success(let response):
            return extendReport(originalTransactionId: originalTransactionId, request, response, fields: fields)
        }
    }

    /// Exit 3 when Apple answers `success: false`.
    static func extendReport(
        originalTransactionId: String, _ request: ExtendRenewalDateRequest, _ response: ExtendRenewalDateResponse,
        fields: [String: JSONValue]
    ) -> AdminReport {
        var members = fields
        let success = response.success == true
        members["dry_run"] = .bool(false)
        members["success"] = .bool(success)
        members["effective_date_ms"] = .int(response.effectiveDate)
        members["web_order_line_item_id"] = .text(response.webOrderLineItemId)
        members["extend_by_days"] = .integer(Int64(request.extendByDays))
        members["extend_reason_code"] = .integer(Int64(request.extendReasonCode))
        let line = success
            ? "extended subscription \(originalTransactionId) by \(request.extendByDays) day(s): it now renews "
                + AdminTime.text(response.effectiveDate)
            : "Apple did not extend subscription \(originalTransactionId) (success false)"
        return AdminReport(
            command: "extend-renewal", exitCode: success ? .ok : .refused, lines: [line], fields: members)
    }

    static func extendMany(_ request: MassExtendRenewalDateRequest, dryRun: Bool, _ context: AdminContext) async
        -> AdminReport
    {
        let name = "mass-extend"
        let fields: [String: JSONValue] = [
            "product_id": .string(request.productId), "environment": .string(context.environment.rawValue),
            "request_identifier": .string(request.requestIdentifier),
        ]
        if dryRun {
            return Self.dryRun(
                name, method: .post, path: massPath, environment: context.environment, body: RequestBody.json(request),
                fields: fields)
        }
        let answer = await context.caller.call(.extendRenewal, .post) { deadline in
            await context.client.massExtendRenewalDate(
                request, bundleId: context.bundleId, environment: context.environment, deadline: deadline)
        }
        switch answer {
        case .failure(let error): return AdminContext.failure(name, error, fields: fields)
        case .success(let response):
            var members = fields
            let identifier = response.requestIdentifier ?? request.requestIdentifier
            members["dry_run"] = .bool(false)
            members["request_identifier"] = .string(identifier)
            let storefronts = request.storefrontCountryCodes.map { $0.joined(separator: ",") } ?? "every storefront"
            return AdminReport(
                command: name, exitCode: .ok,
                lines: [
                    "Apple took the extension of every active \(request.productId) subscription by "
                        + "\(request.extendByDays) day(s) (\(storefronts)), request \(identifier)",
                    "follow it with: receipt-admin mass-extend-status \(request.productId) \(identifier)",
                ],
                fields: members)
        }
    }

    static func status(productId: String, requestIdentifier: String, _ context: AdminContext) async -> AdminReport {
        let name = "mass-extend-status"
        let fields: [String: JSONValue] = [
            "product_id": .string(productId), "request_identifier": .string(requestIdentifier),
            "environment": .string(context.environment.rawValue),
        ]
        let answer = await context.caller.call(.extendRenewal, .get) { deadline in
            await context.client.massExtendRenewalDateStatus(
                productId: productId, requestIdentifier: requestIdentifier, bundleId: context.bundleId,
                environment: context.environment, deadline: deadline)
        }
        switch answer {
        case .failure(let error): return AdminContext.failure(name, error, fields: fields)
        case .success(let response): return statusReport(response, fields: fields)
        }
    }

    static func statusReport(_ response: MassExtendRenewalDateStatusResponse, fields: [String: JSONValue])
        -> AdminReport
    {
        var members = fields
        let complete = response.complete == true
        members["complete"] = .bool(complete)
        members["complete_date_ms"] = .int(response.completeDate)
        members["succeeded_count"] = .int(response.succeededCount)
        members["failed_count"] = .int(response.failedCount)
        let counts = "\(response.succeededCount ?? 0) extended, \(response.failedCount ?? 0) failed"
        let line = complete
            ? "mass extension complete \(AdminTime.text(response.completeDate)): \(counts)"
            : "mass extension in progress: \(counts) so far"
        return AdminReport(command: "mass-extend-status", exitCode: .ok, lines: [line], fields: members)
    }
}
