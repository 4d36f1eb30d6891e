import Foundation
import PackagePlugin

/// Build-tool plugin of the Storage target: compiles `schema/NNNN_name.sql` into `Migration.embedded` and
/// `schema/functions/name.sql` into `SchemaFunction.embedded`.
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
        func sqlFiles(in directory: URL) throws -> [URL] {
            guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
            return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "sql" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        }
        let migrations = try sqlFiles(in: schema)
        let functions = try sqlFiles(in: schema.appending(path: "functions"))
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding schema/*.sql (\(migrations.count) migrations, \(functions.count) functions) "
                    + "into \(target.name)",
                executable: try context.tool(named: "EmbedSchemaTool").url,
                // The tool tells the two kinds apart by their folder: schema/functions/ holds the functions.
                arguments: [output.path] + (migrations + functions).map(\.path),
                inputFiles: migrations + functions,
                outputFiles: [output]
            ),
        ]
    }
}
