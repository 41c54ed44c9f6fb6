import Postgres

/// The ledger's tables, created and migrated by the ledger itself. Each migration runs once, in its own transaction,
/// under an advisory lock (several instances starting together migrate once); `schema_migrations` records what ran.
/// Never edit a released migration: add the next version.
public enum LedgerSchema: VersionedSchema {
    /// Any 64-bit number unique to this application's advisory locks.
    public static let migrationLockKey: Int64 = 0x1ed6_e0a1
    /// The first key of the two-key advisory locks a batch takes on the ids and tokens it links or waits on (a
    /// key space apart from `migrationLockKey`'s).
    static let linkLockNamespace: Int32 = 0x1ed6

    public static let migrations: [(version: Int64, statements: [String])] = [
        (
            1,
            [
                // One row per credit_key: the rules' state (LedgerRules.PurchaseState).
                """
                CREATE TABLE purchases (
                    credit_key text PRIMARY KEY,
                    status text NOT NULL CHECK (status IN ('pending_owner','credited','debited','recredited','refused')),
                    owner text,
                    product_id text,
                    grant_kind text CHECK (grant_kind IN ('item','entitlement')),
                    grant_name text,
                    grant_amount bigint,
                    quantity bigint NOT NULL DEFAULT 1,
                    expires_date_ms bigint,
                    amount_credited bigint NOT NULL DEFAULT 0,
                    amount_debited bigint NOT NULL DEFAULT 0,
                    last_debit bigint NOT NULL DEFAULT 0,
                    credited_at_ms bigint,
                    original_transaction_id text,
                    updated_at_ms bigint NOT NULL
                )
                """,
                "CREATE INDEX purchases_owner ON purchases (owner)",
                """
                CREATE TABLE balances (
                    user_id text NOT NULL,
                    item text NOT NULL,
                    amount bigint NOT NULL,
                    PRIMARY KEY (user_id, item)
                )
                """,
                // One row per purchase that grants an entitlement; `active` false once refunded or revoked.
                """
                CREATE TABLE entitlements (
                    credit_key text PRIMARY KEY REFERENCES purchases (credit_key),
                    user_id text NOT NULL,
                    entitlement text NOT NULL,
                    expires_date_ms bigint,
                    active boolean NOT NULL
                )
                """,
                "CREATE INDEX entitlements_user ON entitlements (user_id) WHERE active",
                // Events applied (or parked): Apple's notificationUUID, deduplicated here before the rules.
                """
                CREATE TABLE applied_events (
                    event_id text PRIMARY KEY,
                    type text NOT NULL,
                    credit_key text,
                    applied_at_ms bigint NOT NULL
                )
                """,
                """
                CREATE TABLE refused_claims (
                    credit_key text NOT NULL REFERENCES purchases (credit_key),
                    user_id text NOT NULL,
                    submission_id text NOT NULL,
                    at_ms bigint NOT NULL,
                    PRIMARY KEY (credit_key, user_id, submission_id)
                )
                """,
                // Who owns an original_transaction_id or an app_account_token: how events find their user.
                """
                CREATE TABLE owner_links (
                    kind text NOT NULL CHECK (kind IN ('original_transaction_id','app_account_token')),
                    value text NOT NULL,
                    user_id text NOT NULL,
                    PRIMARY KEY (kind, value)
                )
                """,
                // Credit claims waiting for their owner (a credit event, or a result naming no user).
                """
                CREATE TABLE pending_claims (
                    claim_id text PRIMARY KEY,
                    credit_key text NOT NULL,
                    original_transaction_id text,
                    app_account_token text,
                    source_kind text NOT NULL CHECK (source_kind IN ('event','result')),
                    source_id text NOT NULL,
                    product_id text NOT NULL,
                    grant_kind text CHECK (grant_kind IN ('item','entitlement')),
                    grant_name text,
                    grant_amount bigint,
                    quantity bigint NOT NULL,
                    expires_date_ms bigint,
                    at_ms bigint NOT NULL
                )
                """,
                "CREATE INDEX pending_claims_original ON pending_claims (original_transaction_id)",
                "CREATE INDEX pending_claims_token ON pending_claims (app_account_token)",
                // The next offset to read per partition: the source of truth for where consumption resumes.
                """
                CREATE TABLE consumer_offsets (
                    topic text NOT NULL,
                    partition integer NOT NULL,
                    next_offset bigint NOT NULL,
                    PRIMARY KEY (topic, partition)
                )
                """,
                // What could not be read or applied, with the message as it was, for an operator to replay.
                """
                CREATE TABLE dead_letters (
                    topic text NOT NULL,
                    partition integer NOT NULL,
                    "offset" bigint NOT NULL,
                    reason text NOT NULL,
                    raw bytea NOT NULL,
                    recorded_at_ms bigint NOT NULL,
                    PRIMARY KEY (topic, partition, "offset", reason)
                )
                """,
            ]
        ),
        (
            2,
            [
                // Round 4 ("money moves only where it should"): upgrades, Apple's event order, prorated refunds
                // before the credit, and sandbox purchases in a book of their own.
                "ALTER TABLE purchases DROP CONSTRAINT purchases_status_check",
                """
                ALTER TABLE purchases ADD CONSTRAINT purchases_status_check
                    CHECK (status IN ('pending_owner','credited','debited','recredited','refused','upgraded'))
                """,
                """
                ALTER TABLE purchases
                    ADD COLUMN book text NOT NULL DEFAULT 'production' CHECK (book IN ('production','sandbox')),
                    ADD COLUMN purchase_date_ms bigint,
                    ADD COLUMN refused_percentage bigint,
                    ADD COLUMN last_event_signed_ms bigint,
                    ADD COLUMN upgrade_reported boolean NOT NULL DEFAULT false,
                    ADD COLUMN upgraded_at_ms bigint,
                    ADD COLUMN upgrade_taken bigint NOT NULL DEFAULT 0
                """,
                // A sandbox purchase recorded before this version was credited into production balances; its
                // book stays production (what was paid out), new ones follow LEDGER_SANDBOX_POLICY.
                """
                CREATE INDEX purchases_subscription ON purchases (original_transaction_id)
                    WHERE original_transaction_id IS NOT NULL
                """,
                """
                ALTER TABLE balances
                    ADD COLUMN book text NOT NULL DEFAULT 'production' CHECK (book IN ('production','sandbox'))
                """,
                "ALTER TABLE balances DROP CONSTRAINT balances_pkey",
                "ALTER TABLE balances ADD PRIMARY KEY (user_id, book, item)",
                """
                ALTER TABLE entitlements
                    ADD COLUMN book text NOT NULL DEFAULT 'production' CHECK (book IN ('production','sandbox'))
                """,
                """
                ALTER TABLE pending_claims
                    ADD COLUMN environment text NOT NULL DEFAULT 'production'
                        CHECK (environment IN ('production','sandbox')),
                    ADD COLUMN ownership text NOT NULL DEFAULT 'purchased'
                        CHECK (ownership IN ('purchased','family_shared')),
                    ADD COLUMN purchase_date_ms bigint,
                    ADD COLUMN upgrade_notified boolean NOT NULL DEFAULT false
                """,
                // The Kafka cluster this database applied (KafkaBinding): a guard against the wrong database.
                """
                CREATE TABLE kafka_bindings (
                    name text PRIMARY KEY,
                    value text NOT NULL,
                    bound_at_ms bigint NOT NULL
                )
                """,
            ]
        ),
        (
            version: 3,
            statements: [
                // Each user's consent to share consumption data with Apple (the API's PUT/DELETE); a withdrawal keeps
                // the row (consented false) so the audit tells when.
                """
                CREATE TABLE consents (
                    user_id text PRIMARY KEY,
                    consented boolean NOT NULL,
                    updated_at_ms bigint NOT NULL
                )
                """,
                // One row per CONSUMPTION_REQUEST (event_id): recorded with the event's batch, then answered once by
                // the refund responder. The row is the audit record: the facts, the rule, the body sent, Apple's
                // answer and the times.
                """
                CREATE TABLE consumption_requests (
                    event_id text PRIMARY KEY,
                    credit_key text NOT NULL,
                    transaction_id text NOT NULL,
                    environment text NOT NULL CHECK (environment IN ('Production','Sandbox')),
                    bundle_id text NOT NULL,
                    signed_at_ms bigint NOT NULL,
                    deadline_ms bigint NOT NULL,
                    recorded_at_ms bigint NOT NULL,
                    status text NOT NULL
                        CHECK (status IN ('pending','answered','unanswered','dry_run','refused')),
                    unanswered_reason text,
                    attempts integer NOT NULL DEFAULT 0,
                    next_attempt_at_ms bigint NOT NULL,
                    owner text,
                    delivery_status text,
                    consumption_percentage bigint,
                    rule integer,
                    refund_preference text,
                    body text,
                    apple_status integer,
                    apple_error text,
                    finished_at_ms bigint
                )
                """,
                """
                CREATE INDEX consumption_requests_due ON consumption_requests (next_attempt_at_ms)
                    WHERE status = 'pending'
                """,
            ]
        ),
        (
            version: 4,
            statements: [
                // The app download (Apple's appTransactionId) each credited purchase was made under, from its result
                // or credit event: RESCIND_CONSENT names a download, and withdraws the consent of its purchases'
                // owners. No foreign key: a purchase back to never seen is deleted without it.
                """
                CREATE TABLE purchase_app_transactions (
                    credit_key text PRIMARY KEY,
                    app_transaction_id text NOT NULL
                )
                """,
                "CREATE INDEX purchase_app_transactions_id ON purchase_app_transactions (app_transaction_id)",
            ]
        ),
        (
            version: 5,
            statements: [
                // Only the subscriptions' periods are looked up by their original transaction (the credited periods
                // an upgrade replaces, BatchWork.purchasesStatement): the index keeps those alone, so crediting a
                // consumable or a one-time purchase no longer writes an index entry nobody reads. Built inside the
                // migration's transaction: the ledger's writes wait for it while it reads the purchases once.
                "DROP INDEX purchases_subscription",
                """
                CREATE INDEX purchases_subscription ON purchases (original_transaction_id)
                    WHERE original_transaction_id IS NOT NULL AND credit_key LIKE '%:period:%'
                """,
            ]
        ),
        (version: 6, statements: WalletSchema.migration),
        (
            version: 7,
            statements: [
                // Consumption answers Apple accepts (round 5): Apple's field rules depend on the product's kind. A
                // purchase recorded before has none (NULL: unknown, except that a subscription period's key tells
                // an auto-renewable's, ProductKind.resolved); the column is added without rewriting the table.
                """
                ALTER TABLE purchases ADD COLUMN product_type text
                    CHECK (product_type IN ('consumable','non_consumable','auto_renewable','non_renewing'))
                """,
                // The request as Apple sent it (its transaction's product type, Apple's consumptionRequestReason), and
                // Apple's errorCode when it refused the answer (before this version only quoted in apple_error).
                """
                ALTER TABLE consumption_requests
                    ADD COLUMN product_type text
                        CHECK (product_type IN ('consumable','non_consumable','auto_renewable','non_renewing')),
                    ADD COLUMN consumption_request_reason text,
                    ADD COLUMN apple_error_code bigint
                """,
            ]
        ),
        (
            version: 8,
            statements: [
                // Round 5 (issue 41), owners and order. Round 5's branches numbered their versions apart (6, 7, 8):
                // each migration runs once by its own number, whichever order they were released in.
                //
                // A subscription_status event is ordered among status events only: its own last signing time. A
                // period whose last ordered event was a status notification had that time in last_event_signed_ms;
                // it is copied here so an older status still never overwrites a newer expiry. The money order keeps
                // its value (nothing tells which kind of event set it); a refund it leaves stale is what
                // receipt-reconcile corrects or records (docs/CREDITING.md, "Reconciliation").
                "ALTER TABLE purchases ADD COLUMN last_status_signed_ms bigint",
                """
                UPDATE purchases SET last_status_signed_ms = last_event_signed_ms
                WHERE last_event_signed_ms IS NOT NULL AND credit_key LIKE '%:period:%'
                """,
                // Owner links per Apple environment: a token linked by a (free) sandbox claim never decides who owns
                // production money. An existing link is kept for the environments it can be told to serve: an
                // original transaction id for the environments of the purchases that carry it; a token for the
                // environments in which its user owns purchases (the token itself is on no row); a link nothing
                // tells about stays production, as it served before. A backend repairs a link this keeps wrongly by
                // declaring the token (below), which every environment follows.
                "ALTER TABLE owner_links ADD COLUMN environment text CHECK (environment IN ('production','sandbox'))",
                "ALTER TABLE owner_links DROP CONSTRAINT owner_links_pkey",
                """
                INSERT INTO owner_links (kind, value, user_id, environment)
                SELECT DISTINCT l.kind, l.value, l.user_id,
                    CASE WHEN starts_with(p.credit_key, 'apple:sandbox:') THEN 'sandbox' ELSE 'production' END
                FROM owner_links l JOIN purchases p ON p.original_transaction_id = l.value
                WHERE l.kind = 'original_transaction_id' AND l.environment IS NULL
                """,
                """
                INSERT INTO owner_links (kind, value, user_id, environment)
                SELECT DISTINCT l.kind, l.value, l.user_id,
                    CASE WHEN starts_with(p.credit_key, 'apple:sandbox:') THEN 'sandbox' ELSE 'production' END
                FROM owner_links l JOIN purchases p ON p.owner = l.user_id
                WHERE l.kind = 'app_account_token' AND l.environment IS NULL
                """,
                """
                UPDATE owner_links l SET environment = 'production' WHERE l.environment IS NULL AND NOT EXISTS (
                    SELECT 1 FROM owner_links n WHERE n.kind = l.kind AND n.value = l.value AND n.environment IS NOT NULL)
                """,
                "DELETE FROM owner_links WHERE environment IS NULL",
                "ALTER TABLE owner_links ALTER COLUMN environment SET NOT NULL",
                // Looked up by value (a batch's ids and tokens), so the value leads.
                "ALTER TABLE owner_links ADD PRIMARY KEY (value, kind, environment)",
                // The backend's word on whose a token is (PUT /v1/users/{user_id}/app-account-token): binds in every
                // environment, never taken by a claim or another declaration. Tokens lower-cased (UUIDs).
                """
                CREATE TABLE declared_account_tokens (
                    app_account_token text PRIMARY KEY,
                    user_id text NOT NULL,
                    declared_at_ms bigint NOT NULL
                )
                """,
                "CREATE INDEX declared_account_tokens_user ON declared_account_tokens (user_id)",
                // Every RESCIND_CONSENT the ledger applied (its event_id, Apple's notificationUUID): how
                // receipt-reconcile tells a lost one from one that arrived, and the audit of each withdrawal.
                """
                CREATE TABLE consent_rescinds (
                    event_id text PRIMARY KEY,
                    app_transaction_id text,
                    signed_at_ms bigint,
                    consents_withdrawn bigint NOT NULL,
                    applied_at_ms bigint NOT NULL
                )
                """,
            ]
        ),
        (
            version: 9,
            statements: [
                // Who paid for a refund request's transaction (Apple's inAppOwnershipType as the event carried it):
                // Apple refuses any answer for a family-shared one (4000185), so the responder answers none
                // (family_shared). Requests recorded before are NULL: not known, answered as before.
                "ALTER TABLE consumption_requests ADD COLUMN in_app_ownership_type text",
                // app_account_token in one case (AppAccountToken.canonical: ASCII letters lower-cased, the same as
                // translate() here whatever the locale). Results a backend produced itself may have carried a token
                // upper-cased, which linked or parked it apart from the same token lower-cased. Declarations were
                // always lower-cased. Two links of one token and environment that collide: the one already in
                // canonical form is kept (every event the pipeline wrote, always lower-cased, was matched against
                // it, so it is the owner renewals and refunds went to), else the one whose text sorts first; each
                // dropped link naming another user is kept in owner_link_case_merges for the operator (a
                // declaration of the token decides for good). Parked claims whose token has an owner now are
                // applied when the ledger starts (LedgerStore.resolveStrandedClaims).
                """
                CREATE TABLE owner_link_case_merges (
                    environment text NOT NULL,
                    dropped_value text NOT NULL,
                    dropped_user_id text NOT NULL,
                    kept_value text NOT NULL,
                    kept_user_id text NOT NULL,
                    merged_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (dropped_value, environment)
                )
                """,
                """
                CREATE TEMPORARY TABLE token_link_ranks ON COMMIT DROP AS
                SELECT value, environment, user_id,
                    \(canonicalToken("value")) AS canonical,
                    row_number() OVER (
                        PARTITION BY \(canonicalToken("value")), environment
                        ORDER BY value = \(canonicalToken("value")) DESC, value COLLATE "C") AS rank
                FROM owner_links WHERE kind = 'app_account_token'
                """,
                """
                INSERT INTO owner_link_case_merges (environment, dropped_value, dropped_user_id, kept_value, kept_user_id)
                SELECT dropped.environment, dropped.value, dropped.user_id, kept.value, kept.user_id
                FROM token_link_ranks dropped JOIN token_link_ranks kept
                    ON kept.canonical = dropped.canonical AND kept.environment = dropped.environment AND kept.rank = 1
                WHERE dropped.rank > 1 AND dropped.user_id <> kept.user_id
                """,
                """
                DELETE FROM owner_links l USING token_link_ranks r
                WHERE l.kind = 'app_account_token' AND l.value = r.value AND l.environment = r.environment AND r.rank > 1
                """,
                """
                UPDATE owner_links SET value = \(canonicalToken("value"))
                WHERE kind = 'app_account_token' AND value <> \(canonicalToken("value"))
                """,
                """
                UPDATE pending_claims SET app_account_token = \(canonicalToken("app_account_token"))
                WHERE app_account_token <> \(canonicalToken("app_account_token"))
                """,
                // The gaps an operator accepted (LEDGER_ACCEPT_OFFSET_GAP): a partition whose stored offset was below
                // its low watermark (a database older than the topics' retention) moved on to it; the offsets from
                // stored_offset up to low_watermark were never applied.
                """
                CREATE TABLE accepted_offset_gaps (
                    topic text NOT NULL,
                    partition integer NOT NULL,
                    stored_offset bigint NOT NULL,
                    low_watermark bigint NOT NULL,
                    accepted_at_ms bigint NOT NULL,
                    PRIMARY KEY (topic, partition, stored_offset)
                )
                """,
            ]
        ),
        (version: 10, statements: WalletSchema.remainingByWallet),
        (version: 11, statements: [byteOrderText, balancesRoomForUpdates] + WalletSchema.creditEntriesFromLots),
        (version: 12, statements: WalletSchema.lotsOnFirstTouch),
        (version: 13, statements: WalletSchema.untouchedLotsInOwnerIndex),
    ]

    /// The ledger's tables (every one a migration above creates).
    static let tables = [
        "purchases", "balances", "entitlements", "applied_events", "refused_claims", "owner_links", "pending_claims",
        "consumer_offsets", "dead_letters", "kafka_bindings", "consents", "consumption_requests",
        "purchase_app_transactions", "declared_account_tokens", "consent_rescinds", "owner_link_case_merges",
        "accepted_offset_gaps", "wallet_lots", "wallet_clawbacks", "wallet_takes", "wallet_spends", "wallet_requests",
        "wallet_history",
    ]

    /// Schema version 11, first: every text column of the ledger's tables compares byte by byte (`COLLATE "C"`).
    static let byteOrderText = """
        DO $$
        DECLARE t record;
        BEGIN
            FOR t IN
                SELECT c.relname, string_agg(format('ALTER COLUMN %I TYPE text COLLATE "C"', a.attname), ', '
                    ORDER BY a.attnum) AS changes
                FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
                WHERE c.oid = ANY (ARRAY[\(tables.map { "to_regclass('\($0)')" }.joined(separator: ", "))])
                    AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'text'::regtype
                    AND a.attcollation <> 'pg_catalog."C"'::regcollation
                GROUP BY c.relname ORDER BY c.relname
            LOOP
                EXECUTE format('ALTER TABLE %I %s', t.relname, t.changes);
            END LOOP;
        END $$
        """

    /// Schema version 11: `balances` pages filled to 70 % by new rows. Every credit, spend and take-back updates
    /// its wallet's row; on a full page the new version goes to another page and adds an entry to the key index
    /// (a non-HOT update: an index insertion checked against every version of the key), where room on the page keeps
    /// the update in place and the index untouched (docs/BENCHMARKS.md, "The results path after schema 11"). Pages
    /// written before keep their fill; no row moves.
    static let balancesRoomForUpdates = "ALTER TABLE balances SET (fillfactor = 70)"

    /// SQL for `AppAccountToken.canonical` of `column`: its ASCII letters lower-cased (`lower()` would follow the
    /// database's locale).
    static func canonicalToken(_ column: String) -> String {
        "translate(\(column), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
    }

    public static let versionsTable = "schema_migrations"

    public static func newerThanBuild(_ newest: Int64, _ known: Int64) -> String {
        "the database schema is version \(newest), newer than this build's \(known): upgrade the ledger"
    }
}
