import Foundation

extension DaemonMetrics {
    /// One per-store metric family, declared once: its name, type and help, and how a store's
    /// figures read as its samples (labels beside `store`, and the value). Rendering walks the
    /// table for every store, so a new per-store metric is a figure the pass updates and one
    /// entry here.
    struct StoreFamily: Sendable {
        enum Reading: Sendable {
            /// Samples: labels beside `store`, and the value; none while the store has no value.
            case values(@Sendable (StoreFigures) -> [([(String, String)], Double)])
            case histogram(@Sendable (StoreFigures) -> PrometheusExposition.Histogram)
        }

        let name: String
        let kind: PrometheusExposition.Kind
        let help: String
        let reading: Reading

        /// A family of one sample per store (none while `value` is nil).
        static func single(_ name: String, _ kind: PrometheusExposition.Kind, help: String, _ value: @escaping @Sendable (StoreFigures) -> Double?) -> StoreFamily {
            StoreFamily(name: name, kind: kind, help: help, reading: .values { figures in value(figures).map { [([], $0)] } ?? [] })
        }

        /// A family of one sample per value of `label`.
        static func by(_ label: String, _ name: String, _ kind: PrometheusExposition.Kind, help: String,
                       _ values: @escaping @Sendable (StoreFigures) -> [(String, Double)]) -> StoreFamily {
            StoreFamily(name: name, kind: kind, help: help, reading: .values { figures in values(figures).map { ([(label, $0.0)], $0.1) } })
        }
    }

    /// Every per-store family, in the order a scrape lists them.
    static let storeFamilies: [StoreFamily] = [
        .by("outcome", "ferry_passes_total", .counter, help: "Passes finished, by outcome (ok, incomplete, failed, cancelled).") { figures in
            Outcome.allCases.map { ($0.rawValue, Double(figures.passes[$0] ?? 0)) }
        },
        .by("change", "ferry_records_changed_total", .counter,
            help: "Records the passes' merges changed in the replica, by change; skipped records were left out as unreadable.") { figures in
            [("inserted", Double(figures.inserted)), ("updated", Double(figures.updated)), ("deleted", Double(figures.deleted)),
             ("skipped", Double(figures.skipped))]
        },
        .by("result", "ferry_local_changes_pushed_total", .counter, help: "Local writes pushed to the remote, by result (accepted, refused).") { figures in
            [("accepted", Double(figures.pushed)), ("refused", Double(figures.pushRefused))]
        },
        .single("ferry_conflicts_total", .counter, help: "Local changes that met a remote change, whatever the conflict policy made of them.") {
            Double($0.conflicts)
        },
        .single("ferry_requests_total", .counter, help: "HTTP requests the passes made, whatever their answer.") { Double($0.tally.current.requests) },
        .single("ferry_received_bytes_total", .counter, help: "Bytes received from the remote, headers included.") { Double($0.tally.current.bytesReceived) },
        .single("ferry_sent_bytes_total", .counter, help: "Bytes sent to the remote, headers included.") { Double($0.tally.current.bytesSent) },
        StoreFamily(name: "ferry_pass_duration_seconds", kind: .histogram, help: "How long successful passes took.", reading: .histogram { $0.duration }),
        .single("ferry_last_success_timestamp_seconds", .gauge, help: "When the store's last successful pull ended, in seconds since the Unix epoch.") {
            $0.lastSuccess?.timeIntervalSince1970
        },
        .single("ferry_last_pass_timestamp_seconds", .gauge, help: "When the store's last pass ended, whatever its outcome, in seconds since the Unix epoch.") {
            $0.lastPass?.timeIntervalSince1970
        },
        .single("ferry_next_pass_timestamp_seconds", .gauge,
                help: "When the store's next pass is due, in seconds since the Unix epoch (later while backing off).") {
            $0.schedule.nextPass?.timeIntervalSince1970
        },
        .single("ferry_consecutive_failures", .gauge, help: "Failed passes in a row; above 0 the store is backing off.") {
            Double($0.schedule.consecutiveFailures)
        },
        .by("state", "ferry_store_state", .gauge,
            help: "The store's standing: 1 for its state (ok, incomplete, failing, never_synced), 0 for the others.") { figures in
            Standing.allCases.map { ($0.rawValue, figures.standing == $0 ? 1 : 0) }
        },
        .single("ferry_records", .gauge, help: "Live records in the store's table after its last successful pass.") { $0.records.map(Double.init) },
        .by("result", "ferry_notifications_total", .counter,
            help: "Requests to the store's notification path, by result: triggered, handshake, or why refused (missing_signature, malformed_signature, wrong_signature, stale_timestamp, replayed).") { figures in
            figures.notifications.sorted { $0.key < $1.key }.map { ($0.key, Double($0.value)) }
        },
        .by("state", "ferry_local_changes", .gauge, help: "Local writes not on the remote yet, by state: queued, held (an open conflict), refused.") { figures in
            [("queued", Double(figures.localQueued)), ("held", Double(figures.localHeld)), ("refused", Double(figures.localRefused))]
        },
    ]

    /// Every per-store family of `stores` (sorted by name), as ``storeFamilies`` declares them.
    static func renderStoreFamilies(_ stores: [(key: String, value: StoreFigures)], into out: inout PrometheusExposition) {
        for family in storeFamilies {
            out.family(family.name, family.kind, help: family.help) { samples in
                for (name, figures) in stores {
                    switch family.reading {
                    case .values(let read):
                        for (labels, value) in read(figures) { samples.add([("store", name)] + labels, value) }
                    case .histogram(let read):
                        samples.histogram([("store", name)], read(figures))
                    }
                }
            }
        }
    }
}
