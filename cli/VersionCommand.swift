import ArgumentParser
import Hearth

/// `hearth version`: the version of the C core.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print Hearth's version.",
        discussion: """
            Examples:
              hearth version                 # 0.3.0
              hearth version --format json   # {"version":"0.3.0"}
            """)

    @OptionGroup var output: FormatOptions

    func run() {
        let version = Database.sdkVersion()
        switch output.format {
        case .text: Output.line(version)
        case .json: Output.json(["version": version])
        }
    }
}
