// Device: a Metal GPU or the host (CPU memory) device, and the owner of the caches.

/// Cache counters of a device (the C struct `nv_cache_stats`).
public struct CacheStats: Hashable, Sendable {
    public var libraryHits: UInt64
    public var libraryMisses: UInt64
    public var kernelHits: UInt64
    public var kernelMisses: UInt64
}

/// A compute device.
///
///     let device = try Device.metal()                   // throws ShimError(.noMetal) on Linux
///     let buffer = try device.makeBuffer(length: 4096)
///     let library = try device.makeLibrary(source: msl)
///     let kernel = try library.makeKernel(name: "add")
///     let stream = try device.makeCommandStream()
///     try stream.dispatch(kernel, arguments: [.buffer(buffer, index: 0)], grid: Size3(1024))
///     try stream.synchronize()
public final class Device: @unchecked Sendable {
    let backend: DeviceBackend
    public let name: String
    public let limits: DeviceLimits
    let libraries: KeyedCache<[UInt8], Library>
    let kernelCounter = CacheCounter()

    init(backend: DeviceBackend) {
        self.backend = backend
        name = backend.name
        limits = backend.limits
        libraries = KeyedCache()
    }

    public var isMetal: Bool { limits.isMetal }

    // MARK: opening

    /// The host device: CPU memory buffers, no kernels. One shared instance.
    public static let host = Device(backend: HostBackend())

    private final class Discovery: @unchecked Sendable {
        let lock = Lock()
        var devices: [Device]? = nil
        var all: [Device] {
            lock.withLock {
                if devices == nil { devices = discoverMetalDevices().map { Device(backend: $0) } }
                return devices!
            }
        }
    }
    private static let discovery = Discovery()

    /// Number of Metal devices (0 without Metal).
    public static var metalDeviceCount: Int { discovery.all.count }

    /// Metal device `index` (0: the system default). Repeated calls return the same object.
    public static func metal(_ index: Int = 0) throws -> Device {
        let all = discovery.all
        guard !all.isEmpty else { throw ShimError(.noMetal, noMetalReason) }
        guard index >= 0, index < all.count else {
            throw ShimError.invalid("open device", "index \(index) is out of range: this host has \(all.count) Metal device(s)")
        }
        return all[index]
    }

    /// nil when a Metal device can be opened, else why not.
    public static var metalUnavailableReason: String? {
        metalDeviceCount > 0 ? nil : noMetalReason
    }

    // MARK: buffers

    /// A zero-filled shared-storage buffer of `length` (> 0) bytes.
    public func makeBuffer(length: Int) throws -> Buffer {
        try checkLength(length, "make buffer")
        return Buffer(device: self, backend: try backend.makeBuffer(length: length))
    }

    /// A buffer holding a copy of `bytes` (not empty).
    public func makeBuffer(bytes: UnsafeRawBufferPointer) throws -> Buffer {
        try checkLength(bytes.count, "make buffer with bytes")
        let buffer = try makeBuffer(length: bytes.count)
        buffer.contents.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        return buffer
    }

    private func checkLength(_ length: Int, _ operation: String) throws {
        guard length > 0 else { throw ShimError.invalid(operation, "length must be > 0, got \(length)") }
        guard length <= limits.maxBufferLength else {
            throw ShimError(.outOfMemory, "\(operation): length \(length) exceeds the device's max_buffer_length \(limits.maxBufferLength)")
        }
    }

    // MARK: libraries

    /// Compiles (or finds in the cache) a library of Metal Shading Language source.
    public func makeLibrary(source: String, options: CompileOptions = CompileOptions()) throws -> Library {
        try options.validate("compile library")
        let key = try options.sourceHash(source)
        return try libraries.value(for: key) {
            Library(device: self, sourceHash: key,
                    backend: try backend.compileLibrary(source: source, options: options))
        }
    }

    public var cacheStats: CacheStats {
        let libs = libraries.counter.counts
        let kernels = kernelCounter.counts
        return CacheStats(libraryHits: libs.hits, libraryMisses: libs.misses,
                          kernelHits: kernels.hits, kernelMisses: kernels.misses)
    }

    /// Empties the library cache and the kernel caches of cached libraries. Objects already
    /// handed out stay valid.
    public func clearCache() {
        for library in libraries.values { library.kernels.removeAll() }
        libraries.removeAll()
    }

    // MARK: streams

    public func makeCommandStream() throws -> CommandStream {
        CommandStream(device: self, queue: try backend.makeQueue())
    }
}

/// Memory shared by the CPU and the device.
public final class Buffer: @unchecked Sendable {
    public let device: Device
    let backend: BufferBackend

    init(device: Device, backend: BufferBackend) {
        self.device = device
        self.backend = backend
    }

    public var length: Int { backend.length }
    /// CPU address of the memory; valid while the buffer lives.
    public var contents: UnsafeMutableRawPointer { backend.contents }
}

/// A compiled library; kernels are looked up by name and cached.
public final class Library: @unchecked Sendable {
    public let device: Device
    /// SHA-256 of (options, source), the cache key.
    public let sourceHash: [UInt8]
    let backend: LibraryBackend
    let kernels: KeyedCache<String, Kernel>

    init(device: Device, sourceHash: [UInt8], backend: LibraryBackend) {
        self.device = device
        self.sourceHash = sourceHash
        self.backend = backend
        kernels = KeyedCache(counter: device.kernelCounter)
    }

    public var functionNames: [String] { backend.functionNames }

    /// The compute pipeline of kernel function `name`.
    public func makeKernel(name: String) throws -> Kernel {
        guard !name.isEmpty else { throw ShimError.invalid("make kernel", "the kernel name is empty") }
        return try kernels.value(for: name) {
            Kernel(library: self, name: name, backend: try backend.makePipeline(name: name))
        }
    }
}

/// A compute pipeline: one kernel function of a library, ready to dispatch.
public final class Kernel: @unchecked Sendable {
    public let library: Library
    public let name: String
    let backend: PipelineBackend
    public let info: KernelInfo

    init(library: Library, name: String, backend: PipelineBackend) {
        self.library = library
        self.name = name
        self.backend = backend
        info = backend.info
    }

    public var device: Device { library.device }
}
