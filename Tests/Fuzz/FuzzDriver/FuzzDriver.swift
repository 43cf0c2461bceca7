// What the fuzz targets share: handing a target to libFuzzer's driver (`make fuzz`), or, built normally,
// replaying the files given as arguments through it (the committed corpus and every crash found, in
// `make test`).

import CSyncUpsShims
import Glibc
import SyncUpsPOSIX

public enum FuzzDriver {
    /// Checks one input; fails a precondition on a finding.
    public typealias Target = (UnsafeRawBufferPointer) -> Void

    /// libFuzzer's callback is a C function pointer, which captures nothing: it calls the target kept here.
    nonisolated(unsafe) private static var target: Target?

    #if FUZZING
        /// Runs libFuzzer's driver on `target`: a target's `<module>_main`, which SwiftPM links as its main.
        public static func run(
            _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ target: @escaping Target
        ) -> CInt {
            Self.target = target
            var count = argc
            var arguments = argv
            return LLVMFuzzerRunDriver(&count, &arguments) { data, size in
                FuzzDriver.target?(UnsafeRawBufferPointer(start: data, count: size))
                return 0
            }
        }
    #endif

    /// Runs `target` on each file of `paths`, then says how many; exits 2 on a file it cannot read.
    public static func replay(_ paths: some Sequence<String>, _ target: Target) {
        var count = 0
        for path in paths {
            guard let fd = try? FileDescriptor.open(path, O_RDONLY), let bytes = try? fd.readToEnd() else {
                Console.error("cannot read \(path)\n")
                exit(2)
            }
            fd.close()
            bytes.withUnsafeBytes { target($0) }
            count += 1
        }
        Console.out("replayed \(count) inputs\n")
    }
}
