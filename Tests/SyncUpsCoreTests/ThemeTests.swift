import SyncUpsCore
import Testing

@Suite struct ThemeTests {
    @Test func listsTheAppsSixteenThemesInItsOrder() {
        #expect(
            Theme.allCases.map(\.rawValue) == [
                "bubblegum", "buttercup", "indigo", "lavender", "magenta", "navy", "orange", "oxblood", "periwinkle",
                "poppy", "purple", "seafoam", "sky", "tan", "teal", "yellow",
            ]
        )
    }

    @Test func usesWhiteAccentOnExactlyTheFiveDarkThemes() {
        let white = Theme.allCases.filter { $0.accentColor == .white }
        #expect(white == [.indigo, .magenta, .navy, .oxblood, .purple])
        #expect(Theme.allCases.filter { $0.accentColor == .black }.count == 11)
    }

    @Test func givesMainColoursAsHex() {
        #expect(Theme.bubblegum.mainColor.hex == "#EE80D1")
        #expect(Theme.navy.mainColor.hex == "#001441")
        #expect(Theme.yellow.mainColor.hex == "#FFDF4D")
        #expect(Theme.oxblood.accentColor.hex == "#FFFFFF")
    }

    @Test func capitalisesNamesAsTheAppDoes() {
        #expect(Theme.bubblegum.name == "Bubblegum")
        #expect(Theme.oxblood.name == "Oxblood")
    }

    @Test func looksUpNamesIgnoringCase() {
        #expect(Theme(named: "Orange") == .orange)
        #expect(Theme(named: "SKY") == .sky)
        #expect(Theme(named: "appOrange") == nil)
    }
}
