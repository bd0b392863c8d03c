@testable import FerryKit
import FerryTestSupport
import Foundation
import Testing

/// Secrets from `$CREDENTIALS_DIRECTORY` and from private files, with real files and modes.
@Suite struct SecretResolutionTests {
    static let secretValue = "s3cr3t-VALUE-never-printed"

    /// A fresh temporary directory, removed at the end of `body`.
    private func withDirectory<T>(_ body: (String) throws -> T) throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-secrets-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        return try body(directory)
    }

    private func write(_ text: String, to path: String, mode: Int) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    private func config(_ reference: String) -> String {
        """
        [store quotes]
        kind = parse
        url = https://parse.example.com/parse
        rest-api-key = \(reference)
        class = Quote
        application-id = app
        """
    }

    /// The REST API key a loaded Parse store carries.
    private func restKey(_ configuration: FerryConfiguration) -> Secret? {
        guard case .restAPI(let key) = configuration.stores.first?.options.as(ParseOptions.self)?.key else { return nil }
        return key
    }

    private func problems(_ text: String, file: String, environment: [String: String]) -> [ConfigurationProblem] {
        do {
            _ = try ConfigurationLoader.parse(text: text, file: file, environment: environment)
            return []
        } catch {
            // The whole error, as ferryd would log it, never holds the value.
            #expect(!"\(error)".contains(Self.secretValue))
            #expect(!String(reflecting: error).contains(Self.secretValue))
            return error.problems
        }
    }

    /// One store's missing credential fails that store alone when read as ferryd and
    /// `ferry sync` read (``StoreProblemHandling/setStoreApart``): the others are there, the
    /// refused one is named with its problem. `ferry check-config` still refuses the file.
    @Test func aMissingCredentialSetsItsStoreApart() throws {
        try withDirectory { directory in
            try write(Self.secretValue + "\n", to: directory + "/good-key", mode: 0o400)
            let text = config("credential:good-key") + "\n\n" + config("credential:missing-key").replacingOccurrences(of: "[store quotes]", with: "[store other]")
                + "\n\n[ferry]\nlog-level = debug\n"
            let environment = ["CREDENTIALS_DIRECTORY": directory]
            #expect(throws: ConfigurationErrors.self) {
                try ConfigurationLoader.parse(text: text, file: directory + "/f.conf", environment: environment)
            }
            let configuration = try ConfigurationLoader.parse(text: text, file: directory + "/f.conf", environment: environment, storeProblems: .setStoreApart)
            #expect(configuration.stores.map(\.name) == ["quotes"])
            #expect(configuration.refusedStores.map(\.name) == ["other"])
            #expect(configuration.refusedStores.first?.problems.problems.first?.key == "rest-api-key")
            #expect(configuration.problems(ofStores: ["quotes"]) == nil)
            #expect(configuration.problems(ofStores: []) != nil && configuration.problems(ofStores: ["other"]) != nil)
            // A problem outside any store's section still refuses the file whole.
            #expect(throws: ConfigurationErrors.self) {
                try ConfigurationLoader.parse(text: text + "log-levle = debug\n", file: directory + "/f.conf", environment: environment, storeProblems: .setStoreApart)
            }
        }
    }

    @Test func credential_isReadFromCredentialsDirectory() throws {
        try withDirectory { directory in
            try write(Self.secretValue + "\n", to: directory + "/parse-rest-key", mode: 0o400)
            let configuration = try ConfigurationLoader.parse(text: config("credential:parse-rest-key"), file: directory + "/f.conf",
                                                              environment: ["CREDENTIALS_DIRECTORY": directory])
            let secret = try #require(restKey(configuration))
            #expect(secret.value == Self.secretValue)
            #expect(secret.source == "credential parse-rest-key")
            // Neither the secret nor the whole configuration prints the value.
            #expect(!"\(secret)".contains(Self.secretValue))
            #expect(!"\(configuration)".contains(Self.secretValue))
            #expect(!String(reflecting: configuration).contains(Self.secretValue))
        }
    }

    @Test func credential_withoutCredentialsDirectoryOrFile_isAProblem() throws {
        try withDirectory { directory in
            let file = directory + "/f.conf"
            #expect(problems(config("credential:parse-rest-key"), file: file, environment: [:]) == [
                .init(file: file, line: 4, key: "rest-api-key",
                      message: "credential:parse-rest-key is not at \(directory)/credentials/parse-rest-key, and $CREDENTIALS_DIRECTORY is not set (ferry runs outside the unit): put the secret there (chmod 600) and load it with LoadCredential=parse-rest-key:\(directory)/credentials/parse-rest-key in the unit, or use file:/path"),
            ])
            // Under a unit without LoadCredential= lines, the message says so.
            let underUnit = problems(config("credential:parse-rest-key"), file: file, environment: ["INVOCATION_ID": "0123"])
            #expect(underUnit.first?.message.contains("the unit has no LoadCredential= lines ($CREDENTIALS_DIRECTORY is not set)") == true)
            // The unit loads credentials, but not this one: it must be added, and the service restarted.
            let missing = problems(config("credential:absent"), file: file, environment: ["CREDENTIALS_DIRECTORY": directory])
            #expect(missing == [.init(file: file, line: 4, key: "rest-api-key",
                                      message: "credential absent is not among the credentials the unit loads ($CREDENTIALS_DIRECTORY has no absent): add LoadCredential=absent:\(directory)/credentials/absent with `systemctl edit` on the unit, then restart it (credentials are loaded at start, not at reload)")])
            let traversal = problems(config("credential:../etc/shadow"), file: file, environment: ["CREDENTIALS_DIRECTORY": directory])
            #expect(traversal.first?.message == "credential name must be a plain file name, as in LoadCredential=NAME:/path")
        }
    }

    @Test func privateFile_isRead_relativeToTheConfiguration() throws {
        try withDirectory { directory in
            try write(Self.secretValue, to: directory + "/key", mode: 0o600)
            let absolute = try ConfigurationLoader.parse(text: config("file:\(directory)/key"), file: directory + "/f.conf", environment: [:])
            #expect(restKey(absolute)?.value == Self.secretValue)
            let relative = try ConfigurationLoader.parse(text: config("file:key"), file: directory + "/f.conf", environment: [:])
            #expect(restKey(relative)?.source == "file \(directory)/key")
        }
    }

    @Test(arguments: [0o640, 0o604, 0o644, 0o660, 0o601])
    func groupOrWorldReadableFile_isRefusedNamingPathAndFix(mode: Int) throws {
        try withDirectory { directory in
            let path = directory + "/key"
            try write(Self.secretValue, to: path, mode: mode)
            let file = directory + "/f.conf"
            #expect(problems(config("file:\(path)"), file: file, environment: [:]) == [
                .init(file: file, line: 4, key: "rest-api-key",
                      message: "\(path) is readable by group or others (mode \(String(mode, radix: 8))); run: chmod 600 \(path)"),
            ])
        }
    }

    @Test func inlineSecret_isRefusedWithoutEchoingIt() throws {
        try withDirectory { directory in
            let file = directory + "/f.conf"
            let found = problems(config(Self.secretValue), file: file, environment: [:])
            #expect(found == [.init(file: file, line: 4, key: "rest-api-key",
                                    message: "inline secrets are refused; write credential:NAME (systemd LoadCredential=) or file:/path/to/secret (a file readable only by its owner)")])
        }
    }

    @Test func emptySecretFile_isAProblem() throws {
        try withDirectory { directory in
            try write("\n", to: directory + "/key", mode: 0o600)
            let file = directory + "/f.conf"
            #expect(problems(config("file:key"), file: file, environment: [:]).first?.message == "file \(directory)/key: \(directory)/key is empty")
        }
    }

    @Test func credentialsInURL_areRefusedWithoutEchoingThem() throws {
        let found = problems("""
            [store a]
            kind = json
            url = https://admin:\(Self.secretValue)@api.example.com/
            """, file: "/x.conf", environment: [:])
        #expect(found == [.init(file: "/x.conf", line: 3, key: "url",
                                message: "credentials in the URL are refused; use username = and a password secret reference")])
    }

    @Test func basicAuthAndSecretHeaders_areReadByReference() throws {
        try withDirectory { directory in
            try write(Self.secretValue, to: directory + "/password", mode: 0o600)
            try write(Self.secretValue, to: directory + "/api-key", mode: 0o600)
            let configuration = try ConfigurationLoader.parse(text: """
                [store book]
                kind = carddav
                url = https://dav.example.com/book/
                username = alice
                password = file:password
                header.X-Api-Key = file:api-key
                """, file: directory + "/f.conf", environment: [:])
            let store = try #require(configuration.stores.first)
            guard case .basic(let username, let password) = store.options.as(WebDAVOptions.self)?.authentication else {
                Issue.record("no basic authentication: \(store.options)")
                return
            }
            #expect(username == "alice")
            #expect(password.value == Self.secretValue)
            #expect(store.headers.fields.map(\.name) == ["X-Api-Key"])
            guard case .secret(let key) = store.headers.fields.first?.value else {
                Issue.record("X-Api-Key is not a secret: \(store.headers)")
                return
            }
            #expect(key.value == Self.secretValue)
            #expect(key.source == "file \(directory)/api-key")
            #expect(!"\(configuration)".contains(Self.secretValue))
            #expect(!String(reflecting: configuration).contains(Self.secretValue))
        }
    }

    @Test func outsideTheUnit_credentialsAreReadBesideTheConfiguration_andStatusReadsNone() throws {
        try withDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory + "/credentials", withIntermediateDirectories: true)
            try write(Self.secretValue, to: directory + "/credentials/parse-rest-key", mode: 0o600)
            let configuration = try ConfigurationLoader.parse(text: config("credential:parse-rest-key"), file: directory + "/f.conf", environment: [:])
            #expect(restKey(configuration)?.value == Self.secretValue)
            // Status and changes read no secret: a reference that resolves nowhere is fine.
            let statusOnly = try ConfigurationLoader.parse(text: config("credential:elsewhere"), file: directory + "/f.conf", environment: [:],
                                                           secrets: .referencesOnly)
            #expect(restKey(statusOnly)?.value == "")
            #expect(throws: ConfigurationErrors.self) {
                try ConfigurationLoader.parse(text: config("inline-value"), file: directory + "/f.conf", environment: [:], secrets: .referencesOnly)
            }
        }
    }
}

/// A person who is not root, outside the unit, is told that is why a credential file is out of
/// reach (it was told to add a `LoadCredential=` line the unit already had).
@Suite struct NotRootCredentialTests {
    @Test func theCauseNamedIsWhoRunsTheCommand() throws {
        let advice = try #require(SecretResolver.notRootAdvice(name: "parse-key", path: "/etc/ferry/credentials/parse-key", uid: 1000, environment: [:]))
        #expect(advice.contains("as root") && !advice.contains("add LoadCredential"))
        #expect(SecretResolver.notRootAdvice(name: "k", path: "/p", uid: 0, environment: [:]) == nil)
        #expect(SecretResolver.notRootAdvice(name: "k", path: "/p", uid: 1000, environment: ["INVOCATION_ID": "x"]) == nil)
    }
}
