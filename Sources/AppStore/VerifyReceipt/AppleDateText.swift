import Foundation

/// verifyReceipt's textual dates: `2019-10-19 09:30:48 Etc/GMT` (`*_date`) and
/// `2019-10-19 02:30:48 America/Los_Angeles` (`*_date_pst`): a calendar date, a 24-hour time to the second, and an
/// IANA time-zone name.
enum AppleDateText {
    /// Epoch milliseconds, or nil when `text` is not of that form (or names a time zone this system does not know).
    static func milliseconds(_ text: String) -> Int64? {
        let parts = text.trimmingWhitespace().split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3 else { return nil }
        let date = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        let time = parts[1].split(separator: ":", omittingEmptySubsequences: false)
        guard date.count == 3, time.count == 3, date[0].count == 4,
            date[1].count == 2, date[2].count == 2, time.allSatisfy({ $0.count == 2 }),
            let year = number(date[0]), let month = number(date[1]), let day = number(date[2]),
            let hour = number(time[0]), let minute = number(time[1]), let second = number(time[2]),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let localSeconds =
            daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(hour * 3_600 + minute * 60 + second)
        let zone = String(parts[2])
        switch zone {
        case "Etc/GMT", "Etc/UTC", "GMT", "UTC", "Etc/GMT+0", "Etc/GMT-0", "Etc/Zulu", "Z":
            return localSeconds * 1_000
        default:
            guard let timeZone = TimeZone(identifier: zone) else { return nil }
            // The offset at the instant the local time would be in UTC, then corrected once: exact except within
            // the hour a daylight-saving change makes ambiguous, where either reading is a real instant.
            func offset(at seconds: Int64) -> Int64 {
                Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds))))
            }
            return (localSeconds - offset(at: localSeconds - offset(at: localSeconds))) * 1_000
        }
    }

    private static func number(_ digits: Substring) -> Int? {
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int(digits)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
