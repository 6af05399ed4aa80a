// Library compile options: validation and the canonical text that, with the source, forms
// the cache key (so equal options written differently share one compiled library).

/// Options for `Device.makeLibrary(source:options:)`.
///
///     var options = CompileOptions()
///     options.languageVersion = 310          // MSL 3.1
///     options.macros = [.init("N", "4")]
public struct CompileOptions: Hashable, Sendable {
    /// Floating-point rewrites the compiler may do. `.safe` (the default) keeps IEEE-754 results
    /// and precise math functions, as MLX does.
    public enum MathMode: Int32, Sendable {
        case safe = 0, relaxed = 1, fast = 2
        var label: String { ["safe", "relaxed", "fast"][Int(rawValue)] }
    }

    public struct Macro: Hashable, Sendable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String = "1") {
            self.name = name
            self.value = value
        }
    }

    /// Metal Shading Language versions the shim knows, as major*100+minor.
    public static let knownLanguageVersions: [UInt32] = [200, 210, 220, 230, 240, 300, 310, 320]

    public var mathMode: MathMode = .safe
    /// 0: the compiler's default; else one of `knownLanguageVersions`.
    public var languageVersion: UInt32 = 0
    public var macros: [Macro] = []

    public init(mathMode: MathMode = .safe, languageVersion: UInt32 = 0, macros: [Macro] = []) {
        self.mathMode = mathMode
        self.languageVersion = languageVersion
        self.macros = macros
    }

    /// Throws `.invalidArgument` naming the first problem.
    public func validate(_ operation: String = "compile options") throws {
        if languageVersion != 0 && !Self.knownLanguageVersions.contains(languageVersion) {
            throw ShimError.invalid(operation, "language_version \(languageVersion) is not one of 0 (default) or \(Self.knownLanguageVersions.map(String.init).joined(separator: " "))")
        }
        var seen = Set<String>()
        for macro in macros {
            guard Self.isIdentifier(macro.name) else {
                throw ShimError.invalid(operation, "macro name \(quoted(macro.name)) is not a C identifier")
            }
            guard !macro.value.contains(where: { $0.isNewline }) else {
                throw ShimError.invalid(operation, "macro \(macro.name) has a newline in its value")
            }
            guard seen.insert(macro.name).inserted else {
                throw ShimError.invalid(operation, "macro \(macro.name) is defined twice")
            }
        }
    }

    /// Canonical, order-independent text of the options (macros sorted by name).
    public var canonicalText: String {
        var text = "math=\(mathMode.label)\nlanguage=\(languageVersion)\n"
        for macro in macros.sorted(by: { $0.name < $1.name }) {
            text += "macro \(macro.name)=\(macro.value)\n"
        }
        return text
    }

    /// SHA-256 of (options, source): the library cache key. Throws for invalid options.
    public func sourceHash(_ source: String) throws -> [UInt8] {
        try validate("source hash")
        var hasher = SHA256()
        hasher.update("nuvec-shim library v1\u{0}")
        hasher.update(canonicalText)
        hasher.update("\u{0}")
        hasher.update(source)
        return hasher.finalize()
    }

    /// Parses the C ABI's macro list: "NAME=VALUE" or "NAME" per line (LF or CRLF), blank
    /// lines ignored.
    static func parseMacros(_ text: String, _ operation: String) throws -> [Macro] {
        var result: [Macro] = []
        // Split on Character.isNewline: "\r\n" is one Character, so it must not be split on "\n".
        for line in text.split(whereSeparator: { $0.isNewline }) {
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            if let eq = line.firstIndex(of: "=") {
                result.append(Macro(String(line[..<eq]), String(line[line.index(after: eq)...])))
            } else {
                result.append(Macro(String(line)))
            }
        }
        return result
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else {
            return false
        }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }
}

func quoted(_ text: String) -> String { "\"" + text + "\"" }
