/// How people tell names apart: a title or an attendee's name compared ignoring case, accents (`équipe` is
/// `Equipe`) and spaces at either end or repeated inside, so `syncupsctl show equipe` finds "Équipe" and
/// "Ann " is seen as a second Ann.
public enum NameKey {
    /// The name folded for comparison: lower case, Latin letters without their accents, runs of white space
    /// as one space, none at the ends.
    public static func of(_ name: String) -> String {
        var key = ""
        var pendingSpace = false
        for character in name.lowercased() {
            if character.isWhitespace {
                pendingSpace = !key.isEmpty
                continue
            }
            if pendingSpace {
                key.append(" ")
                pendingSpace = false
            }
            key += base(of: character)
        }
        return key
    }

    /// A lower-case letter without its accent. Decomposed letters (`e` + U+0301) drop their combining marks;
    /// precomposed ones map through `bases` (FoundationEssentials has no Unicode decomposition).
    private static func base(of character: Character) -> String {
        let scalars = character.unicodeScalars
        if scalars.count > 1, let first = scalars.first, first.isASCII,
            scalars.dropFirst().allSatisfy({ $0.properties.generalCategory == .nonspacingMark })
        {
            return String(first)
        }
        return bases[character] ?? String(character)
    }

    /// Precomposed lower-case Latin letters and their bases (Latin-1 Supplement and Latin Extended-A).
    private static let bases: [Character: String] = {
        let groups: [(String, String)] = [
            ("àáâãäåāăą", "a"), ("æ", "ae"), ("çćĉċč", "c"), ("ďđ", "d"), ("èéêëēĕėęě", "e"), ("ĝğġģ", "g"),
            ("ĥħ", "h"), ("ìíîïĩīĭįı", "i"), ("ĳ", "ij"), ("ĵ", "j"), ("ķ", "k"), ("ĺļľŀł", "l"), ("ñńņňŉ", "n"),
            ("òóôõöøōŏő", "o"), ("œ", "oe"), ("ŕŗř", "r"), ("śŝşš", "s"), ("ß", "ss"), ("ţťŧ", "t"),
            ("ùúûüũūŭůűų", "u"), ("ŵ", "w"), ("ýÿŷ", "y"), ("źżž", "z"), ("þ", "th"), ("ð", "d"),
        ]
        var table: [Character: String] = [:]
        for (letters, base) in groups {
            for letter in letters { table[letter] = base }
        }
        return table
    }()
}
