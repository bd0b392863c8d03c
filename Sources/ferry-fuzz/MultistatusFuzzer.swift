import FerryKit
import Foundation

/// Fuzzes MultistatusParser, which reads every CardDAV/CalDAV PROPFIND and REPORT answer, and
/// DAVPropertiesParser, which reads discovery's PROPFIND answers, on the same input.
///
/// Invariants, beyond "never traps": a failure is the typed ``MultistatusParser/Failure`` with a
/// non-negative line and column; a success has the root `multistatus` or `error`, responses
/// numbered in order, address/calendar data within the configured cap (and never both kept and
/// flagged too large), hrefs and sync token within the text cap. The crash this target found
/// (`<?name?>`, Tests/Fuzz/regressions/multistatus-pi-without-data.xml) is refused by the parser
/// now, so inputs like it run through as any other.
enum MultistatusFuzzer {
    static let maxDataBytes = 512
    static let maxTextBytes = 1024
    static let parser = MultistatusParser(maxDataBytes: maxDataBytes, maxTextBytes: maxTextBytes)

    static let properties = DAVPropertiesParser(maxTextBytes: maxTextBytes)

    static func run(_ data: Data) {
        runProperties(data)
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

    /// Discovery's parser: a typed failure, or resources whose texts and hrefs keep the cap.
    static func runProperties(_ data: Data) {
        let resources: [DAVResource]
        do {
            resources = try properties.parse(data)
        } catch {
            FuzzCheck.expect(error.line >= 0 && error.column >= 0, "properties: failure at a negative position: \(error)")
            return
        }
        for (index, resource) in resources.enumerated() {
            FuzzCheck.expect(resource.href.utf8.count <= maxTextBytes, "properties: resource \(index) href of \(resource.href.utf8.count) bytes")
            for (name, value) in resource.properties {
                FuzzCheck.expect(value.text.utf8.count <= maxTextBytes, "properties: \(name) text of \(value.text.utf8.count) bytes")
                FuzzCheck.expect(value.hrefs.allSatisfy { $0.utf8.count <= maxTextBytes }, "properties: \(name) href over the cap")
            }
        }
    }
}
