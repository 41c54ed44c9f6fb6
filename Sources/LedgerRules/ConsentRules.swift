/// Whose consent to share consumption data a `RESCIND_CONSENT` notification withdraws. Pure: the store reads the
/// consents of the purchases' owners and writes back what this decides.
public enum ConsentRules {
    /// Whether a `RESCIND_CONSENT` Apple signed at `rescindSignedAtMs` withdraws a user's consent as it stands now.
    ///
    /// Apple signs the notification when the parent or guardian withdrew consent, but the event can reach the ledger
    /// late or again (a replay from the dead-letter topic, a reconciliation sweep, a consumer rewind). A consent the
    /// user gave after Apple signed the rescind is the newer word and stands; one given before it, or at the same
    /// millisecond (the side that shares no data), is withdrawn. An event without a signed date is taken as new:
    /// withdrawing by mistake costs one unanswered consumption request, sharing without consent is not allowed.
    /// A consent already withdrawn has nothing to withdraw.
    public static func rescindWithdraws(consented: Bool, consentUpdatedAtMs: Int64, rescindSignedAtMs: Int64?) -> Bool {
        guard consented else { return false }
        guard let rescindSignedAtMs else { return true }
        return consentUpdatedAtMs <= rescindSignedAtMs
    }
}
