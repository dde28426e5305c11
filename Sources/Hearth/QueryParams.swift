internal import CHearth

/// The parameters of a query: an immutable C query (`hearth_query_t`).
///
/// Each builder call copies the C query and changes the copy, so a
/// `DatabaseQuery` is a value that later builder calls never alter.
final class QueryParams: @unchecked Sendable {
    // @unchecked Sendable: the C query is changed only while it is being
    // built, before any other reference exists; afterwards it is only read.
    let pointer: OpaquePointer
    /// The canonical text form, "{}" for the default query.
    let identifier: String

    private init(adopting pointer: OpaquePointer) {
        self.pointer = pointer
        if let text = hearth_query_to_json(pointer) {
            identifier = String(cString: text)
            hearth_free(text)
        } else {
            identifier = "{}"
        }
    }

    deinit {
        hearth_query_free(pointer)
    }

    /// The default query: ordered by priority, no range, no limit.
    static let `default`: QueryParams = {
        var query: OpaquePointer?
        guard hearth_query_create(&query) == 0, let query else {
            preconditionFailure("Hearth: out of memory creating a query")
        }
        return QueryParams(adopting: query)
    }()

    /// Whether the query selects all of a location's data in the default
    /// order.
    var isDefault: Bool { identifier == "{}" }

    /// A copy of this query changed by `change`, which receives the copy and
    /// an error struct to fill.
    func adding(
        _ change: (OpaquePointer, UnsafeMutablePointer<hearth_error_t>) -> Int32
    ) throws(HearthError) -> QueryParams {
        guard let copy = hearth_query_copy(pointer) else {
            throw HearthError(code: .outOfMemory)
        }
        var details = hearth_error_t()
        let status = change(copy, &details)
        if status != 0 {
            hearth_query_free(copy)
            throw HearthError(status: status, details: details)
        }
        return QueryParams(adopting: copy)
    }

    /// Calls `body` with each child of `node` that the query selects, in the
    /// query's order.
    func forEachChild(of node: OpaquePointer, _ body: (String, OpaquePointer) -> Void) {
        Node.visitChildren(body) { callback, context in
            _ = hearth_query_foreach(pointer, node, callback, context)
        }
    }
}
