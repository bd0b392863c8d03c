import Foundation
import Testing
@testable import FerryKit

/// The bars of `ferry sync` and the log lines printed while they are drawn: a line goes above
/// the bars, which are drawn again below it, so nothing stale stays on the screen.
@Suite struct ProgressDisplayTests {
    /// What a terminal shows after `bytes`: cursor up (ESC[nA), erase line (ESC[2K), newlines.
    static func screen(_ bytes: String) -> [String] {
        var lines: [String] = [""]
        var row = 0
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let character = bytes[index]
            if character == "\u{1B}", let end = bytes[index...].firstIndex(where: { $0 == "A" || $0 == "K" }) {
                let code = bytes[bytes.index(index, offsetBy: 2)..<end]
                if bytes[end] == "A" { row = max(0, row - (Int(code) ?? 1)) } else { lines[row] = "" }
                index = bytes.index(after: end)
                continue
            }
            if character == "\n" {
                row += 1
                if row == lines.count { lines.append("") }
            } else {
                lines[row].append(character)
            }
            index = bytes.index(after: index)
        }
        return lines.filter { !$0.isEmpty }
    }

    @Test func aLogLineGoesAboveTheBarsAndLeavesNoStaleBar() throws {
        let pipe = Pipe()
        let display = ProgressDisplay(fileDescriptor: pipe.fileHandleForWriting.fileDescriptor)
        display.update(["alpha [##--] 50%", "beta  [#---] 25%"])
        display.log("warning: store beta: slow server\n")
        display.update(["alpha [####] done", "beta  [##--] 50%"])
        try pipe.fileHandleForWriting.close()
        let bytes = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(Self.screen(bytes) == ["warning: store beta: slow server", "alpha [####] done", "beta  [##--] 50%"])
    }

    @Test func aFailedStoresBarSaysFailedNotDone() {
        var item = OneShotSync.Progress(store: "tasks", progress: OperationProgress(), isRunning: false, isFinished: true,
                                        isCancelled: false, elapsed: .seconds(1))
        #expect(ProgressLine.render(item).hasSuffix(", done"))
        item.isFailed = true
        #expect(ProgressLine.render(item).hasSuffix(", failed"))
    }

    /// While `ferry sync` waits out a 429 before passing the store again, its bar counts the
    /// wait down (it said failed).
    @Test func aRateLimitWaitIsCountedDownNotFailed() {
        var item = OneShotSync.Progress(store: "tasks", progress: OperationProgress(), isRunning: false, isFinished: true,
                                        isCancelled: false, elapsed: .seconds(1))
        item.retryIn = .milliseconds(11_200)
        #expect(ProgressLine.render(item).hasSuffix(", rate limited: again in 12s"))
    }
}
