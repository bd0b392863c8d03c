import Foundation
import Synchronization

/// What the transfers of one store cost, added up across its passes: requests, and bytes
/// received and sent (headers included, as the network carried them).
///
/// A pass installs its store's tally on its own thread (``install()``), and every transfer
/// created on that thread adds to it when it ends, whatever the pass does with the answer.
/// Sources and writers need not carry counters through every callback, and a failed or
/// cancelled pass is counted as well as a successful one. Read from any thread.
public final class TransferTally: Sendable {
    public struct Counts: Sendable, Equatable {
        /// Transfers that ended, whatever their outcome.
        public var requests: Int64 = 0
        public var bytesReceived: Int64 = 0
        public var bytesSent: Int64 = 0

        public init(requests: Int64 = 0, bytesReceived: Int64 = 0, bytesSent: Int64 = 0) {
            self.requests = requests
            self.bytesReceived = bytesReceived
            self.bytesSent = bytesSent
        }
    }

    private let counts = Mutex(Counts())
    private static let threadKey = "ferry.transfer-tally"

    public init() {}

    /// The totals so far.
    public var current: Counts { counts.withLock { $0 } }

    func add(received: Int64, sent: Int64) {
        counts.withLock { counts in
            counts.requests += 1
            counts.bytesReceived += max(0, received)
            counts.bytesSent += max(0, sent)
        }
    }

    /// Makes this the tally of transfers created on the current thread from now on.
    public func install() {
        Thread.current.threadDictionary[Self.threadKey] = self
    }

    /// Transfers created on the current thread are no longer counted.
    public static func uninstall() {
        Thread.current.threadDictionary.removeObject(forKey: threadKey)
    }

    /// The tally installed on the current thread, if any.
    static var installed: TransferTally? {
        Thread.current.threadDictionary[threadKey] as? TransferTally
    }
}
