extension String {
    /// The text cut to at most `length` characters, ending in "..." when it was cut: for a
    /// line that must stay one line (STATUS=, a table cell, a diagnosis in the journal).
    func shortened(to length: Int) -> String {
        count > length ? String(prefix(length - 3)) + "..." : self
    }
}
