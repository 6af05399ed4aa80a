import XCTest
@testable import NuvecShim

final class ConstantPackerTests: XCTestCase {
    /// struct P { uchar flag; float scale; float3 bias; ushort n; half h; float2 uv; };
    /// MSL layout: flag 0, scale 4, bias 16 (size 16), n 32, h 34, uv 40; size 48 (align 16).
    func testMSLStructLayout() {
        var packer = ConstantPacker()
        packer.append(true)
        packer.append(Float(1.5))
        packer.appendVector([1, 2, 3] as [Float])
        packer.append(UInt16(7))
        packer.appendHalf(bits: 0x3C00)  // 1.0
        packer.appendVector([0.25, 0.5] as [Float])
        XCTAssertEqual(packer.offsets, [0, 4, 16, 32, 34, 40])
        let bytes = packer.bytes
        XCTAssertEqual(bytes.count, 48)
        XCTAssertEqual(bytes[0], 1)
        XCTAssertEqual(bytes.withUnsafeBytes { $0.load(fromByteOffset: 4, as: Float.self) }, 1.5)
        XCTAssertEqual(bytes.withUnsafeBytes { $0.load(fromByteOffset: 24, as: Float.self) }, 3)
        XCTAssertEqual(bytes.withUnsafeBytes { $0.load(fromByteOffset: 28, as: UInt32.self) }, 0, "float3 pad lane")
        XCTAssertEqual(bytes[32], 7)
        XCTAssertEqual(bytes.withUnsafeBytes { $0.load(fromByteOffset: 34, as: UInt16.self) }, 0x3C00)
        XCTAssertEqual(bytes.withUnsafeBytes { $0.load(fromByteOffset: 44, as: Float.self) }, 0.5)
    }

    func testScalarsOnly() {
        var packer = ConstantPacker()
        packer.append(Int32(-3))
        packer.append(UInt8(9))
        XCTAssertEqual(packer.bytes, [0xFD, 0xFF, 0xFF, 0xFF, 9, 0, 0, 0])
        var wide = ConstantPacker()
        wide.append(UInt8(1))
        wide.append(Int64(2))
        XCTAssertEqual(wide.offsets, [0, 8])
        XCTAssertEqual(wide.bytes.count, 16)
    }
}
