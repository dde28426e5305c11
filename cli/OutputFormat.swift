import ArgumentParser

/// How a command prints its result.
enum OutputFormat: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// One JSON document on stdout: the stable contract for scripts.
    case json
    /// Lines for people.
    case text
}

/// The `--format` option shared by commands that print results.
struct FormatOptions: ParsableArguments {
    @Option(name: .long, help: "Output format: json (stable, for scripts) or text.")
    var format: OutputFormat = .text
}
