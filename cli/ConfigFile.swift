import ArgumentParser
import Foundation
import Hearth

// `hearth serve --config FILE`: the file's keys are the command's option
// names, read from its own properties (`Mirror`), so a new option is a key
// at once. The file becomes options placed before the command line's, in
// the `--name=value` form (so a value starting with "-" stays a value),
// and a later occurrence wins: the command line overrides the file.

extension ServeCommand {
    /// Options that exclude each other (`validate()` refuses both given):
    /// one given on the command line drops the file's other, so that the
    /// command line overrides the file for these as for every option.
    static let alternatives: [(String, String)] = [
        ("auth-secret", "auth-secret-file"),
        ("admin-secret", "admin-secret-file"),
        ("cluster-secret-file", "cluster-insecure"),
        ("nats-creds", "nats-nkey"),
        ("nats-user-file", "nats-token-file"),
    ]

    /// What an option's value must be in the file.
    enum ValueKind: String {
        case flag = "true or false"
        case integer = "an integer"
        case number = "a number"
        case text = "a string"
    }

    /// Every option's name ("_authSecret" is auth-secret) and the kind of
    /// value it takes, from the command's own properties.
    static var optionKinds: [String: ValueKind] {
        var kinds: [String: ValueKind] = [:]
        for child in Mirror(reflecting: ServeCommand()).children {
            guard let label = child.label else { continue }
            let kind: ValueKind =
                switch child.value {
                case is Flag<Bool>: .flag
                case is Option<Int>, is Option<Int?>: .integer
                case is Option<Double>, is Option<Double?>: .number
                default: .text
                }
            kinds[optionName(label)] = kind
        }
        return kinds
    }

    private static func optionName(_ label: String) -> String {
        label.dropFirst().map { $0.isUppercase ? "-" + $0.lowercased() : String($0) }.joined()
    }

    /// Whether the option `name` was given: a value, or a flag that is on.
    func isGiven(_ name: String) -> Bool {
        Mirror(reflecting: self).children.contains { child in
            guard child.label.map(Self.optionName) == name else { return false }
            switch child.value {
            case let flag as Flag<Bool>: return flag.wrappedValue
            case let option as Option<String?>: return option.wrappedValue != nil
            default: return false
            }
        }
    }

    /// Whether the command line's option would quietly turn off what the
    /// file's turns on: `--cluster-insecure` beside the file's cluster
    /// secret is refused as both given, never taken as an override (the
    /// secret on the command line does override the file's insecure).
    static func downgrades(file: String, commandLine: String) -> Bool {
        file == "cluster-secret-file" && commandLine == "cluster-insecure"
    }

    /// The first pair of `alternatives` both given, for `validate()`.
    func givenAlternatives() -> (String, String)? {
        Self.alternatives.first { isGiven($0.0) && isGiven($0.1) }
    }

    /// The options of the file, then those of the command line.
    static func merging(configFile path: String, arguments: [String]) throws -> ServeCommand {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--config: cannot read \(path)")
        }
        let object = try readObject(data, path: path)
        let kinds = optionKinds.filter { $0.key != "config" }
        let onCommandLine = optionNamesGiven(in: arguments)
        var fileArguments: [String] = []
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            guard let kind = kinds[key] else {
                throw ValidationError(
                    "--config \(path): unknown key \"\(key)\" (the keys are: \(kinds.keys.sorted().joined(separator: ", ")))")
            }
            let overridden = alternatives.contains { pair in
                (pair.0 == key && onCommandLine.contains(pair.1)
                    && !Self.downgrades(file: key, commandLine: pair.1))
                    || (pair.1 == key && onCommandLine.contains(pair.0))
            }
            if overridden { continue }
            guard let text = value.argument(as: kind) else {
                throw ValidationError(
                    "--config \(path): \"\(key)\" must be \(kind.rawValue), not \(value.description)")
            }
            if kind == .flag {
                fileArguments += text == "true" ? ["--\(key)"] : []
            } else {
                fileArguments.append("--\(key)=\(text)")
            }
        }
        return try ServeCommand.parse(fileArguments + withoutConfig(arguments))
    }

    /// The command line without its `--config FILE` (or `--config=FILE`),
    /// so that the merged options are validated as one command line.
    private static func withoutConfig(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var skipNext = false
        for (index, argument) in arguments.enumerated() {
            if skipNext {
                skipNext = false
            } else if argument == "--" {
                return out + arguments[index...]
            } else if argument == "--config" {
                skipNext = true
            } else if !argument.hasPrefix("--config=") {
                out.append(argument)
            }
        }
        return out
    }

    /// The option names on a command line (`--name` and `--name=value`),
    /// up to a `--` that ends the options.
    private static func optionNamesGiven(in arguments: [String]) -> Set<String> {
        var names: Set<String> = []
        for argument in arguments {
            if argument == "--" { break }
            guard argument.hasPrefix("--") else { continue }
            names.insert(String(argument.dropFirst(2).prefix { $0 != "=" }))
        }
        return names
    }

    /// The file's object. Its syntax is checked by the core's JSON reader
    /// first (the one `hearth check` uses), for the line and column of a
    /// mistake; Foundation then reads the values with their JSON types.
    private static func readObject(_ data: Data, path: String) throws -> [String: ConfigValue] {
        do {
            _ = try HearthJSON.validate(data)
        } catch where error.line > 0 {
            throw ValidationError("--config \(path): \(error.message)")  // names line and column
        } catch {
            // Valid JSON that is not valid data (a key with a dot): the
            // checks below name what is wrong with it as options.
        }
        do {
            return try JSONDecoder().decode([String: ConfigValue].self, from: data)
        } catch {
            throw ValidationError(
                "--config \(path): the file must hold one JSON object of options, such as {\"port\": 8080}")
        }
    }
}

/// A value of the config file, with its JSON type.
enum ConfigValue: Decodable, CustomStringConvertible {
    case bool(Bool)
    case integer(Int)
    case number(Double)
    case string(String)
    case null
    case other  // an object or an array

    init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer()
        if value.decodeNil() {
            self = .null
        } else if let bool = try? value.decode(Bool.self) {
            self = .bool(bool)
        } else if let integer = try? value.decode(Int.self) {
            self = .integer(integer)
        } else if let number = try? value.decode(Double.self) {
            self = .number(number)
        } else if let string = try? value.decode(String.self) {
            self = .string(string)
        } else {
            self = .other
        }
    }

    /// The command-line text of this value for an option of `kind`; nil
    /// when the JSON type is not the option's.
    func argument(as kind: ServeCommand.ValueKind) -> String? {
        switch (kind, self) {
        case (.flag, .bool(let on)): String(on)
        case (.integer, .integer(let n)): String(n)
        case (.number, .integer(let n)): String(n)
        case (.number, .number(let x)): String(x)
        case (.text, .string(let s)): s
        default: nil
        }
    }

    var description: String {
        switch self {
        case .bool(let on): String(on)
        case .integer(let n): String(n)
        case .number(let x): String(x)
        case .string: "a string"
        case .null: "null"
        case .other: "an object or an array"
        }
    }
}
