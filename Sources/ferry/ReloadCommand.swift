import ArgumentParser
import FerryKit
import Foundation

struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Make a running ferryd re-read its configuration and sync every store now (no rebuild: that is ferry resync), and wait until it has.",
        discussion: "This is what systemd's ExecReload= runs: it returns only after ferryd acknowledged, and fails when ferryd refused the new configuration (ferryd then keeps the old one).")

    @Option(help: "ferryd's process id (default: $MAINPID, else the pid file in the runtime directory); a process that is not ferryd is never signalled.")
    var pid: Int32?

    @Option(help: "ferryd's runtime directory (default: $RUNTIME_DIRECTORY, else /run/ferry).")
    var runtimeDirectory: String?

    @Option(help: "Seconds to wait for the acknowledgement.")
    var timeout: Int = 30

    @Option(name: .shortAndLong, help: "Check this configuration file first, and do not signal ferryd when it has problems.")
    var config: String?

    @OptionGroup var instance: InstanceOption

    func run() throws {
        let chosen: FerryInstance?
        do { chosen = try instance.chosen() } catch { throw fail(error) }
        let environment = chosen?.environment(ProcessInfo.processInfo.environment) ?? ProcessInfo.processInfo.environment
        let directory = runtimeDirectory ?? GlobalConfiguration.defaultRuntimeDirectory(environment: environment)
        if let config = config ?? chosen?.configurationPath {
            // ferryd would refuse it and keep the old configuration; say why without asking it.
            do { _ = try ConfigurationLoader.load(path: config, environment: environment) } catch { throw fail(error) }
        }
        do {
            let target = try ReloadTarget.resolve(explicit: pid, environment: environment, directory: directory)
            let result = try ReloadAcknowledgement.requestReload(pid: target, directory: directory, timeout: .seconds(timeout))
            guard result.succeeded else {
                FileHandle.standardError.write(Data("ferry: ferryd refused the new configuration and keeps running on the old one:\n\(result.message)\n".utf8))
                throw ExitCode(FerryExitCode.configuration.rawValue)
            }
            print(result.message)
        } catch let error as ReloadError {
            throw fail(error)
        }
    }
}
