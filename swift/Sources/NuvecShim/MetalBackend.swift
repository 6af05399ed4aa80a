// The Metal implementation of the backend protocols.
//
// NOT RUN: no Apple hardware is available to this project. This file is compiled only where
// `import Metal` works (Apple platforms). On Linux it is type-checked, not run, against the
// stub in swift/TypecheckStubs/Metal when NUVEC_METAL_TYPECHECK=1. Everything it relies on
// (argument checks, grid planning, caches, handles) is shared with the host path and tested.

#if canImport(Metal)
import Foundation  // NSString, NSObject, Error.localizedDescription
import Metal

#if canImport(Darwin)
/// True in builds that talk to the real Metal framework.
let metalCompiledIn = true
#else
let metalCompiledIn = false  // Linux type-check build against the stub
#endif

/// The system default device first, then the others (macOS can have several GPUs).
func discoverMetalDevices() -> [DeviceBackend] {
    var devices: [MTLDevice] = []
    #if os(macOS)
    let all = MTLCopyAllDevices()
    if let preferred = MTLCreateSystemDefaultDevice() ?? all.first {
        devices.append(preferred)
        devices += all.filter { $0.registryID != preferred.registryID }
    }
    #else
    if let preferred = MTLCreateSystemDefaultDevice() { devices.append(preferred) }
    #endif
    return devices.map { MetalDeviceBackend(device: $0) }
}

final class MetalDeviceBackend: DeviceBackend {
    let device: MTLDevice
    let name: String
    let limits: DeviceLimits

    init(device: MTLDevice) {
        self.device = device
        name = device.name
        let group = device.maxThreadsPerThreadgroup
        // Non-uniform threadgroups (dispatchThreads with a ragged edge) need Apple4+ or Mac2.
        let nonuniform = device.supportsFamily(.apple4) || device.supportsFamily(.mac2)
        limits = DeviceLimits(
            maxBufferLength: device.maxBufferLength,
            recommendedWorkingSetSize: device.recommendedMaxWorkingSetSize,
            maxThreadsPerThreadgroup: Size3(group.width, group.height, group.depth),
            maxThreadgroupMemoryLength: device.maxThreadgroupMemoryLength,
            maxBufferArguments: 31,          // Metal's buffer argument table
            maxConstantArgumentLength: 4096, // setBytes(_:length:index:) limit
            hasUnifiedMemory: device.hasUnifiedMemory,
            supportsNonuniformThreadgroups: nonuniform,
            isMetal: true)
    }

    func makeBuffer(length: Int) throws -> BufferBackend {
        // Shared storage: one allocation the CPU and GPU both address. Metal zero-fills it.
        guard let buffer = device.makeBuffer(length: length, options: .storageModeShared) else {
            throw ShimError(.outOfMemory, "make buffer: Metal could not allocate \(length) bytes")
        }
        return MetalBuffer(buffer: buffer)
    }

    func compileLibrary(source: String, options: CompileOptions) throws -> LibraryBackend {
        let compileOptions = MTLCompileOptions()
        if #available(macOS 15.0, iOS 18.0, *) {
            switch options.mathMode {
            case .safe:
                compileOptions.mathMode = .safe
                compileOptions.mathFloatingPointFunctions = .precise
            case .relaxed:
                compileOptions.mathMode = .relaxed
                compileOptions.mathFloatingPointFunctions = .fast
            case .fast:
                compileOptions.mathMode = .fast
                compileOptions.mathFloatingPointFunctions = .fast
            }
        } else {
            compileOptions.fastMathEnabled = options.mathMode != .safe
        }
        if options.languageVersion != 0 {
            compileOptions.languageVersion = try Self.languageVersion(options.languageVersion)
        }
        if !options.macros.isEmpty {
            var macros: [String: NSObject] = [:]
            for macro in options.macros { macros[macro.name] = macro.value as NSString }
            compileOptions.preprocessorMacros = macros
        }
        do {
            let library = try device.makeLibrary(source: source, options: compileOptions)
            return MetalLibrary(device: device, library: library)
        } catch {
            throw ShimError(.compile, "compile library: \(error.localizedDescription)")
        }
    }

    static func languageVersion(_ code: UInt32) throws -> MTLLanguageVersion {
        switch code {
        case 200: return .version2_0
        case 210: return .version2_1
        case 220: return .version2_2
        case 230: return .version2_3
        case 240: return .version2_4
        case 300: return .version3_0
        case 310:
            if #available(macOS 14.0, iOS 17.0, *) { return .version3_1 }
        case 320:
            if #available(macOS 15.0, iOS 18.0, *) { return .version3_2 }
        default:
            break
        }
        throw ShimError(.unsupported, "compile library: Metal Shading Language \(code / 100).\(code % 100) is not available on this OS")
    }

    func makeQueue() throws -> QueueBackend {
        guard let queue = device.makeCommandQueue() else {
            throw ShimError(.internal, "make stream: Metal could not create a command queue")
        }
        return MetalQueue(queue: queue)
    }
}

final class MetalBuffer: BufferBackend {
    let buffer: MTLBuffer
    init(buffer: MTLBuffer) { self.buffer = buffer }
    var length: Int { buffer.length }
    var contents: UnsafeMutableRawPointer { buffer.contents() }
}

final class MetalLibrary: LibraryBackend {
    let device: MTLDevice
    let library: MTLLibrary

    init(device: MTLDevice, library: MTLLibrary) {
        self.device = device
        self.library = library
    }

    var functionNames: [String] { library.functionNames }

    func makePipeline(name: String) throws -> PipelineBackend {
        guard let function = library.makeFunction(name: name) else {
            throw ShimError(.notFound, "make kernel: the library has no function named \(quoted(name)); it has: \(functionNames.sorted().joined(separator: ", "))")
        }
        guard function.functionType == .kernel else {
            throw ShimError.invalid("make kernel", "\(quoted(name)) is not a kernel function")
        }
        do {
            return MetalPipeline(state: try device.makeComputePipelineState(function: function))
        } catch {
            throw ShimError(.compile, "make kernel \(name): \(error.localizedDescription)")
        }
    }
}

final class MetalPipeline: PipelineBackend {
    let state: MTLComputePipelineState
    init(state: MTLComputePipelineState) { self.state = state }

    var info: KernelInfo {
        KernelInfo(maxTotalThreadsPerThreadgroup: state.maxTotalThreadsPerThreadgroup,
                   threadExecutionWidth: state.threadExecutionWidth,
                   staticThreadgroupMemoryLength: state.staticThreadgroupMemoryLength)
    }
}

final class MetalQueue: QueueBackend {
    let queue: MTLCommandQueue
    init(queue: MTLCommandQueue) { self.queue = queue }

    func makeCommandBuffer() throws -> CommandBufferBackend {
        guard let commandBuffer = queue.makeCommandBuffer() else {
            throw ShimError(.internal, "dispatch: Metal could not create a command buffer")
        }
        return MetalCommandBuffer(commandBuffer: commandBuffer)
    }
}

/// One command buffer with one serial compute encoder, opened on the first dispatch: a serial
/// encoder runs its dispatches in order with hazard tracking between them.
final class MetalCommandBuffer: CommandBufferBackend {
    let commandBuffer: MTLCommandBuffer
    private var encoder: MTLComputeCommandEncoder? = nil

    init(commandBuffer: MTLCommandBuffer) { self.commandBuffer = commandBuffer }

    func encode(_ plan: DispatchPlan) throws {
        if encoder == nil {
            guard let made = commandBuffer.makeComputeCommandEncoder() else {
                throw ShimError(.internal, "dispatch: Metal could not create a compute encoder")
            }
            encoder = made
        }
        let encoder = encoder!
        guard let pipeline = plan.pipeline as? MetalPipeline else {
            throw ShimError(.internal, "dispatch: the kernel is not a Metal pipeline")
        }
        encoder.setComputePipelineState(pipeline.state)
        for binding in plan.buffers {
            guard let buffer = binding.buffer as? MetalBuffer else {
                throw ShimError(.internal, "dispatch: buffer at index \(binding.index) is not a Metal buffer")
            }
            encoder.setBuffer(buffer.buffer, offset: binding.offset, index: binding.index)
        }
        for constant in plan.bytes {
            constant.data.withUnsafeBytes { raw in
                encoder.setBytes(raw.baseAddress!, length: raw.count, index: constant.index)
            }
        }
        let group = MTLSize(width: plan.threadgroup.width, height: plan.threadgroup.height, depth: plan.threadgroup.depth)
        let grid = MTLSize(width: plan.grid.width, height: plan.grid.height, depth: plan.grid.depth)
        if plan.countsThreadgroups {
            encoder.dispatchThreadgroups(grid, threadsPerThreadgroup: group)
        } else {
            encoder.dispatchThreads(grid, threadsPerThreadgroup: group)
        }
    }

    func commit() {
        encoder?.endEncoding()
        encoder = nil
        commandBuffer.commit()
    }

    func waitUntilCompleted() -> String? {
        commandBuffer.waitUntilCompleted()
        guard commandBuffer.status == .error else { return nil }
        return commandBuffer.error?.localizedDescription ?? "the command buffer reported an error without a message"
    }
}

#else

let metalCompiledIn = false

/// No Metal in this build: no devices.
func discoverMetalDevices() -> [DeviceBackend] { [] }

#endif
