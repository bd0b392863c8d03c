import Foundation

/// Members a multiget or query left out, or answered 404 for while listed: fetched alone with
/// GET before they are called missing (Xandikos misreads hrefs with `%23`; DAViCal leaves a
/// member out of a multiget instead of answering 404 for it).
extension WebDAVSource {
    /// GETs the next straggler, or hands over what the GETs found, with the pass's cursor.
    func recoverNext() {
        guard let id = stragglers.first else {
            phase = .recovering
            let batch = ChangeBatch(changes: takeDeletes() + recovered, cursor: finalCursor, problems: recoveryProblems,
                                    origin: builder.collection.url)
            recovered = []
            recoveryProblems = []
            guard deliver(batch) else { return }
            return finishPass()
        }
        phase = .recovering
        stragglers.removeFirst()
        var request = HTTPRequest(url: builder.collection.url(forHref: changes.hrefs[id] ?? builder.collection.href(forID: id)))
        builder.authorize(&request)
        send(request, for: .get(id: id))
    }

    /// A straggler's own answer: its body (2xx), its deletion (404, 410), or a problem.
    func recoveredMember(_ id: String, head: ResponseHead, body: Data) {
        switch memberReader.read(get: head, body: body, id: id) {
        case .change(let change): recovered.append(change)
        case .problem(let reason): recoveryProblems.append(RecordProblem(position: 0, id: id, reason: reason))
        case .failPass: return fail(statusError(head, body: body))
        case .fetchAlone: preconditionFailure("a member fetched alone is not fetched again")
        }
        recoverNext()
    }

    /// Turns one multiget answer into changes and problems.
    func records(from responses: [Multistatus.Response], requested: [String], into changes: inout [RecordChange], problems: inout [RecordProblem]) {
        var missing = Set(requested.compactMap { builder.collection.id(forHref: $0) })
        for response in responses {
            for href in response.hrefs {
                guard let id = builder.collection.id(forHref: href) else { continue }
                missing.remove(id)
                append(response, id: id, to: &changes, problems: &problems)
            }
        }
        // Left out of the answer: asked for again, alone, with a GET.
        stragglers += missing.sorted()
    }

    /// Turns one member response into an upsert, a problem, or a straggler.
    func append(_ response: Multistatus.Response, id: String, to changes: inout [RecordChange], problems: inout [RecordProblem]) {
        switch memberReader.read(response, id: id) {
        case .change(let change): changes.append(change)
        case .problem(let reason): problems.append(RecordProblem(position: response.position, id: id, reason: reason))
        case .fetchAlone: stragglers.append(id)
        case .failPass: preconditionFailure("a multistatus member never fails the pass")
        }
    }
}
