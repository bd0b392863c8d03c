import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// OutboxFold's tables read as the spec, then held against what SQLite does: the push's
/// generated `CASE`s for every input, and the triggers on a real replica for every sequence of
/// local writes and sends of one record, up to six steps long.
@Suite("The outbox folds as its tables say")
struct OutboxFoldTests {
    // MARK: - The tables

    @Test(arguments: [
        (LocalOperation.create, LocalOperation?.none, false, false, LocalOperation?.some(.create)),
        (.create, .delete, false, false, .update),
        (.update, nil, false, true, .update),
        (.update, .create, false, false, .create),
        (.delete, nil, false, true, .delete),
        (.delete, nil, false, false, nil),
        (.delete, .create, false, false, nil),
        (.delete, .create, true, false, .create),
        (.delete, .update, false, true, .delete),
    ] as [(LocalOperation, LocalOperation?, Bool, Bool, LocalOperation?)])
    func aLocalWriteFoldsIntoTheQueuedEntry(_ write: LocalOperation, _ queued: LocalOperation?, _ sent: Bool, _ synced: Bool, _ expected: LocalOperation?) {
        #expect(OutboxFold.afterLocalWrite(write, queued: queued, sent: sent, synced: synced) == expected)
    }

    @Test func anAcceptedSendTakesTheEntryOffUnlessANewerWriteHasSomethingToPush() {
        #expect(!OutboxFold.staysAfterAcceptedSend(newerLocalWrite: false, remoteHasRecord: true, rowExists: true))
        #expect(!OutboxFold.staysAfterAcceptedSend(newerLocalWrite: true, remoteHasRecord: false, rowExists: false),
                "a delete accepted, its row still gone: nothing is left")
        #expect(OutboxFold.staysAfterAcceptedSend(newerLocalWrite: true, remoteHasRecord: true, rowExists: false))
        #expect(OutboxFold.staysAfterAcceptedSend(newerLocalWrite: true, remoteHasRecord: false, rowExists: true))
    }

    @Test func anAcceptedSendAndALocalWinRebaseTheEntry() {
        #expect(OutboxFold.afterAcceptedSend(queued: .update, sent: .update, rowExists: false) == .delete)
        #expect(OutboxFold.afterAcceptedSend(queued: .update, sent: .delete, rowExists: true) == .create)
        #expect(OutboxFold.afterAcceptedSend(queued: .create, sent: .create, rowExists: true) == .update)
        #expect(OutboxFold.afterAcceptedSend(queued: .delete, sent: .update, rowExists: true) == .delete)
        #expect(OutboxFold.afterLocalWin(queued: .update, remoteExists: false) == .create)
        #expect(OutboxFold.afterLocalWin(queued: .create, remoteExists: true) == .update)
        #expect(OutboxFold.afterLocalWin(queued: .delete, remoteExists: true) == .delete)
    }

    // MARK: - The push's SQL, for every input

    @Test func theGeneratedCasesAnswerAsTheTablesForEveryInput() throws {
        let connection = try SQLiteConnection(path: ":memory:", mode: .readWriteCreate)
        defer { connection.close() }
        let accepted = OutboxFold.sql(OutboxFold.queuedOperation, OutboxFold.operation("?2"), OutboxFold.truth("?3 <> 0")) {
            OutboxFold.afterAcceptedSend(queued: $0, sent: $1, rowExists: $2)
        }
        let won = OutboxFold.sql(OutboxFold.queuedOperation, OutboxFold.truth("?2 IS NOT NULL")) {
            OutboxFold.afterLocalWin(queued: $0, remoteExists: $1)
        }
        let acceptedStatement = try connection.prepare("SELECT \(accepted) FROM (SELECT ?1 AS op)")
        let wonStatement = try connection.prepare("SELECT \(won) FROM (SELECT ?1 AS op)")
        var checked = 0
        for queued in LocalOperation.allCases {
            for sent in LocalOperation.allCases {
                for rowExists in [false, true] {
                    acceptedStatement.reset()
                    try acceptedStatement.bind(queued.rawValue, at: 1)
                    try acceptedStatement.bind(sent.rawValue, at: 2)
                    try acceptedStatement.bind(rowExists ? Int64(1) : 0, at: 3)
                    #expect(try acceptedStatement.step())
                    #expect(acceptedStatement.int64(at: 0) == OutboxFold.afterAcceptedSend(queued: queued, sent: sent, rowExists: rowExists).rawValue,
                            "accepted send: queued \(queued), sent \(sent), row exists \(rowExists)")
                    checked += 1
                }
            }
            for remoteExists in [false, true] {
                wonStatement.reset()
                try wonStatement.bind(queued.rawValue, at: 1)
                try wonStatement.bind(remoteExists ? "v" : nil, at: 2)
                #expect(try wonStatement.step())
                #expect(wonStatement.int64(at: 0) == OutboxFold.afterLocalWin(queued: queued, remoteExists: remoteExists).rawValue,
                        "local win: queued \(queued), remote exists \(remoteExists)")
                checked += 1
            }
        }
        #expect(checked == 24)
    }

    // MARK: - The triggers, for every sequence

    /// One record as the model sees it: whether its row is there and has a remote version,
    /// and the entry queued for it.
    struct Model: Equatable, CustomStringConvertible {
        var row: Bool
        var synced: Bool
        var entry: (operation: LocalOperation, sent: Bool)?

        static func == (a: Model, b: Model) -> Bool {
            a.row == b.row && a.entry?.operation == b.entry?.operation && a.entry?.sent == b.entry?.sent
        }

        var description: String {
            "row \(row ? (synced ? "synced" : "local") : "gone"), entry " + (entry.map { "\($0.operation)\($0.sent ? " sent" : "")" } ?? "none")
        }
    }

    enum Step: CaseIterable {
        case insert, update, delete, send

        /// Whether the step can happen in `model` (a row to update, an entry to send).
        func applies(to model: Model) -> Bool {
            switch self {
            case .insert: !model.row
            case .update, .delete: model.row
            case .send: model.entry.map { !$0.sent } ?? false
            }
        }

        /// The model after the step, by OutboxFold's table. A delete that ends the entry
        /// leaves none, and then the delete of a synced row is queued as with none before.
        func apply(to model: Model) -> Model {
            var next = model
            let queued = model.entry
            switch self {
            case .insert:
                next.row = true
                next.synced = false
                next.entry = OutboxFold.afterLocalWrite(.create, queued: queued?.operation, sent: queued?.sent ?? false, synced: false)
                    .map { ($0, queued?.sent ?? false) }
            case .update:
                next.entry = OutboxFold.afterLocalWrite(.update, queued: queued?.operation, sent: queued?.sent ?? false, synced: model.synced)
                    .map { ($0, queued?.sent ?? false) }
            case .delete:
                next.row = false
                next.entry = queued.flatMap { queued in
                    OutboxFold.afterLocalWrite(.delete, queued: queued.operation, sent: queued.sent, synced: model.synced).map { ($0, queued.sent) }
                }
                if next.entry == nil {
                    next.entry = OutboxFold.afterLocalWrite(.delete, queued: nil, sent: false, synced: model.synced).map { ($0, false) }
                }
            case .send:
                next.entry?.sent = true
            }
            return next
        }
    }

    @Test func theTriggersFoldEverySequenceOfWritesAsTheTableSays() throws {
        let directory = try TemporaryDirectory()
        let replica = try ReplicaDatabase(path: directory.path("replica.db"))
        defer { replica.close() }
        try replica.prepare(LocalWriteCaptureTests.pushing)
        let other = try LocalWriteCaptureTests.client(directory)
        defer { other.close() }
        var bodies = 0

        func reset(to start: Model) throws {
            // Ferry's own connection runs with triggers off: this queues nothing.
            try replica.connection.execute("DELETE FROM ferry_outbox")
            try replica.connection.execute("DELETE FROM quotes")
            if start.row { try replica.connection.execute(#"INSERT INTO quotes(id, version, body) VALUES ('r', '1', '{"v":0}')"#) }
        }
        func perform(_ step: Step) throws {
            bodies += 1
            switch step {
            case .insert: try other.execute(#"INSERT INTO quotes(id, body) VALUES ('r', '{"v":\#(bodies)}')"#)
            case .update: try other.execute(#"UPDATE quotes SET body = '{"v":\#(bodies)}' WHERE id = 'r'"#)
            case .delete: try other.execute("DELETE FROM quotes WHERE id = 'r'")
            case .send: try replica.connection.execute("UPDATE ferry_outbox SET sent = 1 WHERE id = 'r'")
            }
        }
        func observed() throws -> Model {
            let row = try replica.connection.textRows("SELECT version FROM quotes WHERE id = 'r'")
            let entry = try replica.connection.textRows("SELECT op || ' ' || (sent IS NOT NULL) FROM ferry_outbox WHERE id = 'r'")
            #expect(entry.count <= 1)
            let parts = entry.first?.split(separator: " ").compactMap { Int64($0) }
            return Model(row: !row.isEmpty, synced: row.first.map { !$0.isEmpty } ?? false,
                         entry: parts.flatMap { parts in LocalOperation(rawValue: parts[0]).map { ($0, parts[1] != 0) } })
        }

        var sequences = 0
        var failures = 0
        func explore(_ model: Model, start: Model, path: [Step]) throws {
            guard path.count < 6, failures < 5 else { return }
            for step in Step.allCases where step.applies(to: model) {
                let steps = path + [step]
                try reset(to: start)
                for earlier in steps { try perform(earlier) }
                let expected = step.apply(to: model)
                let actual = try observed()
                sequences += 1
                if actual != expected {
                    failures += 1
                    Issue.record("from \(start), after \(steps): the replica has \(actual), the table says \(expected)")
                    continue
                }
                try explore(expected, start: start, path: steps)
            }
        }
        for start in [Model(row: true, synced: true, entry: nil), Model(row: false, synced: false, entry: nil)] {
            try explore(start, start: start, path: [])
        }
        #expect(sequences > 200, "\(sequences) sequences")
    }
}
