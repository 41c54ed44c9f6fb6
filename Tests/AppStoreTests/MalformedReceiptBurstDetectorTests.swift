import Testing

@testable import AppStore

/// The 21002-burst detector, without threads or clocks: time is a number passed in.
@Suite struct MalformedReceiptBurstDetectorTests {
    static let configuration = MalformedReceiptBurstDetector.Configuration(
        windowSize: 10, minimumAnswers: 5, burstShare: 0.5, minimumReceipts: 3, maximumAge: .seconds(60))
    static let second: UInt64 = 1_000_000_000

    /// Records `answers` one millisecond apart from `startNs`; returns the transitions seen.
    static func feed(
        _ detector: inout MalformedReceiptBurstDetector, _ answers: [MalformedReceiptBurstDetector.Answer],
        startNs: UInt64 = 0
    ) -> [MalformedReceiptBurstDetector.Transition] {
        var transitions: [MalformedReceiptBurstDetector.Transition] = []
        for (index, answer) in answers.enumerated() {
            if let transition = detector.record(answer, nowNs: startNs + UInt64(index) * 1_000_000) {
                transitions.append(transition)
            }
        }
        return transitions
    }

    @Test func oneReceiptAnswered21002AgainAndAgainIsNeverABurst() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        let transitions = Self.feed(&detector, Array(repeating: .malformed(receipt: 7), count: 30))
        #expect(transitions.isEmpty)
        #expect(!detector.isBurst)
        #expect(detector.malformedReceiptsInWindow == 1)
    }

    @Test func mostAnswers21002AcrossSeveralReceiptsIsABurst() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        let transitions = Self.feed(
            &detector, [.other, .malformed(receipt: 1), .malformed(receipt: 2), .other, .malformed(receipt: 3)])
        #expect(transitions == [.started])
        #expect(detector.isBurst)
        #expect(detector.answersInWindow == 5)
        #expect(detector.malformedInWindow == 3)
    }

    @Test func fewerAnswersThanTheMinimumAreNoBurst() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        let transitions = Self.feed(
            &detector, [.malformed(receipt: 1), .malformed(receipt: 2), .malformed(receipt: 3), .malformed(receipt: 4)])
        #expect(transitions.isEmpty)
        #expect(!detector.isBurst)
    }

    @Test func scattered21002AmongValidAnswersIsNoBurst() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        var answers: [MalformedReceiptBurstDetector.Answer] = []
        for receipt in 0..<20 {
            answers += [.other, .other, .malformed(receipt: receipt)]
        }
        #expect(Self.feed(&detector, answers).isEmpty)
        #expect(detector.answersInWindow == 10, "the window keeps the last windowSize answers")
    }

    @Test func aBurstEndsWhenApplesAnswersAreMostlyReadableAgain() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        let burst = (0..<10).map { MalformedReceiptBurstDetector.Answer.malformed(receipt: $0) }
        #expect(Self.feed(&detector, burst) == [.started])
        // Four readable answers leave 6 of 10 at 21002: still a burst. The sixth brings it to 4 of 10.
        #expect(Self.feed(&detector, Array(repeating: .other, count: 4), startNs: Self.second).isEmpty)
        #expect(detector.isBurst)
        #expect(Self.feed(&detector, [.other, .other], startNs: 2 * Self.second) == [.ended])
        #expect(!detector.isBurst)
    }

    @Test func aBurstDoesNotEndByTimeAlone() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        let burst = (0..<6).map { MalformedReceiptBurstDetector.Answer.malformed(receipt: $0) }
        #expect(Self.feed(&detector, burst) == [.started])
        // An hour later (the breaker held work back), a probe still answered 21002 is part of the outage.
        #expect(detector.record(.malformed(receipt: 99), nowNs: 3_600 * Self.second) == nil)
        #expect(detector.isBurst)
    }

    @Test func probesOfOneReceiptWhileTheBreakerIsOpenKeepTheBurst() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        let burst = (0..<6).map { MalformedReceiptBurstDetector.Answer.malformed(receipt: $0) }
        #expect(Self.feed(&detector, burst) == [.started])
        // The breaker lets one probe through at a time, for the same receipt: the window (10) fills with its 21002s
        // alone, fewer receipts than it takes to start a burst, and the outage goes on.
        let probes = Array(repeating: MalformedReceiptBurstDetector.Answer.malformed(receipt: 0), count: 12)
        #expect(Self.feed(&detector, probes, startNs: Self.second).isEmpty)
        #expect(detector.isBurst)
        #expect(detector.malformedReceiptsInWindow == 1)
        // Apple reads receipts again: the burst ends by the share of readable answers.
        #expect(Self.feed(&detector, Array(repeating: .other, count: 6), startNs: 2 * Self.second) == [.ended])
    }

    @Test func aReceiptAloneAnswered21002OnAQuietDayMayBeJudged() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        _ = Self.feed(&detector, [.malformed(receipt: 7), .malformed(receipt: 7)])
        #expect(detector.mayJudgeMalformed(receipt: 7))
    }

    @Test func whileABurstMayBeFormingNoReceiptIsJudged() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        // Three answers, fewer than the five it takes to call a burst, all 21002, for two receipts.
        _ = Self.feed(&detector, [.malformed(receipt: 7), .malformed(receipt: 8), .malformed(receipt: 7)])
        #expect(!detector.isBurst)
        #expect(!detector.mayJudgeMalformed(receipt: 7))
        #expect(!detector.mayJudgeMalformed(receipt: 8))
    }

    @Test func withReadableAnswersAroundIt21002IsJudged() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        // Too few answers to judge a burst, but Apple reads most receipts: 7's 21002s are its own.
        _ = Self.feed(&detector, [.other, .malformed(receipt: 8), .other, .other, .malformed(receipt: 7)])
        #expect(detector.mayJudgeMalformed(receipt: 7))
        // Enough answers and no burst (two receipts, three needed): judged.
        var enough = MalformedReceiptBurstDetector(configuration: Self.configuration)
        let twoReceipts: [MalformedReceiptBurstDetector.Answer] = [.malformed(receipt: 7), .malformed(receipt: 8)]
        _ = Self.feed(&enough, twoReceipts + twoReceipts + twoReceipts)
        #expect(!enough.isBurst)
        #expect(enough.mayJudgeMalformed(receipt: 7))
    }

    @Test func duringABurstNoReceiptIsJudged() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        _ = Self.feed(&detector, (0..<6).map { .malformed(receipt: $0) })
        #expect(detector.isBurst)
        #expect(!detector.mayJudgeMalformed(receipt: 0))
    }

    @Test func outsideABurstOldAnswersAreForgotten() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        // Four 21002s for four receipts, then a fifth two minutes later: the first four are too old to count.
        #expect(
            Self.feed(
                &detector,
                [.malformed(receipt: 1), .malformed(receipt: 2), .malformed(receipt: 3), .malformed(receipt: 4)]
            ).isEmpty)
        #expect(detector.record(.malformed(receipt: 5), nowNs: 120 * Self.second) == nil)
        #expect(detector.answersInWindow == 1)
        #expect(!detector.isBurst)
    }

    @Test func theWindowForgetsTheOldestAnswerAndItsReceipt() {
        var detector = MalformedReceiptBurstDetector(configuration: Self.configuration)
        _ = Self.feed(&detector, [.malformed(receipt: 1)] + Array(repeating: .other, count: 10))
        #expect(detector.answersInWindow == 10)
        #expect(detector.malformedInWindow == 0)
        #expect(detector.malformedReceiptsInWindow == 0)
    }
}
