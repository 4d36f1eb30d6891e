import CSystem
import Foundation
import Glibc

/// How many CPUs this process may really use, for sizing thread pools: the online CPUs narrowed by
/// the scheduler affinity mask (`taskset`, cpusets) and the cgroup CPU quota (a container's CPU limit).
///
/// `sysconf(_SC_NPROCESSORS_ONLN)` reports the host's cores, so a pod limited to 2 CPUs on a 64-core
/// node would otherwise start 64 I/O threads' worth of contention for 2 CPUs of time.
public enum AvailableCPUs {
    /// The CPUs available now, at least 1 (reads procfs/cgroupfs once per call).
    public static func current() -> Int {
        let online = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let affinity = Int(bouncer_affinity_cpu_count())
        return effective(online: online, affinity: affinity > 0 ? affinity : nil, quota: cgroupQuota())
    }

    /// The smallest of the online CPUs, the affinity mask's CPUs and the quota's CPUs, at least 1.
    public static func effective(online: Int, affinity: Int?, quota: Int?) -> Int {
        max(1, [online, affinity ?? .max, quota ?? .max].min() ?? 1)
    }

    /// CPUs granted by a cgroup quota, rounded up (1.5 CPUs → 2); nil when there is no quota or it is unreadable.
    ///
    /// - Parameters:
    ///   - cpuMax: cgroup v2 `cpu.max` text, `"$MAX $PERIOD"` where `$MAX` may be `max` (no limit).
    ///   - cfsQuota: cgroup v1 `cpu.cfs_quota_us` text (`-1` = no limit); used only without `cpuMax`.
    ///   - cfsPeriod: cgroup v1 `cpu.cfs_period_us` text.
    public static func quotaCPUs(cpuMax: String?, cfsQuota: String?, cfsPeriod: String?) -> Int? {
        if let cpuMax {
            let fields = cpuMax.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
            guard fields.count >= 1, fields[0] != "max" else { return nil }
            let period = fields.count >= 2 ? Int(fields[1]) : 100_000  // the kernel's default period
            return ceilingRatio(Int(fields[0]), period)
        }
        guard let cfsQuota, let cfsPeriod else { return nil }
        return ceilingRatio(Int(cfsQuota.trimmingCharacters(in: .whitespacesAndNewlines)),
                            Int(cfsPeriod.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    private static func ceilingRatio(_ quota: Int?, _ period: Int?) -> Int? {
        guard let quota, let period, quota > 0, period > 0 else { return nil }
        return max(1, quota / period + (quota % period == 0 ? 0 : 1))
    }

    /// The tightest quota on the way from this process's cgroup up to the root (a parent's limit binds
    /// its children too). cgroup v2 first; v1's `cpu` controller as seen inside a container otherwise.
    static func cgroupQuota() -> Int? {
        func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }
        var quotas: [Int] = []
        var v2Path = "/"
        for line in (read("/proc/self/cgroup") ?? "").split(separator: "\n") where line.hasPrefix("0::") {
            v2Path = String(line.dropFirst(3))
        }
        var directory = "/sys/fs/cgroup" + (v2Path == "/" ? "" : v2Path)
        while true {
            if let text = read(directory + "/cpu.max"), let cpus = quotaCPUs(cpuMax: text, cfsQuota: nil, cfsPeriod: nil) {
                quotas.append(cpus)
            }
            guard directory != "/sys/fs/cgroup", let slash = directory.lastIndex(of: "/") else { break }
            directory = String(directory[..<slash])
        }
        for v1 in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"] {
            if let cpus = quotaCPUs(cpuMax: nil, cfsQuota: read(v1 + "/cpu.cfs_quota_us"), cfsPeriod: read(v1 + "/cpu.cfs_period_us")) {
                quotas.append(cpus)
            }
        }
        return quotas.min()
    }
}
