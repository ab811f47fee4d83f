import DBusCodegen
import Foundation

// Writes the Swift of every interface of dbus/ (CodegenJob.all); `--check` writes nothing and
// fails when a committed file differs. scripts/codegen.sh runs it (docs/dbus-layer.md,
// "Interfaces from XML").
var arguments = Array(CommandLine.arguments.dropFirst())
let check = arguments.first == "--check"
if check { arguments.removeFirst() }
guard arguments.count <= 1, !(arguments.first?.hasPrefix("-") ?? false) else {
    FileHandle.standardError.write(Data("usage: keywell-dbus-codegen [--check] [repository]\n".utf8))
    exit(2)
}
let root = URL(fileURLWithPath: arguments.first ?? FileManager.default.currentDirectoryPath)

var failed = false
for file in CodegenJob.unclaimedXML(in: (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("dbus").path)) ?? []) {
    FileHandle.standardError.write(Data("dbus/\(file) has no job in CodegenJob.all\n".utf8))
    failed = true
}
for job in CodegenJob.all {
    do {
        let xml = try String(contentsOf: root.appendingPathComponent(job.xml), encoding: .utf8)
        for (path, content) in try job.generate(xml: xml) {
            let url = root.appendingPathComponent(path)
            let committed = try? String(contentsOf: url, encoding: .utf8)
            guard committed != content else { continue }
            if check {
                FileHandle.standardError.write(Data("\(path) is not what \(job.xml) generates\n".utf8))
                failed = true
            } else {
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(content.utf8).write(to: url)
                print("wrote \(path)")
            }
        }
    } catch {
        FileHandle.standardError.write(Data("\(job.xml): \(error)\n".utf8))
        failed = true
    }
}
exit(failed ? 1 : 0)
