internal import CHearth

/// Helpers for slash-separated locations, kept normalized: no leading,
/// trailing or repeated slashes, "" for the root.
enum DatabasePath {
    /// The normalized form of `path`.
    static func normalize(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    /// `child` (a relative path) below `parent` (normalized).
    static func join(_ parent: String, _ child: String) -> String {
        let child = normalize(child)
        if parent.isEmpty { return child }
        if child.isEmpty { return parent }
        return parent + "/" + child
    }

    /// The parent of a normalized path; nil for the root.
    static func parent(of path: String) -> String? {
        if path.isEmpty { return nil }
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    /// The last key of a normalized path; nil for the root.
    static func lastKey(of path: String) -> String? {
        if path.isEmpty { return nil }
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Throws unless `path` is a valid path (C rules: keys without
    /// `. $ # [ ] /` or control characters, at most 768 bytes, depth 32).
    static func validate(_ path: String) throws(HearthError) {
        try HearthError.check { hearth_validate_path(path, $0) }
    }
}
