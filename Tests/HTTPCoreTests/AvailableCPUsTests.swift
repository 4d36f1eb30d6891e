import XCTest
@testable import HTTPCore

/// The cgroup quota and affinity arithmetic behind the default thread counts, from the files' text.
final class AvailableCPUsTests: XCTestCase {
    func testCgroupV2CPUMax() {
        XCTAssertNil(AvailableCPUs.quotaCPUs(cpuMax: "max 100000\n", cfsQuota: nil, cfsPeriod: nil), "no limit")
        XCTAssertEqual(AvailableCPUs.quotaCPUs(cpuMax: "150000 100000\n", cfsQuota: nil, cfsPeriod: nil), 2, "1.5 CPUs round up")
        XCTAssertEqual(AvailableCPUs.quotaCPUs(cpuMax: "50000 100000\n", cfsQuota: nil, cfsPeriod: nil), 1, "half a CPU is still one thread")
        XCTAssertEqual(AvailableCPUs.quotaCPUs(cpuMax: "200000 100000", cfsQuota: nil, cfsPeriod: nil), 2)
        XCTAssertEqual(AvailableCPUs.quotaCPUs(cpuMax: "400000 50000", cfsQuota: nil, cfsPeriod: nil), 8)
        XCTAssertEqual(AvailableCPUs.quotaCPUs(cpuMax: "300000", cfsQuota: nil, cfsPeriod: nil), 3, "period defaults to 100000")
        XCTAssertNil(AvailableCPUs.quotaCPUs(cpuMax: "max", cfsQuota: nil, cfsPeriod: nil))
        for garbage in ["", "\n", "abc 100000", "100000 0", "-5 100000", "100000 x"] {
            XCTAssertNil(AvailableCPUs.quotaCPUs(cpuMax: garbage, cfsQuota: nil, cfsPeriod: nil), garbage.debugDescription)
        }
        // v2 wins over v1 when both are given.
        XCTAssertNil(AvailableCPUs.quotaCPUs(cpuMax: "max 100000", cfsQuota: "50000", cfsPeriod: "100000"))
    }

    func testCgroupV1CFSQuota() {
        XCTAssertNil(AvailableCPUs.quotaCPUs(cpuMax: nil, cfsQuota: "-1\n", cfsPeriod: "100000\n"), "no limit")
        XCTAssertEqual(AvailableCPUs.quotaCPUs(cpuMax: nil, cfsQuota: "50000\n", cfsPeriod: "100000\n"), 1)
        XCTAssertEqual(AvailableCPUs.quotaCPUs(cpuMax: nil, cfsQuota: "150000\n", cfsPeriod: "100000\n"), 2)
        XCTAssertEqual(AvailableCPUs.quotaCPUs(cpuMax: nil, cfsQuota: "400000", cfsPeriod: "100000"), 4)
        XCTAssertNil(AvailableCPUs.quotaCPUs(cpuMax: nil, cfsQuota: "50000", cfsPeriod: nil), "missing period file")
        XCTAssertNil(AvailableCPUs.quotaCPUs(cpuMax: nil, cfsQuota: nil, cfsPeriod: "100000"), "missing quota file")
        XCTAssertNil(AvailableCPUs.quotaCPUs(cpuMax: nil, cfsQuota: nil, cfsPeriod: nil), "no cgroup files at all")
    }

    func testEffectiveIsTheTightestLimit() {
        XCTAssertEqual(AvailableCPUs.effective(online: 64, affinity: nil, quota: nil), 64)
        XCTAssertEqual(AvailableCPUs.effective(online: 64, affinity: nil, quota: 2), 2, "a 2-CPU pod on a 64-core node")
        XCTAssertEqual(AvailableCPUs.effective(online: 64, affinity: 4, quota: 8), 4, "taskset narrower than the quota")
        XCTAssertEqual(AvailableCPUs.effective(online: 2, affinity: 2, quota: 16), 2, "a quota above the cores changes nothing")
        XCTAssertEqual(AvailableCPUs.effective(online: 0, affinity: nil, quota: nil), 1)
    }

    func testThisProcessGetsAPlausibleCount() {
        let online = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        XCTAssertGreaterThanOrEqual(AvailableCPUs.current(), 1)
        XCTAssertLessThanOrEqual(AvailableCPUs.current(), max(1, online))
        XCTAssertEqual(HTTPServer.Configuration.cpuCount, AvailableCPUs.current())
        XCTAssertEqual(HTTPServer.Configuration().eventLoopCount, min(4, AvailableCPUs.current()))
    }
}
