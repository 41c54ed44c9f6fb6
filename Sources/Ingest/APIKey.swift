import ServiceRuntime
import ServiceSupport

/// One entry of `INGEST_API_KEYS`: the services' one bearer-key type (`BearerKey`: `name:key` or `key`, the text
/// before the first `:` is the name, a key containing `:` needs a name). A named key's name is written as `client_id`
/// into its submissions.
public typealias APIKey = BearerKey

extension BearerKey {
    /// Parses the entries of `INGEST_API_KEYS` (already split at commas, blanks dropped).
    /// - Throws: `ConfigurationError` naming the entry by position (never by its key) and what is wrong.
    public static func parseList(_ entries: [String]) throws(ConfigurationError) -> [BearerKey] {
        try parseList(entries, variable: "INGEST_API_KEYS")
    }
}
