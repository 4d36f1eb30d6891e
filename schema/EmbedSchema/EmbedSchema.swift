import Foundation
import PackagePlugin

/// Build-tool plugin of the Storage target: compiles `schema/NNNN_name.sql` into `Migration.embedded`.
///
/// `schema/` stays the one source of the schema; the binary still carries every migration inside itself
/// (deployments copy a single file, with no resource bundle beside it). The generated Swift lives in the
/// plugin work directory under `.build/`, never in the source tree.
///
/// This plugin's target root is `schema/` itself (see Package.swift). SwiftPM re-plans a build when the file
/// list under a target root changes, which re-runs this function, so adding, renaming or deleting a migration
/// takes effect on the next `swift build` with no clean build; editing one re-runs the tool because every
/// `.sql` file is a declared input of the command.
@main
struct EmbedSchema: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        let schema = context.package.directoryURL.appending(path: "schema")
        let sqlFiles = try FileManager.default.contentsOfDirectory(at: schema, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding schema/*.sql (\(sqlFiles.count) migrations) into \(target.name)",
                executable: try context.tool(named: "EmbedSchemaTool").url,
                arguments: [output.path] + sqlFiles.map(\.path),
                inputFiles: sqlFiles,
                outputFiles: [output]
            ),
        ]
    }
}
