import Foundation

/// Why a pass runs; the scheduler orders waiting passes by it before store priority.
public enum PassTrigger: String, Sendable, Comparable {
    /// A first sync of a large store, run below everything else.
    case backfill
    /// The store's interval elapsed.
    case scheduled
    /// Someone asked: `ferry sync`, SIGHUP, a reload.
    case onDemand = "on-demand"

    private var rank: Int {
        switch self {
        case .backfill: 0
        case .scheduled: 1
        case .onDemand: 2
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
    public var requests: Int
    /// The remote said nothing changed (304, same sync-token).
    public var unchanged: Bool
    /// Set when the pass swept deleted records, or refused to.
    public var reconciliation: ReconcileOutcome?
    public var duration: Duration
    /// Live rows in the store's table after the pass.
    public var recordCount: Int
    /// Whether this pass started without a cursor (a full sync).
    public var wasFullSync: Bool
    /// How the replica still differs from the remote after the pass; empty when it does not.
    public var gaps: [ReplicaGap] = []

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
        var text = "store \(store): " + parts.joined(separator: ", ")
        text += "; \(recordCount) records, \(pages) pages in \(String(format: "%.2f", duration.seconds)) s"
        if let gaps = ReplicaGap.summary(gaps) {
            text += "; INCOMPLETE: " + gaps
        }
        return text
    }
}

extension Duration {
    /// The duration in (fractional) seconds.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
