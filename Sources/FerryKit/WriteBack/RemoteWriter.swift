import Foundation

/// One queued local change of a push store, as read from `ferry_outbox` with the row's body.
public struct LocalChange: Sendable, Equatable {
    public typealias Operation = LocalOperation

    /// The row's id: the remote's, or a local placeholder (`local-…`) for a create whose id the
    /// remote assigns.
    public var id: String
    public var operation: Operation
    /// The remote version the change was made on (nil for a create).
    public var baseVersion: String?
    /// The body at that version (nil for a create; for a create that was sent, what was sent).
    public var baseBody: String?
    /// The row's body now: what to send. Nil for a delete, and for a create whose row was
    /// deleted after it was sent.
    public var body: String?
    /// Local writes folded into the entry so far: a push only dequeues the entry when no
    /// newer local write arrived while it was in flight.
    public var generation: Int64
    /// When a create or an update was sent without its answer being recorded (a crash in
    /// between).
    public var sent: Date?
    /// The remote version an update that was sent had been computed against; for a create, the
    /// id it named the record with when the client chooses ids (a Parse objectId, a DAV member).
    public var sentVersion: String?
    /// What the last send of an update held (the row's body then), recorded before it went out
    /// and kept when the record is edited or deleted again: a remote that holds it later holds
    /// that send, landed with its answer lost, and is no conflict.
    public var sentBody: String?
    /// A create sent before: a pull since listed what it named (``sentVersion``) as removed.
    /// It landed, its answer lost, and another client deleted it: a conflict, not a create to
    /// send again.
    public var removedSinceSent = false
    /// A create or update sent before: a pull has succeeded since the send, so what it read of
    /// the remote's changes covers that send (a removal of what the send made among them).
    public var pulledSinceSent = false

    public init(id: String, operation: Operation, baseVersion: String? = nil, baseBody: String? = nil, body: String?,
                generation: Int64 = 1, sent: Date? = nil) {
        self.id = id
        self.operation = operation
        self.baseVersion = baseVersion
        self.baseBody = baseBody
        self.body = body
        self.generation = generation
        self.sent = sent
    }

    /// How long after a send whose answer was lost its write may still land on the server (a
    /// request the server was still handling when the client died): until then, not finding
    /// it there proves nothing.
    /// `FERRY_SEND_SETTLE_SECONDS` sets it (the two-way tests settle rounds in seconds).
    public static let sendSettle: TimeInterval = ProcessInfo.processInfo.environment["FERRY_SEND_SETTLE_SECONDS"]
        .flatMap(TimeInterval.init).map { max(0, $0) } ?? 30

    /// Whether an earlier send of this change may still be at work on the server.
    public func sendMayStillLand(now: Date = Date()) -> Bool {
        guard let sent else { return false }
        return now.timeIntervalSince(sent) < Self.sendSettle
    }

    /// Whether the id is a placeholder the remote has never seen.
    public var hasLocalID: Bool { id.hasPrefix("local-") }
}

/// An update about to be sent: recorded durably first (``RemoteWriterSink/writer(_:willSendUpdates:)``).
public struct UpdateSend: Sendable {
    public var change: LocalChange
    /// The remote version the update was computed against.
    public var remoteVersion: String
    /// The row's body the update carries.
    public var body: String

    public init(_ change: LocalChange, on remoteVersion: String, body: String) {
        self.change = change
        self.remoteVersion = remoteVersion
        self.body = body
    }
}

/// What the remote made of one local change.
public enum PushResult: Sendable, Equatable {
    /// The remote took it. For a create or an update: the record as the remote now holds it
    /// (its id, which replaces a local placeholder, its new version, its body); nil after a
    /// delete.
    case accepted(RemoteRecord?)
    /// The remote took an earlier send of the change (a create replayed by its idempotency
    /// key or its own objectId), and the row changed since: the entry takes the record's id and
    /// is pushed next as an update (as a delete, when the row was deleted), based on `sent`
    /// (what that earlier send held, so a remote change since it is merged or found as a
    /// conflict) or, when nil, on what the remote holds.
    case acceptedEarlierSend(RemoteRecord, sent: String?)
    /// The remote changed since the change's base version: the remote's record now (nil: the
    /// remote deleted it). The store's ``ConflictPolicy`` decides what follows.
    case conflict(remote: RemoteRecord?)
    /// The remote refused the change itself (a 403, a validation error): it stays queued as
    /// refused with this reason, and the other changes go on.
    case refused(String)
}

/// Receives a writer's results on the pass's run loop; each call commits on its own.
public protocol RemoteWriterSink: AnyObject {
    /// Called before a create is sent: recorded durably first, so that after a crash between
    /// the remote's acceptance and the local commit the next push looks the record up instead
    /// of creating it twice. False: the create is no longer queued (its row was deleted since
    /// the push read the queue), so it must not be sent.
    func writer(_ writer: any RemoteWriter, willSendCreate change: LocalChange, body: String, remoteID: String?) throws -> Bool
    /// Called before updates are sent, each with the remote version it was computed against and
    /// the body it carries (recorded durably, in one transaction): after a lost answer the next
    /// push tells the remote holding this send from another writer's change.
    func writer(_ writer: any RemoteWriter, willSendUpdates sends: [UpdateSend]) throws
    /// What the remote made of these changes, recorded in one transaction.
    func writer(_ writer: any RemoteWriter, didPush results: [(change: LocalChange, result: PushResult)]) throws
    /// Every change was answered; nothing follows.
    func writer(_ writer: any RemoteWriter, didFinishWithRequests requests: Int)
    /// The push stopped (the network, the server, the credentials): the unanswered changes
    /// stay queued and the pass fails as a pull would, with the same backoff.
    func writer(_ writer: any RemoteWriter, didFailWith error: SyncError)
}

/// Pushes one store's queued local changes, on the run loop of the thread that created it,
/// like a ``RemoteSource``.
public protocol RemoteWriter: AnyObject {
    /// Begins pushing `changes` in order. Sink calls follow on the current run loop, never
    /// inside `start`.
    func start(_ changes: [LocalChange], sink: any RemoteWriterSink)
    /// Stops every request; no sink call happens after this returns.
    func cancel()
}
