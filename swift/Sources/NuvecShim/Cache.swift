// A keyed cache for compiled libraries and pipelines. Compiling runs outside the lock so one
// slow compile does not block lookups of other keys; when two threads compile the same key
// at once, the first result stored wins and both callers get it.

/// Hit and miss counts, shareable by several caches (all kernel caches of one device).
final class CacheCounter: @unchecked Sendable {
    private let lock = Lock()
    private var hitCount: UInt64 = 0
    private var missCount: UInt64 = 0

    func record(hit: Bool) { lock.withLock { if hit { hitCount += 1 } else { missCount += 1 } } }
    var counts: (hits: UInt64, misses: UInt64) { lock.withLock { (hitCount, missCount) } }
}

final class KeyedCache<Key: Hashable, Value>: @unchecked Sendable {
    private let lock = Lock()
    private var entries: [Key: Value] = [:]
    let counter: CacheCounter

    init(counter: CacheCounter = CacheCounter()) { self.counter = counter }

    /// The cached value for `key`, creating it with `make` on a miss. A failed `make` caches
    /// nothing (and counts as a miss), so a fixed source can be compiled again.
    func value(for key: Key, make: () throws -> Value) rethrows -> Value {
        if let found = lock.withLock({ entries[key] }) {
            counter.record(hit: true)
            return found
        }
        counter.record(hit: false)
        let made = try make()
        return lock.withLock {
            if let raced = entries[key] { return raced }
            entries[key] = made
            return made
        }
    }

    var count: Int { lock.withLock { entries.count } }
    var values: [Value] { lock.withLock { Array(entries.values) } }
    func removeAll() { lock.withLock { entries.removeAll() } }
}
