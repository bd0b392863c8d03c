/// When a refresh that somebody asks for happens: at once, or once ``gap`` has passed since
/// the last one, with at most one refresh waiting. A refresh reads every store (STATUS=, the
/// schedule for `ferry status`, heartbeats), and 5,000 stores end about 80 passes a second:
/// refreshing after each would make every pass cost as many stores. STATUS= counts in whole
/// seconds anyway.
///
/// | last refresh | one waiting | asked | does |
/// |---|---|---|---|
/// | `gap` or more ago | no | yes | refresh now |
/// | less than `gap` ago | no | yes | refresh at last + `gap` |
/// | any | yes | yes | nothing (the waiting one will do) |
struct RefreshPacing {
    enum Decision: Equatable {
        case now
        case at(ContinuousClock.Instant)
        case alreadyWaiting
    }

    let gap: Duration
    private(set) var lastRefresh: ContinuousClock.Instant?
    private(set) var waiting = false

    init(gap: Duration) {
        self.gap = gap
    }

    /// Somebody wants a refresh; a `.at` decision counts as waiting until ``refreshed(at:)``.
    mutating func ask(now: ContinuousClock.Instant) -> Decision {
        guard !waiting else { return .alreadyWaiting }
        guard let lastRefresh, lastRefresh + gap > now else { return .now }
        waiting = true
        return .at(lastRefresh + gap)
    }

    /// A refresh happened, asked for or not (a timer's, a failure's at once).
    mutating func refreshed(at now: ContinuousClock.Instant) {
        lastRefresh = now
        waiting = false
    }
}
