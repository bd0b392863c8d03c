/// What a remote made of one write request, whatever the kind: the one place a write's answer
/// is classified. Each writer then turns it into a ``PushResult`` with what it knows of the
/// change (the record an accepted write made, what a conflict meets).
///
/// | answer                                         | meaning              | a push then                               |
/// |------------------------------------------------|----------------------|-------------------------------------------|
/// | HTTP 2xx; Parse `success`                      | `.accepted`          | records the remote's version              |
/// | HTTP 412                                       | `.changedSince`      | reads the record: our earlier send, or a conflict |
/// | HTTP 404, 410; Parse error 101                 | `.gone`              | a delete is done; any other write meets the delete |
/// | HTTP 400, 403, 409, 413, 415, 422; other Parse error codes | `.refused` | keeps the change queued with the reason   |
/// | anything else (401, 5xx, 3xx left over...)     | `.failed`            | stops the push with the typed error       |
enum WriteAnswer: Equatable {
    case accepted
    case changedSince
    case gone
    case refused(String)
    case failed

    /// Statuses by which a server says the write itself is wrong (invalid, forbidden, in
    /// conflict with the collection, too large, of a type it does not take): the change waits
    /// with the reason; the other changes go on.
    static let refusingStatuses: Set<Int> = [400, 403, 409, 413, 415, 422]

    /// An HTTP answer to a write; `reason` words a refusal (the status and what the body says).
    static func http(status: Int, reason: @autoclosure () -> String?) -> WriteAnswer {
        switch status {
        case 200..<300: .accepted
        case 412: .changedSince
        case 404, 410: .gone
        case _ where refusingStatuses.contains(status): .refused("HTTP \(status)" + (reason().map { ": \($0)" } ?? ""))
        default: .failed
        }
    }

    /// A Parse error code, from a batch item or a write's 400 answer.
    static func parse(code: Int, message: String) -> WriteAnswer {
        // 101: object not found (deleted since it was read).
        code == 101 ? .gone : .refused("Parse error \(code): \(message)")
    }

    /// What a write to a record that is gone comes to: a delete is done; a create or an
    /// update meets the delete (the store's conflict policy decides).
    static func goneResult(for operation: LocalChange.Operation) -> PushResult {
        operation == .delete ? .accepted(nil) : .conflict(remote: nil)
    }
}
