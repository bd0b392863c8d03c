import Foundation

/// Keeps a one-shot command from writing the service's replica by accident.
///
/// Root's default database is the service's (so `sudo ferry status` reads what ferryd
/// writes). Root running `ferry sync` (or push, resync, auth, a conflict's resolution) with a
/// configuration file other than the service's, one that names no `database =`, would
/// therefore write its stores into `/var/lib/ferry/ferry.db` beside ferryd's: a test
/// configuration tried with sudo. That is refused, whichever way the file was named (`-c`,
/// `$FERRY_CONFIG`), saying how to give it a database of its own.
public enum ServiceReplicaGuard {
    /// Why the command must not go on, or nil.
    /// - Parameters:
    ///   - file: the configuration file the command read.
    ///   - serviceFile: the file the service reads (`/etc/ferry/ferry.conf`, or an
    ///     instance's `/etc/ferry/NAME.conf`).
    ///   - databaseOption: `--database`, when given.
    public static func refusal(file: String, serviceFile: String, global: GlobalConfiguration, databaseOption: String?,
                               effectiveUser: uid_t = geteuid()) -> String? {
        guard effectiveUser == 0, databaseOption == nil, global.databaseIsDefault,
              (file as NSString).standardizingPath != (serviceFile as NSString).standardizingPath else { return nil }
        return "\(file) sets no database, so as root it would write the service's replica \(global.databasePath); "
            + "set database = in its [ferry] section, or pass --database PATH"
    }
}
