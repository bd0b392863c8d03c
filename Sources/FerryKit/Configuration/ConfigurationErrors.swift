/// Every problem found in a configuration file: the loader does not stop at the first one, so
/// a person fixing a file sees the whole list at once.
public struct ConfigurationErrors: Error, Sendable, Equatable, CustomStringConvertible {
    /// In file order (by line), never empty when thrown.
    public var problems: [ConfigurationProblem]

    public init(problems: [ConfigurationProblem]) {
        self.problems = problems
    }

    /// One problem per line, ready to print.
    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
