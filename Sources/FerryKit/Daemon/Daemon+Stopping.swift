import Foundation
import Logging

/// Signals, and the ways the daemon stops: SIGTERM or SIGINT drains running passes (a second
/// one stops waiting), and a replica that fails its background integrity check stops it
/// as it would have refused to start.
extension Daemon {
    func installSignalHandlers() {
        signalWaiter = SignalWaiter([SIGHUP, SIGTERM, SIGINT]) { [weak self] signalNumber in
            RunLoopHandle.main.perform { [weak self] in self?.handle(signal: signalNumber) }
        }
    }

    func handle(signal signalNumber: Int32) {
        switch (signalNumber, state) {
        case (SIGHUP, .running(let scheduler)):
            reload(scheduler)
        case (SIGTERM, .running(let scheduler)), (SIGINT, .running(let scheduler)):
            stop(scheduler, signalName: signalNumber == SIGTERM ? "SIGTERM" : "SIGINT")
        case (SIGTERM, .stopping(let exitCode)), (SIGINT, .stopping(let exitCode)):
            // A second signal: stop waiting for passes; SQLite rolls back what is open. The exit
            // code stays the one the stop chose: a damaged replica is not made a clean exit by
            // an impatient admin.
            logger.notice("second stop signal: exiting without waiting")
            finishStopping(drained: false, exitCode: exitCode)
        default:
            break
        }
    }

    /// Checks every page of a replica too large to check before READY, on a thread and a
    /// read-only connection of its own; a damaged replica stops the daemon as it would have
    /// refused to start, so nothing more is written into it.
    func startIntegrityCheck() {
        logger.info("checking the replica's integrity in the background (quick_check of \(database.path))")
        let started = ContinuousClock.now
        database.checkIntegrityBeside { [weak self] failure in
            let box = UncheckedSendableBox(failure)
            RunLoopHandle.main.perform { [weak self] in self?.integrityChecked(box.value, after: .now - started) }
        }
    }

    func integrityChecked(_ failure: StoreError?, after duration: Duration) {
        guard let failure else {
            logger.info("replica integrity check: ok (\(String(format: "%.1f", duration.seconds)) s); the next in a day at the earliest")
            return
        }
        guard case .running(let scheduler) = state else { return }
        logger.critical("the replica failed its integrity check: \(failure); stopping so nothing more is written into it", metadata: MessageID.replicaDamaged.metadata)
        notifier.status("REPLICA DAMAGED (\(database.path)): \(failure.message.shortened(to: 120))")
        stop(scheduler, signalName: "replica damaged", exitCode: FerryExitCode.for(failure).rawValue)
    }

    func stop(_ scheduler: Scheduler, signalName: String, exitCode: Int32 = 0) {
        state = .stopping(exitCode: exitCode)
        notifier.stopping()
        notifier.extendTimeout(.seconds(5))
        logger.info("\(signalName): stopping; cancelling running passes", metadata: MessageID.stopping.metadata)
        refreshTimer?.invalidate()
        // Answered before the listeners close, on the connections that asked.
        for respond in passWaiters.removeAll() { respond(PassAnswer.refusal(503, "ferryd is stopping; the pass was not run", code: .interrupted)) }
        for service in services { service.stop() }
        ReloadAcknowledgement.removePIDFile(directory: configuration.global.runtimeDirectory)
        scheduler.stop(timeout: .milliseconds(1500)) { [weak self] drained in
            self?.finishStopping(drained: drained, exitCode: exitCode)
        }
    }

    func finishStopping(drained: Bool, exitCode: Int32 = 0) {
        if case .stopped = state { return }
        if !drained {
            logger.warning("passes still running at exit; their open transactions roll back")
        }
        database.close()
        state = .stopped(exitCode: exitCode)
        // Wake the loop in run() so it sees the new state.
        RunLoopHandle.main.stop()
    }
}
