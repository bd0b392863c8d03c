import Foundation
import Logging

/// A `dav-account` store's own pass: discovery, then the replica brought in line with what it
/// found. The collections' records are synced by their own passes (each collection is a store,
/// ``DAVAccountOptions/collectionStore(of:_:)``); this pass decides which collections there are.
///
/// 1. **Discover** the account (``DAVDiscovery``) and **choose** its collections
///    (``CollectionSelection``): a choice that cannot be made (too many, two collections on
///    one table) fails the pass and changes nothing.
/// 2. **Prepare** the table of every collection chosen, so it exists (empty, never synced)
///    before its first pass, and **record** them in `ferry_collections`.
/// 3. **Let go** of collections synced before and not now. One the server still lists, which
///    the account's filter leaves out, is emptied and dropped (the person chose that). One the
///    server no longer lists is swept like records a listing no longer names: refused by
///    `max-delete-share` (all of its rows would go), it stays, marked gone, and the pass is
///    incomplete until the share allows it or the collection comes back. Local writes not yet
///    pushed always stay. Other collections are never touched.
/// 4. **Rebuild** the view named after the account over the collections it syncs.
public final class AccountPassOperation: RunLoopOperation<PassReport, SyncError>, @unchecked Sendable {
    public struct Setup: Sendable {
        public var store: StoreConfiguration
        public var database: SharedDatabase
        public var trigger: PassTrigger
        public var pass: Int
        public var logger: Logger
        /// The names of every other configured store: no collection's table may take one.
        public var otherStores: Set<String>

        public init(store: StoreConfiguration, database: SharedDatabase, trigger: PassTrigger, pass: Int, logger: Logger, otherStores: Set<String>) {
            self.store = store
            self.database = database
            self.trigger = trigger
            self.pass = pass
            self.logger = logger
            self.otherStores = otherStores
        }
    }

    private enum State {
        case idle
        case discovering(DAVDiscovery)
        case done
    }

    public let setup: Setup
    private let options: DAVAccountOptions
    private let journal: PassJournal
    // Touched only on the operation's thread.
    private var state = State.idle
    private let started = ContinuousClock.now

    public init(_ setup: Setup) {
        guard let options = setup.store.options.as(DAVAccountOptions.self) else {
            preconditionFailure("AccountPassOperation for \(setup.store.kind) store \(setup.store.name)")
        }
        self.setup = setup
        self.options = options
        journal = PassJournal(logger: setup.logger, store: setup.store.name, pass: setup.pass)
        super.init(cancelled: .failure(SyncError(.cancelled, store: setup.store.name, message: "pass cancelled before it started")))
        name = "pass \(setup.store.name)"
        queuePriority = SyncPassOperation.queuePriority(trigger: setup.trigger, store: setup.store.priority)
    }

    public override func run() {
        let store = setup.store
        do {
            try setup.database.write { database throws(StoreError) in
                try database.registerExpandingStore(store.name)
                try database.recordAttempt(of: store.name, at: Date())
            }
        } catch {
            return end(.failure(SyncError(error, store: store.name)))
        }
        let discovery = DAVDiscovery(store: store, authentication: options.authentication, contents: options.contents, logger: setup.logger)
        state = .discovering(discovery)
        discovery.start { [self] result in
            guard case .discovering = state else { return }
            switch result {
            case .success(let account): settle(account, requests: discovery.requests)
            case .failure(let error): end(.failure(error))
            }
        }
    }

    public override func cancelRun() {
        if case .discovering(let discovery) = state { discovery.cancel() }
        end(.failure(SyncError(.cancelled, store: setup.store.name, message: "pass cancelled")))
    }

    /// Steps 2 to 4, on what discovery found.
    private func settle(_ account: DAVAccount, requests: Int) {
        let store = setup.store
        let chosen: [ChosenCollection]
        let known: [ExpandedMember]
        do {
            known = try setup.database.write { database throws(StoreError) in try database.expandedMembers(of: store.name) }
        } catch {
            return end(.failure(SyncError(error, store: store.name)))
        }
        // A collection synced before keeps its table, whatever else the account now holds.
        let tables = ExpandedMember.tables(byURL: known)
        switch options.selection.choose(from: account.collections, account: store.name, otherStores: setup.otherStores, known: tables) {
        case .success(let value): chosen = value
        case .failure(let problem):
            return end(.failure(SyncError(.configuration, store: store.name, url: account.contextURL, message: problem.description)))
        }
        let listed = Set(account.collections.map(\.url))
        var report = PassReport(store: store.name, pass: setup.pass, trigger: setup.trigger)
        report.requests = requests
        report.recordCount = chosen.count
        report.collections = chosen.count
        for item in chosen { report.collectionTokens[item.table] = item.collection.syncToken }
        report.wasFullSync = true
        do {
            let gaps = try setup.database.write { database throws(StoreError) -> [ReplicaGap] in
                let synced = Set(known.filter { $0.goneSince == nil }.map(\.store))
                // New collections only: a known one's table exists, and its own pass prepares it.
                for item in chosen where !synced.contains(item.table) {
                    try database.prepare(StoreDefinition(options.collectionStore(of: store, item)))
                    database.release(item.table)
                }
                let now = Date()
                try database.recordMembers(chosen.map { $0.member(of: store.name) }, of: store.name, at: now)
                // Synced before and not now, and kept by earlier passes and still not synced:
                // tried again, so a raised max-delete-share or a push that went through lets
                // them go.
                let tables = Set(chosen.map(\.table))
                var gaps: [ReplicaGap] = []
                for collection in known where !tables.contains(collection.store) {
                    // Left out by the person's choice: still listed, or of a content discovery
                    // no longer looks for (its home set was not even listed).
                    let content = collection.discovered.collection.content
                    let filteredOut = listed.contains(collection.url) || !options.selection.contents.contains(content)
                    if let gap = try letGo(collection, filteredOut: filteredOut, in: database, at: now) { gaps.append(gap) }
                }
                try database.rebuildMembersView(store.name, columns: store.columns)
                try database.recordSuccess(of: store.name, at: now, counts: MergeCounts(), gaps: gaps)
                return gaps
            }
            report.gaps = gaps
            end(.success(report))
        } catch {
            end(.failure(SyncError(error, store: store.name)))
        }
    }

    /// Step 3 for one collection: sweeps its rows (all of them, as a listing that names none),
    /// then drops it when nothing is left; a gap when rows stay.
    private func letGo(_ collection: ExpandedMember, filteredOut: Bool, in database: ReplicaDatabase, at date: Date) throws(StoreError) -> ReplicaGap? {
        let collectionStore = options.collectionStore(of: setup.store, collection.discovered)
        try database.prepare(StoreDefinition(collectionStore))
        defer { database.release(collection.store) }
        try database.beginReconciliation(of: collection.store)
        // Filtered out on purpose: every row goes. Gone from the server: only as far as the
        // account's max-delete-share lets a sweep go.
        let share = filteredOut ? 1.0 : setup.store.maxDeleteShare
        let outcome = try database.finishReconciliation(of: collection.store, maxDeleteShare: share)
        if try database.forgetMember(collection.store) {
            setup.logger.notice("store \(setup.store.name): no longer syncs \(collection.url) (\(filteredOut ? "left out by its collections, content or components" : "gone from the server")); table \(collection.store) dropped",
                                metadata: ["store": "\(setup.store.name)"])
            return nil
        }
        try database.markMemberGone(collection.store, at: date)
        let rows = try database.liveRecordCount(of: collection.store)
        guard rows > 0 else { return nil }
        let reason: String = switch outcome {
        case .refused(_, let total):
            "deleting all \(total) is more than max-delete-share \(Int(setup.store.maxDeleteShare * 100))%; raise it to 1 to let them go"
        case .swept:
            "local writes of it are not pushed"
        }
        return .collectionKept(store: collection.store, url: collection.url, rows: rows, reason: reason)
    }

    private func end(_ result: Result<PassReport, SyncError>) {
        if case .done = state { return }
        state = .done
        var result = result.mapError { $0.redacting(setup.store.secrets) }
        if case .failure = result {
            let store = setup.store.name
            setup.database.write { database in result = result.mapError { database.recordingFailure($0, of: store) } }
        }
        if case .success(var report) = result {
            report.duration = .now - started
            result = .success(report)
        }
        journal.ended(result, afterPages: 0)
        finish(result)
    }
}
