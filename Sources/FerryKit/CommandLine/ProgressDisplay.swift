import Foundation
import Synchronization

/// The progress bars of `ferry sync` on a terminal, and the log lines printed while they are
/// drawn: a line goes above the bars (they are cleared, the line written, the bars drawn
/// again), so no stale bar is left behind and no text is drawn over. One lock for both,
/// since log lines come from any thread and the bars from the command's.
public final class ProgressDisplay: Sendable {
    private struct Screen {
        /// Lines of bars now on the screen, below the cursor's line.
        var drawn = 0
        /// The bars as last drawn, to draw again after a log line.
        var bars: [String] = []
    }

    private let screen = Mutex(Screen())
    private let fileDescriptor: Int32

    public init(fileDescriptor: Int32 = STDERR_FILENO) {
        self.fileDescriptor = fileDescriptor
    }

    /// Draws `bars` over the ones drawn before.
    public func update(_ bars: [String]) {
        screen.withLock { screen in
            var text = Self.erase(screen.drawn)
            for bar in bars { text += bar + "\n" }
            screen.drawn = bars.count
            screen.bars = bars
            write(text)
        }
    }

    /// Writes a log `line` (newline-terminated) above the bars.
    public func log(_ line: String) {
        screen.withLock { screen in
            var text = Self.erase(screen.drawn) + line
            for bar in screen.bars { text += bar + "\n" }
            write(text)
        }
    }

    /// Moves up over `lines` drawn lines, clearing each, and leaves the cursor at the first.
    static func erase(_ lines: Int) -> String {
        guard lines > 0 else { return "" }
        return "\u{1B}[\(lines)A" + String(repeating: "\u{1B}[2K\n", count: lines) + "\u{1B}[\(lines)A"
    }

    private func write(_ text: String) {
        FileHandle(fileDescriptor: fileDescriptor, closeOnDealloc: false).write(Data(text.utf8))
    }
}
