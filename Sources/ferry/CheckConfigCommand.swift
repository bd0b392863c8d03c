import ArgumentParser
import FerryKit
import Foundation

struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a configuration file and print every problem with file, line and key.")

    @Argument(help: "The file to check (default: --config, $FERRY_CONFIG, else /etc/ferry/ferry.conf).")
    var file: String?

    @Option(name: .shortAndLong, help: "The configuration file (the same as the argument).")
    var config: String?

    @OptionGroup var instance: InstanceOption

    func run() throws {
        let environment: [String: String]
        do { environment = try instance.environment() } catch { throw fail(error) }
        let path = file ?? config ?? ConfigurationLoader.defaultPath(environment: environment)
        do {
            // The same load ferryd runs at start and on reload: one validation everywhere.
            let configuration = try ConfigurationLoader.load(path: path, environment: environment)
            for warning in configuration.warnings {
                FileHandle.standardError.write(Data("warning: \(warning)\n".utf8))
            }
            print("\(path): ok, \(configuration.stores.count) store(s): \(configuration.stores.map(\.name).joined(separator: ", "))")
            print("database: \(configuration.global.databasePath)")
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(FerryExitCode.configuration.rawValue)
        }
    }
}
