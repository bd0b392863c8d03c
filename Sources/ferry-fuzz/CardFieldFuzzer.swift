import FerryKit
import Foundation

/// Fuzzes CardFieldExtractor, which projects vCard and iCalendar bodies into columns.
///
/// Invariants, beyond "never traps": a body is rejected exactly when it is not valid UTF-8
/// (and then only with ``CardFieldExtractor/Problem/invalidUTF8``); the keys returned are the
/// documented ones for the kind; extraction is deterministic.
enum CardFieldFuzzer {
    static let vCardKeys: Set<String> = ["UID", "FN", "EMAIL", "TEL", "ORG"]
    static let iCalendarKeys: Set<String> = ["UID", "SUMMARY", "DTSTART", "DTEND", "RRULE", "DTSTART_TZID", "DTEND_TZID"]

    static func run(_ data: Data) {
        let validUTF8 = String(validating: data, as: UTF8.self) != nil
        for kind in [StoreKind.carddav, .caldav] {
            let allowed = kind == .carddav ? vCardKeys : iCalendarKeys
            do {
                let fields = try CardFieldExtractor.fields(of: data, kind: kind)
                FuzzCheck.expect(validUTF8, "\(kind): invalid UTF-8 accepted")
                FuzzCheck.expect(Set(fields.keys).isSubset(of: allowed), "\(kind): unexpected keys \(fields.keys.sorted())")
                let again = try CardFieldExtractor.fields(of: data, kind: kind)
                FuzzCheck.expect(again == fields, "\(kind): two extractions of the same body differ")
            } catch {
                FuzzCheck.expect(error == .invalidUTF8, "\(kind): unexpected problem \(error)")
                FuzzCheck.expect(!validUTF8, "\(kind): valid UTF-8 rejected")
            }
        }
    }
}
