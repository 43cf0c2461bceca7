/// What reading the configuration again (on SIGHUP) changes, option by option, from `ConfigurationOption.all`:
/// the options that apply at run time (at once, or from the next meeting) and those that need a restart.
public struct ConfigurationReload: Sendable, Equatable {
    /// One option whose value differs.
    public struct Change: Sendable, Equatable, CustomStringConvertible {
        public var option: String
        public var old: String?
        public var new: String?

        /// `log-level: info -> debug`.
        public var description: String { "\(option): \(old ?? "unset") -> \(new ?? "unset")" }
    }

    /// What applies now.
    public var appliedAtOnce: [Change] = []
    /// What the next meeting uses (the running one keeps what it started with).
    public var appliedFromNextMeeting: [Change] = []
    /// What differs from the values the daemon started with but cannot change while it runs.
    public var needsRestart: [Change] = []

    /// Compares `new` with the running configuration: `started` for the options read only at start,
    /// `current` (the last reload's) for the others.
    public init(started: Configuration, current: Configuration, new: Configuration) {
        for option in ConfigurationOption.all {
            let before = option.value(option.reload == .never ? started : current)
            let after = option.value(new)
            guard before != after else { continue }
            let change = Change(option: option.name, old: before, new: after)
            switch option.reload {
            case .never: needsRestart.append(change)
            case .atOnce: appliedAtOnce.append(change)
            case .nextMeeting: appliedFromNextMeeting.append(change)
            }
        }
    }

    /// Whether anything applies.
    public var changesAnything: Bool { !appliedAtOnce.isEmpty || !appliedFromNextMeeting.isEmpty }

    /// The options the file sets (to other than the default) that the command line overrides, each with the
    /// file's value as `old` and the one in force as `new`: a reload cannot apply them, and should say why.
    public static func shadowed(file: Configuration, effective: Configuration) -> [Change] {
        ConfigurationOption.all.compactMap { option in
            let inFile = option.value(file)
            let inForce = option.value(effective)
            guard inFile != inForce, inFile != option.value(Configuration()) else { return nil }
            return Change(option: option.name, old: inFile, new: inForce)
        }
    }
}
