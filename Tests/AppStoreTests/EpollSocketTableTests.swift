import CCurl
import Glibc
@testable import HTTPClient
import Testing

@testable import AppStore

/// The epoll bookkeeping of libcurl's sockets, with real sockets: a descriptor number reused after a close must be
/// watched again.
@Suite struct EpollSocketTableTests {
    /// A connected pair of Unix sockets; the caller closes both.
    private func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    /// Descriptors epoll reports ready right now.
    private func ready(_ epoll: Int32) -> [Int32] {
        var descriptors = [Int32](repeating: -1, count: 16)
        var events = [UInt32](repeating: 0, count: 16)
        let count = ccurl_epoll_wait_us(epoll, &descriptors, &events, 16, 0)
        return Array(descriptors.prefix(Int(max(0, count))))
    }

    private func send(_ socket: Int32) {
        var byte: UInt8 = 1
        #expect(write(socket, &byte, 1) == 1)
    }

    /// Closes `socket` behind the table's back and puts a new socket under the same number; returns the new peer.
    private func reuseNumber(of socket: Int32) throws -> Int32 {
        let (replacement, peer) = try socketPair()
        close(socket)
        try #require(dup2(replacement, socket) == socket)
        close(replacement)
        return peer
    }

    @Test func aParkedNumberReusedForInputIsWatchedAgain() throws {
        let epoll = ccurl_epoll_create()
        defer { close(epoll) }
        var table = EpollSocketTable(epollDescriptor: epoll)
        let (socket, firstPeer) = try socketPair()
        defer { close(firstPeer) }
        table.watch(socket: socket, what: 1)  // IN
        table.watch(socket: socket, what: 4)  // REMOVE: parked, still registered
        #expect(table.isParked(socket))
        // Closed without the close-socket callback (as libcurl's resolver wake-up pair is): the kernel drops it.
        let peer = try reuseNumber(of: socket)
        defer {
            close(peer)
            close(socket)
        }
        table.watch(socket: socket, what: 1)
        #expect(!table.isParked(socket))
        send(peer)
        #expect(ready(epoll) == [socket])
    }

    @Test func aClosedSocketIsForgottenAndItsNumberStartsAfresh() throws {
        let epoll = ccurl_epoll_create()
        defer { close(epoll) }
        var table = EpollSocketTable(epollDescriptor: epoll)
        let (socket, firstPeer) = try socketPair()
        defer { close(firstPeer) }
        table.watch(socket: socket, what: 1)
        table.watch(socket: socket, what: 4)
        table.closing(socket)
        #expect(table.watched[socket] == nil)
        #expect(!table.isParked(socket))
        let peer = try reuseNumber(of: socket)
        defer {
            close(peer)
            close(socket)
        }
        table.watch(socket: socket, what: 1)
        #expect(table.watched[socket] == ccurl_epoll_in())
        send(peer)
        #expect(ready(epoll) == [socket])
    }

    @Test func anEventOnAParkedSocketIsReportedAndUnparksIt() throws {
        let epoll = ccurl_epoll_create()
        defer { close(epoll) }
        var table = EpollSocketTable(epollDescriptor: epoll)
        let (socket, peer) = try socketPair()
        defer { close(socket) }
        table.watch(socket: socket, what: 3)
        table.watch(socket: socket, what: 1)
        table.watch(socket: socket, what: 4)
        close(peer)  // the server closed the idle connection
        let events = ready(epoll)
        #expect(events == [socket])
        #expect(table.isParked(socket))
        table.unpark(socket)
        #expect(table.watched.isEmpty)
        #expect(ready(epoll).isEmpty)
    }
}
