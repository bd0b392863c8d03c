import Foundation

/// Renders `ferry sync` progress: a bar per store on a terminal, nothing when piped (plain log
/// lines say what happened instead).
public enum ProgressLine {
    /// One line for one store: bar (when the total is known), records, rate, pages, ETA.
    public static func render(_ item: OneShotSync.Progress, width: Int = 24) -> String {
        let progress = item.progress
        let seconds = max(item.elapsed.seconds, 0.001)
        let rate = Double(progress.completedUnits) / seconds
        var line = item.store.padding(toLength: max(item.store.count, 12), withPad: " ", startingAt: 0) + " "
        if let fraction = progress.fractionCompleted {
            let filled = Int(fraction * Double(width))
            line += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            line += "\(progress.completedUnits)/\(progress.totalUnits ?? 0) records"
        } else {
            line += "\(progress.completedUnits) records"
        }
        line += ", \(formatRate(rate))/s, \(progress.completedPages) page\(progress.completedPages == 1 ? "" : "s")"
        if let total = progress.totalUnits, rate > 0, !item.isFinished {
            let remaining = Double(max(0, total - progress.completedUnits)) / rate
            line += ", ETA \(formatDuration(remaining))"
        }
        if let retry = item.retryIn {
            line += ", rate limited: again in \(Int(retry.seconds.rounded(.up)))s"
        } else if item.isCancelled { line += ", cancelled" } else if item.isFailed { line += ", failed" } else if item.isFinished { line += ", done" } else if !item.isRunning { line += ", waiting" }
        return line
    }

    static func formatRate(_ rate: Double) -> String {
        rate >= 10_000 ? String(format: "%.0fk", rate / 1000) : String(format: "%.0f", rate)
    }

    static func formatDuration(_ seconds: Double) -> String {
        seconds >= 3600 ? String(format: "%dh%02dm", Int(seconds) / 3600, Int(seconds) % 3600 / 60)
            : seconds >= 60 ? String(format: "%dm%02ds", Int(seconds) / 60, Int(seconds) % 60)
            : String(format: "%ds", Int(seconds.rounded(.up)))
    }
}
