/// A sync-up's colour theme: the SyncUps app's sixteen, in its order.
public enum Theme: String, CaseIterable, Sendable, Hashable {
    case bubblegum
    case buttercup
    case indigo
    case lavender
    case magenta
    case navy
    case orange
    case oxblood
    case periwinkle
    case poppy
    case purple
    case seafoam
    case sky
    case tan
    case teal
    case yellow

    /// The display name, as the app shows it ("Bubblegum").
    public var name: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }

    /// The colour of text drawn on the theme's main colour: black or white.
    public var accentColor: RGBColor {
        switch self {
        case .indigo, .magenta, .navy, .oxblood, .purple: .white
        default: .black
        }
    }

    /// The theme's main colour, from the app's asset catalogue (sRGB).
    public var mainColor: RGBColor {
        switch self {
        case .bubblegum: RGBColor(0.933, 0.502, 0.820)
        case .buttercup: RGBColor(1.000, 0.945, 0.588)
        case .indigo: RGBColor(0.212, 0.000, 0.443)
        case .lavender: RGBColor(0.812, 0.808, 1.000)
        case .magenta: RGBColor(0.647, 0.075, 0.467)
        case .navy: RGBColor(0.000, 0.078, 0.255)
        case .orange: RGBColor(1.000, 0.545, 0.259)
        case .oxblood: RGBColor(0.290, 0.027, 0.043)
        case .periwinkle: RGBColor(0.525, 0.510, 1.000)
        case .poppy: RGBColor(1.000, 0.369, 0.369)
        case .purple: RGBColor(0.569, 0.294, 0.949)
        case .seafoam: RGBColor(0.796, 0.918, 0.898)
        case .sky: RGBColor(0.431, 0.573, 1.000)
        case .tan: RGBColor(0.761, 0.608, 0.494)
        case .teal: RGBColor(0.133, 0.561, 0.620)
        case .yellow: RGBColor(1.000, 0.875, 0.302)
        }
    }

    /// Looks a theme up by name, ignoring case ("Orange" and "orange" are the same theme).
    public init?(named name: String) {
        guard let theme = Theme(rawValue: name.lowercased()) else { return nil }
        self = theme
    }
}

/// An sRGB colour with components from 0 to 1.
public struct RGBColor: Sendable, Hashable {
    public var red: Double
    public var green: Double
    public var blue: Double

    public init(_ red: Double, _ green: Double, _ blue: Double) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    public static let black = RGBColor(0, 0, 0)
    public static let white = RGBColor(1, 1, 1)

    /// `#RRGGBB`, the form status bars and Pango take.
    public var hex: String {
        func byte(_ component: Double) -> String {
            let value = Int((min(max(component, 0), 1) * 255).rounded())
            let digits = String(value, radix: 16, uppercase: true)
            return digits.count == 1 ? "0" + digits : digits
        }
        return "#" + byte(red) + byte(green) + byte(blue)
    }
}
