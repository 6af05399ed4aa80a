import XCTest
import Dispatch
@testable import NuvecShim

final class SHA256Tests: XCTestCase {
    // FIPS 180-4 example vectors.
    func testKnownVectors() {
        XCTAssertEqual(SHA256.hex(SHA256.hash("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hex(SHA256.hash("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex(SHA256.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    func testChunkingDoesNotMatter() {
        let text = String(repeating: "nuvec-", count: 50)  // 300 bytes, spans several blocks
        var pieces = SHA256()
        for chunk in stride(from: 0, to: 300, by: 7) {
            pieces.update(Array(text.utf8)[chunk..<min(chunk + 7, 300)])
        }
        XCTAssertEqual(pieces.finalize(), SHA256.hash(text))
    }
}

final class CompileOptionsTests: XCTestCase {
    func testValidation() {
        XCTAssertNoThrow(try CompileOptions(languageVersion: 310, macros: [.init("N", "4"), .init("_X")]).validate())
        let bad: [(CompileOptions, String)] = [
            (CompileOptions(languageVersion: 199), "language_version 199"),
            (CompileOptions(macros: [.init("A-B")]), "\"A-B\" is not a C identifier"),
            (CompileOptions(macros: [.init("")]), "\"\" is not a C identifier"),
            (CompileOptions(macros: [.init("A", "x\ny")]), "newline"),
            (CompileOptions(macros: [.init("A", "x\r\ny")]), "newline"),
            (CompileOptions(macros: [.init("A"), .init("A", "2")]), "defined twice"),
        ]
        for (options, fragment) in bad {
            XCTAssertThrowsError(try options.validate("compile library")) { error in
                let failure = error as! ShimError
                XCTAssertEqual(failure.status, .invalidArgument)
                XCTAssertTrue(failure.message.hasPrefix("compile library: "), failure.message)
                XCTAssertTrue(failure.message.contains(fragment), failure.message)
            }
        }
    }

    func testParseMacros() throws {
        let parsed = try CompileOptions.parseMacros("A=1\n\nB\r\n  \nC=x=y", "t")
        XCTAssertEqual(parsed, [.init("A", "1"), .init("B", "1"), .init("C", "x=y")])
    }

    func testCanonicalTextAndHashKey() throws {
        let a = CompileOptions(macros: [.init("B", "2"), .init("A", "1")])
        let b = CompileOptions(macros: [.init("A", "1"), .init("B", "2")])
        XCTAssertEqual(a.canonicalText, "math=safe\nlanguage=0\nmacro A=1\nmacro B=2\n")
        XCTAssertEqual(try a.sourceHash("src"), try b.sourceHash("src"))
        XCTAssertNotEqual(try a.sourceHash("src"), try a.sourceHash("src "))
        XCTAssertNotEqual(try a.sourceHash("src"), try CompileOptions(mathMode: .fast, macros: a.macros).sourceHash("src"))
        // The key is documented: SHA-256 of a prefix, the canonical options and the source.
        XCTAssertEqual(try a.sourceHash("src"),
                       SHA256.hash("nuvec-shim library v1\u{0}" + a.canonicalText + "\u{0}src"))
    }
}

final class CacheTests: XCTestCase {
    func testLibrariesCachedBySourceAndOptions() throws {
        let fake = FakeDeviceBackend()
        let device = Device(backend: fake)
        let first = try device.makeLibrary(source: addSource)
        let second = try device.makeLibrary(source: addSource)
        XCTAssertTrue(first === second)
        XCTAssertEqual(fake.compileCount, 1)
        let relaxed = try device.makeLibrary(source: addSource, options: CompileOptions(mathMode: .relaxed))
        XCTAssertFalse(first === relaxed)
        XCTAssertEqual(fake.compileCount, 2)
        XCTAssertEqual(device.cacheStats, CacheStats(libraryHits: 1, libraryMisses: 2, kernelHits: 0, kernelMisses: 0))
        XCTAssertEqual(first.sourceHash, try CompileOptions().sourceHash(addSource))
    }

    func testFailedCompileIsNotCached() {
        let fake = FakeDeviceBackend()
        fake.failCompileWith = "program_source:1:1: error: unknown type name 'flot'"
        let device = Device(backend: fake)
        for _ in 0..<2 {
            XCTAssertThrowsError(try device.makeLibrary(source: "flot x;")) { error in
                XCTAssertEqual(error as? ShimError, ShimError(.compile, "program_source:1:1: error: unknown type name 'flot'"))
            }
        }
        XCTAssertEqual(fake.compileCount, 2, "each attempt compiles again")
        fake.failCompileWith = nil
        XCTAssertNoThrow(try device.makeLibrary(source: "flot x;"))
    }

    func testKernelCacheAndClear() throws {
        let fake = FakeDeviceBackend()
        let device = Device(backend: fake)
        let library = try device.makeLibrary(source: addSource)
        XCTAssertEqual(library.functionNames.sorted(), ["add", "scale"])
        let add = try library.makeKernel(name: "add")
        XCTAssertTrue(add === (try library.makeKernel(name: "add")))
        XCTAssertEqual(add.info.maxTotalThreadsPerThreadgroup, 512)
        XCTAssertThrowsError(try library.makeKernel(name: "mul")) { XCTAssertEqual(($0 as! ShimError).status, .notFound) }
        XCTAssertThrowsError(try library.makeKernel(name: "")) { XCTAssertEqual(($0 as! ShimError).status, .invalidArgument) }
        XCTAssertEqual(device.cacheStats.kernelHits, 1)
        XCTAssertEqual(device.cacheStats.kernelMisses, 2)
        device.clearCache()
        let again = try device.makeLibrary(source: addSource)
        XCTAssertFalse(again === library, "cleared: compiled anew")
        XCTAssertEqual(fake.compileCount, 2)
        XCTAssertFalse(try library.makeKernel(name: "add") === add, "kernel cache of a cleared library is emptied")
        XCTAssertEqual(add.name, "add", "objects handed out stay usable")
    }

    func testConcurrentCompilesYieldOneLibrary() throws {
        let fake = FakeDeviceBackend()
        let device = Device(backend: fake)
        let results = ResultBox<Library>()
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            let library = try! device.makeLibrary(source: i % 2 == 0 ? addSource : addSource + "// b")
            results.append(library)
        }
        let all = results.items
        XCTAssertEqual(all.count, 16)
        XCTAssertEqual(Set(all.map { ObjectIdentifier($0) }).count, 2, "one cached library per source")
        XCTAssertEqual(device.libraries.count, 2)
        let stats = device.cacheStats
        XCTAssertEqual(stats.libraryHits + stats.libraryMisses, 16)
        XCTAssertEqual(Int(stats.libraryMisses), fake.compileCount)
    }
}

final class ResultBox<T>: @unchecked Sendable {
    private let lock = Lock()
    private var values: [T] = []
    func append(_ value: T) { lock.withLock { values.append(value) } }
    var items: [T] { lock.withLock { values } }
}
