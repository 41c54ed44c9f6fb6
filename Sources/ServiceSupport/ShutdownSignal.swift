import Dispatch
import Foundation
import Synchronization

/// Turns SIGTERM and SIGINT into a callback on a thread of its own, so a service can drain before it exits.
///
/// The signals' handler is installed before `init` returns and never drops a signal: it only writes the signal's
/// number into a pipe (async-signal-safe), and a thread of this object reads the pipe. (A Dispatch signal source, the
/// earlier design, sets the signals to be ignored and registers its source asynchronously: a SIGTERM in between was
/// discarded by the kernel, and a service stopped right after it started was later killed without draining.)
///
/// One instance per process (the services' mains); the handler is process-wide. Keep the returned value alive: when it
/// is released the signals get their default disposition back.
public final class ShutdownSignal: Sendable {
    private let pipe: SignalPipe

    /// Calls `handler` with the signal's name on the first SIGTERM or SIGINT; a second signal exits at once (status 1),
    /// for operators who really mean it.
    ///
    /// The handler runs on a queue of its own, so it may block for as long as draining takes: the reading thread
    /// stays free to see the second signal.
    public init(handler: @escaping @Sendable (String) -> Void) {
        let handlerQueue = DispatchQueue(label: "shutdown-handler")
        pipe = SignalPipe()
        let readDescriptor = pipe.readDescriptor
        Thread.startNamed("shutdown-signal") {
            var fired = false
            var byte: UInt8 = 0
            while true {
                let count = read(readDescriptor, &byte, 1)
                if count < 0 && errno == EINTR { continue }
                guard count == 1 else { break }  // end of file: the object was released
                if fired { exit(1) }
                fired = true
                let name = Int32(byte) == SIGINT ? "SIGINT" : "SIGTERM"
                handlerQueue.async { handler(name) }
            }
            close(readDescriptor)
        }
        pipe.install()
    }

    deinit {
        pipe.uninstall()
    }
}

/// The pipe from the C signal handler to the reading thread. Its write end is published to the handler through
/// `activeWriteDescriptor` before the handler is installed, and withdrawn after the handler is removed.
private final class SignalPipe: Sendable {
    let readDescriptor: Int32
    let writeDescriptor: Int32

    init() {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else {
            fatalError("cannot create the shutdown signal pipe: \(String(cString: strerror(errno)))")
        }
        readDescriptor = descriptors[0]
        writeDescriptor = descriptors[1]
        // Not inherited by the processes a service starts (tests, tools).
        _ = fcntl(readDescriptor, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeDescriptor, F_SETFD, FD_CLOEXEC)
        // The handler must never block: a full pipe (signals nobody reads) drops the extra bytes, which change nothing.
        _ = fcntl(writeDescriptor, F_SETFL, fcntl(writeDescriptor, F_GETFL) | O_NONBLOCK)
    }

    func install() {
        activeWriteDescriptor.store(writeDescriptor, ordering: .sequentiallyConsistent)
        signal(SIGTERM, forwardSignalToPipe)
        signal(SIGINT, forwardSignalToPipe)
        // A signal mask survives exec: a process started from a thread that blocks these signals (a Dispatch worker
        // of its parent, e.g. a test runner) would keep them pending forever. Unblocked on the calling thread (the
        // main thread, and the threads it starts from now on), so a handler runs.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    func uninstall() {
        signal(SIGTERM, SIG_DFL)
        signal(SIGINT, SIG_DFL)
        activeWriteDescriptor.store(-1, ordering: .sequentiallyConsistent)
        // The reader sees end-of-file and closes the read end.
        close(writeDescriptor)
    }
}

/// The write end of the live `SignalPipe`, -1 when none: the only state the C handler reads (a lock-free atomic load).
private let activeWriteDescriptor = Atomic<Int32>(-1)

/// The SIGTERM/SIGINT handler: writes the signal's number into the pipe. Only async-signal-safe calls (an atomic load,
/// `write`), and `errno` is preserved for the code it interrupted.
private func forwardSignalToPipe(_ number: Int32) {
    let savedErrno = errno
    let descriptor = activeWriteDescriptor.load(ordering: .relaxed)
    if descriptor >= 0 {
        var byte = UInt8(truncatingIfNeeded: number)
        _ = write(descriptor, &byte, 1)
    }
    errno = savedErrno
}
