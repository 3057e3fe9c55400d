// SPDX-License-Identifier: MIT
import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory element-docs`: builds the
/// GStreamer plugin and writes `docs/elements.txt`, the gst-inspect-1.0 output of
/// moqsink and moqsrc. CI fails when the checked-in snapshot differs, so interface
/// changes are always deliberate.
@main
struct ElementDocs: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let result = try packageManager.build(.product("gstswiftmoq"), parameters: .init(configuration: .release))
        guard result.succeeded,
            let artifact = result.builtArtifacts.first(where: { $0.url.lastPathComponent == "libgstswiftmoq.so" })
        else {
            throw ElementDocsError("building gstswiftmoq failed:\n\(result.logText)")
        }
        let root = context.package.directoryURL
        let script = root.appending(path: "scripts/element-docs.sh")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script.path, artifact.url.deletingLastPathComponent().path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ElementDocsError("element-docs.sh failed") }
        let target = root.appending(path: "docs/elements.txt")
        try output.write(to: target)
        print("wrote \(target.path) (\(output.count) bytes)")
    }
}

struct ElementDocsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
