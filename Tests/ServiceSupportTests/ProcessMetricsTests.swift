import Foundation
import Testing

@testable import ServiceSupport

@Suite struct ProcessMetricsTests {
    /// A command name may hold spaces and parentheses: the fields are counted from the last ")".
    @Test func statFieldsAreReadAfterTheCommandName() throws {
        let line = "4242 (receipt (x) y) S 1 4242 4242 0 -1 4194560 5000 0 3 0 250 75 0 0 20 0 17 0 123456 "
            + "987654321 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n"
        let stat = try #require(ProcessMetrics.stat(line))
        #expect(stat.userTicks == 250)
        #expect(stat.systemTicks == 75)
        #expect(stat.threads == 17)
        #expect(stat.startTicks == 123456)
        #expect(stat.virtualBytes == 987654321)
        #expect(stat.residentPages == 2048)
        #expect(ProcessMetrics.stat("4242 (truncated) S 1 2") == nil)
        #expect(ProcessMetrics.stat(nil) == nil)
    }

    @Test func theProcessFamiliesDescribeThisProcess() throws {
        let registry = MetricsRegistry()
        ProcessMetrics.register(in: registry)
        let text = registry.render()
        func value(_ name: String) throws -> Double {
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(name + " ") })
            return try #require(Double(line.split(separator: " ")[1]))
        }
        #expect(text.contains("# TYPE process_cpu_seconds_total counter\n"))
        #expect(try value("process_resident_memory_bytes") > 1_000_000)
        #expect(try value("process_virtual_memory_bytes") >= value("process_resident_memory_bytes"))
        #expect(try value("process_threads") >= 1)
        #expect(try value("process_max_fds") >= value("process_open_fds"))
        // stdin, stdout and stderr at least (other tests open and close descriptors meanwhile: no exact count).
        #expect(try value("process_open_fds") >= 3)
        #expect(try value("process_heap_in_use_bytes") > 0)
        let start = try value("process_start_time_seconds")
        let now = Date().timeIntervalSince1970
        #expect(start <= now + 1 && start > now - 86_400 * 365)
    }

    /// The heap in use follows what the program holds: a block kept raises it by the block's size, and freeing it
    /// lowers it again (the allocator may keep the freed bytes, counted as free, not in use).
    @Test func theHeapInUseFollowsAllocations() {
        let before = ProcessMetrics.heap().inUseBytes
        let block = UnsafeMutableRawPointer.allocate(byteCount: 64 << 20, alignment: 16)
        let holding = ProcessMetrics.heap().inUseBytes
        block.deallocate()
        let after = ProcessMetrics.heap().inUseBytes
        // Other tests allocate and free meanwhile: margins of 16 MiB around the 64 MiB.
        #expect(holding - before > Double(48 << 20))
        #expect(holding - after > Double(48 << 20))
    }
}
