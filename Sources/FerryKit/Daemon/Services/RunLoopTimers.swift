import Foundation

/// A timer on the current run loop that its owner moves with ``fire(after:)``; made once,
/// moved as often as needed.
///
/// A one-shot `Timer` made per use is never freed by swift-corelibs-foundation: with them
/// ferryd was seen refreshing 43 times a second after a few minutes with 5,000 stores (once a
/// second with one moved timer). So this is a repeating timer with a year's interval.
///
/// Made, moved and fired on one thread (the daemon's main thread), which is what makes
/// boxing the non-`Sendable` action sound.
final class MovableTimer {
    private let timer: Timer

    init(tolerance: TimeInterval = 0, _ action: @escaping () -> Void) {
        let box = UncheckedSendableBox(action)
        timer = Timer(fire: .distantFuture, interval: 365 * 86_400, repeats: true) { _ in box.value() }
        timer.tolerance = tolerance
        RunLoop.current.add(timer, forMode: .default)
    }

    /// Fires once, `seconds` from now (at once when not positive).
    func fire(after seconds: TimeInterval) {
        timer.fireDate = Date(timeIntervalSinceNow: seconds)
    }

    /// Fires no more until moved again.
    func park() {
        timer.fireDate = .distantFuture
    }

    /// How late the next firing may be, so the kernel can batch wake-ups.
    var tolerance: TimeInterval {
        get { timer.tolerance }
        set { timer.tolerance = newValue }
    }

    func invalidate() {
        timer.invalidate()
    }
}

/// A timer on the current run loop that fires every `interval`, first after `delay`.
/// Confined to the thread that made it, as ``MovableTimer``.
final class RepeatingTimer {
    private let timer: Timer

    init(every interval: TimeInterval, firstAfter delay: TimeInterval? = nil, tolerance: TimeInterval = 0, _ action: @escaping () -> Void) {
        let box = UncheckedSendableBox(action)
        timer = Timer(fire: Date(timeIntervalSinceNow: delay ?? interval), interval: interval, repeats: true) { _ in box.value() }
        timer.tolerance = tolerance
        RunLoop.current.add(timer, forMode: .default)
    }

    func invalidate() {
        timer.invalidate()
    }
}
