import Foundation
import Testing

@testable import ServiceSupport

@Suite struct AllocatorTrimTests {
    /// Memory freed in the middle of a heap stays resident until it is trimmed: 64 MiB in 4 KiB blocks (under the
    /// mmap threshold, so inside a heap), all freed but the last (which keeps the free space from being the heap's
    /// top, the only part glibc returns by itself), are still resident; after the trim most of them are not.
    @Test func trimmingReturnsFreedPagesInsideTheHeap() throws {
        let blockSize = 4096
        let blocks = (0..<(64 << 20) / blockSize).map { _ in
            let block = UnsafeMutableRawPointer.allocate(byteCount: blockSize, alignment: 16)
            block.initializeMemory(as: UInt8.self, repeating: 7, count: blockSize)  // make the pages resident
            return block
        }
        for block in blocks.dropLast() { block.deallocate() }
        defer { blocks.last?.deallocate() }
        let before = try #require(ProcessMetrics.stat()).residentPages * Double(sysconf(Int32(_SC_PAGESIZE)))
        #expect(AllocatorTrim.trim())
        let after = try #require(ProcessMetrics.stat()).residentPages * Double(sysconf(Int32(_SC_PAGESIZE)))
        // Other tests allocate meanwhile: half of the 64 MiB is a wide margin.
        #expect(before - after > Double(32 << 20))
    }
}
