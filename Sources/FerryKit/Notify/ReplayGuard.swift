import Foundation

/// What makes a timestamped notification one of a kind: its signature, and when its timestamp
/// stops being fresh. A request carrying the same signature again before then is a replay:
/// the API signs every delivery (its retries too) with a new timestamp, so only a copy repeats
/// one.
public struct ReplayStamp: Sendable, Equatable {
    /// The signature as sent (with the timestamp it covers), compared byte for byte.
    var signature: [UInt8]
    /// The timestamp plus the tolerance: after it, the verifier refuses the request as stale
    /// and the stamp need not be remembered.
    var expires: Date
}

/// The stamps of the notifications a store accepted, each until it expires, so that a request
/// copied off the wire and sent again within the tolerance is refused rather than taken as a
/// new one. Bounded: past `capacity` live stamps the oldest is forgotten (a replay of it then
/// costs one extra pass, never data, since a notification only triggers a pass).
struct ReplayGuard {
    /// Enough for a store notified a few times a second over a 5-minute tolerance; 32 bytes of
    /// key and an entry each, about 0.5 MB at most.
    static let defaultCapacity = 4096

    let capacity: Int
    private var expiries: [[UInt8]: Date] = [:]
    /// Stamps in the order they were admitted, for pruning and eviction; an entry whose
    /// signature is no longer in `expiries` (or was admitted again later) is skipped.
    private var order: [(signature: [UInt8], expires: Date)] = []
    private var start = 0

    init(capacity: Int = ReplayGuard.defaultCapacity) {
        precondition(capacity > 0, "a replay guard remembers at least one stamp")
        self.capacity = capacity
    }

    /// How many stamps are remembered.
    var count: Int { expiries.count }

    /// Whether `stamp` is new: true (and remembered) when no live stamp has its signature;
    /// false for a replay.
    mutating func admit(_ stamp: ReplayStamp, now: Date) -> Bool {
        prune(now: now)
        if let expires = expiries[stamp.signature], expires >= now { return false }
        expiries[stamp.signature] = stamp.expires
        order.append((stamp.signature, stamp.expires))
        while expiries.count > capacity { evictOldest() }
        return true
    }

    /// Forgets the stamps that expired, from the oldest admitted while they have; one admitted
    /// later with an earlier expiry waits for those before it (the bound holds all the same).
    private mutating func prune(now: Date) {
        while start < order.count, order[start].expires < now {
            forget(order[start])
            start += 1
        }
        compact()
    }

    private mutating func evictOldest() {
        precondition(start < order.count, "every remembered stamp is in the order")
        forget(order[start])
        start += 1
        compact()
    }

    private mutating func forget(_ entry: (signature: [UInt8], expires: Date)) {
        // Only when this entry is the stamp's latest admission.
        if expiries[entry.signature] == entry.expires { expiries[entry.signature] = nil }
    }

    /// Drops the consumed front of `order` once it is half the array, so it stays within
    /// twice the live stamps.
    private mutating func compact() {
        if start > 64, start * 2 > order.count {
            order.removeFirst(start)
            start = 0
        }
    }
}
