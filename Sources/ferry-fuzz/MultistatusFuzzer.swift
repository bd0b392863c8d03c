import FerryKit
import Foundation

/// Fuzzes MultistatusParser, which reads every CardDAV/CalDAV PROPFIND and REPORT answer.
///
/// Invariants, beyond "never traps": a failure is the typed ``MultistatusParser/Failure`` with a
/// non-negative line and column; a success has the root `multistatus` or `error`, responses
/// numbered in order, address/calendar data within the configured cap (and never both kept and
/// flagged too large), hrefs and sync token within the text cap.
enum MultistatusFuzzer {
    static let maxDataBytes = 512
    static let maxTextBytes = 1024
    static let parser = MultistatusParser(maxDataBytes: maxDataBytes, maxTextBytes: maxTextBytes)

    /// Known crash, screened out so each run keeps looking for new bugs instead of re-finding it
    /// (`FERRY_FUZZ_KNOWN_CRASHES=1` lets it through): a processing instruction without data,
    /// `<?name?>`, segfaults swift-corelibs-foundation's XMLParser (strlen(NULL) in
    /// _NSXMLParserProcessingInstruction). Pinned by MultistatusCrashRegressionTests; drop this
    /// screen once MultistatusParser refuses such bodies itself.
    static let screensKnownCrashes = ProcessInfo.processInfo.environment["FERRY_FUZZ_KNOWN_CRASHES"] != "1"

    /// Whether `bytes` contain `<?` + a run of non-space, non-`?`, non-`>` bytes + `?>`.
    static func hasProcessingInstructionWithoutData(_ bytes: Data) -> Bool {
        let data = [UInt8](bytes)
        var index = 0
        while index + 1 < data.count {
            defer { index += 1 }
            guard data[index] == UInt8(ascii: "<"), data[index + 1] == UInt8(ascii: "?") else { continue }
            var end = index + 2
            while end < data.count, ![UInt8(ascii: " "), 0x09, 0x0A, 0x0D, UInt8(ascii: "?"), UInt8(ascii: ">")].contains(data[end]) {
                end += 1
            }
            if end + 1 < data.count, data[end] == UInt8(ascii: "?"), data[end + 1] == UInt8(ascii: ">") { return true }
        }
        return false
    }

    static func run(_ data: Data) {
        if screensKnownCrashes, hasProcessingInstructionWithoutData(data) { return }
        let status: Multistatus
        do {
            status = try parser.parse(data)
        } catch {
            FuzzCheck.expect(error.line >= 0 && error.column >= 0, "failure at a negative position: \(error)")
            return
        }
        FuzzCheck.expect(status.root == "multistatus" || status.root == "error", "parsed a document rooted at '\(status.root)'")
        for (index, response) in status.responses.enumerated() {
            FuzzCheck.expect(response.position == index, "response \(index) has position \(response.position)")
            FuzzCheck.expect((response.data?.utf8.count ?? 0) <= maxDataBytes,
                             "response \(index) keeps \(response.data?.utf8.count ?? 0) data bytes over the cap \(maxDataBytes)")
            FuzzCheck.expect(!(response.dataTooLarge && response.data != nil), "response \(index) keeps data flagged too large")
            for href in response.hrefs {
                FuzzCheck.expect(href.utf8.count <= maxTextBytes, "response \(index) href of \(href.utf8.count) bytes")
            }
            if let code = response.effectiveStatus {
                FuzzCheck.expect((100...999).contains(code), "response \(index) status \(code) is not an HTTP status")
            }
        }
        FuzzCheck.expect((status.syncToken?.utf8.count ?? 0) <= maxTextBytes, "sync token over the text cap")
    }
}
