import Foundation
import Glibc
import KeywellSystem

@testable import KeywellCLI

/// The CLI's own parsers of outside input, from the KeywellCLI library the `keywell` executable
/// runs: BSD getopt over argv words, four-character codes, `atoi`, and the `key=value` lines git
/// sends the credential helper.
///
/// Input layout: first byte picks the option string, then NUL-separated argv words; the same
/// bytes also go to the credential reader whole.

let optionStrings = ["a:s:w:l:D:c:C:r:t:P:p:UAhgjT:", "hd:s:", "lut:", "", "a:b:c:d"]
let longFlags: Set<String> = ["json", "help"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }

    let words = ["keywell"] + bytes.dropFirst().split(separator: 0, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    let parser = GetoptParser(optionString: optionStrings[Int(first) % optionStrings.count], longFlags: longFlags)
    for trailing in [true, false] {
        do {
            let result = try parser.parse(words, firstWordIndex: Int(first % 3), trailingLongFlags: trailing)
            for option in result.options {
                // Every option is one the option string names, with a value exactly when it takes one.
                guard let takesValue = parser.takesValue(option.letter) else { fatalError("unknown option \(option.letter) accepted") }
                if takesValue != (option.value != nil) { fatalError("option \(option.letter) value mismatch") }
                // The recorded location points at the value's bytes in the real argv.
                if let location = option.valueLocation, let value = option.value {
                    let index = location.word - Int(first % 3)
                    guard index >= 0, index < words.count else { fatalError("value location outside argv") }
                    let word = Array(words[index].utf8)
                    guard location.offset >= 0, location.offset <= word.count,
                          Array(word[location.offset...]) == Array(value.utf8) else { fatalError("value location is wrong") }
                }
            }
        } catch {
            _ = error  // unknownOption / missingValue: what getopt reports
        }
    }

    for word in words {
        // Same answers as the C library's atoi, which `security` uses.
        let expected = word.withCString { Glibc.atoi($0) }
        if !word.utf8.contains(0), KeywellCLI.atoi(word) != expected {
            fatalError("atoi(\(word.debugDescription)) = \(KeywellCLI.atoi(word)), glibc says \(expected)")
        }
        switch FourCharCode.parse(word) {
        case .success(let code): if code.utf8.count != 4 { fatalError("accepted \(code.debugDescription)") }
        case .failure(let failure): _ = failure.lines
        }
        let split = CredentialRequest.splitHost(word)
        if split.port != nil, split.host.utf8.count >= word.utf8.count { fatalError("port taken but host not shortened") }
    }

    // The credential helper's stdin, through a pipe (one pipe buffer's worth).
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { fatalError("pipe") }
    let written = bytes.prefix(60_000)
    _ = written.withUnsafeBufferPointer { write(pipeEnds[1], $0.baseAddress, $0.count) }
    close(pipeEnds[1])
    let request = CredentialRequest.read(fd: FileDescriptor(rawValue: pipeEnds[0]))
    close(pipeEnds[0])
    // Under the cap by construction (one pipe buffer): a request is always read.
    guard let request else { fatalError("a request under the cap was refused") }
    _ = (request.host, request.port, request.username, request.password, request.path, request.protocolName)
    return 0
}
