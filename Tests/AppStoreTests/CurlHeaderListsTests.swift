import CCurl
@testable import HTTPClient
import Testing

@testable import AppStore

/// The shared libcurl header lists: reused per set of lines, and bounded however many distinct sets pass through
/// (a list still used by a transfer is freed when its last user releases it).
@Suite struct CurlHeaderListsTests {
    @Test func theSameLinesShareOneListAndDistinctSetsStayBounded() {
        var lists = CurlHeaderLists(capacity: 4)
        let json = ["Content-Type: application/json"]
        let first = lists.acquire(json)
        #expect(lists.acquire(json) == first)
        lists.release(first)
        lists.release(first)
        // Many tokens over the process's life: the cache keeps at most `capacity` idle lists.
        for index in 0..<100 {
            let list = lists.acquire(["Authorization: Bearer token-\(index)"])
            lists.release(list)
        }
        #expect(lists.allocatedCount == 4)
        lists.freeAll()
        #expect(lists.allocatedCount == 0)
    }

    @Test func aListPushedOutWhileInUseLivesUntilItsLastTransferReleasesIt() {
        var lists = CurlHeaderLists(capacity: 2)
        let busy = lists.acquire(["A: 1"])
        let busyAgain = lists.acquire(["A: 1"])
        #expect(busy == busyAgain)
        _ = lists.acquire(["B: 1"])
        _ = lists.acquire(["C: 1"])  // pushes "A" out of the cache while two transfers still use it
        #expect(lists.allocatedCount == 3)
        lists.release(busy)
        #expect(lists.allocatedCount == 3)
        lists.release(busyAgain)
        #expect(lists.allocatedCount == 2)
        // A set asked for again after it was pushed out gets a new list.
        let fresh = lists.acquire(["A: 1"])
        #expect(fresh != nil)
        lists.release(fresh)
        lists.freeAll()
    }
}

/// The client's User-Agent and Accept-Encoding travel in every list, unless the request names the header itself.
@Suite struct CurlHeaderListsStandardLinesTests {
    static func lines(of list: UnsafeMutablePointer<curl_slist>?) -> [String] {
        var lines: [String] = []
        var node = list
        while let current = node {
            lines.append(String(cString: current.pointee.data))
            node = current.pointee.next
        }
        return lines
    }

    @Test func everyListCarriesTheStandardLinesUnlessTheRequestNamesThem() {
        let standard = CurlHeaderLists.standardLines(userAgent: "receipt-verifier")
        #expect(standard.first == "User-Agent: receipt-verifier")
        // This libcurl decodes at least deflate and gzip (zlib), and says so in libcurl's order.
        #expect(standard.last?.hasPrefix("Accept-Encoding: deflate, gzip") == true)
        var lists = CurlHeaderLists(standardLines: standard)
        let json = lists.acquire(["Content-Type: application/json"])
        #expect(Self.lines(of: json) == ["Content-Type: application/json"] + standard + ["Expect:"])
        let own = lists.acquire(["user-agent: mine", "Accept-Encoding: identity"])
        #expect(Self.lines(of: own) == ["user-agent: mine", "Accept-Encoding: identity", "Expect:"])
        lists.release(json)
        lists.release(own)
        lists.freeAll()
    }

    @Test func anEmptyUserAgentSendsNone() {
        #expect(!CurlHeaderLists.standardLines(userAgent: "").contains { $0.hasPrefix("User-Agent") })
    }
}
