import ArgumentParser
import FerryKit
import Foundation

struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a configuration file and print every problem with file, line and key.")

    @Argument(help: "The file to check (default: $FERRY_CONFIG, else /etc/ferry/ferry.conf).")
    var file: String?

    func run() throws {
        let path = file ?? ConfigurationLoader.defaultPath(environment: ProcessInfo.processInfo.environment)
        do {
            let configuration = try ConfigurationLoader.load(path: path)
            var problems: [String] = []
            for store in configuration.stores {
                problems += RemoteSourceFactory.validateOptions(of: store).map { "\(store.location): store \(store.name): \($0)" }
            }
            guard problems.isEmpty else {
                problems.forEach { FileHandle.standardError.write(Data("\($0)\n".utf8)) }
                throw ExitCode(FerryExitCode.configuration.rawValue)
            }
            print("\(path): ok, \(configuration.stores.count) store(s): \(configuration.stores.map(\.name).joined(separator: ", "))")
            print("database: \(configuration.global.databasePath)")
        } catch let errors as ConfigurationErrors {
            FileHandle.standardError.write(Data("\(errors)\n".utf8))
            throw ExitCode(FerryExitCode.configuration.rawValue)
        }
    }
}
