/// `/.flatpak-info` as a sandboxed process's root holds it (docs/access-control.md): whoever runs
/// in the sandbox can shape what keywelld reads there. `FlatpakInfo(parsing:)` gives an app id and
/// an instance id that pass their own checks, or throws `ParseError`; never a crash, never
/// anything from a file over the size cap. A file written from what it returned reads the same.
/// FlatpakInfo.swift here is a link to keywelld's own source file (Sources/KeywellIdentity), which
/// needs nothing but the standard library: compiled into this target, it costs no module build.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    let parsed: FlatpakInfo
    do throws(FlatpakInfo.ParseError) {
        parsed = try FlatpakInfo(parsing: input)
    } catch {
        if size > FlatpakInfo.maximumSize, error != .tooLarge { fatalError("a file over the cap was read: \(error)") }
        return 0
    }
    guard size <= FlatpakInfo.maximumSize else { fatalError("a file over the cap was accepted") }
    guard FlatpakInfo.isValidAppID(parsed.appID), FlatpakInfo.isValidInstanceID(parsed.instanceID) else {
        fatalError("accepted ids that fail their checks: \(parsed)")
    }
    // Both ids are plain ASCII names or digits: written as Flatpak writes them, they read back.
    let rewritten = "[Application]\nname=\(parsed.appID)\n\n[Instance]\ninstance-id=\(parsed.instanceID)\n"
    guard (try? FlatpakInfo(parsing: Array(rewritten.utf8))) == parsed else { fatalError("a round trip changed \(parsed)") }
    return 0
}
