import Foundation

/// Why a pass runs; the scheduler orders waiting passes by it before store priority.
public enum PassTrigger: String, Sendable, Comparable {
    /// A first sync of a large store, run below everything else.
    case backfill
    /// The store's interval elapsed.
    case scheduled
    /// The remote said something changed (a verified change notification).
    case notified = "notification"
    /// Someone asked: `ferry sync`, SIGHUP, a reload.
    case onDemand = "on-demand"

    private var rank: Int {
        switch self {
        case .backfill: 0
        case .scheduled: 1
        case .notified: 2
        case .onDemand: 3
        }
    }

    public static func < (lhs: PassTrigger, rhs: PassTrigger) -> Bool { lhs.rank < rhs.rank }
}

/// What one completed pass did.
public struct PassReport: Sendable, Equatable {
    public var store: String
    /// Increasing per process, for `FERRY_PASS` in the journal.
    public var pass: Int
    public var trigger: PassTrigger
    public var counts: MergeCounts
    public var pages: Int
    /// Pages whose records were not read: the same bytes as when last merged (``PageDigest``).
    public var pagesUnchanged = 0
    public var requests: Int
    /// The remote said nothing changed (304, same sync-token).
    public var unchanged: Bool
    /// Set when the pass swept deleted records, or refused to.
    public var reconciliation: ReconcileOutcome?
    /// The sweep found every page as the last sweep listed it, and listed no id
    /// (``SourceOutcome/listingUnchanged``).
    public var listingUnchanged = false
    public var duration: Duration
    /// Live rows in the store's table after the pass.
    public var recordCount: Int
    /// Whether this pass started without a cursor (a full sync).
    public var wasFullSync: Bool
    /// How the replica still differs from the remote after the pass; empty when it does not.
    public var gaps: [ReplicaGap] = []
    /// What the pass pushed before it pulled (push stores).
    public var push = PushCounts()
    /// Local changes still queued when the pass ended (written while it ran).
    public var localQueued = 0
    /// Whether the pass pulled after pushing (`ferry push` does not).
    public var pulled = true
    /// For a `dav-account` store's pass (discovery): the collections it syncs now.
    public var collections: Int?
    /// For a `dav-account` store's pass: each collection's `DAV:sync-token` as discovery listed
    /// it, by store name, so the collections' passes right after can skip what did not change.
    public var collectionTokens: [String: String] = [:]

    /// Whether the replica matches the remote as far as Ferry knows.
    public var isComplete: Bool { gaps.isEmpty }

    public init(store: String, pass: Int, trigger: PassTrigger) {
        self.store = store
        self.pass = pass
        self.trigger = trigger
        self.counts = MergeCounts()
        self.pages = 0
        self.requests = 0
        self.unchanged = false
        self.reconciliation = nil
        self.duration = .zero
        self.recordCount = 0
        self.wasFullSync = false
    }

    /// One line for logs and `ferry sync` output.
    public var summary: String {
        var parts = ["\(counts.inserted) inserted", "\(counts.updated) updated", "\(counts.deleted) deleted"]
        if counts.skipped > 0 { parts.append("\(counts.skipped) skipped") }
        if unchanged { parts = ["unchanged"] }
        if counts.conflicts > 0 { parts.append("\(counts.conflicts) conflict\(counts.conflicts == 1 ? "" : "s")") }
        if !push.isEmpty { parts.insert(push.summary, at: 0) }
        var text = "store \(store): " + parts.joined(separator: ", ")
        text += "; " + Self.counted(recordCount, "record") + ", " + Self.counted(pages, "page") + (pagesUnchanged > 0 ? " (\(pagesUnchanged) unchanged)" : "")
            + " in \(String(format: "%.2f", duration.seconds)) s"
        if !pulled {
            text = "store \(store): \(push.isEmpty ? "nothing to push" : push.summary) in \(String(format: "%.2f", duration.seconds)) s"
        }
        if let collections {
            text = "store \(store): " + Self.counted(collections, "collection") + ", " + Self.counted(requests, "request")
                + " in \(String(format: "%.2f", duration.seconds)) s"
        }
        if let gaps = ReplicaGap.summary(gaps) {
            text += "; INCOMPLETE: " + gaps
        }
        return text
    }

    /// `1 record`, `2 records`.
    static func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}

/// What a pass's push did.
public struct PushCounts: Sendable, Equatable {
    /// Local changes the remote accepted.
    public var pushed = 0
    /// Local changes that met a remote change (whatever the policy made of them).
    public var conflicts = 0
    /// Local changes the remote refused (kept queued as refused).
    public var refused = 0
    public var requests = 0

    public init() {}

    public var isEmpty: Bool { pushed == 0 && conflicts == 0 && refused == 0 }

    public var summary: String {
        var parts = ["pushed \(pushed)"]
        if conflicts > 0 { parts.append("\(conflicts) push conflict\(conflicts == 1 ? "" : "s")") }
        if refused > 0 { parts.append("\(refused) refused") }
        return parts.joined(separator: ", ")
    }
}

extension Duration {
    /// The duration in (fractional) seconds.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
