import Foundation

/// The replica's schema history. Each step moves the file from version `n - 1` to `n` inside
/// the migration transaction; a step is never edited once released (old files depend on it),
/// a change is a new step.
///
/// The file is marked as Ferry's with `PRAGMA application_id` and stores its version in
/// `ferry_meta(key = 'schema_version')`.
enum Migrations {
    /// "FERY": lets Ferry (and `file(1)`) recognise a replica before reading any table.
    static let applicationID: Int64 = 0x4645_5259

    struct Step {
        let version: Int
        let sql: String
    }

    static let steps: [Step] = [
        // v1: meta, sync state, change log. Per-store tables are created by `prepare`, not here.
        Step(version: 1, sql: """
            CREATE TABLE ferry_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE ferry_sync_state(
                store TEXT PRIMARY KEY,
                cursor TEXT,
                last_attempt REAL,
                last_success REAL,
                last_error TEXT,
                total_inserted INTEGER NOT NULL DEFAULT 0,
                total_updated INTEGER NOT NULL DEFAULT 0,
                total_deleted INTEGER NOT NULL DEFAULT 0
            );
            CREATE TABLE ferry_changes(
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                store TEXT NOT NULL,
                id TEXT NOT NULL,
                op TEXT NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
                time REAL NOT NULL
            );
            """),
        // v2: `ferry_store_columns` records the typed columns `prepare` created, so a changed
        // path or type is noticed and the column rebuilt; `ferry_changes_readable` shows the
        // change log with ISO-8601 times for people reading it with `sqlite3`.
        // No extra index on ferry_changes: every merged record appends a log row, and each index
        // would cost another b-tree insert per record (measured: the merge fell to 0.4× the raw
        // upsert rate with two). Followers read `seq > ?` (a rowid range) and pruning walks from
        // the oldest row, so neither needs one.
        Step(version: 2, sql: """
            CREATE TABLE ferry_store_columns(
                store TEXT NOT NULL,
                name TEXT NOT NULL,
                definition TEXT NOT NULL,
                PRIMARY KEY (store, name)
            );
            CREATE VIEW ferry_changes_readable AS
                SELECT seq, store, id, op, strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch') AS time FROM ferry_changes;
            """),
        // v3: a compact change log. Every merged record appends one log row in the merge's
        // transaction; with `store` and `op` as text, a CHECK on `op` and AUTOINCREMENT the log
        // cost the bulk merge ~1.5 µs per record (0.73–0.80× the raw upsert rate). Now:
        // - `ferry_change_log` holds integers for the store (`ferry_stores`) and the operation
        //   (1 insert, 2 update, 3 delete); `ferry_changes` becomes a view with the same columns
        //   and text values as before, so SQL readers and `ferry_changes_readable` are unchanged.
        // - No AUTOINCREMENT: the writer assigns `seq` itself, from
        //   max(newest seq, `ferry_meta.change_seq_floor`) + 1 per transaction. Pruning records the
        //   highest sequence it deletes in that floor, so a sequence is never reused even when
        //   every entry has been pruned (what sqlite_sequence guaranteed before).
        Step(version: 3, sql: """
            CREATE TABLE ferry_stores(store_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            INSERT INTO ferry_stores(name) SELECT store FROM ferry_sync_state UNION SELECT store FROM ferry_changes;
            CREATE TABLE ferry_change_log(
                seq INTEGER PRIMARY KEY,
                store_id INTEGER NOT NULL,
                id TEXT NOT NULL,
                op INTEGER NOT NULL,
                time REAL NOT NULL
            );
            INSERT INTO ferry_change_log(seq, store_id, id, op, time)
                SELECT c.seq, s.store_id, c.id, CASE c.op WHEN 'insert' THEN 1 WHEN 'update' THEN 2 ELSE 3 END, c.time
                FROM ferry_changes c JOIN ferry_stores s ON s.name = c.store ORDER BY c.seq;
            INSERT INTO ferry_meta(key, value)
                SELECT 'change_seq_floor', coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'ferry_changes'), 0) WHERE true
                ON CONFLICT(key) DO UPDATE SET value = excluded.value;
            DROP VIEW ferry_changes_readable;
            DROP TABLE ferry_changes;
            CREATE VIEW ferry_changes AS
                SELECT l.seq AS seq, s.name AS store, l.id AS id,
                       CASE l.op WHEN 1 THEN 'insert' WHEN 2 THEN 'update' WHEN 3 THEN 'delete' END AS op, l.time AS time
                FROM ferry_change_log l JOIN ferry_stores s ON s.store_id = l.store_id;
            CREATE VIEW ferry_changes_readable AS
                SELECT seq, store, id, op, strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch') AS time FROM ferry_changes;
            """),
        // v4: what a store's replica knowingly lacks. `incomplete` says why in words (NULL: the
        // last pass left nothing out); `sweep_pending` makes the next pass list every id again
        // (a failed or refused sweep); `ferry_pending_records` keeps the ids of records the
        // remote has and the replica could not store, until a pass stores or deletes them.
        Step(version: 4, sql: """
            ALTER TABLE ferry_sync_state ADD COLUMN incomplete TEXT;
            ALTER TABLE ferry_sync_state ADD COLUMN sweep_pending INTEGER NOT NULL DEFAULT 0;
            CREATE TABLE ferry_pending_records(
                store_id INTEGER NOT NULL,
                id TEXT NOT NULL,
                reason TEXT NOT NULL,
                since REAL NOT NULL,
                PRIMARY KEY (store_id, id)
            ) WITHOUT ROWID;
            """),
        // v5: when the store's deleted ids were last swept, so a sweep is due by the replica's
        // own record: `ferry sync` and a restarted ferryd no longer sweep on every first pass
        // (a sweep lists every id, about the cost of a first sync). `record_count`: the live
        // rows as counted at the end of the last pass, NULL once a transaction changed how many
        // there are; readers (`ferry status`) and passes without changes use it instead of a
        // count(*) that reads the whole table.
        Step(version: 5, sql: """
            ALTER TABLE ferry_sync_state ADD COLUMN last_swept REAL;
            ALTER TABLE ferry_sync_state ADD COLUMN record_count INTEGER;
            """),
        // v6: local writes. `ferry_outbox` is the durable queue of a push store's local
        // changes: one entry per record (later writes fold into it, so a create then update is
        // one create, a create then delete nothing), written by the store's triggers in the
        // local write's own transaction. `base_version`/`base_body` are the remote's version
        // the first local change was made on: what a remote change is compared with to find a
        // conflict, and what Parse's changed fields are computed from. `generation` counts the
        // local writes folded in, so a push that raced a newer local write keeps it queued.
        // `state`: 0 queued, 1 refused by the remote (`last_error` says why), 2 held in a
        // conflict. `sent`: when a create or an update was sent and no answer recorded (a crash
        // in between): the next push looks a create up before creating it again, and
        // `sent_version` (the remote version an update was computed against) tells whether an
        // update that is not idempotent (a Parse Increment) may have applied already.
        // `ferry_conflicts` keeps both sides of every conflict, held or resolved by the policy.
        // `ferry_change_log.origin`: NULL for a remote change, 1 for a local write the remote
        // accepted (pushed), so a follower can tell them apart.
        Step(version: 6, sql: """
            CREATE TABLE ferry_outbox(
                store_id INTEGER NOT NULL,
                id TEXT NOT NULL,
                op INTEGER NOT NULL,
                base_version TEXT,
                base_body TEXT,
                queued REAL NOT NULL,
                changed REAL NOT NULL,
                generation INTEGER NOT NULL DEFAULT 1,
                state INTEGER NOT NULL DEFAULT 0,
                attempts INTEGER NOT NULL DEFAULT 0,
                last_error TEXT,
                sent REAL,
                sent_version TEXT,
                PRIMARY KEY (store_id, id)
            ) WITHOUT ROWID;
            CREATE TABLE ferry_conflicts(
                conflict_id INTEGER PRIMARY KEY,
                store_id INTEGER NOT NULL,
                id TEXT NOT NULL,
                detected REAL NOT NULL,
                local_op INTEGER NOT NULL,
                base_version TEXT,
                local_body TEXT,
                remote_version TEXT,
                remote_body TEXT,
                policy TEXT NOT NULL,
                resolution TEXT CHECK (resolution IN ('local', 'remote', 'both')),
                resolved REAL
            );
            CREATE INDEX ferry_conflicts_open ON ferry_conflicts(store_id, id) WHERE resolved IS NULL;
            ALTER TABLE ferry_change_log ADD COLUMN origin INTEGER;
            DROP VIEW ferry_changes_readable;
            DROP VIEW ferry_changes;
            CREATE VIEW ferry_changes AS
                SELECT l.seq AS seq, s.name AS store, l.id AS id,
                       CASE l.op WHEN 1 THEN 'insert' WHEN 2 THEN 'update' WHEN 3 THEN 'delete' END AS op, l.time AS time,
                       CASE WHEN l.origin IS NULL THEN 'remote' ELSE 'local' END AS origin
                FROM ferry_change_log l JOIN ferry_stores s ON s.store_id = l.store_id;
            CREATE VIEW ferry_changes_readable AS
                SELECT seq, store, id, op, strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch') AS time, origin FROM ferry_changes;
            CREATE VIEW ferry_pending_writes AS
                SELECT s.name AS store, o.id AS id,
                       CASE o.op WHEN 1 THEN 'insert' WHEN 2 THEN 'update' WHEN 3 THEN 'delete' END AS op,
                       CASE o.state WHEN 0 THEN 'queued' WHEN 1 THEN 'refused' WHEN 2 THEN 'conflict' END AS state,
                       o.attempts AS attempts, o.last_error AS last_error,
                       strftime('%Y-%m-%dT%H:%M:%fZ', o.queued, 'unixepoch') AS queued
                FROM ferry_outbox o JOIN ferry_stores s ON s.store_id = o.store_id;
            CREATE VIEW ferry_open_conflicts AS
                SELECT c.conflict_id AS conflict_id, s.name AS store, c.id AS id,
                       CASE c.local_op WHEN 1 THEN 'insert' WHEN 2 THEN 'update' WHEN 3 THEN 'delete' END AS local_op,
                       c.local_body AS local_body, c.remote_version AS remote_version, c.remote_body AS remote_body,
                       strftime('%Y-%m-%dT%H:%M:%fZ', c.detected, 'unixepoch') AS detected, c.resolution AS resolution
                FROM ferry_conflicts c JOIN ferry_stores s ON s.store_id = c.store_id WHERE c.resolved IS NULL;
            """),
        // The collections of `dav-account` stores: each is a store of its own (`store`, also its
        // table), found by the account's discovery. `gone_since` marks one the account no
        // longer syncs whose rows are kept (see ReplicaDatabase+Collections).
        Step(version: 7, sql: """
            CREATE TABLE ferry_collections(
                store TEXT PRIMARY KEY,
                account TEXT NOT NULL,
                url TEXT NOT NULL,
                kind TEXT NOT NULL,
                segment TEXT NOT NULL,
                displayname TEXT,
                color TEXT,
                components TEXT,
                first_seen REAL NOT NULL,
                last_seen REAL NOT NULL,
                gone_since REAL
            );
            CREATE INDEX ferry_collections_account ON ferry_collections(account);
            """),
        // A rebuild's records, kept aside until the pass has read everything and they replace
        // the store's rows in one transaction (see ReplicaDatabase+Rebuild). Empty between
        // rebuilds; a rebuild cut short leaves rows the next one discards.
        Step(version: 8, sql: """
            CREATE TABLE ferry_rebuild_staging(
                store_id INTEGER NOT NULL,
                id TEXT NOT NULL,
                version TEXT NOT NULL,
                body BLOB,
                fields TEXT,
                deleted INTEGER NOT NULL,
                UNIQUE(store_id, id)
            );
            """),
        // What each page of a listing held when it was last merged (see PageDigest).
        Step(version: 9, sql: """
            CREATE TABLE ferry_page_digests(
                store_id INTEGER NOT NULL,
                page INTEGER NOT NULL,
                digest INTEGER NOT NULL,
                PRIMARY KEY(store_id, page)
            ) WITHOUT ROWID;
            """),
        // A digest of the table, typed columns and triggers `prepare` last made for the store
        // (see ReplicaDatabase+Schema): a pass compares it instead of scanning sqlite_schema,
        // which has no index and holds a row per table, index and trigger of every store.
        Step(version: 10, sql: """
            ALTER TABLE ferry_stores ADD COLUMN schema_fingerprint INTEGER;
            """),
        // The digest of the listing the store's last clean sweep read (``PageDigest/listing(_:)``),
        // NULL once a transaction inserted or deleted rows since: while it stands and the pages
        // are still those, the next sweep has nothing to delete (``PassPlan/listingAtRest``).
        Step(version: 11, sql: """
            ALTER TABLE ferry_sync_state ADD COLUMN swept_listing INTEGER;
            """),
        // Pushes that resume after a lost answer, and one pass per store at a time.
        // `ferry_outbox.sent_body`: what an update (or the update a delete followed) last sent,
        // so a "changed since" answer is first compared with it: the remote holding it is our
        // own send, landed, never a conflict. `ferry_conflicts.remote_fields`: the remote side's
        // extracted fields, so a resolution that takes it fills `fields` as a pull would.
        // `ferry_pass_claims`: the process running a store's pass (see PassClaim), so two
        // processes never push or pull one store at once. `ferry_sync_state.push_error`: 1 when
        // `last_error` is a push-only pass's (`ferry push`), which the next push that succeeds
        // clears; a pull's error only a pull clears.
        Step(version: 12, sql: """
            ALTER TABLE ferry_outbox ADD COLUMN sent_body TEXT;
            ALTER TABLE ferry_conflicts ADD COLUMN remote_fields TEXT;
            ALTER TABLE ferry_sync_state ADD COLUMN push_error INTEGER;
            CREATE TABLE ferry_pass_claims(
                store_id INTEGER PRIMARY KEY,
                pid INTEGER NOT NULL,
                process_start TEXT NOT NULL,
                token TEXT NOT NULL,
                command TEXT NOT NULL,
                claimed REAL NOT NULL
            );
            """),
        // `ferry_pending_records.read_back`: 1 for a record a push created, which the next pull
        // reads back by id to confirm (``ReplicaDatabase/awaitConfirmation(of:in:at:)``): the
        // replica holds what the push wrote, so it is not missing, and the store is not
        // incomplete for it. Such rows made before this column say so only in their reason.
        Step(version: 13, sql: """
            ALTER TABLE ferry_pending_records ADD COLUMN read_back INTEGER NOT NULL DEFAULT 0;
            UPDATE ferry_pending_records SET read_back = 1 WHERE reason = 'created by a push; not yet read back by a pull';
            """),
        // The members of expanding stores, whatever their kind: `attributes` is what the member's
        // kind keeps of it (a collection's segment, display name, colour and components), a
        // JSON object the replica does not read. `ferry_collections` stays as a view with its
        // columns, for queries written against it.
        Step(version: 14, sql: """
            CREATE TABLE ferry_members(
                store TEXT PRIMARY KEY,
                expanding_store TEXT NOT NULL,
                url TEXT NOT NULL,
                kind TEXT NOT NULL,
                attributes TEXT NOT NULL DEFAULT '{}',
                first_seen REAL NOT NULL,
                last_seen REAL NOT NULL,
                gone_since REAL
            );
            CREATE INDEX ferry_members_expanding_store ON ferry_members(expanding_store);
            INSERT INTO ferry_members(store, expanding_store, url, kind, attributes, first_seen, last_seen, gone_since)
                SELECT store, account, url, kind,
                       json_patch('{}', json_object('segment', segment, 'displayname', displayname, 'color', color, 'components', components)),
                       first_seen, last_seen, gone_since
                FROM ferry_collections;
            DROP TABLE ferry_collections;
            CREATE VIEW ferry_collections AS
                SELECT store, expanding_store AS account, url, kind, json_extract(attributes, '$.segment') AS segment,
                       json_extract(attributes, '$.displayname') AS displayname, json_extract(attributes, '$.color') AS color,
                       json_extract(attributes, '$.components') AS components, first_seen, last_seen, gone_since
                FROM ferry_members;
            """),
        // `ferry_outbox.removed_seen`: when a pull's diff (a DAV sync report) listed as removed
        // the record a create was sent as (`sent_version`: the member it named), after the
        // send. The create landed, its answer lost, and another client deleted what it made:
        // the next push meets that delete as a conflict instead of creating the record again.
        // A new send of the create clears it.
        Step(version: 15, sql: """
            ALTER TABLE ferry_outbox ADD COLUMN removed_seen REAL;
            """),
    ]

    static var currentVersion: Int { steps.last!.version }

    /// The version recorded in the file: 0 for a file with no Ferry tables yet.
    static func version(of connection: SQLiteConnection) throws(SQLiteError) -> Int {
        let hasMeta = try connection.scalarInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'ferry_meta'") ?? 0
        guard hasMeta > 0 else { return 0 }
        return Int(try connection.scalarText("SELECT value FROM ferry_meta WHERE key = 'schema_version'") ?? "0") ?? 0
    }

    /// Brings the file to ``currentVersion`` in one transaction: a crash mid-migration leaves
    /// the old version intact, and a second process racing us waits on the write lock and then
    /// sees there is nothing left to do.
    static func migrate(_ connection: SQLiteConnection, path: String) throws(StoreError) {
        let map = { (error: SQLiteError) in StoreError(error, path: path) }
        try connection.transaction(mapError: map) { () throws(StoreError) in
            let found: Int
            do throws(SQLiteError) { found = try version(of: connection) } catch { throw map(error) }
            guard found <= currentVersion else {
                throw StoreError(.newerSchema(found: found, supported: currentVersion), path: path, message: "written by a newer Ferry (schema \(found), this binary knows up to \(currentVersion)); refusing to touch it")
            }
            guard found < currentVersion else { return }
            do throws(SQLiteError) {
                if found == 0 { try connection.execute("PRAGMA application_id = \(applicationID)") }
                for step in steps where step.version > found {
                    try connection.execute(step.sql)
                }
                try connection.execute("INSERT INTO ferry_meta(key, value) VALUES ('schema_version', '\(currentVersion)') ON CONFLICT(key) DO UPDATE SET value = excluded.value")
            } catch {
                var failure = map(error)
                failure.message = "migration from schema \(found) to \(currentVersion) failed: " + failure.message
                throw failure
            }
        }
    }
}
