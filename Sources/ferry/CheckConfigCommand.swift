import ArgumentParser
import FerryKit
import Foundation

struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a configuration file and print every problem with file, line and key.",
        discussion: """
        Loads the file as ferryd does (secrets included). For the service's own file (/etc/ferry/ferry.conf, \
        or an instance's), or with --service, it also checks that the service can read every secret as it runs: \
        each credential:NAME must be loaded by the unit (LoadCredential=NAME:PATH; credentials are loaded at \
        start, so a new one needs systemctl restart, not reload), and each file: must be readable by the unit's \
        User=. Exits 0 when all is well, 78 when not.
        """)

    @Argument(help: "The file to check (default: --config, $FERRY_CONFIG, else /etc/ferry/ferry.conf).", completion: .file(extensions: ["conf"]))
    var file: String?

    @Option(name: .shortAndLong, help: "The configuration file (the same as the argument).")
    var config: String?

    @OptionGroup var instance: InstanceOption

    @Flag(help: "Check the secrets as the service reads them (its unit's LoadCredential= and User=) whatever the file.")
    var service = false

    @Flag(help: .hidden)
    var listKeys = false

    func run() throws {
        if listKeys {
            // For the ferry.conf(5) generator: every key the reader takes, by section.
            for row in ConfigurationKeys.table { print("\(row.section)\t\(row.key)") }
            return
        }
        let environment: [String: String]
        do { environment = try instance.environment() } catch { throw fail(error) }
        let path = file ?? config ?? ConfigurationLoader.defaultPath(environment: environment)
        do {
            // The same load ferryd runs at start and on reload: one validation everywhere.
            let configuration = try ConfigurationLoader.load(path: path, environment: environment)
            for warning in configuration.warnings {
                FileHandle.standardError.write(Data("warning: \(warning)\n".utf8))
            }
            let unit = (try? instance.chosen())??.unit ?? "ferryd.service"
            if service || path == ConfigurationLoader.defaultPath(environment: environment) {
                if let running = ServiceAccessCheck.Service.reading(unit: unit) {
                    let problems = ServiceAccessCheck(service: running).problems(in: configuration)
                    if !problems.isEmpty {
                        for problem in problems { FileHandle.standardError.write(Data("\(path): \(problem)\n".utf8)) }
                        throw ExitCode(FerryExitCode.configuration.rawValue)
                    }
                } else if service {
                    FileHandle.standardError.write(Data("warning: the secrets were not checked as \(unit) reads them: its user does not exist here\n".utf8))
                }
            }
            print("\(path): ok, \(configuration.stores.count) store(s): \(configuration.stores.map(\.name).joined(separator: ", "))")
            print("database: \(configuration.global.databasePath)")
        } catch let exit as ExitCode {
            throw exit
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(FerryExitCode.for(error).rawValue)
        }
    }
}
