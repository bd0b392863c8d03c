import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Replica migrations")
struct MigrationTests {
    /// The schema of every released version, frozen here as it shipped (not taken from
    /// `Migrations`, so an edit to an old step cannot go unnoticed). Add one per new version.
    static let frozenSchemas: [Int: String] = baseSchemas.merging(laterSchemas, uniquingKeysWith: { $1 })

    private static let baseSchemas: [Int: String] = [
        1: """
            PRAGMA application_id = 1178948185;
            CREATE TABLE ferry_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE ferry_sync_state(
                store TEXT PRIMARY KEY, cursor TEXT, last_attempt REAL, last_success REAL, last_error TEXT,
                total_inserted INTEGER NOT NULL DEFAULT 0, total_updated INTEGER NOT NULL DEFAULT 0, total_deleted INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE ferry_changes(
                seq INTEGER PRIMARY KEY AUTOINCREMENT, store TEXT NOT NULL, id TEXT NOT NULL,
                op TEXT NOT NULL CHECK (op IN ('insert', 'update', 'delete')), time REAL NOT NULL);
            INSERT INTO ferry_meta VALUES ('schema_version', '1');
            """,
        2: """
            PRAGMA application_id = 1178948185;
            CREATE TABLE ferry_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE ferry_sync_state(
                store TEXT PRIMARY KEY, cursor TEXT, last_attempt REAL, last_success REAL, last_error TEXT,
                total_inserted INTEGER NOT NULL DEFAULT 0, total_updated INTEGER NOT NULL DEFAULT 0, total_deleted INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE ferry_changes(
                seq INTEGER PRIMARY KEY AUTOINCREMENT, store TEXT NOT NULL, id TEXT NOT NULL,
                op TEXT NOT NULL CHECK (op IN ('insert', 'update', 'delete')), time REAL NOT NULL);
            CREATE TABLE ferry_store_columns(store TEXT NOT NULL, name TEXT NOT NULL, definition TEXT NOT NULL, PRIMARY KEY (store, name));
            CREATE VIEW ferry_changes_readable AS
                SELECT seq, store, id, op, strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch') AS time FROM ferry_changes;
            INSERT INTO ferry_meta VALUES ('schema_version', '2');
            """,
        3: """
            PRAGMA application_id = 1178948185;
            CREATE TABLE ferry_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE ferry_sync_state(
                store TEXT PRIMARY KEY, cursor TEXT, last_attempt REAL, last_success REAL, last_error TEXT,
                total_inserted INTEGER NOT NULL DEFAULT 0, total_updated INTEGER NOT NULL DEFAULT 0, total_deleted INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE ferry_store_columns(store TEXT NOT NULL, name TEXT NOT NULL, definition TEXT NOT NULL, PRIMARY KEY (store, name));
            CREATE TABLE ferry_stores(store_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            CREATE TABLE ferry_change_log(seq INTEGER PRIMARY KEY, store_id INTEGER NOT NULL, id TEXT NOT NULL, op INTEGER NOT NULL, time REAL NOT NULL);
            CREATE VIEW ferry_changes AS
                SELECT l.seq AS seq, s.name AS store, l.id AS id,
                       CASE l.op WHEN 1 THEN 'insert' WHEN 2 THEN 'update' WHEN 3 THEN 'delete' END AS op, l.time AS time
                FROM ferry_change_log l JOIN ferry_stores s ON s.store_id = l.store_id;
            CREATE VIEW ferry_changes_readable AS
                SELECT seq, store, id, op, strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch') AS time FROM ferry_changes;
            INSERT INTO ferry_meta VALUES ('schema_version', '3');
            """,
        4: """
            PRAGMA application_id = 1178948185;
            CREATE TABLE ferry_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE ferry_sync_state(
                store TEXT PRIMARY KEY, cursor TEXT, last_attempt REAL, last_success REAL, last_error TEXT,
                total_inserted INTEGER NOT NULL DEFAULT 0, total_updated INTEGER NOT NULL DEFAULT 0, total_deleted INTEGER NOT NULL DEFAULT 0,
                incomplete TEXT, sweep_pending INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE ferry_store_columns(store TEXT NOT NULL, name TEXT NOT NULL, definition TEXT NOT NULL, PRIMARY KEY (store, name));
            CREATE TABLE ferry_stores(store_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            CREATE TABLE ferry_change_log(seq INTEGER PRIMARY KEY, store_id INTEGER NOT NULL, id TEXT NOT NULL, op INTEGER NOT NULL, time REAL NOT NULL);
            CREATE TABLE ferry_pending_records(
                store_id INTEGER NOT NULL, id TEXT NOT NULL, reason TEXT NOT NULL, since REAL NOT NULL,
                PRIMARY KEY (store_id, id)) WITHOUT ROWID;
            CREATE VIEW ferry_changes AS
                SELECT l.seq AS seq, s.name AS store, l.id AS id,
                       CASE l.op WHEN 1 THEN 'insert' WHEN 2 THEN 'update' WHEN 3 THEN 'delete' END AS op, l.time AS time
                FROM ferry_change_log l JOIN ferry_stores s ON s.store_id = l.store_id;
            CREATE VIEW ferry_changes_readable AS
                SELECT seq, store, id, op, strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch') AS time FROM ferry_changes;
            INSERT INTO ferry_meta VALUES ('schema_version', '4');
            """,
        5: """
            PRAGMA application_id = 1178948185;
            CREATE TABLE ferry_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE ferry_sync_state(
                store TEXT PRIMARY KEY, cursor TEXT, last_attempt REAL, last_success REAL, last_error TEXT,
                total_inserted INTEGER NOT NULL DEFAULT 0, total_updated INTEGER NOT NULL DEFAULT 0, total_deleted INTEGER NOT NULL DEFAULT 0,
                incomplete TEXT, sweep_pending INTEGER NOT NULL DEFAULT 0, last_swept REAL, record_count INTEGER);
            CREATE TABLE ferry_store_columns(store TEXT NOT NULL, name TEXT NOT NULL, definition TEXT NOT NULL, PRIMARY KEY (store, name));
            CREATE TABLE ferry_stores(store_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            CREATE TABLE ferry_change_log(seq INTEGER PRIMARY KEY, store_id INTEGER NOT NULL, id TEXT NOT NULL, op INTEGER NOT NULL, time REAL NOT NULL);
            CREATE TABLE ferry_pending_records(
                store_id INTEGER NOT NULL, id TEXT NOT NULL, reason TEXT NOT NULL, since REAL NOT NULL,
                PRIMARY KEY (store_id, id)) WITHOUT ROWID;
            CREATE VIEW ferry_changes AS
                SELECT l.seq AS seq, s.name AS store, l.id AS id,
                       CASE l.op WHEN 1 THEN 'insert' WHEN 2 THEN 'update' WHEN 3 THEN 'delete' END AS op, l.time AS time
                FROM ferry_change_log l JOIN ferry_stores s ON s.store_id = l.store_id;
            CREATE VIEW ferry_changes_readable AS
                SELECT seq, store, id, op, strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch') AS time FROM ferry_changes;
            INSERT INTO ferry_meta VALUES ('schema_version', '5');
            """,
        6: """
            PRAGMA application_id = 1178948185;
            CREATE TABLE ferry_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE ferry_sync_state(
                store TEXT PRIMARY KEY, cursor TEXT, last_attempt REAL, last_success REAL, last_error TEXT,
                total_inserted INTEGER NOT NULL DEFAULT 0, total_updated INTEGER NOT NULL DEFAULT 0, total_deleted INTEGER NOT NULL DEFAULT 0,
                incomplete TEXT, sweep_pending INTEGER NOT NULL DEFAULT 0, last_swept REAL, record_count INTEGER);
            CREATE TABLE ferry_store_columns(store TEXT NOT NULL, name TEXT NOT NULL, definition TEXT NOT NULL, PRIMARY KEY (store, name));
            CREATE TABLE ferry_stores(store_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            CREATE TABLE ferry_change_log(seq INTEGER PRIMARY KEY, store_id INTEGER NOT NULL, id TEXT NOT NULL, op INTEGER NOT NULL, time REAL NOT NULL);
            CREATE TABLE ferry_pending_records(
                store_id INTEGER NOT NULL, id TEXT NOT NULL, reason TEXT NOT NULL, since REAL NOT NULL,
                PRIMARY KEY (store_id, id)) WITHOUT ROWID;
            CREATE VIEW ferry_changes AS
                SELECT l.seq AS seq, s.name AS store, l.id AS id,
                       CASE l.op WHEN 1 THEN 'insert' WHEN 2 THEN 'update' WHEN 3 THEN 'delete' END AS op, l.time AS time
                FROM ferry_change_log l JOIN ferry_stores s ON s.store_id = l.store_id;
            CREATE VIEW ferry_changes_readable AS
                SELECT seq, store, id, op, strftime('%Y-%m-%dT%H:%M:%fZ', time, 'unixepoch') AS time FROM ferry_changes;
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
            INSERT INTO ferry_meta VALUES ('schema_version', '6');
            """,
    ]

    /// Versions 7 to 9 added tables, 10 a column: their frozen schemas are 6's with those, as shipped.
    private static let laterSchemas: [Int: String] = {
        let six = "INSERT INTO ferry_meta VALUES ('schema_version', '6');"
        let collections = """
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

            """
        let staging = """
            CREATE TABLE ferry_rebuild_staging(
                store_id INTEGER NOT NULL, id TEXT NOT NULL, version TEXT NOT NULL, body BLOB, fields TEXT,
                deleted INTEGER NOT NULL, UNIQUE(store_id, id));

            """
        let digests = """
            CREATE TABLE ferry_page_digests(
                store_id INTEGER NOT NULL, page INTEGER NOT NULL, digest INTEGER NOT NULL,
                PRIMARY KEY(store_id, page)) WITHOUT ROWID;

            """
        let base = baseSchemas[6]!.replacingOccurrences(of: six, with: "")
        let thirteen = base + collections + staging + digests + "ALTER TABLE ferry_stores ADD COLUMN schema_fingerprint INTEGER;\n"
            + "ALTER TABLE ferry_sync_state ADD COLUMN swept_listing INTEGER;\n"
            + """
            ALTER TABLE ferry_outbox ADD COLUMN sent_body TEXT;
            ALTER TABLE ferry_conflicts ADD COLUMN remote_fields TEXT;
            ALTER TABLE ferry_sync_state ADD COLUMN push_error INTEGER;
            CREATE TABLE ferry_pass_claims(
                store_id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, process_start TEXT NOT NULL, token TEXT NOT NULL,
                command TEXT NOT NULL, claimed REAL NOT NULL);
            ALTER TABLE ferry_pending_records ADD COLUMN read_back INTEGER NOT NULL DEFAULT 0;

            """
        let members = """
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
            DROP TABLE ferry_collections;
            CREATE VIEW ferry_collections AS
                SELECT store, expanding_store AS account, url, kind, json_extract(attributes, '$.segment') AS segment,
                       json_extract(attributes, '$.displayname') AS displayname, json_extract(attributes, '$.color') AS color,
                       json_extract(attributes, '$.components') AS components, first_seen, last_seen, gone_since
                FROM ferry_members;

            """
        return [
            14: thirteen + members + "INSERT INTO ferry_meta VALUES ('schema_version', '14');",
            7: base + collections + "INSERT INTO ferry_meta VALUES ('schema_version', '7');",
            8: base + collections + staging + "INSERT INTO ferry_meta VALUES ('schema_version', '8');",
            9: base + collections + staging + digests + "INSERT INTO ferry_meta VALUES ('schema_version', '9');",
            10: base + collections + staging + digests + "ALTER TABLE ferry_stores ADD COLUMN schema_fingerprint INTEGER;\n"
                + "INSERT INTO ferry_meta VALUES ('schema_version', '10');",
            11: base + collections + staging + digests + "ALTER TABLE ferry_stores ADD COLUMN schema_fingerprint INTEGER;\n"
                + "ALTER TABLE ferry_sync_state ADD COLUMN swept_listing INTEGER;\n"
                + "INSERT INTO ferry_meta VALUES ('schema_version', '11');",
            12: base + collections + staging + digests + "ALTER TABLE ferry_stores ADD COLUMN schema_fingerprint INTEGER;\n"
                + "ALTER TABLE ferry_sync_state ADD COLUMN swept_listing INTEGER;\n"
                + """
                ALTER TABLE ferry_outbox ADD COLUMN sent_body TEXT;
                ALTER TABLE ferry_conflicts ADD COLUMN remote_fields TEXT;
                ALTER TABLE ferry_sync_state ADD COLUMN push_error INTEGER;
                CREATE TABLE ferry_pass_claims(
                    store_id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, process_start TEXT NOT NULL, token TEXT NOT NULL,
                    command TEXT NOT NULL, claimed REAL NOT NULL);

                """
                + "INSERT INTO ferry_meta VALUES ('schema_version', '12');",
            13: thirteen + "INSERT INTO ferry_meta VALUES ('schema_version', '13');",
        ]
    }()

    @Test func everyEarlierVersionHasAFrozenSchema() {
        for version in 1..<Migrations.currentVersion {
            #expect(Self.frozenSchemas[version] != nil, "add the released schema \(version) to frozenSchemas")
        }
    }

    /// Builds a file as version `version` of Ferry left it, with a store holding data.
    static func makeFile(version: Int, at path: String) throws {
        let connection = try SQLiteConnection(path: path, mode: .readWriteCreate)
        defer { connection.close() }
        try connection.execute("PRAGMA journal_mode = WAL")
        try connection.execute(try #require(frozenSchemas[version]))
        try connection.execute("""
            CREATE TABLE items(id TEXT PRIMARY KEY NOT NULL, version TEXT NOT NULL, body TEXT NOT NULL, fields TEXT,
                               first_seen REAL NOT NULL, last_synced REAL NOT NULL, deleted INTEGER NOT NULL DEFAULT 0);
            INSERT INTO items VALUES ('a', '1', '{"id":"a"}', NULL, 1700000000, 1700000000, 0);
            INSERT INTO ferry_sync_state(store, cursor, total_inserted) VALUES ('items', 'cursor-7', 1);
            """)
        // Three log entries, the last two pruned, as each version recorded and pruned them.
        if version < 3 {
            try connection.execute("""
                INSERT INTO ferry_changes(store, id, op, time) VALUES ('items', 'a', 'insert', 1700000000);
                INSERT INTO ferry_changes(store, id, op, time) VALUES ('items', 'gone', 'insert', 1700000001);
                INSERT INTO ferry_changes(store, id, op, time) VALUES ('items', 'gone', 'delete', 1700000002);
                DELETE FROM ferry_changes WHERE seq > 1;
                """)
        } else {
            try connection.execute("""
                INSERT INTO ferry_stores(store_id, name) VALUES (1, 'items');
                INSERT INTO ferry_change_log(seq, store_id, id, op, time) VALUES (1, 1, 'a', 1, 1700000000);
                INSERT INTO ferry_meta VALUES ('change_seq_floor', '3');
                """)
        }
    }

    @Test(arguments: 1..<Migrations.currentVersion)
    func migratesFromEarlierVersion(_ version: Int) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        try Self.makeFile(version: version, at: path)

        // Read-only opening never migrates, and says why it refuses.
        expectStoreError(.outdatedSchema(found: version, supported: Migrations.currentVersion)) { try ReplicaDatabase.openReadOnly(path: path) }

        let replica = try ReplicaDatabase(path: path)
        #expect(try Migrations.version(of: replica.connection) == Migrations.currentVersion)
        #expect(try replica.connection.scalarInt("PRAGMA application_id") == Migrations.applicationID)
        // v2's view shows the log with readable times; its column table exists.
        #expect(try replica.connection.scalarText("SELECT time FROM ferry_changes_readable WHERE id = 'a'") == "2023-11-14T22:13:20.000Z")
        #expect(try replica.connection.scalarInt("SELECT count(*) FROM sqlite_schema WHERE name = 'ferry_store_columns'") == 1)
        // Data survives, and the store works as before.
        let state = try #require(try replica.syncState(of: "items"))
        #expect(state.cursor == "cursor-7")
        #expect(state.totalInserted == 1)
        try replica.prepare(StoreDefinition(name: "items", columns: [TypedColumn(name: "ident", type: .text, path: "$.id")]))
        _ = try replica.apply(ChangeBatch(changes: [record("b", version: "1")], cursor: "cursor-8"), to: "items")
        #expect(try replica.rows(of: "items") == ["a": "1", "b": "1"])
        // The log keeps its entries and text view; sequences 2 and 3 were pruned before the
        // migration (AUTOINCREMENT remembered them), so the next one is 4, never 2.
        let log = try replica.changes(after: 0, limit: 10)
        #expect(log.map(\.id) == ["a", "b"])
        #expect(log.map(\.sequence) == [1, 4])
        #expect(log.map(\.operation) == ["insert", "insert"])
        #expect(log.map(\.store) == ["items", "items"])
        #expect(try replica.connection.scalarText("SELECT op || ' ' || store FROM ferry_changes WHERE seq = 4") == "insert items")
        #expect(try replica.integrityCheck() == "ok")
        replica.close()

        // Opening again is a no-op, and read-only now works.
        try ReplicaDatabase(path: path).close()
        let reader = try ReplicaDatabase.openReadOnly(path: path)
        #expect(try reader.syncState(of: "items")?.cursor == "cursor-8")
    }

    /// A push's creates waiting to be read back, as 0.3 kept them (told apart only by their
    /// reason), stop counting as records the replica lacks; records it could not store still do.
    @Test func version13TellsAPushsCreatesFromRecordsNotStored() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        try Self.makeFile(version: 12, at: path)
        let connection = try SQLiteConnection(path: path, mode: .readWrite)
        try connection.execute("""
            INSERT INTO ferry_pending_records(store_id, id, reason, since) VALUES
                (1, 'made-here', 'created by a push; not yet read back by a pull', 1700000000),
                (1, 'bad-one', 'not valid JSON', 1700000000);
            """)
        connection.close()
        let replica = try ReplicaDatabase(path: path)
        defer { replica.close() }
        let state = try #require(try replica.syncState(of: "items"))
        #expect((state.pendingRecords, state.createsToReadBack) == (1, 1))
        #expect(try replica.pendingRecordIDs(of: "items") == ["bad-one", "made-here"], "both are fetched again")
    }

    /// A `dav-account` store's collections, as 0.3 recorded them, become members whatever the
    /// kind, with what the account keeps of each in their attributes; queries written against
    /// `ferry_collections` still read the same columns.
    @Test func version14KeepsTheCollectionsAsMembers() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("replica.db")
        try Self.makeFile(version: 13, at: path)
        let connection = try SQLiteConnection(path: path, mode: .readWrite)
        try connection.execute("""
            INSERT INTO ferry_collections(store, account, url, kind, segment, displayname, color, components, first_seen, last_seen, gone_since)
            VALUES ('me__work', 'me', 'https://dav.example.com/cal/work/', 'caldav', 'work', 'Work', '#ff0000', 'VEVENT,VTODO', 1, 2, NULL),
                   ('me__people', 'me', 'https://dav.example.com/card/people/', 'carddav', 'people', NULL, NULL, NULL, 1, 2, 3);
            """)
        connection.close()
        let replica = try ReplicaDatabase(path: path)
        defer { replica.close() }
        let members = try replica.expandedMembers(of: "me")
        #expect(members == [
            ExpandedMember(store: "me__people", expandingStore: "me", url: "https://dav.example.com/card/people/", kindName: "carddav",
                           attributes: ["segment": "people"], goneSince: Date(timeIntervalSince1970: 3)),
            ExpandedMember(store: "me__work", expandingStore: "me", url: "https://dav.example.com/cal/work/", kindName: "caldav",
                           attributes: ["segment": "work", "displayname": "Work", "color": "#ff0000", "components": "VEVENT,VTODO"]),
        ])
        #expect(members[1].discovered.collection.components == ["VEVENT", "VTODO"] && members[1].discovered.collection.content == .calendar)
        #expect(try Shell.sqlite(path, "SELECT store, account, segment, displayname, components FROM ferry_collections ORDER BY store")
                == ["me__people|me|people||", "me__work|me|work|Work|VEVENT,VTODO"])
    }

    @Test func freshFileIsCurrent() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        #expect(try Migrations.version(of: replica.connection) == Migrations.currentVersion)
        #expect(try replica.connection.scalarText("PRAGMA journal_mode") == "wal")
    }
}
