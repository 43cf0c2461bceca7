// syncupsd: parse the configuration, build the daemon, run it. Everything else lives in SyncUpsDaemon.

import Glibc
import SyncUpsDaemon
import SyncUpsPOSIX
import SyncUpsProtocol
import SyncUpsSystemd

let environment = Subprocess.currentEnvironment()
let arguments = Array(CommandLine.arguments.dropFirst())
let configuration: Configuration
do {
    switch try ConfigurationLoader.load(arguments: arguments, environment: environment) {
    case .help:
        Console.out(ConfigurationLoader.helpText)
        exit(0)
    case .version:
        Console.out("syncupsd \(SyncUpsVersion.current)\n")
        exit(0)
    case .run(let loaded):
        configuration = loaded
    }
} catch {
    Console.error("syncupsd: \(error)\n")
    exit(64)
}

// Under systemd, stderr is the journal: log entries with priorities and fields; elsewhere, plain lines.
let logger =
    Journal.isStandardErrorJournal(environment: environment)
    ? Journal.logger(minimumLevel: configuration.logLevel)
    : Logger.standardError(minimumLevel: configuration.logLevel)
do throws(StartupError) {
    let daemon = try Daemon(
        configuration: configuration, arguments: arguments, environment: environment, logger: logger)
    exit(try daemon.run())
} catch {
    logger.error(error.description)
    exit(error.exitStatus)
}
