// Packing small constant arguments the way Metal Shading Language lays out a struct in the
// constant address space: each member at a multiple of its alignment, the whole struct
// padded to its largest alignment. float3/int3 take 16 bytes, as in MSL.

/// Builds the bytes of an MSL struct for `KernelArgument.bytes`.
///
///     // struct Params { uint n; float scale; float4 bias; };
///     var p = ConstantPacker()
///     p.append(UInt32(n)); p.append(Float(0.5)); p.appendVector([0, 0, 0, 1] as [Float])
///     try stream.dispatch(kernel, arguments: [.bytes(p.bytes, index: 2)], grid: Size3(n))
public struct ConstantPacker: Sendable {
    public private(set) var storage: [UInt8] = []
    public private(set) var alignment = 1
    /// Byte offset of each member appended so far.
    public private(set) var offsets: [Int] = []

    public init() {}

    /// The struct bytes, padded to a multiple of the largest member alignment.
    public var bytes: [UInt8] {
        var out = storage
        while out.count % alignment != 0 { out.append(0) }
        return out
    }

    public mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { appendRaw(Array($0), alignment: MemoryLayout<T>.size) }
    }

    public mutating func append(_ value: Float) { append(value.bitPattern) }

    public mutating func append(_ value: Bool) { append(UInt8(value ? 1 : 0)) }

    /// An MSL `half` given by its IEEE binary16 bits (Float16 is missing on Intel Macs).
    public mutating func appendHalf(bits: UInt16) { append(bits) }

    /// An MSL vector `float2/3/4`: size and alignment 8, 16, 16.
    public mutating func appendVector(_ values: [Float]) {
        appendVector(values.map { $0.bitPattern })
    }

    /// An MSL vector of a 1, 2, 4 or 8-byte integer or float bit pattern, 2 to 4 lanes:
    /// alignment = size = lanes rounded up to a power of two times the lane size.
    public mutating func appendVector<T: FixedWidthInteger>(_ lanes: [T]) {
        precondition((2...4).contains(lanes.count), "MSL vectors have 2, 3 or 4 lanes")
        let slots = lanes.count == 3 ? 4 : lanes.count
        var raw: [UInt8] = []
        for lane in lanes { withUnsafeBytes(of: lane.littleEndian) { raw += $0 } }
        raw += [UInt8](repeating: 0, count: (slots - lanes.count) * MemoryLayout<T>.size)
        appendRaw(raw, alignment: slots * MemoryLayout<T>.size)
    }

    private mutating func appendRaw(_ raw: [UInt8], alignment memberAlignment: Int) {
        while storage.count % memberAlignment != 0 { storage.append(0) }
        offsets.append(storage.count)
        storage += raw
        alignment = max(alignment, memberAlignment)
    }
}
