import XCTest
import CNuvecShim
@testable import NuvecShim

final class DispatchTests: XCTestCase {
    var fake: FakeDeviceBackend!
    var device: Device!
    var kernel: Kernel!
    var stream: CommandStream!

    override func setUpWithError() throws {
        fake = FakeDeviceBackend()
        device = Device(backend: fake)
        kernel = try device.makeLibrary(source: addSource).makeKernel(name: "add")
        stream = try device.makeCommandStream()
    }

    func expectInvalid(_ fragment: String, file: StaticString = #filePath, line: UInt = #line,
                       _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            let failure = error as! ShimError
            XCTAssertEqual(failure.status, .invalidArgument, failure.message, file: file, line: line)
            XCTAssertTrue(failure.message.contains(fragment), failure.message, file: file, line: line)
        }
    }

    func testEncodesCheckedPlanInOrder() throws {
        let a = try device.makeBuffer(length: 64), b = try device.makeBuffer(length: 64)
        try stream.dispatch(kernel, arguments: [.buffer(a, index: 0), .buffer(b, offset: 16, index: 1),
                                                .bytes([1, 2, 3, 4], index: 3)],
                            grid: Size3(16), threadgroup: Size3(8))
        try stream.dispatch(kernel, arguments: [], grid: Size3(4, 4), threadgroup: Size3(2, 2))
        XCTAssertEqual(stream.pendingDispatches, 2)
        XCTAssertEqual(fake.encoded.count, 2)
        let first = fake.encoded[0]
        XCTAssertEqual(first.buffers.map(\.index), [0, 1])
        XCTAssertEqual(first.buffers.map(\.offset), [0, 16])
        XCTAssertTrue(first.buffers[1].buffer === b.backend)
        XCTAssertEqual(first.bytes.map(\.data), [[1, 2, 3, 4]])
        XCTAssertEqual(first.grid, Size3(16))
        XCTAssertFalse(first.countsThreadgroups)
        XCTAssertEqual(fake.encoded[1].threadgroup, Size3(2, 2))
        try stream.synchronize()
        XCTAssertEqual(stream.pendingDispatches, 0)
    }

    func testAutomaticThreadgroup() throws {
        // 1-D: the grid width rounded up to the SIMD width (32), capped by the kernel (512).
        try stream.dispatch(kernel, arguments: [], grid: Size3(40))
        try stream.dispatch(kernel, arguments: [], grid: Size3(100_000))
        try stream.dispatch(kernel, arguments: [], grid: Size3(3), mode: .threadgroups)
        XCTAssertEqual(fake.encoded.map(\.threadgroup), [Size3(64), Size3(512), Size3(512)])
        expectInvalid("use (0, 0, 0) to let the shim choose") {
            try stream.dispatch(kernel, arguments: [], grid: Size3(8), threadgroup: Size3(8, 0, 1))
        }
    }

    func testThreadgroupLimits() {
        expectInvalid("has 1024 threads > the kernel's max_total_threads_per_threadgroup 512") {
            try stream.dispatch(kernel, arguments: [], grid: Size3(4096), threadgroup: Size3(32, 32))
        }
        expectInvalid("depth 128 > the device's limit 64") {
            try stream.dispatch(kernel, arguments: [], grid: Size3(4096), threadgroup: Size3(1, 1, 128))
        }
        XCTAssertEqual(fake.encoded.count, 0, "a failed check encodes nothing")
        XCTAssertEqual(stream.pendingDispatches, 0)
    }

    func testGridChecks() {
        expectInvalid("has height 0; every extent must be >= 1") {
            try stream.dispatch(kernel, arguments: [], grid: Size3(8, 0, 1))
        }
        expectInvalid("width 4294967296 > 4294967295") {
            try stream.dispatch(kernel, arguments: [], grid: Size3(1 << 32))
        }
        expectInvalid("exceed 4294967295 threads") {
            try stream.dispatch(kernel, arguments: [], grid: Size3(1 << 31), threadgroup: Size3(4), mode: .threadgroups)
        }
    }

    func testUniformDevicesRoundUpToWholeThreadgroups() throws {
        let uniform = FakeDeviceBackend(nonuniform: false)
        let device = Device(backend: uniform)
        let kernel = try device.makeLibrary(source: addSource).makeKernel(name: "add")
        let stream = try device.makeCommandStream()
        try stream.dispatch(kernel, arguments: [], grid: Size3(1000, 3), threadgroup: Size3(64, 2))
        let plan = uniform.encoded[0]
        XCTAssertTrue(plan.countsThreadgroups)
        XCTAssertEqual(plan.grid, Size3(16, 2, 1))  // ceil(1000/64), ceil(3/2), 1
        XCTAssertEqual(plan.threadgroup, Size3(64, 2))
    }

    func testArgumentChecks() throws {
        let buffer = try device.makeBuffer(length: 32)
        let foreign = try Device(backend: FakeDeviceBackend()).makeBuffer(length: 32)
        expectInvalid("index 31 is outside 0..<31") {
            try stream.dispatch(kernel, arguments: [.buffer(buffer, index: 31)], grid: Size3(1))
        }
        expectInvalid("argument 1: index 2 is bound twice") {
            try stream.dispatch(kernel, arguments: [.buffer(buffer, index: 2), .bytes([0], index: 2)], grid: Size3(1))
        }
        expectInvalid("offset 32 is outside the buffer's 32 bytes") {
            try stream.dispatch(kernel, arguments: [.buffer(buffer, offset: 32, index: 0)], grid: Size3(1))
        }
        expectInvalid("the buffer belongs to another device") {
            try stream.dispatch(kernel, arguments: [.buffer(foreign, index: 0)], grid: Size3(1))
        }
        expectInvalid("constant bytes must be 1...4096 long, got 4097") {
            try stream.dispatch(kernel, arguments: [.bytes([UInt8](repeating: 0, count: 4097), index: 0)], grid: Size3(1))
        }
        expectInvalid("got 0") { try stream.dispatch(kernel, arguments: [.bytes([], index: 0)], grid: Size3(1)) }
        let otherKernel = try Device(backend: FakeDeviceBackend()).makeLibrary(source: addSource).makeKernel(name: "add")
        expectInvalid("the kernel belongs to another device") {
            try stream.dispatch(otherKernel, arguments: [], grid: Size3(1))
        }
        XCTAssertEqual(fake.encoded.count, 0)
    }

    func testStreamKeepsBuffersAliveUntilWait() throws {
        weak var watched: Buffer?
        try {
            let buffer = try device.makeBuffer(length: 16)
            watched = buffer
            try stream.dispatch(kernel, arguments: [.buffer(buffer, index: 0)], grid: Size3(4))
        }()
        XCTAssertNotNil(watched, "held while encoded")
        stream.commit()
        XCTAssertNotNil(watched, "held while in flight")
        try stream.wait()
        fake.encoded.removeAll()  // the fake's own record also holds the backend, not the Buffer
        XCTAssertNil(watched, "released after wait")
    }

    func testGPUFailureIsReportedOnce() throws {
        try stream.dispatch(kernel, arguments: [], grid: Size3(4))
        stream.commit()
        try stream.dispatch(kernel, arguments: [], grid: Size3(4))
        stream.commit()
        fake.gpuFailure = "Execution of the command buffer was aborted due to an error"
        XCTAssertThrowsError(try stream.wait()) { error in
            XCTAssertEqual(error as? ShimError, ShimError(.gpu, "wait: a command buffer failed on the GPU: Execution of the command buffer was aborted due to an error (and 1 more failed command buffer(s))"))
        }
        XCTAssertNoThrow(try stream.wait(), "reported once; nothing left in flight")
    }

    func testHostDeviceCannotDispatch() throws {
        // A host stream refuses kernels of other devices before reaching its encoder.
        let hostStream = try Device.host.makeCommandStream()
        expectInvalid("another device") { try hostStream.dispatch(kernel, arguments: [], grid: Size3(1)) }
        XCTAssertThrowsError(try HostCommandBuffer().encode(fake.encoded.first ?? DispatchPlanner.plan(
            kernel: kernel, arguments: [], grid: Size3(1), threadgroup: .zero, mode: .threads, device: device))) {
            XCTAssertEqual(($0 as! ShimError).status, .unsupported)
        }
    }
}

/// The whole C ABI path (compile, kernel, dispatch with nv_arg) on a fake-backed device
/// registered as a handle: the C argument conversion is the real code.
final class ABIDispatchTests: XCTestCase {
    func testDispatchThroughABI() throws {
        let fake = FakeDeviceBackend()
        let device = handles.insert(Device(backend: fake), kind: .device)
        defer { try? handles.release(device, "test") }
        var library: UInt64 = 0, kernel: UInt64 = 0, stream: UInt64 = 0, buffer: UInt64 = 0
        XCTAssertEqual(nv_library_compile(device, addSource, nil, &library, nil), Int32(NV_OK))
        var again: UInt64 = 0
        XCTAssertEqual(nv_library_compile(device, addSource, nil, &again, nil), Int32(NV_OK))
        XCTAssertNotEqual(library, again, "a new handle ...")
        XCTAssertEqual(fake.compileCount, 1, "... to the cached library")
        var stats = nv_cache_stats()
        XCTAssertEqual(nv_device_cache_stats(device, &stats, nil), Int32(NV_OK))
        XCTAssertEqual([stats.library_hits, stats.library_misses], [1, 1])
        var names: UnsafeMutablePointer<CChar>? = nil
        XCTAssertEqual(nv_library_function_names(library, &names, nil), Int32(NV_OK))
        XCTAssertEqual(String(cString: names!), "add\nscale")
        nv_string_free(names)
        let (missing, message) = call { nv_kernel_new(library, "nope", &kernel, $0) }
        XCTAssertEqual(missing, Int32(NV_ERR_NOT_FOUND))
        XCTAssertEqual(message, "no function nope")
        XCTAssertEqual(nv_kernel_new(library, "scale", &kernel, nil), Int32(NV_OK))
        var info = nv_kernel_info()
        XCTAssertEqual(nv_kernel_info_get(kernel, &info, nil), Int32(NV_OK))
        XCTAssertEqual([info.max_total_threads_per_threadgroup, info.thread_execution_width], [512, 32])
        XCTAssertEqual(nv_stream_new(device, &stream, nil), Int32(NV_OK))
        XCTAssertEqual(nv_buffer_new(device, 64, &buffer, nil), Int32(NV_OK))

        var scale: Float = 2.5
        var grid: [UInt64] = [16, 1, 1]
        var group: [UInt32] = [0, 0, 0]
        let status = withUnsafeBytes(of: &scale) { raw -> Int32 in
            var args = [nv_arg(kind: UInt32(NV_ARG_BUFFER), index: 0, buffer: buffer, offset: 4, bytes: nil, length: 0),
                        nv_arg(kind: UInt32(NV_ARG_BYTES), index: 1, buffer: 0, offset: 0, bytes: raw.baseAddress, length: 4)]
            return nv_stream_dispatch(stream, kernel, &args, 2, &grid, &group, UInt32(NV_GRID_THREADS), nil)
        }
        XCTAssertEqual(status, Int32(NV_OK))
        scale = 9  // the bytes were copied during the call
        let plan = fake.encoded[0]
        XCTAssertEqual(plan.buffers.map(\.offset), [4])
        XCTAssertEqual(plan.bytes[0].data, withUnsafeBytes(of: Float(2.5)) { Array($0) })
        XCTAssertEqual(plan.threadgroup, Size3(32))
        var pending: UInt64 = 0
        XCTAssertEqual(nv_stream_pending(stream, &pending, nil), Int32(NV_OK))
        XCTAssertEqual(pending, 1)

        // Bad calls: each returns an error and encodes nothing.
        var bad = [nv_arg(kind: 9, index: 0, buffer: 0, offset: 0, bytes: nil, length: 0)]
        var (code, text) = call { nv_stream_dispatch(stream, kernel, &bad, 1, &grid, &group, 0, $0) }
        XCTAssertEqual(code, Int32(NV_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(text, "nv_stream_dispatch: argument 0: kind 9 is not NV_ARG_BUFFER (1) or NV_ARG_BYTES (2)")
        bad = [nv_arg(kind: UInt32(NV_ARG_BYTES), index: 0, buffer: 0, offset: 0, bytes: nil, length: 1 << 40)]
        (code, text) = call { nv_stream_dispatch(stream, kernel, &bad, 1, &grid, &group, 0, $0) }
        XCTAssertEqual(code, Int32(NV_ERR_INVALID_ARGUMENT), "a huge length is refused before any copy")
        bad = [nv_arg(kind: UInt32(NV_ARG_BYTES), index: 0, buffer: 0, offset: 0, bytes: nil, length: 4)]
        (code, text) = call { nv_stream_dispatch(stream, kernel, &bad, 1, &grid, &group, 0, $0) }
        XCTAssertEqual(text, "nv_stream_dispatch: argument 0 bytes is NULL")
        bad = [nv_arg(kind: UInt32(NV_ARG_BUFFER), index: 0, buffer: kernel, offset: 0, bytes: nil, length: 0)]
        (code, text) = call { nv_stream_dispatch(stream, kernel, &bad, 1, &grid, &group, 0, $0) }
        XCTAssertEqual(code, Int32(NV_ERR_INVALID_HANDLE))
        (code, text) = call { nv_stream_dispatch(stream, kernel, nil, 3, &grid, &group, 0, $0) }
        XCTAssertEqual(text, "nv_stream_dispatch: args (with nargs > 0) is NULL")
        (code, text) = call { nv_stream_dispatch(stream, kernel, nil, 0, &grid, &group, 5, $0) }
        XCTAssertEqual(text, "nv_stream_dispatch: grid_mode 5 is not NV_GRID_THREADS (0) or NV_GRID_THREADGROUPS (1)")
        (code, text) = call { nv_stream_dispatch(stream, kernel, nil, 0, nil, &group, 0, $0) }
        XCTAssertEqual(text, "nv_stream_dispatch: grid is NULL")
        var hugeGrid: [UInt64] = [UInt64.max, 1, 1]
        (code, text) = call { nv_stream_dispatch(stream, kernel, nil, 0, &hugeGrid, &group, 0, $0) }
        XCTAssertEqual(code, Int32(NV_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(fake.encoded.count, 1)

        XCTAssertEqual(nv_stream_synchronize(stream, nil), Int32(NV_OK))
        for handle in [library, again, kernel, stream, buffer] { XCTAssertEqual(nv_release(handle, nil), Int32(NV_OK)) }
    }
}
