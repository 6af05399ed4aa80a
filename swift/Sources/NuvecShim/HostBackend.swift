// The host device: buffers in page-aligned CPU memory, no compiler, no kernels. It exists on
// every platform so buffers, streams and all argument checks work where Metal does not.

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why Metal is missing on this build/host, used in NV_ERR_NO_METAL messages.
let noMetalReason: String = {
    #if os(Linux)
    return "no Metal device: this host has no Metal (Linux)"
    #elseif os(Windows)
    return "no Metal device: this host has no Metal (Windows)"
    #elseif canImport(Metal)
    return "no Metal device: Metal reports no GPU on this host"
    #else
    return "no Metal device: this build of the shim has no Metal support"
    #endif
}()

final class HostBuffer: BufferBackend {
    static let alignment = 16_384  // a page on Apple silicon; at least a page elsewhere
    let length: Int
    let contents: UnsafeMutableRawPointer

    init(length: Int) {
        self.length = length
        contents = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: Self.alignment)
        contents.initializeMemory(as: UInt8.self, repeating: 0, count: length)
    }

    deinit { contents.deallocate() }
}

final class HostCommandBuffer: CommandBufferBackend {
    func encode(_ plan: DispatchPlan) throws {
        throw ShimError(.unsupported, "dispatch: the host device cannot run kernels; open a Metal device for that")
    }
    func commit() {}
    func waitUntilCompleted() -> String? { nil }
}

final class HostQueue: QueueBackend {
    func makeCommandBuffer() throws -> CommandBufferBackend { HostCommandBuffer() }
}

final class HostBackend: DeviceBackend {
    let name = "host (CPU memory, no kernels)"

    let limits: DeviceLimits = {
        let pages = Int(sysconf(Int32(_SC_PHYS_PAGES)))
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let physical = pages > 0 && pageSize > 0 ? UInt64(pages) * UInt64(pageSize) : 0
        return DeviceLimits(
            maxBufferLength: Int(Int32.max) * 2,  // 4 GiB - 2: what Metal guarantees at least
            recommendedWorkingSetSize: physical,
            maxThreadsPerThreadgroup: Size3(1024, 1024, 1024),
            maxThreadgroupMemoryLength: 32_768,
            hasUnifiedMemory: true,
            supportsNonuniformThreadgroups: true,
            isMetal: false)
    }()

    func makeBuffer(length: Int) throws -> BufferBackend { HostBuffer(length: length) }

    func compileLibrary(source: String, options: CompileOptions) throws -> LibraryBackend {
        throw ShimError(.unsupported, "compile library: the host device cannot compile Metal libraries; open a Metal device for that")
    }

    func makeQueue() throws -> QueueBackend { HostQueue() }
}
