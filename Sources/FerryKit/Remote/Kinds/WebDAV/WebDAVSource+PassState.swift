import Foundation

/// The states a ``WebDAVSource`` pass moves through, and what it keeps about each request.
/// Internal only so they can live in their own file; nothing outside the source uses them.
extension WebDAVSource {
    /// Where the pass is. Every transition happens on the creating thread's run loop.
    enum Phase {
        case idle
        /// A full pass first asks what the URL is (PROPFIND Depth 0 of its resource type).
        case checking
        /// A sync-collection REPORT is in flight; `round` counts REPORTs in this pass.
        case syncing(round: Int)
        /// The PROPFIND fallback is in flight.
        case listing
        /// The query over the whole collection is in flight.
        case querying
        /// Multigets: `batch` is the oldest batch not yet handed to the sink.
        case fetching(batch: Int)
        /// Plain GETs of members the multigets left out or answered 404 for.
        case recovering
        /// Finished, failed, or cancelled: nothing more reaches the sink.
        case done
    }

    /// Why the pass syncs from an empty token.
    enum Mode {
        case incremental
        case initial
        /// The stored token was refused; everything is listed for reconciliation.
        case resync
        /// The server has no sync-collection.
        case fallback
        /// A filtered calendar: calendar-query lists and fetches what the filter keeps.
        case windowed
    }

    /// What an in-flight request was for.
    enum Purpose {
        case check
        case sync(token: String)
        case propfind
        case query
        /// A filtered calendar's calendar-query.
        case window
        case multiget(batch: Int)
        case get(id: String)

        /// Whether a 2xx answer is a multistatus (parsed as it arrives); every such request is
        /// sent to the collection.
        var expectsMultistatus: Bool {
            if case .get = self { false } else { true }
        }
    }

    /// A request in flight, and then its answer being parsed.
    struct InFlight {
        var purpose: Purpose
        var head: ResponseHead?
        /// A 2xx multistatus, parsed as it arrives.
        var stream: MultistatusStream?
        /// The start of any other answer, for the error message.
        var errorBody = Data()
        /// The transfer has ended (its completion arrived).
        var transferEnded = false
        /// The parser refused the body before the transfer ended: reported once the transfer
        /// ends, because a transfer that then fails (a truncated body) explains the garbage.
        var refusal: SyncError?
        var bytesAfterRefusal = 0
    }
}
