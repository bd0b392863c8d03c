/// A `[store NAME]` section whose problems are its own (a missing credential, a typo in one of
/// its keys): read with ``StoreProblemHandling/setStoreApart``, the configuration leaves that
/// store out and names it here, and every other store runs. Only a file that cannot be read as
/// a whole (its syntax, `[ferry]`) is refused whole.
public struct RefusedStore: Sendable, Equatable {
    public var name: String
    /// The section's problems, with file, line and key.
    public var problems: ConfigurationErrors

    public init(name: String, problems: ConfigurationErrors) {
        self.name = name
        self.problems = problems
    }

    /// One line for status, the journal and the metrics' cause: the first problem, and how
    /// many more there are.
    public var summary: String {
        let first = problems.problems.first.map(\.description) ?? "its section has problems"
        return "not synced, its section has problems: " + first + (problems.problems.count > 1 ? " (and \(problems.problems.count - 1) more)" : "")
    }
}

/// What a problem in one store's section does to the configuration it is in.
public enum StoreProblemHandling: Sendable, Equatable {
    /// The whole file is refused (`ferry check-config`, which lists every problem).
    case refuseFile
    /// The store is left out, named in ``FerryConfiguration/refusedStores``, and the others
    /// run (ferryd, `ferry sync`, `ferry status`).
    case setStoreApart
}

extension FerryConfiguration {
    /// The problems of the refused stores among `names` (every refused store when `names` is
    /// empty), nil when none of them is refused.
    public func problems(ofStores names: [String]) -> ConfigurationErrors? {
        let refused = refusedStores.filter { names.isEmpty || names.contains($0.name) }
        guard !refused.isEmpty else { return nil }
        return ConfigurationErrors(problems: refused.flatMap(\.problems.problems))
    }
}
