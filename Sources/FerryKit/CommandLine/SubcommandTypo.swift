/// A first argument that names no subcommand, said before the arguments after it are parsed:
/// `ferry synx --config f` said "Unknown option '--config'", about an option `sync` takes.
public enum SubcommandTypo {
    /// The one-line error for `arguments` (without the program name) when the first of them
    /// is a word that names none of `subcommands`: the nearest one offered, else the list.
    /// Nil when it names one, or is an option (`--help`, `--version`).
    public static func message(arguments: [String], subcommands: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-"), !subcommands.contains(first), first != "help" else { return nil }
        if let near = Suggestion.closest(to: first, in: subcommands) {
            return "unknown command '\(first)' (did you mean \(near)?)"
        }
        return "unknown command '\(first)' (commands: \(subcommands.joined(separator: ", ")))"
    }
}
