/// Parses the RFC 3339 timestamps of receipt attributes (`2024-02-23T17:27:16Z`, optionally with fractional
/// seconds or a `±hh:mm` offset) into seconds since 1970.
enum RFC3339 {
    static func epochSeconds(_ text: String) -> Int64? {
        let characters = Array(text.utf8)
        guard characters.count >= 20 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                guard index < characters.count, characters[index] >= 48, characters[index] <= 57 else { return nil }
                value = value * 10 + Int64(characters[index] - 48)
            }
            return value
        }
        guard let year = number(0..<4), characters[4] == UInt8(ascii: "-"), let month = number(5..<7),
            characters[7] == UInt8(ascii: "-"), let day = number(8..<10),
            characters[10] == UInt8(ascii: "T") || characters[10] == UInt8(ascii: " "),
            let hour = number(11..<13), characters[13] == UInt8(ascii: ":"), let minute = number(14..<16),
            characters[16] == UInt8(ascii: ":"), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        if characters[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < characters.count, characters[index] >= 48, characters[index] <= 57 { index += 1 }
            guard index > start else { return nil }
        }
        guard index < characters.count else { return nil }
        var offset: Int64 = 0
        switch characters[index] {
        case UInt8(ascii: "Z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard let hours = number((index + 1)..<(index + 3)), index + 3 < characters.count,
                characters[index + 3] == UInt8(ascii: ":"), let minutes = number((index + 4)..<(index + 6))
            else { return nil }
            offset = (hours * 60 + minutes) * 60 * (characters[index] == UInt8(ascii: "+") ? 1 : -1)
            index += 6
        default:
            return nil
        }
        guard index == characters.count else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
