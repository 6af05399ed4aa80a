// Status codes and the error type shared by the Swift API and the C ABI.

/// Status codes of the C ABI (`nv_status`); the raw values equal the header's `NV_*` constants.
public enum ShimStatus: Int32, CaseIterable, Sendable {
    case ok = 0
    case invalidArgument = 1
    case invalidHandle = 2
    case noMetal = 3
    case outOfMemory = 4
    case compile = 5
    case notFound = 6
    case unsupported = 7
    case gpu = 8
    case `internal` = 9

    /// The header's constant name, e.g. `"NV_ERR_NO_METAL"`.
    public var name: String {
        switch self {
        case .ok: return "NV_OK"
        case .invalidArgument: return "NV_ERR_INVALID_ARGUMENT"
        case .invalidHandle: return "NV_ERR_INVALID_HANDLE"
        case .noMetal: return "NV_ERR_NO_METAL"
        case .outOfMemory: return "NV_ERR_OUT_OF_MEMORY"
        case .compile: return "NV_ERR_COMPILE"
        case .notFound: return "NV_ERR_NOT_FOUND"
        case .unsupported: return "NV_ERR_UNSUPPORTED"
        case .gpu: return "NV_ERR_GPU"
        case .internal: return "NV_ERR_INTERNAL"
        }
    }
}

/// The one error type the shim throws: a status and a human-readable message.
///
///     do { _ = try Device.metal() } catch let e as ShimError where e.status == .noMetal { ... }
public struct ShimError: Error, CustomStringConvertible, Equatable, Sendable {
    public let status: ShimStatus
    public let message: String

    public init(_ status: ShimStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { "\(status.name): \(message)" }

    static func invalid(_ operation: String, _ problem: String) -> ShimError {
        ShimError(.invalidArgument, "\(operation): \(problem)")
    }
}
