import XCTest
import Dispatch
@testable import NuvecShim

final class Token {}

final class RegistryTests: XCTestCase {
    func testPackUnpackAndZeroIsNeverIssued() {
        let handle = HandleRegistry.pack(kind: .kernel, generation: 0xABCDEF, slot: 0x1234_5678)
        let (kind, generation, slot) = HandleRegistry.unpack(handle)
        XCTAssertEqual(kind, 4)
        XCTAssertEqual(generation, 0xABCDEF)
        XCTAssertEqual(slot, 0x1234_5678)
        let registry = HandleRegistry()
        let first = registry.insert(Token(), kind: .device)
        XCTAssertNotEqual(first, 0)
        XCTAssertThrowsError(try registry.kind(of: 0, "t"))
    }

    func testStaleHandleToReusedSlotIsRejected() throws {
        let registry = HandleRegistry()
        let old = registry.insert(Token(), kind: .buffer)
        try registry.release(old, "t")
        let new = registry.insert(Token(), kind: .buffer)
        XCTAssertEqual(HandleRegistry.unpack(old).slot, HandleRegistry.unpack(new).slot, "the slot is reused")
        XCTAssertNotEqual(old, new)
        XCTAssertThrowsError(try registry.object(old, .buffer, "op") as Token) { error in
            XCTAssertEqual((error as! ShimError).status, .invalidHandle)
            XCTAssertEqual((error as! ShimError).message, "op: handle 0x\(String(old, radix: 16)) is not live (released, never issued, or 0)")
        }
        XCTAssertNoThrow(try registry.object(new, .buffer, "op") as Token)
    }

    func testWrongKindAndForgedKind() {
        let registry = HandleRegistry()
        let handle = registry.insert(Token(), kind: .library)
        XCTAssertThrowsError(try registry.object(handle, .kernel, "op") as Token) { error in
            XCTAssertTrue((error as! ShimError).message.contains("is a library handle, expected a kernel handle"))
        }
        // Same slot and generation but another kind tag: not a live handle of either kind.
        let (_, generation, slot) = HandleRegistry.unpack(handle)
        let forged = HandleRegistry.pack(kind: .kernel, generation: generation, slot: slot)
        XCTAssertThrowsError(try registry.object(forged, .kernel, "op") as Token)
        let unknownKind = handle & 0x00FF_FFFF_FFFF_FFFF | (UInt64(200) << 56)
        XCTAssertThrowsError(try registry.kind(of: unknownKind, "op"))
    }

    func testReferenceCountsAndObjectLifetime() throws {
        let registry = HandleRegistry()
        weak var watched: Token?
        let handle: UInt64 = {
            let token = Token()
            watched = token
            return registry.insert(token, kind: .stream)
        }()
        try registry.retain(handle, "t")
        try registry.retain(handle, "t")
        XCTAssertEqual(registry.references(handle), 3)
        try registry.release(handle, "t")
        try registry.release(handle, "t")
        XCTAssertNotNil(watched, "alive while a reference remains")
        try registry.release(handle, "t")
        XCTAssertNil(watched, "the last release frees the object")
        XCTAssertEqual(registry.liveCount, 0)
        XCTAssertThrowsError(try registry.retain(handle, "t"))
    }

    func testGenerationWrapsWithoutZero() throws {
        let registry = HandleRegistry(initialGeneration: 0xFF_FFFE)
        var handle = registry.insert(Token(), kind: .device)
        var generations: [UInt32] = []
        for _ in 0..<3 {
            generations.append(HandleRegistry.unpack(handle).generation)
            try registry.release(handle, "t")
            handle = registry.insert(Token(), kind: .device)
        }
        XCTAssertEqual(generations, [0xFF_FFFE, 0xFF_FFFF, 1], "wraps past the 24-bit end to 1, never 0")
    }

    func testConcurrentInsertLookupRelease() {
        let registry = HandleRegistry()
        let shared = registry.insert(Token(), kind: .device)
        let threads = 8, perThread = 2000
        let failures = ManagedCounter()
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for i in 0..<perThread {
                let kind: HandleKind = i % 2 == 0 ? .buffer : .kernel
                let handle = registry.insert(Token(), kind: kind)
                if (try? registry.object(handle, kind, "t") as Token) == nil { failures.add() }
                if (try? registry.retain(shared, "t")) == nil { failures.add() }
                if (try? registry.release(handle, "t")) == nil { failures.add() }
                if (try? registry.release(shared, "t")) == nil { failures.add() }
                if (try? registry.object(handle, kind, "t") as Token) != nil { failures.add() }
            }
        }
        XCTAssertEqual(failures.value, 0)
        XCTAssertEqual(registry.liveCount, 1)
        XCTAssertEqual(registry.references(shared), 1)
    }
}

final class ManagedCounter: @unchecked Sendable {
    private let lock = Lock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
