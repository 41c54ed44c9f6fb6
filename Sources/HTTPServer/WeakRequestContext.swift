/// A request waiting for its handler's response, as the response-deadline sweeper holds it: weakly, so a request
/// that finished leaves only a dead reference behind until its deadline passes.
struct WeakRequestContext: Sendable {
    weak var context: RequestContext?

    init(_ context: RequestContext) {
        self.context = context
    }
}
