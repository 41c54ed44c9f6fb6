import Testing

@testable import AppStore

@Suite struct AppleDateTextTests {
    @Test(arguments: [
        ("2019-10-19 09:30:48 Etc/GMT", Int64(1_571_477_448_000)),
        ("2019-10-19 02:30:48 America/Los_Angeles", Int64(1_571_477_448_000)),  // PDT, UTC-7
        ("2020-01-01 00:00:00 America/Los_Angeles", Int64(1_577_865_600_000)),  // PST, UTC-8
        ("1970-01-01 00:00:00 Etc/GMT", Int64(0)),
        ("2024-02-29 23:59:59 Etc/GMT", Int64(1_709_251_199_000)),
        ("  2013-08-01 07:00:00 Etc/GMT ", Int64(1_375_340_400_000)),
    ])
    func readsApplesDates(text: String, milliseconds: Int64) {
        #expect(AppleDateText.milliseconds(text) == milliseconds)
    }

    @Test(arguments: [
        "", "2019-10-19", "2019-10-19 09:30:48", "2019-10-19T09:30:48Z", "2019-13-19 09:30:48 Etc/GMT",
        "2023-02-29 09:30:48 Etc/GMT", "2019-10-19 24:00:00 Etc/GMT", "2019-10-19 09:30:48 Mars/Olympus",
        "1571477448000", "2019-1-19 09:30:48 Etc/GMT", "+019-10-19 09:30:48 Etc/GMT",
    ])
    func refusesAnythingElse(text: String) {
        #expect(AppleDateText.milliseconds(text) == nil)
    }
}
