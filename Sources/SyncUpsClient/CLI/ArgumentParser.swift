import SyncUpsCore

/// The options a subcommand takes, and what the command line gave it.
struct ParsedArguments {
    var positionals: [String] = []
    var values: [String: [String]] = [:]
    var flags: Set<String> = []

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }
}

/// A small hand-written parser in the shape of swift-argument-parser (which is not available here):
/// `--name value`, `--name=value`, repeated options, boolean flags, `--` ending options.
struct ArgumentSpec: Sendable {
    var valueOptions: Set<String> = []
    var flagOptions: Set<String> = []
    var positionals: ClosedRange<Int> = 0...0

    /// `usage`, the command's usage line, is quoted when an argument is missing: it names what is.
    func parse(_ arguments: [String], command: String, usage: String? = nil) throws(CLIError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("--") || argument == "-" {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String? = nil
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if flagOptions.contains(name) {
                guard inlineValue == nil else { throw .usage("--\(name) takes no value") }
                parsed.flags.insert(name)
            } else if valueOptions.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw .usage("--\(name) needs a value") }
                    value = arguments[index]
                    index += 1
                }
                parsed.values[name, default: []].append(value)
            } else {
                let known = valueOptions.union(flagOptions).map { "--" + $0 } + Syncupsctl.globalOptions
                throw .usage(
                    "unknown option --\(name) for \(command)\(Suggestion.phrase(for: "--" + name, among: known)); see syncupsctl \(command) --help"
                )
            }
        }
        guard positionals.contains(parsed.positionals.count) else {
            if parsed.positionals.count < positionals.lowerBound {
                throw .usage(
                    "\(command): missing argument; usage: syncupsctl \(usage ?? command) (see syncupsctl \(command) --help)"
                )
            }
            throw .usage("\(command): unexpected argument \"\(parsed.positionals[positionals.upperBound])\"")
        }
        return parsed
    }
}
