import SyncUpsCore
import SyncUpsJSON
import SyncUpsProtocol

extension Syncupsctl {
    static let rawCommands: [Subcommand] = [
        Subcommand(
            name: "call",
            usage: "call COMMAND [JSON-ARGS]",
            summary: "Send any request and print its raw result, e.g. syncupsctl call syncups.get '{\"id\":\"5FD1\"}'.",
            spec: ArgumentSpec(positionals: 1...2)
        ) { context, arguments throws(CLIError) in
            var request = JSONObject()
            if arguments.positionals.count == 2 {
                guard case .object(let object)? = try? JSONParser().parse(arguments.positionals[1]) else {
                    throw .usage("the arguments must be a JSON object, e.g. '{\"id\":\"5FD1\"}'")
                }
                request = object
            }
            let result = try context.call(arguments.positionals[0], request)
            context.print(JSONWriter().string(result) + "\n")
        },
        Subcommand(
            name: "watch",
            usage: "watch [--topic TOPIC]…",
            summary: "Follow the daemon's events, one JSON line each, flushed.",
            details: "--topic TOPIC  syncups, session or daemon (repeat; default all)",
            spec: ArgumentSpec(valueOptions: ["topic"])
        ) { context, arguments throws(CLIError) in
            try Watch(context: context, topics: arguments.all("topic")).run()
        },
    ]
}

/// `syncupsctl watch`: subscribe, then print every event as it comes.
struct Watch {
    var context: Context
    var topics: [String]

    func run() throws(CLIError) {
        let connection = try context.connect()
        var arguments = JSONObject()
        if !topics.isEmpty { arguments.append("topics", .array(topics.map(JSONValue.string))) }
        arguments.append("snapshot", false)
        _ = try context.call(on: connection, "subscribe", arguments)
        while true {
            let event: (name: String, seq: Int?, data: JSONValue)
            do {
                event = try connection.nextEvent(timeout: nil)
            } catch {
                throw Context.cliError(error)
            }
            var line = JSONObject()
            line.append("event", .string(event.name))
            if let seq = event.seq { line.append("seq", .int(seq)) }
            line.append("data", event.data)
            guard context.output.out(JSONWriter().string(.object(line)) + "\n") else { return }
        }
    }
}
