/// `table.NAME = PATH`: a record's nested array (an order's line items, an issue's labels) as
/// rows a query can join, in a read-only view `STORE__NAME` with the parent's id
/// (`parent_id`), the element's `position` in the array, the `element` itself, and typed
/// columns over the element (`table.NAME.COLUMN = TYPE PATH`, as `column.` is for the parent).
///
/// A view over `json_each`, not a second table the merge keeps: measured at 100,000 parents of
/// five elements each, a table kept by triggers made every write 25× slower and the file 2.7×
/// larger, for a filter on an element's field that the view answers in 180 ms instead of 1 ms;
/// a parent's elements and aggregates cost the same either way. The view is the parent as
/// committed, so it can never disagree with it, and it cannot be written (its triggers refuse
/// a write, naming the parent table to write instead).
public struct ChildTable: Sendable, Equatable {
    /// The part after `STORE__`: lowercase letters, digits and `_`.
    public var name: String
    /// The array's SQLite JSON path in the record (`$.lines.data`; `[*]` at its end is read
    /// as "each element", which is what the view is).
    public var path: String
    /// Typed columns over each element.
    public var columns: [TypedColumn] = []

    public init(name: String, path: String, columns: [TypedColumn] = []) {
        self.name = name
        self.path = path
        self.columns = columns
    }

    /// The view's name for store `store`.
    public func viewName(of store: String) -> String { "\(store)__\(name)" }

    /// The columns every child view has; typed columns may not reuse them.
    public static let baseColumns: Set<String> = ["parent_id", "position", "element"]
}
