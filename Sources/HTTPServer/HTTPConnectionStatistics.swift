/// What an `HTTPServer` did with connections since it started (for metrics).
public struct HTTPConnectionStatistics: Sendable, Equatable {
    /// Connections open now.
    public var open: Int
    /// Connections accepted since start.
    public var accepted: Int
    /// Connections refused since start because `connectionLimit` or `perIPConnectionLimit` was reached (closed at
    /// once, nothing read).
    public var refused: Int
    /// Connections closed because no complete request head arrived in time (`requestHeadTimeout`, or
    /// `idleTimeoutSeconds` on a kept-alive connection), however many bytes trickled in.
    public var headTimeouts: Int
    /// Connections closed because a request body did not arrive completely within `bodyTimeout`.
    public var bodyTimeouts: Int
}
