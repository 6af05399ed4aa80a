// A hand-written stand-in for the subset of Apple's Metal API that NuvecShim uses, so the
// Metal code paths can be type-checked on Linux (NUVEC_METAL_TYPECHECK=1 swift build).
//
// It is not Metal: signatures follow Apple's documented Swift interface as read by the
// author; no device is ever returned, so nothing here runs a GPU. A mismatch with the real
// SDK would show up only when building on macOS.
@_exported import Foundation

public struct MTLSize {
    public var width: Int
    public var height: Int
    public var depth: Int
    public init(width: Int, height: Int, depth: Int) {
        self.width = width
        self.height = height
        self.depth = depth
    }
}

public struct MTLResourceOptions: OptionSet {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let storageModeShared: MTLResourceOptions = []
    public static let storageModePrivate = MTLResourceOptions(rawValue: 1 << 5)
}

public enum MTLGPUFamily: Int { case apple4 = 1004, apple7 = 1007, mac2 = 2002 }
public enum MTLLanguageVersion: UInt {
    case version2_0 = 131072, version2_1 = 131073, version2_2 = 131074, version2_3 = 131075
    case version2_4 = 131076, version3_0 = 196608, version3_1 = 196609, version3_2 = 196610
}
public enum MTLMathMode: Int { case safe = 0, relaxed = 1, fast = 2 }
public enum MTLMathFloatingPointFunctions: Int { case fast = 0, precise = 1 }
public enum MTLFunctionType: UInt { case vertex = 1, fragment = 2, kernel = 3 }
public enum MTLCommandBufferStatus: UInt {
    case notEnqueued = 0, enqueued, committed, scheduled, completed, error
}

public class MTLCompileOptions: NSObject {
    public var fastMathEnabled: Bool = true
    public var mathMode: MTLMathMode = .fast
    public var mathFloatingPointFunctions: MTLMathFloatingPointFunctions = .fast
    public var languageVersion: MTLLanguageVersion = .version3_0
    public var preprocessorMacros: [String: NSObject]? = nil
    public override init() {}
}

public protocol MTLDevice: NSObjectProtocol {
    var name: String { get }
    var registryID: UInt64 { get }
    var maxThreadsPerThreadgroup: MTLSize { get }
    var maxBufferLength: Int { get }
    var maxThreadgroupMemoryLength: Int { get }
    var recommendedMaxWorkingSetSize: UInt64 { get }
    var hasUnifiedMemory: Bool { get }
    func supportsFamily(_ gpuFamily: MTLGPUFamily) -> Bool
    func makeBuffer(length: Int, options: MTLResourceOptions) -> MTLBuffer?
    func makeLibrary(source: String, options: MTLCompileOptions?) throws -> MTLLibrary
    func makeComputePipelineState(function: MTLFunction) throws -> MTLComputePipelineState
    func makeCommandQueue() -> MTLCommandQueue?
}

public protocol MTLBuffer: NSObjectProtocol {
    var length: Int { get }
    func contents() -> UnsafeMutableRawPointer
}

public protocol MTLFunction: NSObjectProtocol {
    var name: String { get }
    var functionType: MTLFunctionType { get }
}

public protocol MTLLibrary: NSObjectProtocol {
    var functionNames: [String] { get }
    func makeFunction(name: String) -> MTLFunction?
}

public protocol MTLComputePipelineState: NSObjectProtocol {
    var maxTotalThreadsPerThreadgroup: Int { get }
    var threadExecutionWidth: Int { get }
    var staticThreadgroupMemoryLength: Int { get }
}

public protocol MTLCommandQueue: NSObjectProtocol {
    func makeCommandBuffer() -> MTLCommandBuffer?
}

public protocol MTLCommandEncoder: NSObjectProtocol {
    func endEncoding()
}

public protocol MTLComputeCommandEncoder: MTLCommandEncoder {
    func setComputePipelineState(_ state: MTLComputePipelineState)
    func setBuffer(_ buffer: MTLBuffer?, offset: Int, index: Int)
    func setBytes(_ bytes: UnsafeRawPointer, length: Int, index: Int)
    func dispatchThreads(_ threadsPerGrid: MTLSize, threadsPerThreadgroup: MTLSize)
    func dispatchThreadgroups(_ threadgroupsPerGrid: MTLSize, threadsPerThreadgroup: MTLSize)
}

public protocol MTLCommandBuffer: NSObjectProtocol {
    var status: MTLCommandBufferStatus { get }
    var error: Error? { get }
    func makeComputeCommandEncoder() -> MTLComputeCommandEncoder?
    func commit()
    func waitUntilCompleted()
}

/// Never a device: this is not Metal.
public func MTLCreateSystemDefaultDevice() -> MTLDevice? { nil }
