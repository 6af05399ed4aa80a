// The handle table behind the C ABI: 64-bit handles -> Swift objects, with reference counts.
//
// A handle packs [kind: 8 bits][generation: 24 bits][slot: 32 bits]. A slot's generation
// changes whenever its object dies, so an old handle to a reused slot is rejected rather than
// reaching the new object. Kind 0 is never issued, so handle 0 is never valid.

/// Kinds of handles; raw values equal the header's `NV_KIND_*`.
public enum HandleKind: Int32, Sendable {
    case device = 1, buffer, library, kernel, stream

    var label: String {
        switch self {
        case .device: return "device"
        case .buffer: return "buffer"
        case .library: return "library"
        case .kernel: return "kernel"
        case .stream: return "stream"
        }
    }
}

final class HandleRegistry: @unchecked Sendable {
    private struct Slot {
        var generation: UInt32 = 1
        var kind: HandleKind? = nil
        var object: AnyObject? = nil
        var references: Int = 0
    }

    static let generationMask: UInt32 = 0xFF_FFFF

    private let lock = Lock()
    private var slots: [Slot] = []
    private var freeSlots: [UInt32] = []
    private var live = 0
    private let initialGeneration: UInt32

    /// `initialGeneration` is for tests of the wrap-around; handles start at generation 1.
    init(initialGeneration: UInt32 = 1) {
        precondition(initialGeneration != 0 && initialGeneration <= Self.generationMask)
        self.initialGeneration = initialGeneration
    }

    /// Registers `object` and returns a handle holding one reference.
    func insert(_ object: AnyObject, kind: HandleKind) -> UInt64 {
        lock.withLock {
            let index: UInt32
            if let reused = freeSlots.popLast() {
                index = reused
            } else {
                index = UInt32(slots.count)
                slots.append(Slot(generation: initialGeneration))
            }
            slots[Int(index)].kind = kind
            slots[Int(index)].object = object
            slots[Int(index)].references = 1
            live += 1
            return Self.pack(kind: kind, generation: slots[Int(index)].generation, slot: index)
        }
    }

    /// The object behind a live handle of `kind`; `operation` names the caller in errors.
    func object<T: AnyObject>(_ handle: UInt64, _ kind: HandleKind, _ operation: String) throws -> T {
        let found: AnyObject = try lock.withLock {
            let index = try liveSlot(handle, operation)
            let slot = slots[index]
            guard slot.kind == kind else {
                throw ShimError(.invalidHandle,
                                "\(operation): handle \(Self.hex(handle)) is a \(slot.kind!.label) handle, expected a \(kind.label) handle")
            }
            return slot.object!
        }
        guard let typed = found as? T else {
            throw ShimError(.internal, "\(operation): handle \(Self.hex(handle)) holds an unexpected object")
        }
        return typed
    }

    func kind(of handle: UInt64, _ operation: String) throws -> HandleKind {
        try lock.withLock { slots[try liveSlot(handle, operation)].kind! }
    }

    func retain(_ handle: UInt64, _ operation: String) throws {
        try lock.withLock {
            let index = try liveSlot(handle, operation)
            slots[index].references += 1
        }
    }

    /// Drops one reference; the object is released (outside the lock) with the last one.
    func release(_ handle: UInt64, _ operation: String) throws {
        let dropped: AnyObject? = try lock.withLock {
            let index = try liveSlot(handle, operation)
            slots[index].references -= 1
            guard slots[index].references == 0 else { return nil }
            let object = slots[index].object
            slots[index].object = nil
            slots[index].kind = nil
            var next = (slots[index].generation + 1) & Self.generationMask
            if next == 0 { next = 1 }
            slots[index].generation = next
            freeSlots.append(UInt32(index))
            live -= 1
            return object
        }
        _ = dropped  // the object's deinit runs here, after the lock is released
    }

    var liveCount: Int { lock.withLock { live } }

    func references(_ handle: UInt64) -> Int? {
        lock.withLock { (try? liveSlot(handle, "references")).map { slots[$0].references } }
    }

    // Caller holds the lock.
    private func liveSlot(_ handle: UInt64, _ operation: String) throws -> Int {
        let (kindBits, generation, index) = Self.unpack(handle)
        guard handle != 0, HandleKind(rawValue: Int32(kindBits)) != nil,
              Int(index) < slots.count,
              slots[Int(index)].generation == generation,
              slots[Int(index)].object != nil
        else {
            throw ShimError(.invalidHandle,
                            "\(operation): handle \(Self.hex(handle)) is not live (released, never issued, or 0)")
        }
        return Int(index)
    }

    static func pack(kind: HandleKind, generation: UInt32, slot: UInt32) -> UInt64 {
        UInt64(UInt8(kind.rawValue)) << 56 | UInt64(generation & generationMask) << 32 | UInt64(slot)
    }

    static func unpack(_ handle: UInt64) -> (kind: UInt8, generation: UInt32, slot: UInt32) {
        (UInt8(handle >> 56), UInt32((handle >> 32) & UInt64(generationMask)), UInt32(truncatingIfNeeded: handle))
    }

    static func hex(_ handle: UInt64) -> String { "0x" + String(handle, radix: 16) }
}

/// The process-wide table used by the C ABI.
let handles = HandleRegistry()
