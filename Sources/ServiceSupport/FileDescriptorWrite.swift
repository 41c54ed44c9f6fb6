import Foundation

/// Writes to a file descriptor with `write(2)`, unbuffered: what a log line or a tool's output line needs to reach its
/// reader at once and whole.
public enum FileDescriptorWrite {
    /// Writes all of `bytes` to `descriptor` (`write(2)` may take fewer bytes than asked); stops early, silently, when
    /// it cannot write (a closed pipe: there is nowhere to report it).
    public static func all(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
