import CCurl

/// The epoll registrations of libcurl's sockets, kept in step with what libcurl asks for (CURLMOPT_SOCKETFUNCTION)
/// and with the sockets it closes (CURLOPT_CLOSESOCKETFUNCTION). Owned by the multi loop's thread.
///
/// libcurl says REMOVE whenever a keep-alive connection goes idle and asks for it again with the next request;
/// to save an `epoll_ctl` per request, an idle socket that waited for input stays registered ("parked"). An event
/// on a parked socket (the server closed it) unregisters it then.
///
/// Invariant: a descriptor in `watched` is in the epoll set with that mask. Descriptor numbers are reused, so a
/// socket libcurl closes is forgotten (`closing`) before it is closed; and because a socket can also be closed
/// without that callback (the resolver's wake-up pair), asking again for a parked descriptor always re-registers
/// it rather than trusting the table.
struct EpollSocketTable {
    let epollDescriptor: Int32
    private(set) var watched: [Int32: UInt32] = [:]
    private(set) var parked: Set<Int32> = []

    init(epollDescriptor: Int32) {
        self.epollDescriptor = epollDescriptor
    }

    /// Applies libcurl's `what` (CURL_POLL_IN 1, OUT 2, INOUT 3, REMOVE 4) for `socket`.
    mutating func watch(socket: Int32, what: Int32) {
        let wanted: UInt32
        switch what {
        case 1: wanted = ccurl_epoll_in()
        case 2: wanted = ccurl_epoll_out()
        case 3: wanted = ccurl_epoll_in() | ccurl_epoll_out()
        default:  // CURL_POLL_REMOVE
            guard let current = watched[socket] else { return }
            if current == ccurl_epoll_in() {
                parked.insert(socket)
            } else {
                forget(socket)
            }
            return
        }
        let wasParked = parked.remove(socket) != nil
        if let current = watched[socket] {
            // A parked descriptor may have been closed (leaving the epoll set) and its number reused since.
            guard current != wanted || wasParked else { return }
            if ccurl_epoll_ctl(epollDescriptor, 1, socket, wanted) != 0 {
                // Closed and its number reused since we registered it: register anew.
                _ = ccurl_epoll_ctl(epollDescriptor, 0, socket, wanted)
            }
        } else if ccurl_epoll_ctl(epollDescriptor, 0, socket, wanted) != 0 {
            // Already registered (a descriptor number reused before we saw REMOVE): modify instead.
            _ = ccurl_epoll_ctl(epollDescriptor, 1, socket, wanted)
        }
        watched[socket] = wanted
    }

    /// True when `socket` is parked: libcurl is not waiting on it.
    func isParked(_ socket: Int32) -> Bool { parked.contains(socket) }

    /// An event on a parked socket: stop watching it (libcurl notices the closed connection when it next tries to
    /// reuse it).
    mutating func unpark(_ socket: Int32) {
        forget(socket)
    }

    /// libcurl is about to close `socket`: drop it from the table and the epoll set, so a new socket that gets the
    /// same number starts from nothing.
    mutating func closing(_ socket: Int32) {
        forget(socket)
    }

    private mutating func forget(_ socket: Int32) {
        parked.remove(socket)
        if watched.removeValue(forKey: socket) != nil {
            _ = ccurl_epoll_ctl(epollDescriptor, 2, socket, 0)
        }
    }
}
