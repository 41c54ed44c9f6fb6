import CCurl
#if canImport(Glibc)
    import Glibc
#endif

/// The C callbacks libcurl calls. They are static members of a nonisolated type (never actor-isolated closures),
/// and find their Swift object through the `void *` user pointer. They all run on the multi loop's thread.
enum CurlCallbacks {
    /// CURLOPT_WRITEFUNCTION: response bytes for one transfer (user pointer: its `CurlTransfer`).
    static let onWrite: curl_write_callback = { data, size, count, user in
        guard let user else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
        let length = size * count
        guard length > 0, let data else { return 0 }
        return transfer.append(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
    }

    /// CURLMOPT_SOCKETFUNCTION: which events to wait for on a socket (user pointer: the `CurlMultiLoop`).
    static let onSocket: curl_socket_callback = { _, socket, what, user, _ in
        guard let user else { return -1 }
        Unmanaged<CurlMultiLoop>.fromOpaque(user).takeUnretainedValue().watch(socket: socket, what: what)
        return 0
    }

    /// CURLMOPT_TIMERFUNCTION: when libcurl next needs `CURL_SOCKET_TIMEOUT` (user pointer: the `CurlMultiLoop`).
    static let onTimer: curl_multi_timer_callback = { _, timeoutMs, user in
        guard let user else { return -1 }
        Unmanaged<CurlMultiLoop>.fromOpaque(user).takeUnretainedValue().setTimer(milliseconds: timeoutMs)
        return 0
    }

    /// CURLOPT_CLOSESOCKETFUNCTION: libcurl closes a socket (user pointer: the `CurlMultiLoop`). Returns close(2)'s
    /// result, as libcurl expects.
    static let onCloseSocket: curl_closesocket_callback = { user, socket in
        guard let user else { return close(socket) }
        return Unmanaged<CurlMultiLoop>.fromOpaque(user).takeUnretainedValue().closeSocket(socket)
    }
}
