import CCurl
import Foundation
import Synchronization

/// The one thread that drives libcurl's multi interface for every session in the process.
///
/// It sleeps in `curl_multi_poll` (no busy polling; `curl_multi_wakeup` interrupts it when a
/// session adds, cancels or resumes a transfer) and hands each transfer's events to its owner's
/// run loop. One multi handle also means one connection cache: requests of a pass reuse their
/// keep-alive connections.
final class CurlIOThread: @unchecked Sendable {
    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
        case resume(CurlTransfer)
    }

    static let shared = CurlIOThread()

    private let multi: UnsafeMutableRawPointer
    private struct Inbox {
        var commands: [Command] = []
        /// Whether the I/O thread is (about to be) asleep in `curl_multi_poll`. Only then does
        /// a submit need `curl_multi_wakeup`, a syscall on each side: while the thread is busy it
        /// finds the command on its next pass anyway.
        var sleeping = false
    }

    private let inbox = Mutex(Inbox())
    /// Transfers curl is working on, by easy handle. Touched only on the I/O thread.
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Transfers with events for their owners, posted at the end of the current pass. Touched
    /// only on the I/O thread.
    private var awaitingDelivery: [CurlTransfer] = []

    private init() {
        _ = Curl.initialized
        guard let multi = curl_multi_init() else {
            preconditionFailure("curl_multi_init returned NULL: out of memory")
        }
        self.multi = multi
        // Keep idle connections for many concurrent stores; the default (4 × handles) drops
        // them between the pages of a pass when only one transfer is active.
        Curl.checkMulti(ferry_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 64))
        Thread.start(named: "ferry-curl-io") { [self] in
            self.loop()
        }
    }

    /// Queues a command for the I/O thread and wakes it. Safe from any thread.
    func submit(_ command: Command) {
        let wake: Bool = inbox.withLock { inbox in
            inbox.commands.append(command)
            defer { inbox.sleeping = false }
            return inbox.sleeping
        }
        if wake { Curl.checkMulti(curl_multi_wakeup(multi)) }
    }

    /// Number of transfers in flight, for tests and the load suite's leak checks.
    var activeCount: Int {
        activeCountSnapshot.withLock { $0 }
    }
    private let activeCountSnapshot = Mutex(0)

    private func loop() {
        while true {
            for command in inbox.withLock({ inbox in defer { inbox.commands.removeAll() }; return inbox.commands }) {
                apply(command)
            }
            var running: Int32 = 0
            Curl.checkMulti(curl_multi_perform(multi, &running))
            collectFinished()
            for transfer in awaitingDelivery { transfer.postDelivery() }
            awaitingDelivery.removeAll(keepingCapacity: true)
            activeCountSnapshot.withLock { $0 = active.count }
            // Sleep only when no command came in meanwhile; a submit after this point sees
            // `sleeping` and wakes the poll (curl keeps a wakeup that precedes the poll).
            // curl_multi_poll also returns when one of curl's own timers is due, so the long
            // idle wait costs no timeout accuracy.
            let mayPoll = inbox.withLock { inbox in
                inbox.sleeping = inbox.commands.isEmpty
                return inbox.sleeping
            }
            if mayPoll {
                Curl.checkMulti(curl_multi_poll(multi, nil, 0, active.isEmpty ? 60_000 : 1_000, nil))
                inbox.withLock { $0.sleeping = false }
            }
        }
    }

    /// Queues `transfer`'s delivery until the end of this pass over libcurl. Called from
    /// libcurl's callbacks and completion handling, which all run on this thread.
    func deliverAfterThisPass(_ transfer: CurlTransfer) {
        awaitingDelivery.append(transfer)
    }

    private func apply(_ command: Command) {
        switch command {
        case .add(let transfer):
            active[transfer.easy] = transfer
            Curl.checkMulti(curl_multi_add_handle(multi, transfer.easy))
        case .cancel(let transfer):
            guard active.removeValue(forKey: transfer.easy) != nil else { return }
            Curl.checkMulti(curl_multi_remove_handle(multi, transfer.easy))
        case .resume(let transfer):
            guard active[transfer.easy] != nil else { return }
            // May call the write callback right here with the bytes it held back.
            _ = curl_easy_pause(transfer.easy, CURLPAUSE_CONT)
        }
    }

    private func collectFinished() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                  let transfer = active.removeValue(forKey: easy) else { continue }
            let code = message.pointee.data.result
            Curl.checkMulti(curl_multi_remove_handle(multi, easy))
            transfer.complete(code: code)
        }
    }
}
