package import CHearth
import Foundation

/// An error from Hearth: a code of the C core (`HEARTH_E*`, negative) with a
/// message that names what was wrong (the key, the path or the limit).
///
/// It bridges to `NSError` (`error as NSError`) in ``errorDomain`` with the
/// C code as the error code and the message as `localizedDescription`. This
/// file is the one place that maps C codes to Swift errors; a later mapping
/// to the SDK's own domain and codes belongs here too.
public struct HearthError: Error, CustomNSError, LocalizedError, CustomStringConvertible,
    Hashable, Sendable
{
    /// The error codes, with the values of the C core's `HEARTH_E*` codes.
    /// Swift cannot expand the C table (`HEARTH_ERRNO_MAP`), so each code
    /// is named here by hand; `ErrorTests` checks that every row of the C
    /// table has its name below.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let outOfMemory = Code(HEARTH_ENOMEM)
        public static let invalidArgument = Code(HEARTH_EINVAL)
        public static let malformedJSON = Code(HEARTH_EJSON)
        public static let invalidKey = Code(HEARTH_EKEY)
        public static let invalidPath = Code(HEARTH_EPATH)
        public static let tooDeep = Code(HEARTH_EDEPTH)
        public static let tooBig = Code(HEARTH_ETOOBIG)
        public static let invalidNumber = Code(HEARTH_ENUMBER)
        public static let invalidPriority = Code(HEARTH_EPRIORITY)
        public static let invalidServerValue = Code(HEARTH_ESERVERVALUE)
        public static let invalidValue = Code(HEARTH_EVALUE)
        public static let overlappingUpdate = Code(HEARTH_EUPDATE)
        public static let readOnly = Code(HEARTH_EREADONLY)
        public static let invalidQuery = Code(HEARTH_EQUERY)
        public static let closed = Code(HEARTH_ECLOSED)
        public static let canceled = Code(HEARTH_ECANCELED)
        public static let aborted = Code(HEARTH_EABORTED)
        public static let notFound = Code(HEARTH_ENOTFOUND)
        public static let io = Code(HEARTH_EIO)
        public static let loop = Code(HEARTH_ELOOP)
        public static let unsupported = Code(HEARTH_EUNSUPPORTED)
        public static let permissionDenied = Code(HEARTH_EDENIED)
        public static let offline = Code(HEARTH_EOFFLINE)
        public static let maxRetries = Code(HEARTH_EMAXRETRY)
        public static let disconnected = Code(HEARTH_EDISCONNECTED)
        public static let overriddenBySet = Code(HEARTH_EOVERRIDDEN)
        public static let serverRefused = Code(HEARTH_EREMOTE)
        public static let dataStale = Code(HEARTH_EDATASTALE)
        public static let noSpace = Code(HEARTH_ENOSPC)

        private init(_ code: hearth_errno) { self.rawValue = Int(code.rawValue) }

        /// Every error code of the C table (`HEARTH_OK` aside), whose
        /// values run from -1 down, as `HEARTH_ERRNO_MAP` promises.
        static var cTable: [Code] {
            (1 - Int(HEARTH_ERRNO_COUNT)...(-1)).map(Code.init(rawValue:))
        }

        /// The C name of the code, e.g. "HEARTH_EKEY".
        public var name: String { String(cString: hearth_err_name(Int32(clamping: rawValue))) }
        /// The C core's sentence for the code, e.g. "invalid key".
        public var summary: String { String(cString: hearth_strerror(Int32(clamping: rawValue))) }
        public var description: String { name }
    }

    /// The error domain of the `NSError` this error bridges to.
    public static let errorDomain = "HearthErrorDomain"

    /// The FirebaseDatabase SDK's error domain: what a server or the
    /// connection decided (refused, unavailable, canceled, lost a
    /// transaction's race) reaches completion blocks and `async` callers as
    /// an `NSError` in this domain with the SDK's codes (see ``bridged``).
    public static let sdkErrorDomain = "com.firebase"

    /// The domain of the SDK's own client-side failures: `getData()`
    /// offline with nothing cached is code 1 there.
    public static let sdkCoreErrorDomain = "com.firebase.core"

    /// The `userInfo` keys of the bridged `NSError`.
    public static let nameKey = "HearthErrorName"
    public static let pathKey = "HearthErrorPath"
    public static let lineKey = "HearthErrorLine"
    public static let columnKey = "HearthErrorColumn"

    public let code: Code
    /// What was wrong, naming the key, the path or the limit; the code's
    /// summary when there are no details.
    public let message: String
    /// The location in the data at fault ("" when none).
    public let path: String
    /// 1-based position in JSON text (0 when not from text).
    public let line: Int
    public let column: Int

    public init(code: Code, message: String? = nil, path: String = "", line: Int = 0, column: Int = 0) {
        self.code = code
        self.message = message.flatMap { $0.isEmpty ? nil : $0 } ?? code.summary
        self.path = path
        self.line = line
        self.column = column
    }

    // MARK: CustomNSError, LocalizedError

    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [
            NSLocalizedDescriptionKey: message,
            Self.nameKey: code.name,
        ]
        if !path.isEmpty { info[Self.pathKey] = path }
        if line > 0 {
            info[Self.lineKey] = line
            info[Self.columnKey] = column
        }
        return info
    }
    public var errorDescription: String? { message }

    /// What completion blocks and `async` callers receive: for the
    /// outcomes the SDK reports itself, an `NSError` in its domain with its
    /// code and text (permission denied 1, write canceled 3, the rest 9999
    /// with the protocol's status word, as the SDK does; a read offline with
    /// nothing cached is code 1 of ``sdkCoreErrorDomain``, its message the
    /// SDK's sentence naming the query, see `reading(path:query:)`); the
    /// Hearth code's name and details stay in `userInfo`. Other errors
    /// (bad data, bad paths) stay `HearthError`s: the SDK raises those.
    public var bridged: any Error {
        let sdk: (code: Int, text: String)
        switch code {
        case .offline:
            // As the iOS SDK fails getData: the sentence names the query.
            var info = errorUserInfo
            info[NSLocalizedFailureReasonErrorKey] = "Client is offline."
            return NSError(domain: Self.sdkCoreErrorDomain, code: 1, userInfo: info)
        case .permissionDenied: sdk = (1, "Permission Denied")
        case .canceled: sdk = (3, "Write cancelled by user")
        case .maxRetries: sdk = (9999, "maxretry")
        case .disconnected: sdk = (9999, "disconnect")
        case .overriddenBySet: sdk = (9999, "set")
        case .dataStale: sdk = (9999, "datastale")
        case .serverRefused: sdk = (9999, message)
        default: return self
        }
        var info = errorUserInfo
        info[NSLocalizedDescriptionKey] = sdk.text
        info[NSLocalizedFailureReasonErrorKey] = message
        return NSError(domain: Self.sdkErrorDomain, code: sdk.code, userInfo: info)
    }
    public var description: String { "\(code.name): \(message)" }
}

extension HearthError {
    /// A read's failure at `path` (normalized, "" for the root) for
    /// `query`, in the words the C core's `hearth_db_get` uses: offline
    /// with nothing cached, "Unable to get latest value for query
    /// FQuerySpec (path: /a, params: {}), client offline with no active
    /// listeners and no matching disk cache entries", the query described
    /// as the iOS SDK describes it.
    func reading(path: String, query: QueryParams) -> HearthError {
        guard code == .offline else { return self }
        let spec = "FQuerySpec (path: /\(path), params: \(Self.describe(query)))"
        return HearthError(
            code: code, message: "Unable to get latest value for query \(spec), \(code.summary)",
            path: "/" + path)
    }

    /// A query's wire parameters as Foundation prints a dictionary: keys
    /// sorted, one "    key = value;" line each, "{}" when there are none.
    private static func describe(_ query: QueryParams) -> String {
        let params = try? JSONDecoder().decode(
            [String: WireValue].self, from: Data(query.identifier.utf8))
        guard let params, !params.isEmpty else { return "{}" }
        let lines = params.keys.sorted().map { "\n    \($0) = \(params[$0]!.text);" }
        return "{" + lines.joined() + "\n}"
    }

    /// One wire parameter, printed as Foundation prints its object.
    private enum WireValue: Decodable {
        case null, flag(Bool), integer(Int64), number(Double), string(String)

        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if value.decodeNil() {
                self = .null
            } else if let flag = try? value.decode(Bool.self) {
                self = .flag(flag)
            } else if let integer = try? value.decode(Int64.self) {
                self = .integer(integer)
            } else if let number = try? value.decode(Double.self) {
                self = .number(number)
            } else {
                self = .string(try value.decode(String.self))
            }
        }

        var text: String {
            switch self {
            case .null: return "<null>"
            case .flag(let flag): return flag ? "1" : "0"
            case .integer(let integer): return String(integer)
            case .number(let number): return String(number)
            case .string(let string):
                let plain = !string.isEmpty && string.unicodeScalars.allSatisfy {
                    $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_")
                }
                return plain ? string : "\"\(string)\""
            }
        }
    }

    /// An error from a C return code and, when the call filled one, its
    /// error details. (`package`: HearthServer makes them too.)
    package init(status: Int32, details: hearth_error_t? = nil) {
        guard var details, details.code == status else {
            self.init(code: Code(rawValue: Int(status)))
            return
        }
        let message = withUnsafeBytes(of: &details.message) { Self.string(fromBuffer: $0) }
        let path = withUnsafeBytes(of: &details.path) { Self.string(fromBuffer: $0) }
        self.init(
            code: Code(rawValue: Int(status)), message: message, path: path,
            line: Int(details.line), column: Int(details.column))
    }

    /// A completion's failure, with the detail the C core gives inside the
    /// callback (`hearth_completion_error`): the server's own words for a
    /// refusal, the path, what was wrong. Call it in the callback only.
    init(completing status: Int32) {
        self.init(status: status, details: hearth_completion_error()?.pointee)
    }

    /// `error` as a HearthError (other errors become `.invalidValue`).
    init(_ error: any Error) {
        if let error = error as? HearthError {
            self = error
        } else {
            self.init(code: .invalidValue, message: String(describing: error))
        }
    }

    /// Calls `body` with a zeroed error struct and throws what it reports
    /// when it returns non-zero.
    static func check(_ body: (UnsafeMutablePointer<hearth_error_t>) -> Int32) throws(HearthError) {
        var details = hearth_error_t()
        let status = body(&details)
        if status != 0 {
            throw HearthError(status: status, details: details)
        }
    }

    /// A NUL-terminated C string in a fixed-size buffer (never read past it).
    private static func string(fromBuffer bytes: UnsafeRawBufferPointer) -> String {
        let length = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: bytes.prefix(length), as: UTF8.self)
    }
}
