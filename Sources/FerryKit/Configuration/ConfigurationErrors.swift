/// Every problem found in a configuration file: the loader does not stop at the first one, so
/// a person fixing a file sees the whole list at once.
public struct ConfigurationErrors: Error, Sendable, Equatable, CustomStringConvertible {
    /// In file order (by line), never empty when thrown.
    public var problems: [ConfigurationProblem]

    public init(problems: [ConfigurationProblem]) {
        self.problems = problems
    }

    /// The file exists but this user may not read it (or enter a directory on its way): a
    /// matter of permissions, not of what the file says, so it exits as an unreadable
    /// replica does (74), not as a configuration error (78).
    public var isPermissionDenied = false

    /// One problem per line, ready to print.
    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
