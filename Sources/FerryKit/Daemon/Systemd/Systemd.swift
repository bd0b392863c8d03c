import CSystemd
import Foundation

/// The one place where libsystemd return codes become Swift errors or traps.
enum Systemd {
    /// libsystemd returns `-errno` on failure and a non-negative value otherwise.
    ///
    /// `bugCodes` are the errnos that can only mean Ferry built a bad argument: they trap.
    /// Only `sd_journal_sendv` has such a code (EINVAL: a malformed field, which
    /// ``JournalFields`` never builds). For `sd_notify` and `sd_watchdog_enabled`, EINVAL means a
    /// malformed `NOTIFY_SOCKET` or `WATCHDOG_USEC` in our environment: not our bug, an error.
    @discardableResult
    static func check(_ result: Int32, _ function: StaticString = #function, bugCodes: Set<Int32> = []) throws(SystemdError) -> Int32 {
        guard result < 0 else { return result }
        let code = -result
        precondition(!bugCodes.contains(code), "libsystemd misuse in \(function): \(String(cString: strerror(code)))")
        throw SystemdError(code: code, function: "\(function)")
    }

    /// `sd_notify`: true when the message was sent, false when there is no NOTIFY_SOCKET.
    static func notify(_ state: String) throws(SystemdError) -> Bool {
        let result = state.withCString { sd_notify(0, $0) }
        return try check(result, "sd_notify") > 0
    }

    /// `sd_watchdog_enabled`: the watchdog timeout systemd expects pings within, if any.
    static func watchdogTimeout() throws(SystemdError) -> Duration? {
        var usec: UInt64 = 0
        let result = sd_watchdog_enabled(0, &usec)
        guard try check(result, "sd_watchdog_enabled") > 0 else { return nil }
        return .microseconds(Int64(clamping: usec))
    }

    /// `sd_journal_sendv` with `KEY=value` fields; values may contain newlines and any bytes.
    static func journalSend(_ fields: [String]) throws(SystemdError) {
        precondition(!fields.isEmpty, "a journal entry needs at least MESSAGE=")
        // One contiguous buffer, so every iovec points into memory that is valid for the whole
        // call (pointers obtained inside withUnsafe... must not escape it).
        var storage: [UInt8] = []
        var ranges: [Range<Int>] = []
        for field in fields {
            let start = storage.count
            storage.append(contentsOf: field.utf8)
            ranges.append(start..<storage.count)
        }
        let result: Int32 = storage.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return 0 }
            let vectors = ranges.map { iovec(iov_base: base + $0.lowerBound, iov_len: $0.count) }
            return vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) }
        }
        try check(result, "sd_journal_sendv", bugCodes: [EINVAL])
    }

    /// CLOCK_MONOTONIC in microseconds, as `MONOTONIC_USEC=` wants it.
    static func monotonicMicroseconds() -> UInt64 {
        var time = timespec()
        // clock_gettime(CLOCK_MONOTONIC) cannot fail on Linux with a valid pointer.
        let result = clock_gettime(CLOCK_MONOTONIC, &time)
        precondition(result == 0, "clock_gettime(CLOCK_MONOTONIC) failed")
        return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1_000
    }
}
