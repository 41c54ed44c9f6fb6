/// What every verifyReceipt call answers while the fake's global outage is on (`POST /admin/outage?on=1&mode=`).
public enum FakeOutageMode: String, Sendable, CaseIterable {
    /// HTTP 503 with an HTML body (a gateway page).
    case http503
    /// `{"status":21005}`: Apple's "receipt server unavailable".
    case status21005
    /// `{"status":21002}` for every receipt: one of Apple's bursts of spurious "malformed receipt data".
    case status21002
    /// No answer until the server's response deadline.
    case hang
}
