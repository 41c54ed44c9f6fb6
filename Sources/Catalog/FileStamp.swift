import Foundation

/// What `stat(2)` says about a file, enough to notice that it changed without reading it: device and inode (an atomic
/// rename or a Kubernetes ConfigMap symlink swap), size, and modification and status-change times in nanoseconds
/// (an edit in place). Symbolic links are followed.
struct FileStamp: Sendable, Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modifiedNs: Int64
    var changedNs: Int64
    /// `errno` when the file could not be examined (then the other fields are 0).
    var errorNumber: Int32

    /// The file's stamp now; a missing or unreadable file gives a stamp with its `errno`.
    static func of(path: String) -> FileStamp {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return FileStamp(device: 0, inode: 0, size: 0, modifiedNs: 0, changedNs: 0, errorNumber: errno)
        }
        return FileStamp(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modifiedNs: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            changedNs: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec), errorNumber: 0)
    }
}
