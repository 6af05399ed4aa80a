// The C ABI called the way C calls it: through the declarations of shim/nuvec_shim.h
// (module CNuvecShim), which link to the @_cdecl symbols. On Linux this covers every ABI
// function; only the Metal calls behind them do not run.
import XCTest
import CNuvecShim
@testable import NuvecShim

/// Calls an ABI function that takes `char **error`; returns (status, message) and frees it.
func call(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32) -> (Int32, String?) {
    var error: UnsafeMutablePointer<CChar>? = UnsafeMutablePointer(bitPattern: 0xdead)  // must be overwritten
    let status = body(&error)
    let message = error.map { String(cString: $0) }
    nv_string_free(error)
    return (status, message)
}

func openHost() -> UInt64 {
    var device: UInt64 = 0
    precondition(nv_device_open_host(&device, nil) == Int32(NV_OK))
    return device
}

final class ABITests: XCTestCase {
    func testVersionAndStructSizes() {
        XCTAssertEqual(nv_abi_version(), NUVEC_SHIM_ABI_VERSION)
        XCTAssertEqual(nv_abi_version(), 1)
        let documented: [(Int, Int)] = [(NV_STRUCT_DEVICE_LIMITS, 56), (NV_STRUCT_COMPILE_OPTIONS, 24),
                                          (NV_STRUCT_KERNEL_INFO, 16), (NV_STRUCT_ARG, 40), (NV_STRUCT_CACHE_STATS, 32)]
        for (id, size) in documented { XCTAssertEqual(Int(nv_abi_struct_size(UInt32(id))), size, "struct \(id)") }
        XCTAssertEqual(nv_abi_struct_size(99), 0)
    }

    func testStatusConstantsMatchSwift() {
        let header: [Int32] = [Int32(NV_OK), Int32(NV_ERR_INVALID_ARGUMENT), Int32(NV_ERR_INVALID_HANDLE), Int32(NV_ERR_NO_METAL), Int32(NV_ERR_OUT_OF_MEMORY),
                               Int32(NV_ERR_COMPILE), Int32(NV_ERR_NOT_FOUND), Int32(NV_ERR_UNSUPPORTED), Int32(NV_ERR_GPU), Int32(NV_ERR_INTERNAL)]
        XCTAssertEqual(header, ShimStatus.allCases.map(\.rawValue))
        for status in ShimStatus.allCases {
            XCTAssertEqual(String(cString: nv_status_name(status.rawValue)), status.name)
        }
        XCTAssertEqual(String(cString: nv_status_name(-7)), "NV_ERR_UNKNOWN")
        XCTAssertEqual([Int32(NV_KIND_DEVICE), Int32(NV_KIND_BUFFER), Int32(NV_KIND_LIBRARY), Int32(NV_KIND_KERNEL), Int32(NV_KIND_STREAM)],
                       [HandleKind.device, .buffer, .library, .kernel, .stream].map(\.rawValue))
        XCTAssertEqual([NV_GRID_THREADS, NV_GRID_THREADGROUPS].map(UInt32.init), [GridMode.threads, .threadgroups].map(\.rawValue))
    }

    /// Each @_cdecl implementation has exactly the Swift type of the header's declaration, so a
    /// signature drift between header and implementation fails here.
    func testSignaturesMatchHeader() {
        let pairs: [(Any.Type, Any.Type, String)] = [
            (type(of: nv_abi_version), type(of: _nv_abi_version), "nv_abi_version"),
            (type(of: nv_abi_struct_size), type(of: _nv_abi_struct_size), "nv_abi_struct_size"),
            (type(of: nv_build_flags), type(of: _nv_build_flags), "nv_build_flags"),
            (type(of: nv_status_name), type(of: _nv_status_name), "nv_status_name"),
            (type(of: nv_string_free), type(of: _nv_string_free), "nv_string_free"),
            (type(of: nv_retain), type(of: _nv_retain), "nv_retain"),
            (type(of: nv_release), type(of: _nv_release), "nv_release"),
            (type(of: nv_handle_kind), type(of: _nv_handle_kind), "nv_handle_kind"),
            (type(of: nv_live_handle_count), type(of: _nv_live_handle_count), "nv_live_handle_count"),
            (type(of: nv_metal_probe), type(of: _nv_metal_probe), "nv_metal_probe"),
            (type(of: nv_device_count), type(of: _nv_device_count), "nv_device_count"),
            (type(of: nv_device_open), type(of: _nv_device_open), "nv_device_open"),
            (type(of: nv_device_open_host), type(of: _nv_device_open_host), "nv_device_open_host"),
            (type(of: nv_device_name), type(of: _nv_device_name), "nv_device_name"),
            (type(of: nv_device_limits_get), type(of: _nv_device_limits_get), "nv_device_limits_get"),
            (type(of: nv_device_cache_stats), type(of: _nv_device_cache_stats), "nv_device_cache_stats"),
            (type(of: nv_device_clear_cache), type(of: _nv_device_clear_cache), "nv_device_clear_cache"),
            (type(of: nv_buffer_new), type(of: _nv_buffer_new), "nv_buffer_new"),
            (type(of: nv_buffer_new_with_bytes), type(of: _nv_buffer_new_with_bytes), "nv_buffer_new_with_bytes"),
            (type(of: nv_buffer_length), type(of: _nv_buffer_length), "nv_buffer_length"),
            (type(of: nv_buffer_contents), type(of: _nv_buffer_contents), "nv_buffer_contents"),
            (type(of: nv_source_hash), type(of: _nv_source_hash), "nv_source_hash"),
            (type(of: nv_library_compile), type(of: _nv_library_compile), "nv_library_compile"),
            (type(of: nv_library_function_names), type(of: _nv_library_function_names), "nv_library_function_names"),
            (type(of: nv_kernel_new), type(of: _nv_kernel_new), "nv_kernel_new"),
            (type(of: nv_kernel_info_get), type(of: _nv_kernel_info_get), "nv_kernel_info_get"),
            (type(of: nv_stream_new), type(of: _nv_stream_new), "nv_stream_new"),
            (type(of: nv_stream_dispatch), type(of: _nv_stream_dispatch), "nv_stream_dispatch"),
            (type(of: nv_stream_pending), type(of: _nv_stream_pending), "nv_stream_pending"),
            (type(of: nv_stream_commit), type(of: _nv_stream_commit), "nv_stream_commit"),
            (type(of: nv_stream_wait), type(of: _nv_stream_wait), "nv_stream_wait"),
            (type(of: nv_stream_synchronize), type(of: _nv_stream_synchronize), "nv_stream_synchronize"),
        ]
        for (header, implementation, name) in pairs {
            XCTAssertTrue(header == implementation, "\(name): header \(header) vs Swift \(implementation)")
        }
    }

    #if os(Linux)
    func testNoMetalOnLinux() {
        let expected = "no Metal device: this host has no Metal (Linux)"
        XCTAssertEqual(nv_device_count(), 0)
        XCTAssertEqual(nv_build_flags() & UInt32(NV_BUILD_METAL), 0)
        let (probe, probeMessage) = call { nv_metal_probe($0) }
        XCTAssertEqual(probe, Int32(NV_ERR_NO_METAL))
        XCTAssertEqual(probeMessage, expected)
        var device: UInt64 = 77
        let (open, openMessage) = call { nv_device_open(0, &device, $0) }
        XCTAssertEqual(open, Int32(NV_ERR_NO_METAL))
        XCTAssertEqual(openMessage, expected)
        XCTAssertEqual(device, 77, "a failed open must not write *out")
    }
    #endif

    func testSuccessClearsErrorAndNullErrorIsAllowed() {
        let device = openHost()
        defer { nv_release(device, nil) }
        var length: UInt64 = 0
        var buffer: UInt64 = 0
        let (status, message) = call { nv_buffer_new(device, 64, &buffer, $0) }
        XCTAssertEqual(status, Int32(NV_OK))
        XCTAssertNil(message)
        XCTAssertEqual(nv_buffer_length(buffer, &length, nil), Int32(NV_OK))
        XCTAssertEqual(length, 64)
        XCTAssertEqual(nv_release(buffer, nil), Int32(NV_OK))
        XCTAssertEqual(nv_buffer_length(buffer, &length, nil), Int32(NV_ERR_INVALID_HANDLE))
    }

    func testHostDeviceBuffers() {
        let device = openHost()
        defer { nv_release(device, nil) }
        var name: UnsafeMutablePointer<CChar>? = nil
        XCTAssertEqual(nv_device_name(device, &name, nil), Int32(NV_OK))
        XCTAssertTrue(String(cString: name!).hasPrefix("host"))
        nv_string_free(name)
        var limits = nv_device_limits()
        XCTAssertEqual(nv_device_limits_get(device, &limits, nil), Int32(NV_OK))
        XCTAssertEqual(limits.is_metal, 0)
        XCTAssertEqual(limits.max_buffer_arguments, 31)
        XCTAssertEqual(limits.max_constant_argument_length, 4096)
        XCTAssertEqual(limits.has_unified_memory, 1)

        var source: [Float] = [1, 2, 3, 4.5]
        var buffer: UInt64 = 0
        XCTAssertEqual(nv_buffer_new_with_bytes(device, &source, 16, &buffer, nil), Int32(NV_OK))
        source[0] = 99  // the buffer holds a copy
        var contents: UnsafeMutableRawPointer? = nil
        XCTAssertEqual(nv_buffer_contents(buffer, &contents, nil), Int32(NV_OK))
        XCTAssertEqual(Int(bitPattern: contents) % 16, 0)
        let floats = contents!.assumingMemoryBound(to: Float.self)
        XCTAssertEqual(Array(UnsafeBufferPointer(start: floats, count: 4)), [1, 2, 3, 4.5])
        floats[2] = -1  // CPU writes are visible through a second lookup of the same memory
        var again: UnsafeMutableRawPointer? = nil
        XCTAssertEqual(nv_buffer_contents(buffer, &again, nil), Int32(NV_OK))
        XCTAssertEqual(again!.load(fromByteOffset: 8, as: Float.self), -1)
        XCTAssertEqual(nv_release(buffer, nil), Int32(NV_OK))

        var zeroed: UInt64 = 0
        XCTAssertEqual(nv_buffer_new(device, 4096, &zeroed, nil), Int32(NV_OK))
        XCTAssertEqual(nv_buffer_contents(zeroed, &contents, nil), Int32(NV_OK))
        XCTAssertTrue(UnsafeRawBufferPointer(start: contents, count: 4096).allSatisfy { $0 == 0 })
        XCTAssertEqual(nv_release(zeroed, nil), Int32(NV_OK))
    }

    func testBadCallsReturnErrors() {
        let device = openHost()
        defer { nv_release(device, nil) }
        var out: UInt64 = 0
        var (status, message) = call { nv_buffer_new(device, 0, &out, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(message, "make buffer: length must be > 0, got 0")
        (status, message) = call { nv_buffer_new(device, 1 << 40, &out, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_OUT_OF_MEMORY))
        (status, message) = call { nv_buffer_new(device, 8, nil, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(message, "nv_buffer_new: out is NULL")
        (status, message) = call { nv_buffer_new_with_bytes(device, nil, 8, &out, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_ARGUMENT))
        (status, message) = call { nv_buffer_new(0, 8, &out, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_HANDLE))
        (status, message) = call { nv_buffer_length(device, &out, $0) }  // a device is not a buffer
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_HANDLE))
        XCTAssertTrue(message!.contains("is a device handle, expected a buffer handle"), message!)
        (status, message) = call { nv_release(0xFFFF_FFFF_FFFF_FFFF, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_HANDLE))
        (status, message) = call { nv_library_compile(device, nil, nil, &out, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(message, "nv_library_compile: source is NULL")
        (status, message) = call { nv_kernel_new(0, "add", &out, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_HANDLE))
    }

    func testHostCompileChecksOptionsThenRefuses() {
        let device = openHost()
        defer { nv_release(device, nil) }
        var library: UInt64 = 0
        var options = nv_compile_options(math_mode: 7, language_version: 0, preprocessor_macros: nil, reserved: 0)
        var (status, message) = call { nv_library_compile(device, addSource, &options, &library, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_ARGUMENT))
        XCTAssertTrue(message!.contains("math_mode 7"), message!)
        options.math_mode = Int32(NV_MATH_SAFE)
        options.language_version = 250
        (status, message) = call { nv_library_compile(device, addSource, &options, &library, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_ARGUMENT))
        XCTAssertTrue(message!.contains("language_version 250"), message!)
        options.language_version = 310
        (status, message) = "1BAD=2".withCString { macros in
            options.preprocessor_macros = macros
            return call { nv_library_compile(device, addSource, &options, &library, $0) }
        }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_ARGUMENT))
        XCTAssertTrue(message!.contains("\"1BAD\" is not a C identifier"), message!)
        options.preprocessor_macros = nil
        (status, message) = call { nv_library_compile(device, addSource, &options, &library, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_UNSUPPORTED))
        XCTAssertTrue(message!.contains("host device cannot compile"), message!)
        XCTAssertEqual(library, 0)
    }

    func testSourceHashThroughABI() {
        var a = [UInt8](repeating: 0, count: 32)
        var b = [UInt8](repeating: 0, count: 32)
        XCTAssertEqual(nv_source_hash("kernel void f() {}", nil, &a, nil), Int32(NV_OK))
        var defaults = nv_compile_options(math_mode: 0, language_version: 0, preprocessor_macros: nil, reserved: 0)
        XCTAssertEqual(nv_source_hash("kernel void f() {}", &defaults, &b, nil), Int32(NV_OK))
        XCTAssertEqual(a, b, "NULL options and explicit defaults are the same key")
        XCTAssertEqual(a, try CompileOptions().sourceHash("kernel void f() {}"))
        var fast = nv_compile_options(math_mode: Int32(NV_MATH_FAST), language_version: 0, preprocessor_macros: nil, reserved: 0)
        XCTAssertEqual(nv_source_hash("kernel void f() {}", &fast, &b, nil), Int32(NV_OK))
        XCTAssertNotEqual(a, b)
        "B=2\nA=1\n".withCString { first in
            "\nA=1\r\nB=2".withCString { second in
                var x = [UInt8](repeating: 0, count: 32), y = [UInt8](repeating: 0, count: 32)
                var o1 = nv_compile_options(math_mode: 0, language_version: 0, preprocessor_macros: first, reserved: 0)
                var o2 = nv_compile_options(math_mode: 0, language_version: 0, preprocessor_macros: second, reserved: 0)
                XCTAssertEqual(nv_source_hash("s", &o1, &x, nil), Int32(NV_OK))
                XCTAssertEqual(nv_source_hash("s", &o2, &y, nil), Int32(NV_OK))
                XCTAssertEqual(x, y, "macro order and line endings do not change the key")
            }
        }
        let (status, _) = call { nv_source_hash("s", nil, nil, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_ARGUMENT))
    }

    func testHandleKindsRetainReleaseAndLeaks() {
        let before = nv_live_handle_count()
        let device = openHost()
        var stream: UInt64 = 0, buffer: UInt64 = 0
        XCTAssertEqual(nv_stream_new(device, &stream, nil), Int32(NV_OK))
        XCTAssertEqual(nv_buffer_new(device, 8, &buffer, nil), Int32(NV_OK))
        var kind: Int32 = 0
        XCTAssertEqual(nv_handle_kind(stream, &kind, nil), Int32(NV_OK))
        XCTAssertEqual(kind, Int32(NV_KIND_STREAM))
        XCTAssertEqual(nv_handle_kind(buffer, &kind, nil), Int32(NV_OK))
        XCTAssertEqual(kind, Int32(NV_KIND_BUFFER))
        XCTAssertEqual(nv_live_handle_count(), before + 3)
        // The buffer outlives its device handle: objects keep what they depend on.
        XCTAssertEqual(nv_release(device, nil), Int32(NV_OK))
        var length: UInt64 = 0
        XCTAssertEqual(nv_buffer_length(buffer, &length, nil), Int32(NV_OK))
        // Two references: the first release keeps the handle alive.
        XCTAssertEqual(nv_retain(buffer, nil), Int32(NV_OK))
        XCTAssertEqual(nv_release(buffer, nil), Int32(NV_OK))
        XCTAssertEqual(nv_buffer_length(buffer, &length, nil), Int32(NV_OK))
        XCTAssertEqual(nv_release(buffer, nil), Int32(NV_OK))
        XCTAssertEqual(nv_release(buffer, nil), Int32(NV_ERR_INVALID_HANDLE), "double release is caught")
        XCTAssertEqual(nv_release(stream, nil), Int32(NV_OK))
        XCTAssertEqual(nv_live_handle_count(), before)
    }

    func testHostStreamAndDispatchChecks() {
        let device = openHost()
        defer { nv_release(device, nil) }
        var stream: UInt64 = 0
        XCTAssertEqual(nv_stream_new(device, &stream, nil), Int32(NV_OK))
        defer { nv_release(stream, nil) }
        var pending: UInt64 = 9
        XCTAssertEqual(nv_stream_pending(stream, &pending, nil), Int32(NV_OK))
        XCTAssertEqual(pending, 0)
        XCTAssertEqual(nv_stream_commit(stream, nil), Int32(NV_OK))
        XCTAssertEqual(nv_stream_wait(stream, nil), Int32(NV_OK))
        XCTAssertEqual(nv_stream_synchronize(stream, nil), Int32(NV_OK))
        var grid: [UInt64] = [16, 1, 1]
        var group: [UInt32] = [0, 0, 0]
        var (status, message) = call { nv_stream_dispatch(stream, 12345, nil, 0, &grid, &group, 0, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_HANDLE))
        XCTAssertTrue(message!.hasPrefix("nv_stream_dispatch: handle 0x3039"), message!)
        (status, message) = call { nv_stream_dispatch(device, 1, nil, 0, &grid, &group, 0, $0) }
        XCTAssertEqual(status, Int32(NV_ERR_INVALID_HANDLE), "a device handle is not a stream")
        XCTAssertEqual(nv_stream_pending(stream, &pending, nil), Int32(NV_OK))
        XCTAssertEqual(pending, 0)
    }
}
