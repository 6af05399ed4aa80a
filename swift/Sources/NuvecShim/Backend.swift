// What a device implementation provides. Two live in this package: MetalBackend (Apple
// platforms, behind `#if canImport(Metal)`) and HostBackend (CPU memory, everywhere). Every
// check, cache and handle above this layer is shared, so it runs on Linux as it does on macOS.

/// A width-height-depth triple for grids and threadgroups.
public struct Size3: Hashable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var depth: Int

    public init(_ width: Int, _ height: Int = 1, _ depth: Int = 1) {
        self.width = width
        self.height = height
        self.depth = depth
    }

    public static let zero = Size3(0, 0, 0)
    public var product: Int { width * height * depth }
    public var array: [Int] { [width, height, depth] }
    public var description: String { "(\(width), \(height), \(depth))" }
}

/// Limits of a device (the C struct `nv_device_limits`).
public struct DeviceLimits: Hashable, Sendable {
    public var maxBufferLength: Int
    public var recommendedWorkingSetSize: UInt64
    public var maxThreadsPerThreadgroup: Size3
    public var maxThreadgroupMemoryLength: Int
    public var maxBufferArguments: Int
    public var maxConstantArgumentLength: Int
    public var hasUnifiedMemory: Bool
    public var supportsNonuniformThreadgroups: Bool
    public var isMetal: Bool

    public init(maxBufferLength: Int, recommendedWorkingSetSize: UInt64, maxThreadsPerThreadgroup: Size3,
                maxThreadgroupMemoryLength: Int, maxBufferArguments: Int = 31,
                maxConstantArgumentLength: Int = 4096, hasUnifiedMemory: Bool,
                supportsNonuniformThreadgroups: Bool, isMetal: Bool) {
        self.maxBufferLength = maxBufferLength
        self.recommendedWorkingSetSize = recommendedWorkingSetSize
        self.maxThreadsPerThreadgroup = maxThreadsPerThreadgroup
        self.maxThreadgroupMemoryLength = maxThreadgroupMemoryLength
        self.maxBufferArguments = maxBufferArguments
        self.maxConstantArgumentLength = maxConstantArgumentLength
        self.hasUnifiedMemory = hasUnifiedMemory
        self.supportsNonuniformThreadgroups = supportsNonuniformThreadgroups
        self.isMetal = isMetal
    }
}

/// Thread limits of one compute pipeline (the C struct `nv_kernel_info`).
public struct KernelInfo: Hashable, Sendable {
    public var maxTotalThreadsPerThreadgroup: Int
    public var threadExecutionWidth: Int
    public var staticThreadgroupMemoryLength: Int

    public init(maxTotalThreadsPerThreadgroup: Int, threadExecutionWidth: Int, staticThreadgroupMemoryLength: Int) {
        self.maxTotalThreadsPerThreadgroup = maxTotalThreadsPerThreadgroup
        self.threadExecutionWidth = threadExecutionWidth
        self.staticThreadgroupMemoryLength = staticThreadgroupMemoryLength
    }
}

protocol DeviceBackend: AnyObject {
    var name: String { get }
    var limits: DeviceLimits { get }
    /// A zero-filled buffer in memory the CPU can read and write.
    func makeBuffer(length: Int) throws -> BufferBackend
    func compileLibrary(source: String, options: CompileOptions) throws -> LibraryBackend
    func makeQueue() throws -> QueueBackend
}

protocol BufferBackend: AnyObject {
    var length: Int { get }
    var contents: UnsafeMutableRawPointer { get }
}

protocol LibraryBackend: AnyObject {
    var functionNames: [String] { get }
    func makePipeline(name: String) throws -> PipelineBackend
}

protocol PipelineBackend: AnyObject {
    var info: KernelInfo { get }
}

protocol QueueBackend: AnyObject {
    func makeCommandBuffer() throws -> CommandBufferBackend
}

protocol CommandBufferBackend: AnyObject {
    /// Encodes one checked dispatch. Called with the stream's lock held.
    func encode(_ plan: DispatchPlan) throws
    func commit()
    /// Blocks until the work has finished; the GPU's error message if it failed.
    func waitUntilCompleted() -> String?
}
