// swift-tools-version:5.9
// nuvec's Apple-GPU shim: a C ABI (shim/nuvec_shim.h) and a Swift API over Metal.
//
// Products: the dynamic library NuvecShim (libNuvecShim.dylib / .so), which exports the C ABI
// and the Swift module for native apps. No outside dependencies.
//
// NUVEC_METAL_TYPECHECK=1 (Linux only) adds a hand-written stub module named `Metal`, so the
// Metal code paths, which sit behind `#if canImport(Metal)`, are type-checked on hosts that
// have no Metal. The stub returns no device; it checks spelling and types, not behaviour.
import PackageDescription
import Foundation

let typecheckMetal: Bool = {
    #if os(Linux)
    return ProcessInfo.processInfo.environment["NUVEC_METAL_TYPECHECK"] == "1"
    #else
    return false
    #endif
}()

var shimDependencies: [Target.Dependency] = ["CNuvecShim"]
var targets: [Target] = [
    .target(name: "CNuvecShim", path: "Sources/CNuvecShim"),
    .testTarget(name: "NuvecShimTests", dependencies: ["NuvecShim", "CNuvecShim"]),
]
if typecheckMetal {
    targets.append(.target(name: "Metal", path: "TypecheckStubs/Metal"))
    shimDependencies.append("Metal")
}
targets.append(.target(name: "NuvecShim", dependencies: shimDependencies))

let package = Package(
    name: "NuvecShim",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "NuvecShim", type: .dynamic, targets: ["NuvecShim"]),
    ],
    targets: targets
)
