// The C ABI of shim/nuvec_shim.h, exported with @_cdecl. Each function turns C arguments into
// Swift values, calls the Swift API, and turns a thrown ShimError into (status, message).
// Thread-safety rules are stated in the header; they follow from the locks in the Swift types.
//
// The Swift names start with an underscore: they exist for the C symbol, not for Swift callers.

import CNuvecShim
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

public typealias NVErrorOut = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?

/// A heap copy of `text` that the caller frees with nv_string_free (free()).
func heapString(_ text: String) -> UnsafeMutablePointer<CChar> {
    guard let copy = strdup(text) else { fatalError("nuvec shim: out of memory copying a string") }
    return copy
}

/// Runs `body`, storing NULL or the failure message in `error`; returns the status code.
@inline(__always)
func guarded(_ error: NVErrorOut, _ body: () throws -> Void) -> Int32 {
    error?.pointee = nil
    do {
        try body()
        return ShimStatus.ok.rawValue
    } catch let failure as ShimError {
        error?.pointee = heapString(failure.message)
        return failure.status.rawValue
    } catch let failure {
        error?.pointee = heapString("unexpected error: \(failure)")
        return ShimStatus.internal.rawValue
    }
}

@inline(__always)
func required<T>(_ pointer: T?, _ operation: String, _ name: String) throws -> T {
    guard let pointer else { throw ShimError.invalid(operation, "\(name) is NULL") }
    return pointer
}

func cString(_ pointer: UnsafePointer<CChar>?, _ operation: String, _ name: String) throws -> String {
    String(cString: try required(pointer, operation, name))
}

func asInt(_ value: UInt64, _ operation: String, _ name: String) throws -> Int {
    guard value <= UInt64(Int.max) else { throw ShimError.invalid(operation, "\(name) \(value) is too large") }
    return Int(value)
}

func object<T: AnyObject>(_ handle: UInt64, _ kind: HandleKind, _ operation: String) throws -> T {
    try handles.object(handle, kind, operation)
}

/// Compile options from the C struct (NULL: defaults).
func compileOptions(_ pointer: UnsafePointer<nv_compile_options>?, _ operation: String) throws -> CompileOptions {
    guard let raw = pointer?.pointee else { return CompileOptions() }
    guard let mode = CompileOptions.MathMode(rawValue: raw.math_mode) else {
        throw ShimError.invalid(operation, "math_mode \(raw.math_mode) is not NV_MATH_SAFE (0), NV_MATH_RELAXED (1) or NV_MATH_FAST (2)")
    }
    guard raw.reserved == 0 else { throw ShimError.invalid(operation, "options.reserved must be 0") }
    let macros = try raw.preprocessor_macros.map { try CompileOptions.parseMacros(String(cString: $0), operation) } ?? []
    let options = CompileOptions(mathMode: mode, languageVersion: raw.language_version, macros: macros)
    try options.validate(operation)
    return options
}

private let statusNames: [UnsafeMutablePointer<CChar>] = ShimStatus.allCases.map { heapString($0.name) }
private let unknownStatusName = heapString("NV_ERR_UNKNOWN")

// MARK: version, errors, handles

@_cdecl("nv_abi_version")
public func _nv_abi_version() -> UInt32 { NUVEC_SHIM_ABI_VERSION }

@_cdecl("nv_abi_struct_size")
public func _nv_abi_struct_size(_ structID: UInt32) -> UInt32 {
    switch Int(structID) {
    case Int(NV_STRUCT_DEVICE_LIMITS): return UInt32(MemoryLayout<nv_device_limits>.size)
    case Int(NV_STRUCT_COMPILE_OPTIONS): return UInt32(MemoryLayout<nv_compile_options>.size)
    case Int(NV_STRUCT_KERNEL_INFO): return UInt32(MemoryLayout<nv_kernel_info>.size)
    case Int(NV_STRUCT_ARG): return UInt32(MemoryLayout<nv_arg>.size)
    case Int(NV_STRUCT_CACHE_STATS): return UInt32(MemoryLayout<nv_cache_stats>.size)
    default: return 0
    }
}

@_cdecl("nv_build_flags")
public func _nv_build_flags() -> UInt32 { metalCompiledIn ? UInt32(NV_BUILD_METAL) : 0 }

@_cdecl("nv_status_name")
public func _nv_status_name(_ status: Int32) -> UnsafePointer<CChar>? {
    guard let known = ShimStatus(rawValue: status) else { return UnsafePointer(unknownStatusName) }
    return UnsafePointer(statusNames[ShimStatus.allCases.firstIndex(of: known)!])
}

@_cdecl("nv_string_free")
public func _nv_string_free(_ text: UnsafeMutablePointer<CChar>?) { free(text) }

@_cdecl("nv_retain")
public func _nv_retain(_ handle: UInt64, _ error: NVErrorOut) -> Int32 {
    guarded(error) { try handles.retain(handle, "nv_retain") }
}

@_cdecl("nv_release")
public func _nv_release(_ handle: UInt64, _ error: NVErrorOut) -> Int32 {
    guarded(error) { try handles.release(handle, "nv_release") }
}

@_cdecl("nv_handle_kind")
public func _nv_handle_kind(_ handle: UInt64, _ out: UnsafeMutablePointer<Int32>?, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_handle_kind", "out")
        out.pointee = try handles.kind(of: handle, "nv_handle_kind").rawValue
    }
}

@_cdecl("nv_live_handle_count")
public func _nv_live_handle_count() -> UInt64 { UInt64(handles.liveCount) }

// MARK: devices

@_cdecl("nv_metal_probe")
public func _nv_metal_probe(_ error: NVErrorOut) -> Int32 {
    guarded(error) {
        if let reason = Device.metalUnavailableReason { throw ShimError(.noMetal, reason) }
    }
}

@_cdecl("nv_device_count")
public func _nv_device_count() -> UInt32 { UInt32(Device.metalDeviceCount) }

@_cdecl("nv_device_open")
public func _nv_device_open(_ index: UInt32, _ out: UnsafeMutablePointer<UInt64>?, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_device_open", "out")
        out.pointee = handles.insert(try Device.metal(Int(index)), kind: .device)
    }
}

@_cdecl("nv_device_open_host")
public func _nv_device_open_host(_ out: UnsafeMutablePointer<UInt64>?, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_device_open_host", "out")
        out.pointee = handles.insert(Device.host, kind: .device)
    }
}

@_cdecl("nv_device_name")
public func _nv_device_name(_ device: UInt64, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                            _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_device_name", "out")
        let device: Device = try object(device, .device, "nv_device_name")
        out.pointee = heapString(device.name)
    }
}

@_cdecl("nv_device_limits_get")
public func _nv_device_limits_get(_ device: UInt64, _ out: UnsafeMutablePointer<nv_device_limits>?,
                                  _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_device_limits_get", "out")
        let limits = (try object(device, .device, "nv_device_limits_get") as Device).limits
        let group = limits.maxThreadsPerThreadgroup
        out.pointee = nv_device_limits(
            max_buffer_length: UInt64(limits.maxBufferLength),
            recommended_working_set_size: limits.recommendedWorkingSetSize,
            max_threads_per_threadgroup: (UInt32(group.width), UInt32(group.height), UInt32(group.depth)),
            max_threadgroup_memory_length: UInt32(limits.maxThreadgroupMemoryLength),
            max_buffer_arguments: UInt32(limits.maxBufferArguments),
            max_constant_argument_length: UInt32(limits.maxConstantArgumentLength),
            has_unified_memory: limits.hasUnifiedMemory ? 1 : 0,
            supports_nonuniform_threadgroups: limits.supportsNonuniformThreadgroups ? 1 : 0,
            is_metal: limits.isMetal ? 1 : 0,
            reserved: 0)
    }
}

@_cdecl("nv_device_cache_stats")
public func _nv_device_cache_stats(_ device: UInt64, _ out: UnsafeMutablePointer<nv_cache_stats>?,
                                   _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_device_cache_stats", "out")
        let stats = (try object(device, .device, "nv_device_cache_stats") as Device).cacheStats
        out.pointee = nv_cache_stats(library_hits: stats.libraryHits, library_misses: stats.libraryMisses,
                                     kernel_hits: stats.kernelHits, kernel_misses: stats.kernelMisses)
    }
}

@_cdecl("nv_device_clear_cache")
public func _nv_device_clear_cache(_ device: UInt64, _ error: NVErrorOut) -> Int32 {
    guarded(error) { (try object(device, .device, "nv_device_clear_cache") as Device).clearCache() }
}

// MARK: buffers

@_cdecl("nv_buffer_new")
public func _nv_buffer_new(_ device: UInt64, _ length: UInt64, _ out: UnsafeMutablePointer<UInt64>?,
                           _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_buffer_new", "out")
        let device: Device = try object(device, .device, "nv_buffer_new")
        let buffer = try device.makeBuffer(length: try asInt(length, "nv_buffer_new", "length"))
        out.pointee = handles.insert(buffer, kind: .buffer)
    }
}

@_cdecl("nv_buffer_new_with_bytes")
public func _nv_buffer_new_with_bytes(_ device: UInt64, _ bytes: UnsafeRawPointer?, _ length: UInt64,
                                      _ out: UnsafeMutablePointer<UInt64>?, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let op = "nv_buffer_new_with_bytes"
        let out = try required(out, op, "out")
        let bytes = try required(bytes, op, "bytes")
        let device: Device = try object(device, .device, op)
        let buffer = try device.makeBuffer(bytes: UnsafeRawBufferPointer(start: bytes, count: try asInt(length, op, "length")))
        out.pointee = handles.insert(buffer, kind: .buffer)
    }
}

@_cdecl("nv_buffer_length")
public func _nv_buffer_length(_ buffer: UInt64, _ out: UnsafeMutablePointer<UInt64>?, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_buffer_length", "out")
        out.pointee = UInt64((try object(buffer, .buffer, "nv_buffer_length") as Buffer).length)
    }
}

@_cdecl("nv_buffer_contents")
public func _nv_buffer_contents(_ buffer: UInt64, _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_buffer_contents", "out")
        out.pointee = (try object(buffer, .buffer, "nv_buffer_contents") as Buffer).contents
    }
}

// MARK: libraries and kernels

@_cdecl("nv_source_hash")
public func _nv_source_hash(_ source: UnsafePointer<CChar>?, _ options: UnsafePointer<nv_compile_options>?,
                            _ out: UnsafeMutablePointer<UInt8>?, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_source_hash", "out")
        let text = try cString(source, "nv_source_hash", "source")
        let digest = try compileOptions(options, "nv_source_hash").sourceHash(text)
        for (i, byte) in digest.enumerated() { out[i] = byte }
    }
}

@_cdecl("nv_library_compile")
public func _nv_library_compile(_ device: UInt64, _ source: UnsafePointer<CChar>?,
                                _ options: UnsafePointer<nv_compile_options>?,
                                _ out: UnsafeMutablePointer<UInt64>?, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let op = "nv_library_compile"
        let out = try required(out, op, "out")
        let text = try cString(source, op, "source")
        let parsed = try compileOptions(options, op)
        let device: Device = try object(device, .device, op)
        out.pointee = handles.insert(try device.makeLibrary(source: text, options: parsed), kind: .library)
    }
}

@_cdecl("nv_library_function_names")
public func _nv_library_function_names(_ library: UInt64, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                       _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_library_function_names", "out")
        let library: Library = try object(library, .library, "nv_library_function_names")
        out.pointee = heapString(library.functionNames.sorted().joined(separator: "\n"))
    }
}

@_cdecl("nv_kernel_new")
public func _nv_kernel_new(_ library: UInt64, _ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UInt64>?,
                           _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_kernel_new", "out")
        let text = try cString(name, "nv_kernel_new", "name")
        let library: Library = try object(library, .library, "nv_kernel_new")
        out.pointee = handles.insert(try library.makeKernel(name: text), kind: .kernel)
    }
}

@_cdecl("nv_kernel_info_get")
public func _nv_kernel_info_get(_ kernel: UInt64, _ out: UnsafeMutablePointer<nv_kernel_info>?,
                                _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_kernel_info_get", "out")
        let info = (try object(kernel, .kernel, "nv_kernel_info_get") as Kernel).info
        out.pointee = nv_kernel_info(
            max_total_threads_per_threadgroup: UInt32(info.maxTotalThreadsPerThreadgroup),
            thread_execution_width: UInt32(info.threadExecutionWidth),
            static_threadgroup_memory_length: UInt32(info.staticThreadgroupMemoryLength),
            reserved: 0)
    }
}

// MARK: command streams

@_cdecl("nv_stream_new")
public func _nv_stream_new(_ device: UInt64, _ out: UnsafeMutablePointer<UInt64>?, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_stream_new", "out")
        let device: Device = try object(device, .device, "nv_stream_new")
        out.pointee = handles.insert(try device.makeCommandStream(), kind: .stream)
    }
}

/// Kernel arguments from the C array; bytes are copied here, after their length is checked.
func kernelArguments(_ args: UnsafePointer<nv_arg>?, _ count: UInt32, limits: DeviceLimits,
                     _ op: String) throws -> [KernelArgument] {
    guard count > 0 else { return [] }
    let args = try required(args, op, "args (with nargs > 0)")
    guard Int(count) <= limits.maxBufferArguments else {
        throw ShimError.invalid(op, "nargs \(count) exceeds the device's \(limits.maxBufferArguments) argument slots")
    }
    var result: [KernelArgument] = []
    for position in 0..<Int(count) {
        let arg = args[position]
        let index = Int(arg.index)
        switch Int(arg.kind) {
        case Int(NV_ARG_BUFFER):
            let buffer: Buffer = try object(arg.buffer, .buffer, "\(op) argument \(position)")
            result.append(.buffer(buffer, offset: try asInt(arg.offset, op, "argument \(position) offset"), index: index))
        case Int(NV_ARG_BYTES):
            guard arg.length >= 1, arg.length <= UInt64(limits.maxConstantArgumentLength) else {
                throw ShimError.invalid(op, "argument \(position): constant bytes must be 1...\(limits.maxConstantArgumentLength) long, got \(arg.length)")
            }
            let bytes = try required(arg.bytes, op, "argument \(position) bytes")
            result.append(.bytes(Array(UnsafeRawBufferPointer(start: bytes, count: Int(arg.length))), index: index))
        default:
            throw ShimError.invalid(op, "argument \(position): kind \(arg.kind) is not NV_ARG_BUFFER (1) or NV_ARG_BYTES (2)")
        }
    }
    return result
}

@_cdecl("nv_stream_dispatch")
public func _nv_stream_dispatch(_ stream: UInt64, _ kernel: UInt64, _ args: UnsafePointer<nv_arg>?, _ nargs: UInt32,
                                _ grid: UnsafePointer<UInt64>?, _ threadgroup: UnsafePointer<UInt32>?,
                                _ gridMode: UInt32, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let op = "nv_stream_dispatch"
        let stream: CommandStream = try object(stream, .stream, op)
        let kernel: Kernel = try object(kernel, .kernel, op)
        let grid = try required(grid, op, "grid")
        let threadgroup = try required(threadgroup, op, "threadgroup")
        guard let mode = GridMode(rawValue: gridMode) else {
            throw ShimError.invalid(op, "grid_mode \(gridMode) is not NV_GRID_THREADS (0) or NV_GRID_THREADGROUPS (1)")
        }
        let arguments = try kernelArguments(args, nargs, limits: stream.device.limits, op)
        let gridSize = Size3(try asInt(grid[0], op, "grid[0]"), try asInt(grid[1], op, "grid[1]"),
                             try asInt(grid[2], op, "grid[2]"))
        let groupSize = Size3(Int(threadgroup[0]), Int(threadgroup[1]), Int(threadgroup[2]))
        try stream.dispatch(kernel, arguments: arguments, grid: gridSize, threadgroup: groupSize, mode: mode)
    }
}

@_cdecl("nv_stream_pending")
public func _nv_stream_pending(_ stream: UInt64, _ out: UnsafeMutablePointer<UInt64>?, _ error: NVErrorOut) -> Int32 {
    guarded(error) {
        let out = try required(out, "nv_stream_pending", "out")
        out.pointee = UInt64((try object(stream, .stream, "nv_stream_pending") as CommandStream).pendingDispatches)
    }
}

@_cdecl("nv_stream_commit")
public func _nv_stream_commit(_ stream: UInt64, _ error: NVErrorOut) -> Int32 {
    guarded(error) { (try object(stream, .stream, "nv_stream_commit") as CommandStream).commit() }
}

@_cdecl("nv_stream_wait")
public func _nv_stream_wait(_ stream: UInt64, _ error: NVErrorOut) -> Int32 {
    guarded(error) { try (try object(stream, .stream, "nv_stream_wait") as CommandStream).wait() }
}

@_cdecl("nv_stream_synchronize")
public func _nv_stream_synchronize(_ stream: UInt64, _ error: NVErrorOut) -> Int32 {
    guarded(error) { try (try object(stream, .stream, "nv_stream_synchronize") as CommandStream).synchronize() }
}
