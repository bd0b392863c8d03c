extension String {
    /// The text with every occurrence of each non-empty secret replaced by `REDACTED`: the one
    /// way a secret a server echoed, or a URL carried, is kept out of errors, logs and status.
    func redacting(_ secrets: some Sequence<String>) -> String {
        secrets.reduce(self) { $1.isEmpty ? $0 : $0.replacingOccurrences(of: $1, with: "REDACTED") }
    }
}
