// Checking a dispatch before anything is encoded: arguments, grid and threadgroup. Everything
// here is plain arithmetic, so it runs (and is tested) on hosts without Metal.

/// One kernel argument.
public enum KernelArgument {
    /// Bind `buffer` at byte `offset` to `[[buffer(index)]]`.
    case buffer(Buffer, offset: Int = 0, index: Int)
    /// Copy small constant bytes into `[[buffer(index)]]` (Metal's setBytes).
    case bytes([UInt8], index: Int)

    var index: Int {
        switch self {
        case .buffer(_, _, let index), .bytes(_, let index): return index
        }
    }
}

/// How `grid` is counted; raw values equal the header's `NV_GRID_*`.
public enum GridMode: UInt32, Sendable {
    /// The grid counts threads (rounded up to whole threadgroups on devices without
    /// non-uniform threadgroups, so kernels must bounds-check their thread position).
    case threads = 0
    /// The grid counts threadgroups.
    case threadgroups = 1
}

/// A checked dispatch, ready for a backend to encode.
struct DispatchPlan {
    let pipeline: PipelineBackend
    let buffers: [(index: Int, buffer: BufferBackend, offset: Int)]
    let bytes: [(index: Int, data: [UInt8])]
    /// Threads per threadgroup.
    let threadgroup: Size3
    /// Threads when `countsThreadgroups` is false (dispatchThreads), else threadgroups
    /// (dispatchThreadgroups).
    let grid: Size3
    let countsThreadgroups: Bool
    /// Objects to keep alive until the command buffer finishes.
    let keepAlive: [AnyObject]
}

enum DispatchPlanner {
    /// Largest grid extent per dimension accepted (Metal sizes grids with 32-bit counters).
    static let maxGridExtent = Int(UInt32.max)

    static func plan(kernel: Kernel, arguments: [KernelArgument], grid: Size3, threadgroup: Size3,
                     mode: GridMode, device: Device) throws -> DispatchPlan {
        let op = "dispatch \(kernel.name)"
        let limits = device.limits
        guard kernel.device === device else {
            throw ShimError.invalid(op, "the kernel belongs to another device than the stream")
        }

        var seen = Set<Int>()
        var buffers: [(index: Int, buffer: BufferBackend, offset: Int)] = []
        var bytes: [(index: Int, data: [UInt8])] = []
        var keepAlive: [AnyObject] = [kernel]
        for (position, argument) in arguments.enumerated() {
            let index = argument.index
            guard index >= 0, index < limits.maxBufferArguments else {
                throw ShimError.invalid(op, "argument \(position): index \(index) is outside 0..<\(limits.maxBufferArguments)")
            }
            guard seen.insert(index).inserted else {
                throw ShimError.invalid(op, "argument \(position): index \(index) is bound twice")
            }
            switch argument {
            case .buffer(let buffer, let offset, _):
                guard buffer.device === device else {
                    throw ShimError.invalid(op, "argument \(position): the buffer belongs to another device than the stream")
                }
                guard offset >= 0, offset < buffer.length else {
                    throw ShimError.invalid(op, "argument \(position): offset \(offset) is outside the buffer's \(buffer.length) bytes")
                }
                buffers.append((index, buffer.backend, offset))
                keepAlive.append(buffer)
            case .bytes(let data, _):
                guard !data.isEmpty, data.count <= limits.maxConstantArgumentLength else {
                    throw ShimError.invalid(op, "argument \(position): constant bytes must be 1...\(limits.maxConstantArgumentLength) long, got \(data.count)")
                }
                bytes.append((index, data))
            }
        }

        for (name, extent) in zip(["width", "height", "depth"], grid.array) {
            guard extent >= 1 else {
                throw ShimError.invalid(op, "grid \(grid) has \(name) \(extent); every extent must be >= 1 (skip empty work before dispatching)")
            }
            guard extent <= maxGridExtent else {
                throw ShimError.invalid(op, "grid \(grid) has \(name) \(extent) > \(maxGridExtent)")
            }
        }

        let group = try resolveThreadgroup(threadgroup, grid: grid, mode: mode, kernel: kernel.info,
                                           limits: limits, op)
        if mode == .threadgroups {
            for (extent, size) in zip(grid.array, group.array) {
                guard extent.multipliedReportingOverflow(by: size).partialValue <= maxGridExtent else {
                    throw ShimError.invalid(op, "grid \(grid) threadgroups of \(group) threads exceed \(maxGridExtent) threads in a dimension")
                }
            }
            return DispatchPlan(pipeline: kernel.backend, buffers: buffers, bytes: bytes, threadgroup: group,
                                grid: grid, countsThreadgroups: true, keepAlive: keepAlive)
        }
        if limits.supportsNonuniformThreadgroups {
            return DispatchPlan(pipeline: kernel.backend, buffers: buffers, bytes: bytes, threadgroup: group,
                                grid: grid, countsThreadgroups: false, keepAlive: keepAlive)
        }
        let groups = Size3(ceilDiv(grid.width, group.width), ceilDiv(grid.height, group.height),
                           ceilDiv(grid.depth, group.depth))
        return DispatchPlan(pipeline: kernel.backend, buffers: buffers, bytes: bytes, threadgroup: group,
                            grid: groups, countsThreadgroups: true, keepAlive: keepAlive)
    }

    /// The threadgroup to use: `requested` checked against the limits, or, for (0, 0, 0), a
    /// 1-D size: the whole grid width rounded up to the SIMD width, capped by the limits.
    static func resolveThreadgroup(_ requested: Size3, grid: Size3, mode: GridMode, kernel: KernelInfo,
                                   limits: DeviceLimits, _ op: String) throws -> Size3 {
        let cap = min(kernel.maxTotalThreadsPerThreadgroup, limits.maxThreadsPerThreadgroup.width)
        if requested == .zero {
            guard cap >= 1 else { throw ShimError(.internal, "\(op): the kernel allows no threads per threadgroup") }
            if mode == .threadgroups { return Size3(cap) }
            let simd = max(kernel.threadExecutionWidth, 1)
            let rounded = ceilDiv(grid.width, simd) * simd
            return Size3(max(1, min(cap, rounded)))
        }
        for (name, size, limit) in zip3(["width", "height", "depth"], requested.array,
                                       limits.maxThreadsPerThreadgroup.array) {
            guard size >= 1 else {
                throw ShimError.invalid(op, "threadgroup \(requested) has \(name) \(size); use (0, 0, 0) to let the shim choose, else every extent must be >= 1")
            }
            guard size <= limit else {
                throw ShimError.invalid(op, "threadgroup \(requested) has \(name) \(size) > the device's limit \(limit)")
            }
        }
        let total = requested.width.multipliedReportingOverflow(by: requested.height).partialValue
            .multipliedReportingOverflow(by: requested.depth).partialValue
        guard total <= kernel.maxTotalThreadsPerThreadgroup else {
            throw ShimError.invalid(op, "threadgroup \(requested) has \(total) threads > the kernel's max_total_threads_per_threadgroup \(kernel.maxTotalThreadsPerThreadgroup)")
        }
        return requested
    }
}

@inline(__always) func ceilDiv(_ a: Int, _ b: Int) -> Int { (a + b - 1) / b }

func zip3<A, B, C>(_ a: [A], _ b: [B], _ c: [C]) -> [(A, B, C)] {
    (0..<min(a.count, b.count, c.count)).map { (a[$0], b[$0], c[$0]) }
}
