/// A C library's opaque handle (`MHD_Daemon *`, `rd_kafka_topic_t *`, ...) kept where threads share it.
///
/// Invariant behind `@unchecked Sendable`: the wrapper only carries the address across threads; it makes no promise
/// about the object. Whoever stores one must state, next to the stored property, which lock or which thread makes
/// its uses safe (for example "used only under the lock holding this state, or after being taken out of it by
/// `close`, which then owns it exclusively").
public struct SendableOpaquePointer: @unchecked Sendable, Hashable {
    public let pointer: OpaquePointer

    @inlinable
    public init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }
}
