// Test doubles for the innermost layer only: a device backend that records what it is asked
// to compile and encode instead of calling Metal. Every layer above it (handles, caches,
// checks, streams) is the real code.
@testable import NuvecShim

final class FakeDeviceBackend: DeviceBackend {
    let name = "fake"
    let limits: DeviceLimits
    let lock = Lock()
    var compiled: [String] = []
    var failCompileWith: String? = nil
    var encoded: [DispatchPlan] = []
    var gpuFailure: String? = nil
    var kernelInfo = KernelInfo(maxTotalThreadsPerThreadgroup: 512, threadExecutionWidth: 32,
                                staticThreadgroupMemoryLength: 0)

    init(nonuniform: Bool = true, maxThreads: Size3 = Size3(1024, 1024, 64)) {
        limits = DeviceLimits(maxBufferLength: 1 << 20, recommendedWorkingSetSize: 1 << 30,
                              maxThreadsPerThreadgroup: maxThreads, maxThreadgroupMemoryLength: 32_768,
                              hasUnifiedMemory: true, supportsNonuniformThreadgroups: nonuniform, isMetal: true)
    }

    func makeBuffer(length: Int) throws -> BufferBackend { HostBuffer(length: length) }

    func compileLibrary(source: String, options: CompileOptions) throws -> LibraryBackend {
        try lock.withLock {
            compiled.append(source)
            if let message = failCompileWith { throw ShimError(.compile, message) }
        }
        // Function names: every word that follows "kernel void ".
        let names = source.components(after: "kernel void ")
        return FakeLibrary(names: names, info: kernelInfo)
    }

    func makeQueue() throws -> QueueBackend { FakeQueue(device: self) }
    var compileCount: Int { lock.withLock { compiled.count } }
}

final class FakeLibrary: LibraryBackend {
    let functionNames: [String]
    let info: KernelInfo
    var pipelinesMade = 0
    init(names: [String], info: KernelInfo) {
        functionNames = names
        self.info = info
    }
    func makePipeline(name: String) throws -> PipelineBackend {
        guard functionNames.contains(name) else { throw ShimError(.notFound, "no function \(name)") }
        pipelinesMade += 1
        return FakePipeline(info: info)
    }
}

final class FakePipeline: PipelineBackend {
    let info: KernelInfo
    init(info: KernelInfo) { self.info = info }
}

final class FakeQueue: QueueBackend {
    let device: FakeDeviceBackend
    init(device: FakeDeviceBackend) { self.device = device }
    func makeCommandBuffer() throws -> CommandBufferBackend { FakeCommandBuffer(device: device) }
}

final class FakeCommandBuffer: CommandBufferBackend {
    let device: FakeDeviceBackend
    var committed = false
    init(device: FakeDeviceBackend) { self.device = device }
    func encode(_ plan: DispatchPlan) throws { device.lock.withLock { device.encoded.append(plan) } }
    func commit() { committed = true }
    func waitUntilCompleted() -> String? { device.lock.withLock { device.gpuFailure } }
}

extension String {
    /// The identifier after each occurrence of `marker`.
    func components(after marker: String) -> [String] {
        var names: [String] = []
        var rest = Substring(self)
        while let range = rest.firstRange(of: marker) {
            rest = rest[range.upperBound...]
            names.append(String(rest.prefix { $0 == "_" || $0.isLetter || $0.isNumber }))
        }
        return names
    }
}

let addSource = """
    #include <metal_stdlib>
    using namespace metal;
    kernel void add(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                    device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
        out[i] = a[i] + b[i];
    }
    kernel void scale(device float* x [[buffer(0)]], constant float& s [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) { x[i] *= s; }
    """
