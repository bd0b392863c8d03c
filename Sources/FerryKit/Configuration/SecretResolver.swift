import Foundation

/// Turns a secret reference from the configuration into a ``Secret``.
///
/// Two references are accepted:
/// - `credential:NAME` reads `$CREDENTIALS_DIRECTORY/NAME`, which systemd fills from
///   `LoadCredential=NAME:/path` (readable only by the service, never on disk in clear for
///   other users). Outside the unit (an admin running `ferry check-config` or `ferry sync`
///   before a reload) it reads `credentials/NAME` beside the configuration file
///   (`/etc/ferry/credentials/NAME`), where the shipped unit's `LoadCredential=` lines take
///   them from;
/// - `file:/path` reads a file that must not be readable by group or others: a secret anyone on
///   the machine can read is refused rather than silently used.
///
/// Anything else (an inline password) is refused. No message ever contains what the reference
/// points to, nor the value written in the file when it is not a reference.
struct SecretResolver {
    var environment: [String: String]
    /// Directory relative `file:` references resolve against (the configuration file's).
    var baseDirectory: String
    /// Whether secrets are read, or only their references checked (`ferry status` and
    /// `ferry changes` read no remote, so they need no secret and no access to one).
    var handling: SecretHandling = .resolve

    /// The secret, or a problem message (never containing the secret).
    func resolve(_ reference: String) -> Result<Secret, SecretProblem> {
        if reference.hasPrefix("credential:") {
            let name = String(reference.dropFirst("credential:".count))
            guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                return .failure(.init("credential name must be a plain file name, as in LoadCredential=NAME:/path"))
            }
            if handling == .referencesOnly { return .success(Secret("", source: "credential \(name), not read")) }
            // Where the unit loads it from, beside the configuration.
            let fallback = ((baseDirectory as NSString).appendingPathComponent("credentials") as NSString).appendingPathComponent(name)
            let origin = SecretOrigin.credential(name: name, path: fallback)
            if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
                let path = (directory as NSString).appendingPathComponent(name)
                guard FileManager.default.fileExists(atPath: path) else {
                    return .failure(.init("credential \(name) is not among the credentials the unit loads ($CREDENTIALS_DIRECTORY has no \(name)): "
                        + "add LoadCredential=\(name):\(fallback) with `systemctl edit` on the unit, then restart it "
                        + "(credentials are loaded at start, not at reload)"))
                }
                return read(path: path, source: "credential \(name)", checkMode: false, origin: origin)
            }
            // Outside the unit, or a unit without LoadCredential= lines: the file itself.
            var info = stat()
            if stat(fallback, &info) != 0 {
                let denied = errno == EACCES
                let unit = environment["INVOCATION_ID"] != nil ? "the unit has no LoadCredential= lines ($CREDENTIALS_DIRECTORY is not set)"
                    : "$CREDENTIALS_DIRECTORY is not set (ferry runs outside the unit)"
                if denied, let notRoot = notRootAdvice(name: name, path: fallback) {
                    return .failure(.init(notRoot))
                }
                if denied {
                    return .failure(.init("credential:\(name): \(ReplicaPathDiagnosis.user()) may not read \(fallback), and \(unit): "
                        + "give it to the service with LoadCredential=\(name):\(fallback) in a drop-in (systemctl edit ferryd), "
                        + "then systemctl restart ferryd (credentials are loaded at start, not at reload)"))
                }
                return .failure(.init("credential:\(name) is not at \(fallback), and \(unit): put the secret there (chmod 600) "
                    + "and load it with LoadCredential=\(name):\(fallback) in the unit, or use file:/path"))
            }
            return read(path: fallback, source: "credential \(name) (\(fallback))", checkMode: true, origin: origin).mapError { problem in
                guard access(fallback, R_OK) != 0 else { return problem }
                if let notRoot = notRootAdvice(name: name, path: fallback) { return SecretProblem(notRoot) }
                return SecretProblem(problem.message + "; give it to the service with LoadCredential=\(name):\(fallback) in a drop-in "
                    + "(systemctl edit ferryd), then systemctl restart ferryd")
            }
        }
        if reference.hasPrefix("file:"), handling == .referencesOnly {
            return .success(Secret("", source: "\(reference), not read"))
        }
        if reference.hasPrefix("file:") {
            var path = String(reference.dropFirst("file:".count))
            guard !path.isEmpty else {
                return .failure(.init("file: reference needs a path, as in file:/etc/ferry/secret"))
            }
            if !path.hasPrefix("/") {
                path = (baseDirectory as NSString).appendingPathComponent(path)
            }
            path = (path as NSString).standardizingPath
            return read(path: path, source: "file \(path)", checkMode: true, origin: .file(path: path))
        }
        return .failure(.init("inline secrets are refused; write credential:NAME (systemd LoadCredential=) "
            + "or file:/path/to/secret (a file readable only by its owner)"))
    }

    /// For a person outside the unit who is not root: the credential files are root's, and the
    /// unit's `LoadCredential=` line may well be there already, so the cause to name is who
    /// runs the command (it said to add a line that was there). Nil as root or inside a unit.
    private func notRootAdvice(name: String, path: String) -> String? {
        Self.notRootAdvice(name: name, path: path, uid: getuid(), environment: environment)
    }

    static func notRootAdvice(name: String, path: String, uid: uid_t, environment: [String: String]) -> String? {
        guard uid != 0, environment["INVOCATION_ID"] == nil else { return nil }
        return "credential:\(name): \(ReplicaPathDiagnosis.user()) may not read \(path), which is root's: run this command as root "
            + "(sudo) to read the credentials as the service gets them (ferryd reads it through LoadCredential=\(name):\(path))"
    }

    private func read(path: String, source: String, checkMode: Bool, origin: SecretOrigin) -> Result<Secret, SecretProblem> {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return .failure(.init("\(source): cannot read \(path): \(String(cString: strerror(errno)))"))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(.init("\(source): \(path) is not a regular file"))
        }
        // Credentials from systemd are already private (0400, owned by the service user); a file
        // the admin manages must be too, or anyone on the machine could read the secret.
        if checkMode, info.st_mode & 0o077 != 0 {
            let mode = String(info.st_mode & 0o777, radix: 8)
            return .failure(.init("\(path) is readable by group or others (mode \(mode)); run: chmod 600 \(path)"))
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(.init("\(source): \(ReplicaPathDiagnosis.user()) may not read \(path) (\(ReplicaPathDiagnosis.ownership(path)))"))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            return .failure(.init("\(source): \(path) is not UTF-8 text"))
        }
        // Files written by `echo secret > file` end with a newline that is not part of the secret.
        let value = text.trimmingCharacters(in: .newlines)
        guard !value.isEmpty else {
            return .failure(.init("\(source): \(path) is empty"))
        }
        return .success(Secret(value, source: source, origin: origin))
    }
}

/// Why a secret reference could not be resolved; the message names paths, never values.
struct SecretProblem: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Whether a configuration load reads its secrets.
public enum SecretHandling: Sendable, Equatable {
    /// Read every secret (ferryd, `ferry sync`, `ferry check-config`).
    case resolve
    /// Check references only, read nothing: for commands that never talk to a remote.
    case referencesOnly
}
