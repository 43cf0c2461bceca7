// Fuzzes the sync-ups.json loader: whatever the bytes, decoding returns sync-ups or a SyncUpsFileError
// (never a crash), the fast and general decoders agree, and a file that decodes survives an encode/decode
// round trip unchanged (through the fast pretty writer and the general compact one), and the store's
// incremental encoder writes what the general writer writes.
//
// Built with `make fuzz` (libFuzzer). Built normally, it replays the files given as arguments.

import CSyncUpsShims
import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX

func fuzzFile(_ input: UnsafeRawBufferPointer) {
    // The fast path and the general path agree on every input: the same sync-ups, or both refuse.
    let fast = try? SyncUpsFile.decode(Array(input))
    let general = try? SyncUpsFile.decodeGeneral(Array(input))
    precondition(fast == general, "the fast and general decoders disagree")
    guard let syncUps = fast else { return }
    for options in [JSONWriter.Options.applePrettySorted, .compact] {
        let again = try? SyncUpsFile.decode(SyncUpsFile.encode(syncUps, options: options))
        precondition(again == syncUps, "a loaded file must survive a round trip")
    }
    // The store's incremental encoder writes what the general writer writes for the JSON tree, from scratch
    // and after an edit that leaves the other sync-ups cached.
    func generalEncode(_ syncUps: [SyncUp]) -> [UInt8] {
        JSONWriter(options: .applePrettySorted).encode(SyncUpsFile.json(syncUps))
    }
    var encoder = SyncUpsFileEncoder()
    precondition(Array(encoder.encode(syncUps).joined()) == generalEncode(syncUps), "incremental encode differs")
    var edited = syncUps
    if !edited.isEmpty { edited[edited.count / 2].title += "\u{0}é" }
    edited.reverse()
    precondition(Array(encoder.encode(edited).joined()) == generalEncode(edited), "incremental encode differs")
}

#if FUZZING
    /// SwiftPM links an executable's `main` as `<module>_main`; hand it to libFuzzer's driver.
    @_cdecl("syncups_fuzz_file_main")
    func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in
            fuzzFile(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        }
    }
#else
    @main
    struct Replay {
        static func main() {
            var count = 0
            for path in CommandLine.arguments.dropFirst() {
                guard let fd = try? FileDescriptor.open(path, O_RDONLY), let bytes = try? fd.readToEnd() else {
                    Console.error("cannot read \(path)\n")
                    exit(2)
                }
                fd.close()
                bytes.withUnsafeBytes { fuzzFile($0) }
                count += 1
            }
            Console.out("replayed \(count) inputs\n")
        }
    }
#endif
