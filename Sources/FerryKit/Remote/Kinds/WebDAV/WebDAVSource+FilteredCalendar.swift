import Foundation

/// A filtered calendar's pass (``CalendarFilter``): one calendar-query per component type,
/// whose members are listed and handed over as they come; the listing is complete, so rows it
/// no longer names are swept.
extension WebDAVSource {
    /// The calendar-query of the next component type, or the end of the listing.
    func queryWindow() {
        guard let calendarFilter, !windowComponents.isEmpty else { return endWindow() }
        let component = windowComponents.removeFirst()
        phase = .querying
        send(builder.calendarQuery(component: component, range: calendarFilter.range(now: Date())), for: .window)
    }

    /// Members of a calendar-query answer: listed, and handed over in batches.
    func takeWindow(_ responses: [Multistatus.Response]) {
        guard case .querying = phase else { return }
        for response in responses {
            guard let id = builder.collection.id(forHref: response.href), !windowListed.contains(id) else { continue }
            windowListed.insert(id)
            append(response, id: id, to: &queryBatch, problems: &queryProblems)
            queryBatchBytes += response.data?.utf8.count ?? 0
            if queryBatch.count + queryProblems.count >= Self.queryBatchLimit.records || queryBatchBytes >= Self.queryBatchLimit.bytes {
                guard handOverQueryBatch(cursor: nil) else { return }
            }
        }
    }

    /// Every component queried: the listing, the last records with the (empty) cursor, and any
    /// member a query answered 404 for, fetched alone.
    func endWindow() {
        guard deliverList(windowListed.sorted()) else { return }
        guard handOverQueryBatch(cursor: stragglers.isEmpty ? finalCursor : nil) else { return }
        stragglers.isEmpty ? finishPass() : recoverNext()
    }
}
