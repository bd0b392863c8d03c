import Foundation

/// Whether ferryd, run by its unit, will be able to read the secrets a configuration names:
/// `ferry check-config` runs as root or as an admin, who can read files the service's user
/// cannot, and outside the unit, where `credential:NAME` falls back to
/// `/etc/ferry/credentials/NAME`. The service reads a credential only from
/// `$CREDENTIALS_DIRECTORY`, which systemd fills from the unit's `LoadCredential=` lines when
/// it starts the service (a reload does not), and a `file:` only as its own user.
///
/// A pure decision over what was read from the system (``Facts``), so its tests read as a spec.
public struct ServiceAccessCheck: Sendable {
    /// Who the service runs as, and what its unit loads.
    public struct Service: Sendable, Equatable {
        /// The unit, for the advice (`ferryd.service`, `ferryd@NAME.service`).
        public var unit: String
        public var user: String
        public var uid: uid_t
        /// The user's primary and supplementary groups.
        public var groups: Set<gid_t>
        /// The credential names the unit loads (`LoadCredential=`, `SetCredential=` and their
        /// encrypted forms); nil when the unit could not be read (no systemd here).
        public var loadedCredentials: Set<String>?

        public init(unit: String, user: String, uid: uid_t, groups: Set<gid_t>, loadedCredentials: Set<String>?) {
            self.unit = unit
            self.user = user
            self.uid = uid
            self.groups = groups
            self.loadedCredentials = loadedCredentials
        }
    }

    /// A file's owner, group and mode, as `stat` says.
    public struct FileFacts: Sendable, Equatable {
        public var uid: uid_t
        public var gid: gid_t
        public var mode: mode_t

        public init(uid: uid_t, gid: gid_t, mode: mode_t) {
            self.uid = uid
            self.gid = gid
            self.mode = mode
        }
    }

    public var service: Service
    /// `stat` of a path; nil when it does not exist. Injected so tests need no root.
    public var stat: @Sendable (String) -> FileFacts?

    public init(service: Service, stat: @escaping @Sendable (String) -> FileFacts? = ServiceAccessCheck.systemStat) {
        self.service = service
        self.stat = stat
    }

    /// What is wrong with each secret of `configuration` for the service, one line each,
    /// naming the store and the fix; empty when the service can read them all.
    public func problems(in configuration: FerryConfiguration) -> [String] {
        var problems: [String] = []
        var seen = Set<String>()
        for store in configuration.stores {
            for secret in store.secrets + [store.heartbeat?.url].compactMap(\.self) {
                guard let origin = secret.origin, let problem = problem(origin) else { continue }
                let line = "store \(store.name): \(problem)"
                if seen.insert(line).inserted { problems.append(line) }
            }
        }
        return problems
    }

    /// What keeps the service from reading `origin`, or nil.
    public func problem(_ origin: SecretOrigin) -> String? {
        switch origin {
        case .credential(let name, let path):
            if let loaded = service.loadedCredentials {
                guard !loaded.contains(name) else { return nil }
                return "credential:\(name) is not loaded by \(service.unit) (no LoadCredential=\(name):…), so ferryd will not find it in "
                    + "$CREDENTIALS_DIRECTORY: add it with `systemctl edit \(service.unit)`: [Service] LoadCredential=\(name):\(path), "
                    + "then `systemctl restart \(service.unit)` (credentials are loaded at start, not at reload)"
            }
            // No unit to ask: the service can still read the file itself, as ferryd outside
            // systemd does.
            guard let reason = unreadable(path) else { return nil }
            return "credential:\(name): \(reason); under systemd give it to the service with LoadCredential=\(name):\(path) "
                + "in a drop-in (`systemctl edit \(service.unit)`), then restart it"
        case .file(let path):
            guard let reason = unreadable(path) else { return nil }
            return "file:\(path): \(reason); make the file the service's: chown \(service.user) \(path) (keep mode 600), "
                + "or use credential:NAME with LoadCredential="
        }
    }

    /// Why the service's user cannot read `path` (or reach it), or nil when it can.
    func unreadable(_ path: String) -> String? {
        guard let file = stat(path) else { return "\(path) does not exist" }
        var directory = (path as NSString).deletingLastPathComponent
        var parents: [String] = []
        while !directory.isEmpty, directory != "/" {
            parents.append(directory)
            directory = (directory as NSString).deletingLastPathComponent
        }
        for parent in parents.reversed() {
            guard let facts = stat(parent) else { return "\(parent) does not exist" }
            if !allows(facts, bit: 0o1) {
                return "user \(service.user) may not enter \(parent) (\(Self.describe(facts)))"
            }
        }
        if !allows(file, bit: 0o4) {
            return "user \(service.user) may not read it (\(Self.describe(file)))"
        }
        return nil
    }

    /// Whether the service's user has `bit` (4 read, 1 search) on a file with `facts`.
    private func allows(_ facts: FileFacts, bit: mode_t) -> Bool {
        if service.uid == 0 { return true }
        if facts.uid == service.uid { return facts.mode & (bit << 6) != 0 }
        if service.groups.contains(facts.gid) { return facts.mode & (bit << 3) != 0 }
        return facts.mode & bit != 0
    }

    static func describe(_ facts: FileFacts) -> String {
        let owner = ReplicaPathDiagnosis.userName(facts.uid) ?? "\(facts.uid)"
        let group = ReplicaPathDiagnosis.groupName(facts.gid) ?? "\(facts.gid)"
        return "owner \(owner), group \(group), mode \(String(facts.mode & 0o7777, radix: 8))"
    }

    @Sendable public static func systemStat(_ path: String) -> FileFacts? { fileFacts(path) }
}

/// `stat(2)` of `path` (outside the type, whose `stat` property would shadow the call).
private func fileFacts(_ path: String) -> ServiceAccessCheck.FileFacts? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return ServiceAccessCheck.FileFacts(uid: info.st_uid, gid: info.st_gid, mode: info.st_mode)
}

extension ServiceAccessCheck.Service {
    /// The service as this machine defines it: the unit's `User=` and credentials from
    /// `systemctl cat` (which shows drop-ins too), the user's ids from the user database. Nil
    /// when the user does not exist here (nothing to check as).
    public static func reading(unit: String, defaultUser: String = "ferry") -> Self? {
        let text = Self.systemctlCat(unit)
        let settings = text.map(Self.unitSettings) ?? [:]
        let user = settings["User"]?.last.flatMap { $0.isEmpty ? nil : $0 } ?? defaultUser
        guard let entry = getpwnam(user) else { return nil }
        let uid = entry.pointee.pw_uid, gid = entry.pointee.pw_gid
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(user, gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(user, gid, &groups, &count)
        }
        let credentials = text.map { _ in Self.credentialNames(settings) }
        return Self(unit: unit, user: user, uid: uid, groups: Set(groups.prefix(Int(max(count, 0)))).union([gid]),
                    loadedCredentials: credentials)
    }

    /// Every `KEY=VALUE` of the unit's files, in order (an empty value resets a list).
    static func unitSettings(_ text: String) -> [String: [String]] {
        var settings: [String: [String]] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.hasPrefix("#"), !trimmed.hasPrefix(";"), !trimmed.hasPrefix("["), let equals = trimmed.firstIndex(of: "=") else { continue }
            let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
            let value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.isEmpty { settings[key] = [""] } else { settings[key, default: []].append(value) }
        }
        return settings
    }

    static func credentialNames(_ settings: [String: [String]]) -> Set<String> {
        var names = Set<String>()
        for key in ["LoadCredential", "LoadCredentialEncrypted", "SetCredential", "SetCredentialEncrypted"] {
            for value in settings[key] ?? [] where !value.isEmpty {
                names.insert(String(value.prefix { $0 != ":" }))
            }
        }
        return names
    }

    /// `systemctl cat UNIT`, or nil without systemd or without the unit.
    private static func systemctlCat(_ unit: String) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/systemctl")
        process.arguments = ["cat", "--no-pager", unit]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
