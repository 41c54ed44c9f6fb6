import Dispatch
import HTTPClient
import ReceiptModel

/// The support and operations endpoints (receipt-admin): each one call through `call(...)`, paced per endpoint as
/// `ServerAPIEndpoint` says, signed and classified like every other. Signed data in the answers is NOT verified here.
extension AppStoreServerAPIClient {
    /// Look Up Order ID: `GET /inApps/v1/lookup/{orderId}`.
    public func lookUpOrder(
        orderId: String, bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> Answer<OrderLookupResponse> {
        await asyncCall(
            .orderLookup, environment: environment, method: .get,
            path: "/inApps/v1/lookup/" + URLComponent.encode(orderId), body: [], bundleId: bundleId,
            deadline: deadline)
    }

    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}[?status=N&status=M]`.
    public func subscriptionStatuses(
        transactionId: String, statuses: [Int] = [], bundleId: String, environment: AppStoreEnvironment,
        deadline: DispatchTime
    ) async -> Answer<SubscriptionStatusesResponse> {
        let query = statuses.map { "status=\($0)" }.joined(separator: "&")
        return await asyncCall(
            .subscriptionStatuses, environment: environment, method: .get,
            path: "/inApps/v1/subscriptions/" + URLComponent.encode(transactionId) + (query.isEmpty ? "" : "?" + query),
            body: [], bundleId: bundleId, deadline: deadline)
    }

    /// Set App Account Token: `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken` (no body back).
    public func setAppAccountToken(
        originalTransactionId: String, _ request: AppAccountTokenRequest, bundleId: String,
        environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> Answer<ServerAPINoContent> {
        await asyncCall(
            .setAppAccountToken, environment: environment, method: .put,
            path: "/inApps/v1/transactions/" + URLComponent.encode(originalTransactionId) + "/appAccountToken",
            encoding: request, bundleId: bundleId, deadline: deadline)
    }

    /// Extend a Subscription Renewal Date: `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`.
    public func extendRenewalDate(
        originalTransactionId: String, _ request: ExtendRenewalDateRequest, bundleId: String,
        environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> Answer<ExtendRenewalDateResponse> {
        await asyncCall(
            .extendRenewal, environment: environment, method: .put,
            path: "/inApps/v1/subscriptions/extend/" + URLComponent.encode(originalTransactionId),
            encoding: request, bundleId: bundleId, deadline: deadline)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: `POST /inApps/v1/subscriptions/extend/mass`.
    public func massExtendRenewalDate(
        _ request: MassExtendRenewalDateRequest, bundleId: String, environment: AppStoreEnvironment,
        deadline: DispatchTime
    ) async -> Answer<MassExtendRenewalDateResponse> {
        await asyncCall(
            .extendRenewal, environment: environment, method: .post, path: "/inApps/v1/subscriptions/extend/mass",
            encoding: request, bundleId: bundleId, deadline: deadline)
    }

    /// Get Status of Subscription Renewal Date Extensions:
    /// `GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`.
    public func massExtendRenewalDateStatus(
        productId: String, requestIdentifier: String, bundleId: String, environment: AppStoreEnvironment,
        deadline: DispatchTime
    ) async -> Answer<MassExtendRenewalDateStatusResponse> {
        await asyncCall(
            .extendRenewal, environment: environment, method: .get,
            path: "/inApps/v1/subscriptions/extend/mass/" + URLComponent.encode(productId) + "/"
                + URLComponent.encode(requestIdentifier),
            body: [], bundleId: bundleId, deadline: deadline)
    }

    /// Request a Test Notification: `POST /inApps/v1/notifications/test` (no body).
    public func requestTestNotification(
        bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> Answer<SendTestNotificationResponse> {
        await asyncCall(
            .testNotification, environment: environment, method: .post, path: "/inApps/v1/notifications/test",
            body: [], bundleId: bundleId, deadline: deadline)
    }

    /// Get Test Notification Status: `GET /inApps/v1/notifications/test/{testNotificationToken}`.
    public func testNotificationStatus(
        token: String, bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> Answer<CheckTestNotificationResponse> {
        await asyncCall(
            .testNotification, environment: environment, method: .get,
            path: "/inApps/v1/notifications/test/" + URLComponent.encode(token), body: [], bundleId: bundleId,
            deadline: deadline)
    }

    /// Finish Transaction (API 1.20): `POST /inApps/v1/transactions/{transactionId}/finish`, no body either way (as
    /// Apple's libraries send it). Tells the App Store the purchase was delivered; it moves no money.
    public func finishTransaction(
        transactionId: String, bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> Answer<ServerAPINoContent> {
        await asyncCall(
            .finishTransaction, environment: environment, method: .post,
            path: "/inApps/v1/transactions/" + URLComponent.encode(transactionId) + "/finish", body: [],
            bundleId: bundleId, deadline: deadline)
    }

    // MARK: Helpers

    private func asyncCall<Value: Decodable & Sendable>(
        _ endpoint: ServerAPIEndpoint, environment: AppStoreEnvironment, method: HTTPMethod, path: String,
        body: [UInt8], bundleId: String, deadline: DispatchTime
    ) async -> Answer<Value> {
        await withCheckedContinuation { continuation in
            call(
                endpoint, environment: environment, method: method, path: path, body: body, bundleId: bundleId,
                deadline: deadline
            ) { continuation.resume(returning: $0) }
        }
    }

    private func asyncCall<Value: Decodable & Sendable>(
        _ endpoint: ServerAPIEndpoint, environment: AppStoreEnvironment, method: HTTPMethod, path: String,
        encoding request: some Encodable, bundleId: String, deadline: DispatchTime
    ) async -> Answer<Value> {
        let body: [UInt8]
        do {
            body = try request.serverAPIBody()
        } catch {
            return Answer(
                result: .failure(
                    ServerAPIError(
                        .invalidRequest, "cannot encode the \(endpoint.rawValue) request: \(error)",
                        environment: environment)), calls: 0)
        }
        return await asyncCall(
            endpoint, environment: environment, method: method, path: path, body: body, bundleId: bundleId,
            deadline: deadline)
    }
}
