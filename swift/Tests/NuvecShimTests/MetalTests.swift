// Tests that need a real Metal GPU. NOT RUN in this project (no Apple hardware): they are
// compiled only on Apple platforms and skip when Metal reports no device (e.g. some CI VMs).
#if canImport(Metal) && canImport(Darwin)
import XCTest
@testable import NuvecShim

final class MetalTests: XCTestCase {
    func metalDevice() throws -> Device {
        guard Device.metalDeviceCount > 0 else { throw XCTSkip(Device.metalUnavailableReason ?? "no Metal device") }
        return try Device.metal()
    }

    func testAddAndScaleOnGPU() throws {
        let device = try metalDevice()
        XCTAssertTrue(device.isMetal)
        let n = 1000
        let a = (0..<n).map { Float($0) }, b = (0..<n).map { Float(2 * $0) }
        let bufA = try a.withUnsafeBytes { try device.makeBuffer(bytes: $0) }
        let bufB = try b.withUnsafeBytes { try device.makeBuffer(bytes: $0) }
        let out = try device.makeBuffer(length: n * 4)
        let library = try device.makeLibrary(source: addSource)
        let stream = try device.makeCommandStream()
        try stream.dispatch(try library.makeKernel(name: "add"),
                            arguments: [.buffer(bufA, index: 0), .buffer(bufB, index: 1), .buffer(out, index: 2)],
                            grid: Size3(n))
        var packer = ConstantPacker()
        packer.append(Float(0.5))
        try stream.dispatch(try library.makeKernel(name: "scale"),
                            arguments: [.buffer(out, index: 0), .bytes(packer.bytes, index: 1)], grid: Size3(n))
        try stream.synchronize()
        let result = Array(UnsafeBufferPointer(start: out.contents.assumingMemoryBound(to: Float.self), count: n))
        XCTAssertEqual(result, (0..<n).map { Float(3 * $0) * 0.5 })
    }

    func testCompileErrorCarriesLog() throws {
        let device = try metalDevice()
        XCTAssertThrowsError(try device.makeLibrary(source: "kernel void f(device flot* x) {}")) { error in
            XCTAssertEqual((error as! ShimError).status, .compile)
            XCTAssertTrue((error as! ShimError).message.contains("flot"))
        }
    }
}
#endif
