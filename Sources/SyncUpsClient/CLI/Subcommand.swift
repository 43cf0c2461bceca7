/// One syncupsctl command: its name, help, the options it takes, and what it does.
struct Subcommand: Sendable {
    var name: String
    var aliases: [String] = []
    var usage: String
    var summary: String
    var details: String = ""
    var spec: ArgumentSpec
    var run: @Sendable (Context, ParsedArguments) throws(CLIError) -> Void

    var helpText: String {
        "usage: syncupsctl \(usage)\n\n\(summary)\n" + (details.isEmpty ? "" : "\n\(details)\n")
    }
}

extension Syncupsctl {
    static let allCommands: [Subcommand] =
        daemonCommands + syncUpCommands + meetingCommands + [statsCommand, exportCommand] + sessionCommands
        + [scheduleCommand]
        + rawCommands
}
