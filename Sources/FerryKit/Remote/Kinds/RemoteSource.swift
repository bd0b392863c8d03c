import Foundation
import Logging

/// What a pass asks of its source.
public struct PassPlan: Sendable, Equatable {
    /// The cursor stored by the last committed batch; `nil` for a first (full) sync.
    public var cursor: String?
    /// Also list every remote id so deleted records can be swept (stores that do not report
    /// deletions). DAV sources reconcile on their own after an invalid sync-token.
    public var reconcile: Bool
    /// Ids an earlier pass could not store: fetch them again where the kind can fetch by id.
    public var pendingIDs: [String]
    /// Read everything the pass covers, whatever conditional requests would say (a resync asked
    /// for by a person: SIGHUP, a reload, `ferry sync`).
    public var revalidate: Bool
    /// The remote's own word, read from it just before this pass, on where it stands: a DAV
    /// collection's `DAV:sync-token` as its account's discovery listed it. An incremental pass
    /// whose cursor equals it has nothing to fetch and makes no request. Nil: not known.
    public var currentToken: String?
    /// Digests of the pages as last merged (``PageDigest``), for a pass that may skip the
    /// records of a page that has not changed; empty when every page must be read.
    public var pageDigests: [Int: Int64] = [:]
    /// With `reconcile`: `pageDigests` are those of the listing the last sweep read, and no row
    /// was inserted or deleted since (``ReplicaDatabase/listingAtRest(of:digests:)``). A source
    /// that finds every page as they say, and the chain as long, has listed exactly the live
    /// rows: it may count those pages instead of listing their ids, and say so
    /// (``SourceOutcome/listingUnchanged``). One that finds a page changed lists the ids of
    /// every page, those it counted too.
    public var listingAtRest = false
    /// The pass spools what it fetches into sorted runs (a first sync of an empty table): a
    /// source may hand over smaller batches, which the spool takes as fast, in less memory.
    public var spooled = false

    public init(cursor: String?, reconcile: Bool, pendingIDs: [String] = [], revalidate: Bool = false, currentToken: String? = nil) {
        self.cursor = cursor
        self.reconcile = reconcile
        self.pendingIDs = pendingIDs
        self.revalidate = revalidate
        self.currentToken = currentToken
    }
}

/// How a source ended a pass.
public struct SourceOutcome: Sendable, Equatable {
    /// Whether the ids handed to ``RemoteSourceSink/source(_:didList:)`` are the complete set
    /// of remote ids, so that rows missing from them may be swept. Never true after a
    /// truncated listing (DAV 507, a `DAV:limit` answer, a page that failed).
    public var listingComplete: Bool
    /// Requests made during the pass, for logs and STATUS.
    public var requests: Int
    /// Whether the remote said nothing changed (a 304, an unchanged sync-token).
    public var unchanged: Bool
    /// What the source knows it left out (a failed listing, pagination that ended early).
    public var gaps: [ReplicaGap]
    /// A complete listing whose every page was as ``PassPlan/listingAtRest`` vouched, so no id
    /// was listed: the sweep has nothing to delete.
    public var listingUnchanged: Bool

    public init(listingComplete: Bool = false, requests: Int = 0, unchanged: Bool = false, gaps: [ReplicaGap] = [],
                listingUnchanged: Bool = false) {
        self.listingComplete = listingComplete
        self.requests = requests
        self.unchanged = unchanged
        self.gaps = gaps
        self.listingUnchanged = listingUnchanged
    }
}

/// Receives a source's output on the pass's run loop.
///
/// The sink merges each batch synchronously, inside the call. A source pipelines by starting
/// its next request *before* handing over the current batch: libcurl fetches page N+1 on the
/// I/O thread while page N is merged. When a sink method throws, the pass has failed: the
/// source must cancel its requests and call nothing more.
public protocol RemoteSourceSink: AnyObject {
    func source(_ source: any RemoteSource, didProduce batch: ChangeBatch) throws
    /// Ids present on the remote, in any order and any number of calls (reconciliation).
    func source(_ source: any RemoteSource, didList ids: [String]) throws
    /// The listing moved under the source, which reads it again from its start: ids listed so
    /// far may include records gone since, and only the new listing's say what is there.
    func sourceRestartsListing(_ source: any RemoteSource) throws
    /// The source is done; nothing follows.
    func source(_ source: any RemoteSource, didFinishWith outcome: SourceOutcome)
    /// The pass failed; nothing follows. Nothing of an unfinished page was handed over.
    func source(_ source: any RemoteSource, didFailWith error: SyncError)
}

extension RemoteSourceSink {
    /// A sink that keeps no listing has nothing to forget.
    public func sourceRestartsListing(_ source: any RemoteSource) throws {}
}

/// One remote-store protocol, driving one pass on the run loop of the thread that created it.
///
/// Create it on the pass operation's thread: it creates its ``RemoteSession`` there, so every
/// callback (and every sink call) runs on that loop. No blocking I/O anywhere.
public protocol RemoteSource: AnyObject {
    /// Begins the pass. Calls to `sink` follow on the current run loop, never inside `start`.
    func start(_ plan: PassPlan, sink: any RemoteSourceSink)
    /// Stops every request; no sink call happens after this returns.
    func cancel()
}

/// Everything a source kind needs to be built.
public struct RemoteSourceContext {
    public var store: StoreConfiguration
    public var logger: Logger

    public init(store: StoreConfiguration, logger: Logger) {
        self.store = store
        self.logger = logger
    }
}
