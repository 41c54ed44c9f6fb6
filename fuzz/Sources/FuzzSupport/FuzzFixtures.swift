import Foundation

/// Files of the repository the fuzz targets read at start (trust anchors, a signing key), found from this source
/// file's location so that a target runs from any directory.
public enum FuzzFixtures {
    /// The repository's root directory.
    public static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The absolute path of `relativePath` (from the repository's root).
    public static func path(_ relativePath: String) -> String {
        root.appendingPathComponent(relativePath).path
    }

    /// The bytes of `relativePath`; a missing fixture stops the target (it is a broken checkout, not a finding).
    public static func bytes(_ relativePath: String) -> [UInt8] {
        do {
            return Array(try Data(contentsOf: root.appendingPathComponent(relativePath)))
        } catch {
            FuzzDriver.violated("the fixture \(relativePath) is unreadable: \(error)")
        }
    }
}
