import Foundation

/// `ferry status` as a table for people: it fits the terminal it is printed on, and a problem
/// is never cut, since its end is the advice (what key to set, what command to run).
extension StoreStatus {
    /// The table's columns, left to right.
    enum Column: String, CaseIterable, Sendable {
        case store = "STORE", state = "STATE", lastSuccess = "LAST SUCCESS", age = "AGE", records = "RECORDS", next = "NEXT"
        case conflicts = "CONFLICTS", cursor = "CURSOR", problem = "PROBLEM"
    }

    /// Columns left out, in this order, while the table is wider than the terminal: what
    /// `--json` has in full and a person reads least (the cursor, the last success's date
    /// beside its age, conflicts when no store holds any).
    static let droppedFirst: [Column] = [.cursor, .lastSuccess, .conflicts]

    /// The PROBLEM cell of a problem listed under the table.
    static let problemBelow = "see below"

    /// A table for people: store, state, last success and its age, records, the next pass,
    /// held conflicts, the cursor in brief, and the problem, without the `store NAME:` its
    /// row already says. `width`: the terminal's columns; nil (a pipe): every column, nothing
    /// wrapped. In a terminal, columns are left out (``droppedFirst``) until the rest fits; a
    /// problem that still does not fit its column is listed under the table, whole, wrapped
    /// to the width.
    public static func table(_ rows: [StoreStatus], width: Int? = nil) -> String {
        let formatter = ISO8601DateFormatter()
        let problems = rows.map(problemText)
        let cells: [[Column: String]] = rows.indices.map { index in
            let row = rows[index]
            return [.store: row.store, .state: row.state, .lastSuccess: row.lastSuccess.map { formatter.string(from: $0) } ?? "-",
                    .age: row.lastSuccessAgeSeconds.map(Self.age) ?? "-", .records: "\(row.records)", .next: next(row),
                    .conflicts: row.conflicts > 0 ? "\(row.conflicts)" : "-", .cursor: row.cursor.map(briefCursor) ?? "-",
                    .problem: problems[index] ?? "-"]
        }
        var columns = Column.allCases
        func widthOf(_ column: Column) -> Int { max(column.rawValue.count, cells.map { $0[column]?.count ?? 0 }.max() ?? 0) }
        /// The width of every column but the problem, with the gaps up to it.
        func leading() -> Int { columns.filter { $0 != .problem }.map(widthOf).reduce(0) { $0 + $1 + 2 } }
        var below: [Int] = []
        var body = cells
        if let width {
            let longest = widthOf(.problem)
            for column in droppedFirst where leading() + longest > width {
                // Conflicts held are worth their column whenever a store holds any.
                if column == .conflicts, rows.contains(where: { $0.conflicts > 0 }) { continue }
                columns.removeAll { $0 == column }
            }
            let room = width - leading()
            for index in body.indices where (body[index][.problem]?.count ?? 0) > room {
                body[index][.problem] = problemBelow
                below.append(index)
            }
        }
        let widths = Dictionary(uniqueKeysWithValues: columns.map { column in
            (column, max(column.rawValue.count, body.map { $0[column]?.count ?? 0 }.max() ?? 0))
        })
        let lines = ([Dictionary(uniqueKeysWithValues: columns.map { ($0, $0.rawValue) })] + body).map { line in
            columns.map { column in
                let cell = line[column] ?? ""
                return column == columns.last ? cell : cell.padding(toLength: widths[column] ?? 0, withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        var text = lines.joined(separator: "\n")
        if let width, !below.isEmpty {
            text += "\n"
            for index in below {
                text += "\n" + wrap(rows[index].store + ": " + (problems[index] ?? ""), width: width, indent: 2).joined(separator: "\n")
            }
        }
        return text
    }

    /// What the PROBLEM column says of a row: the last error when failing, else what the
    /// replica lacks; without the `store NAME: ` the row's first column says.
    static func problemText(_ row: StoreStatus) -> String? {
        guard let problem = row.state == "failing" ? row.lastError : row.incomplete ?? row.lastError else { return nil }
        let prefix = "store \(row.store): "
        return problem.hasPrefix(prefix) ? String(problem.dropFirst(prefix.count)) : problem
    }

    /// `text` in lines of at most `width` characters, broken at spaces; every line after the
    /// first indented by `indent`. A word longer than a line (a long URL) is cut across lines.
    static func wrap(_ text: String, width: Int, indent: Int) -> [String] {
        let width = max(width, indent + 10)
        var lines: [String] = []
        var line = ""
        func limit() -> Int { lines.isEmpty ? width : width - indent }
        func flush() {
            lines.append(lines.isEmpty ? line : String(repeating: " ", count: indent) + line)
            line = ""
        }
        for word in text.split(separator: " ") {
            var rest = Substring(word)
            while !rest.isEmpty {
                if line.count + (line.isEmpty ? 0 : 1) + rest.count <= limit() {
                    line += (line.isEmpty ? "" : " ") + rest
                    rest = ""
                } else if !line.isEmpty {
                    flush()
                } else {
                    let cut = rest.prefix(limit())
                    line = String(cut)
                    rest = rest.dropFirst(cut.count)
                    flush()
                }
            }
        }
        if !line.isEmpty || lines.isEmpty { flush() }
        return lines
    }
}
