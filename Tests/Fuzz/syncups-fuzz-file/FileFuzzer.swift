// Fuzzes the sync-ups.json reader and writer: whatever the bytes, decoding returns sync-ups or a
// SyncUpsFileError (never a crash); it accepts nothing the strict JSON parser refuses; a file that decodes
// survives an encode/decode round trip unchanged; and the store's incremental encoder writes what a fresh
// encoder writes, after an edit that leaves the other sync-ups cached.
//
// Built with `make fuzz` (libFuzzer). Built normally, it replays the files given as arguments.

import FuzzDriver
import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX

func fuzzFile(_ input: UnsafeRawBufferPointer) {
    let decoded = try? SyncUpsFile.decode(buffer: input)
    let isBlank = input.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
    if decoded != nil && !isBlank {
        guard case .success = JSONParser(maxDepth: 32).parse(buffer: input) else {
            preconditionFailure("the file reader accepted what the JSON parser refuses")
        }
    }
    guard let syncUps = decoded else { return }
    let encoded = SyncUpsFile.encode(syncUps)
    precondition((try? SyncUpsFile.decode(encoded)) == syncUps, "a loaded file must survive a round trip")
    var encoder = SyncUpsFileEncoder()
    precondition(Array(encoder.encode(syncUps).joined()) == encoded, "the encoder is not deterministic")
    var edited = syncUps
    if !edited.isEmpty { edited[edited.count / 2].title += "\u{0}é" }
    edited.reverse()
    precondition(Array(encoder.encode(edited).joined()) == SyncUpsFile.encode(edited), "incremental encode differs")
}

#if FUZZING
    /// SwiftPM links an executable's `main` as `<module>_main`; hand it to libFuzzer's driver.
    @_cdecl("syncups_fuzz_file_main")
    func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        FuzzDriver.run(argc, argv, fuzzFile)
    }
#else
    @main
    struct Replay {
        static func main() { FuzzDriver.replay(CommandLine.arguments.dropFirst(), fuzzFile) }
    }
#endif
