import ArgumentParser
import FerryKit
import Foundation

/// The same static pages asked for as other API styles page (`json-e2e --pagination`), so a
/// page-number, offset or last-id API can be timed against a next-link one on the same bytes.
/// nginx maps each style's query parameter to a page file: `/paged?page=N` (with
/// `X-Total-Pages`), `/offset?startAt=K` and `/after?starting_after=ID` through symbolic links
/// named by the offset and by the last id of the page before (the last one names an empty
/// page); a link named `.json` is the first page, asked for without the parameter. The pages
/// keep their `next` member, which these styles do not read.
enum StaticPagination: String, ExpressibleByArgument, CaseIterable, Sendable {
    case nextURL = "next-url", page, offset, after

    /// The collection's first URL path.
    var firstPath: String {
        switch self {
        case .nextURL: StaticPages.path(ofPage: 1)
        case .page: "/paged"
        case .offset: "/offset"
        case .after: "/after"
        }
    }

    /// The nginx `location` blocks that serve this style (none for next-url: the files as they are).
    func nginxLocations(pageCount: Int) -> String {
        switch self {
        case .nextURL:
            return ""
        case .page:
            return """
                location = /paged {
                    add_header X-Total-Pages \(pageCount) always;
                    try_files /pages/$arg_page.json =404;
                }
            """
        case .offset:
            return """
                location = /offset {
                    try_files /offset/$arg_startAt.json =404;
                }
            """
        case .after:
            return """
                location = /after {
                    try_files /after/$arg_starting_after.json =404;
                }
            """
        }
    }

    /// The JSON store's pagination keys for this style.
    func configure(_ options: inout JSONCollectionOptions) {
        switch self {
        case .nextURL: options.pagination = .nextURL(path: "next")
        case .page: options.pagination = .pageNumber(param: "page")
        case .offset: options.pagination = .offset(param: "startAt")
        case .after: options.pagination = .afterLast(param: "starting_after", field: "objectId")
        }
    }
}

extension StaticPages {
    /// Links each page under the names `style` asks for it by (next-url and page name the files
    /// themselves; page links its first page as `.json`).
    func link(for style: StaticPagination, scanner: JSONRecordScanner) throws {
        let fileManager = FileManager.default
        switch style {
        case .nextURL:
            return
        case .page:
            try fileManager.createSymbolicLink(atPath: root.appendingPathComponent("pages/.json").path, withDestinationPath: "1.json")
        case .offset:
            let directory = root.appendingPathComponent("offset")
            try fileManager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            try fileManager.createSymbolicLink(atPath: directory.appendingPathComponent(".json").path, withDestinationPath: "../pages/1.json")
            for number in 1...max(pageCount, 1) {
                try fileManager.createSymbolicLink(atPath: directory.appendingPathComponent("\((number - 1) * pageSize).json").path,
                                                   withDestinationPath: "../pages/\(number).json")
            }
        case .after:
            let directory = root.appendingPathComponent("after")
            try fileManager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            let empty = #"{"count":\#(records),"next":null,"results":[]}"#
            guard fileManager.createFile(atPath: directory.appendingPathComponent("empty.json").path, contents: Data(empty.utf8),
                                         attributes: [.posixPermissions: 0o644]) else {
                throw BenchError.serverDidNotStart("cannot write the empty page under \(directory.path)")
            }
            try fileManager.createSymbolicLink(atPath: directory.appendingPathComponent(".json").path, withDestinationPath: "../pages/1.json")
            for number in 1...max(pageCount, 1) {
                guard let last = try records(ofPage: number, scanner: scanner).last?.id else { continue }
                let target = number < pageCount ? "../pages/\(number + 1).json" : "empty.json"
                try fileManager.createSymbolicLink(atPath: directory.appendingPathComponent("\(last).json").path, withDestinationPath: target)
            }
        }
    }
}
