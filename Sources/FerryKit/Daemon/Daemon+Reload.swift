import Foundation
import Logging

/// SIGHUP: the configuration read again and applied, or refused whole with the running one
/// kept; either way `ferry reload` reads the outcome from the runtime directory.
extension Daemon {
    func reload(_ scheduler: Scheduler) {
        notifier.reloading()
        reloadGeneration += 1
        logger.info("reloading \(configurationPath)", metadata: MessageID.reload.metadata)
        let runtime = configuration.global.runtimeDirectory
        do {
            let loaded = try ConfigurationLoader.load(path: configurationPath, environment: environment, storeProblems: .setStoreApart)
            if loaded.global.databasePath != configuration.global.databasePath {
                logger.warning("the database path changed to \(loaded.global.databasePath); it takes effect at the next restart, this process keeps \(database.path)")
            }
            let running = expansion.load(loaded)
            configureServices(running)
            status.line.reloadProblem = nil
            FerryLogging.level.level = loaded.global.logLevel
            logWarnings(loaded)
            schedulerEnvironment?.storeNames = Set(loaded.stores.map(\.name))
            scheduler.apply(running)
            forgetPassWaiters(keeping: Set(running.stores.map(\.name)))
            scheduler.resyncAll()
            let refused = loaded.refusedStores.isEmpty ? ""
                : "; not syncing \(loaded.refusedStores.map(\.name).joined(separator: ", ")), whose section has problems:\n"
                    + loaded.refusedStores.map(\.problems.description).joined(separator: "\n")
            publishReload(.ok, message: "reloaded: \(loaded.stores.count) store(s)" + refused, directory: runtime)
            logger.info("reloaded: \(loaded.stores.count) store(s); every store passes now, each from its cursor", metadata: MessageID.reload.metadata)
        } catch {
            let message = "\(error)"
            // STATUS= gets the first problem, short; the journal and `ferry reload` get them all.
            let count = error.problems.count
            let first = error.problems.first.map { "\($0)" } ?? message
            status.line.reloadProblem = first.shortened(to: 120) + (count > 1 ? " (and \(count - 1) more)" : "")
            logger.error("reload failed, keeping the running configuration: \(message)", metadata: MessageID.reloadFailed.metadata)
            publishReload(.error, message: message, directory: runtime)
        }
        notifier.ready(status: status.render(scheduler.snapshot))
    }

    func logWarnings(_ configuration: FerryConfiguration) {
        for warning in configuration.warnings {
            logger.warning("configuration: \(warning)")
        }
        // One line each, with the store's field, so the journal finds it by store.
        for refused in configuration.refusedStores {
            logger.error("store \(refused.name): \(refused.summary)", metadata: ["store": "\(refused.name)"])
        }
    }

    func publishReload(_ outcome: ReloadResult.Outcome, message: String, directory: String) {
        do {
            try ReloadAcknowledgement.publish(generation: reloadGeneration, result: outcome, message: message, directory: directory)
        } catch {
            logger.warning("cannot publish the reload result in \(directory): \(error)")
        }
    }
}
