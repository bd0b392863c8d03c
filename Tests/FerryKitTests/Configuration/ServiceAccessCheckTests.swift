import FerryTestSupport
import Foundation
import Testing
@testable import FerryKit

/// Whether ferryd, run by its unit as its own user, can read the secrets a configuration
/// names, whoever runs `ferry check-config`: a spec over file facts and unit settings.
@Suite struct ServiceAccessCheckTests {
    static let ferry: uid_t = 990, ferryGroup: gid_t = 990, root: uid_t = 0

    /// /etc and /etc/ferry open to all; /etc/ferry/credentials root's alone; secrets below.
    static let files: [String: ServiceAccessCheck.FileFacts] = [
        "/etc": .init(uid: root, gid: 0, mode: 0o40755),
        "/etc/ferry": .init(uid: root, gid: 0, mode: 0o40755),
        "/etc/ferry/credentials": .init(uid: root, gid: 0, mode: 0o40700),
        "/etc/ferry/credentials/dav-password": .init(uid: root, gid: 0, mode: 0o100600),
        "/etc/ferry/secret-root": .init(uid: root, gid: 0, mode: 0o100600),
        "/etc/ferry/secret-ferry": .init(uid: ferry, gid: ferryGroup, mode: 0o100600),
        "/etc/ferry/secret-group": .init(uid: root, gid: ferryGroup, mode: 0o100640),
    ]

    static func check(loads credentials: Set<String>?) -> ServiceAccessCheck {
        ServiceAccessCheck(service: .init(unit: "ferryd.service", user: "ferry", uid: ferry, groups: [ferryGroup], loadedCredentials: credentials),
                           stat: { files[$0] })
    }

    @Test func aCredentialTheUnitDoesNotLoadIsAProblemNamingTheDropInAndTheRestart() throws {
        let origin = SecretOrigin.credential(name: "dav-password", path: "/etc/ferry/credentials/dav-password")
        #expect(Self.check(loads: ["dav-password"]).problem(origin) == nil)
        let problem = try #require(Self.check(loads: ["other"]).problem(origin))
        #expect(problem == "credential:dav-password is not loaded by ferryd.service (no LoadCredential=dav-password:…), so ferryd will not find it in $CREDENTIALS_DIRECTORY: add it with `systemctl edit ferryd.service`: [Service] LoadCredential=dav-password:/etc/ferry/credentials/dav-password, then `systemctl restart ferryd.service` (credentials are loaded at start, not at reload)")
        #expect(Self.check(loads: []).problem(origin) == problem)
    }

    @Test func withoutAUnitToAskTheServicesUserMustReadTheFileItself() throws {
        let origin = SecretOrigin.credential(name: "dav-password", path: "/etc/ferry/credentials/dav-password")
        let problem = try #require(Self.check(loads: nil).problem(origin))
        #expect(problem.hasPrefix("credential:dav-password: user ferry may not enter /etc/ferry/credentials (owner root, group root, mode 700)"))
        #expect(problem.contains("LoadCredential=dav-password:/etc/ferry/credentials/dav-password"))
    }

    @Test(arguments: [("/etc/ferry/secret-root", false), ("/etc/ferry/secret-ferry", true), ("/etc/ferry/secret-group", true),
                      ("/etc/ferry/absent", false)])
    func aFileMustBeReadableByTheServicesUser(path: String, readable: Bool) {
        let problem = Self.check(loads: nil).problem(.file(path: path))
        #expect((problem == nil) == readable, "\(problem ?? "readable")")
        if let problem { #expect(problem.hasPrefix("file:\(path): ") && problem.contains("chown ferry \(path)")) }
    }

    @Test func theUnitsSettingsAreReadWithDropInsAndResets() {
        let text = """
            # /etc/systemd/system/ferryd.service
            [Service]
            User=ferry
            LoadCredential=parse-rest-key:/etc/ferry/credentials/parse-rest-key
            #LoadCredential=commented:/x

            # /etc/systemd/system/ferryd.service.d/override.conf
            [Service]
            LoadCredential=
            LoadCredential=dav-password:/etc/ferry/credentials/dav-password
            SetCredential=inline:value
            User=sync
            """
        let settings = ServiceAccessCheck.Service.unitSettings(text)
        #expect(settings["User"]?.last == "sync")
        #expect(ServiceAccessCheck.Service.credentialNames(settings) == ["dav-password", "inline"])
    }

    /// The problems name each store once per secret, and a configuration whose secrets the
    /// service reads has none.
    @Test func everyStoresSecretsAreChecked() throws {
        let directory = try TemporaryDirectory()
        let secret = directory.path("secret")
        try Data("s3cret".utf8).write(to: URL(fileURLWithPath: secret))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret)
        try Data("""
            [store a]
            kind = parse
            url = https://parse.example.com/parse
            class = A
            application-id = x
            rest-api-key = file:\(secret)
            """.utf8).write(to: URL(fileURLWithPath: directory.path("ferry.conf")))
        let configuration = try ConfigurationLoader.load(path: directory.path("ferry.conf"), environment: [:])
        let owner = ServiceAccessCheck.systemStat(secret)?.uid ?? 0
        let asOwner = ServiceAccessCheck(service: .init(unit: "ferryd.service", user: "me", uid: owner, groups: [], loadedCredentials: nil))
        #expect(asOwner.problems(in: configuration).isEmpty)
        let asOther = ServiceAccessCheck(service: .init(unit: "ferryd.service", user: "other", uid: 4242, groups: [], loadedCredentials: nil))
        let problems = asOther.problems(in: configuration)
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("store a: file:\(secret): ") == true)
    }
}
