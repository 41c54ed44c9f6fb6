import CMalloc
import Foundation

/// The standard `process_*` metrics of a Prometheus client (resident and virtual memory, open and maximum file
/// descriptors, CPU seconds, start time, threads), read from `/proc/self` on each scrape. On systems without `/proc`
/// the families stay empty. Two more tell a leak from the allocator's high-water mark: the bytes the program holds
/// from malloc (`process_heap_in_use_bytes`) and the freed bytes the allocator keeps instead of returning them to the
/// system (`process_heap_free_bytes`); resident memory that grows while the heap in use stays flat is fragmentation
/// settling, not a leak.
public enum ProcessMetrics {
    /// Registers the `process_*` families in `registry` (once per registry; a second call replaces the first).
    public static func register(in registry: MetricsRegistry) {
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let bootTime = Self.bootTimeSeconds()
        registry.collect("process_cpu_seconds_total", help: "Total user and system CPU time spent in seconds.",
                         kind: .counter) {
            guard let stat = Self.stat(), ticksPerSecond > 0 else { return [] }
            return [([], (stat.userTicks + stat.systemTicks) / ticksPerSecond)]
        }
        registry.collect("process_resident_memory_bytes", help: "Resident memory size in bytes.", kind: .gauge) {
            guard let stat = Self.stat() else { return [] }
            return [([], stat.residentPages * pageSize)]
        }
        registry.collect("process_virtual_memory_bytes", help: "Virtual memory size in bytes.", kind: .gauge) {
            guard let stat = Self.stat() else { return [] }
            return [([], stat.virtualBytes)]
        }
        registry.collect("process_start_time_seconds", help: "Start time of the process since unix epoch in seconds.",
                         kind: .gauge) {
            guard let stat = Self.stat(), let bootTime, ticksPerSecond > 0 else { return [] }
            return [([], bootTime + stat.startTicks / ticksPerSecond)]
        }
        registry.collect("process_threads", help: "Number of OS threads in the process.", kind: .gauge) {
            guard let stat = Self.stat() else { return [] }
            return [([], stat.threads)]
        }
        registry.collect("process_open_fds", help: "Number of open file descriptors.", kind: .gauge) {
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
            // The directory listing holds a descriptor of its own while it is read.
            return [([], Double(max(entries.count - 1, 0)))]
        }
        registry.collect("process_heap_in_use_bytes",
                         help: "Bytes allocated with malloc and not freed (glibc mallinfo2: uordblks + hblkhd).",
                         kind: .gauge) {
            let heap = Self.heap()
            return [([], heap.inUseBytes)]
        }
        registry.collect("process_heap_free_bytes",
                         help: "Freed bytes the allocator keeps in its arenas (glibc mallinfo2: fordblks).",
                         kind: .gauge) {
            let heap = Self.heap()
            return [([], heap.freeBytes)]
        }
        registry.collect("process_max_fds", help: "Maximum number of open file descriptors.", kind: .gauge) {
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return [] }
            return [([], Double(limit.rlim_cur))]
        }
    }

    struct Stat {
        var userTicks: Double
        var systemTicks: Double
        var threads: Double
        var startTicks: Double
        var virtualBytes: Double
        var residentPages: Double
    }

    /// `/proc/self/stat`: fields after the command name (which may hold spaces and parentheses), numbered as in
    /// proc(5): utime 14, stime 15, num_threads 20, starttime 22, vsize 23, rss 24.
    static func stat(_ text: String? = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)) -> Stat? {
        guard let text, let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state).
        func field(_ number: Int) -> Double? { fields.count > number - 3 ? Double(fields[number - 3]) : nil }
        guard let user = field(14), let system = field(15), let threads = field(20), let start = field(22),
              let virtual = field(23), let resident = field(24)
        else { return nil }
        return Stat(userTicks: user, systemTicks: system, threads: threads, startTicks: start, virtualBytes: virtual,
                    residentPages: resident)
    }

    struct Heap {
        var inUseBytes: Double
        var freeBytes: Double
    }

    /// glibc's allocator statistics, summed over its arenas (it locks each briefly: fine once per scrape).
    static func heap() -> Heap {
        let info = mallinfo2()
        return Heap(inUseBytes: Double(info.uordblks + info.hblkhd), freeBytes: Double(info.fordblks))
    }

    /// `btime` of `/proc/stat`: the boot time, seconds since the epoch.
    static func bootTimeSeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst("btime ".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
