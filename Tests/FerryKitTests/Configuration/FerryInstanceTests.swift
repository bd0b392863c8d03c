import Foundation
import Testing
@testable import FerryKit

/// `ferryd@NAME.service` and `ferry --instance NAME`: one name, the same files.
@Suite struct FerryInstanceTests {
    @Test func anInstanceHasTheFilesItsUnitGivesIt() throws {
        let instance = try FerryInstance("tenant-a")
        #expect(instance.configurationPath == "/etc/ferry/tenant-a.conf")
        #expect(instance.unit == "ferryd@tenant-a.service")
        let environment = instance.environment(["HOME": "/root"])
        #expect(GlobalConfiguration.defaultDatabasePath(environment: environment) == "/var/lib/ferry/tenant-a/ferry.db")
        #expect(GlobalConfiguration.defaultRuntimeDirectory(environment: environment) == "/run/ferry-tenant-a")
        #expect(ConfigurationLoader.defaultPath(environment: environment) == "/etc/ferry/tenant-a.conf")
        #expect(ConfigurationLoader.defaultPath(environment: instance.environment(["FERRY_CONFIG": "/elsewhere.conf"])) == "/elsewhere.conf")
    }

    @Test(arguments: ["", "../etc", "a/b", ".hidden", "with space", "é", String(repeating: "x", count: 65)])
    func aNameThatCannotBeAUnitsIsAUsageError(_ name: String) {
        #expect(throws: InstanceNameError.self) { try FerryInstance(name) }
        #expect(FerryExitCode.for(InstanceNameError(name: name)) == .usage)
    }

    @Test func theEnvironmentCanNameTheInstance() throws {
        #expect(try FerryInstance.fromEnvironment(["FERRY_INSTANCE": "b2"])?.name == "b2")
        #expect(try FerryInstance.fromEnvironment([:]) == nil)
    }

    @Test func aUnitsConfigurationReadOutsideItHasTheUnitsDirectories() {
        let service = ConfigurationLoader.serviceEnvironment(forConfiguration: "/etc/ferry/ferry.conf", ["HOME": "/home/app"])
        #expect(GlobalConfiguration.defaultDatabasePath(environment: service, userID: 1000) == "/var/lib/ferry/ferry.db")
        #expect(GlobalConfiguration.defaultRuntimeDirectory(environment: service, userID: 1000) == "/run/ferry")
        let instance = ConfigurationLoader.serviceEnvironment(forConfiguration: "/etc/ferry/tenant.conf", ["HOME": "/home/app"])
        #expect(GlobalConfiguration.defaultDatabasePath(environment: instance, userID: 1000) == "/var/lib/ferry/tenant/ferry.db")
        // Inside a unit, and for files elsewhere, nothing changes.
        let inside = ["STATE_DIRECTORY": "/var/lib/ferry/x", "RUNTIME_DIRECTORY": "/run/ferry/x"]
        #expect(ConfigurationLoader.serviceEnvironment(forConfiguration: "/etc/ferry/ferry.conf", inside) == inside)
        #expect(ConfigurationLoader.serviceEnvironment(forConfiguration: "/home/app/ferry.conf", ["HOME": "/home/app"]) == ["HOME": "/home/app"])
    }
}
