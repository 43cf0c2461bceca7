import Glibc
import SyncUpsProtocol

/// The last request line the server's `replayGeneration` vouched for (a `status`), its whole reply line, and
/// the generation then: the same bytes again get the same reply while the generation holds, without being
/// decoded, run or encoded again. Every client's lines go through it, the in-process daemon's and the
/// fuzzer's too (`Server.handleLine`).
struct ReplayCache {
    final class Entry {
        let line: [UInt8]
        let request: Request
        let generation: Int
        let reply: [UInt8]

        init(line: [UInt8], request: Request, generation: Int, reply: [UInt8]) {
            self.line = line
            self.request = request
            self.generation = generation
            self.reply = reply
        }

        func matches(_ other: UnsafeRawBufferPointer) -> Bool {
            line.count == other.count
                && line.withUnsafeBytes { memcmp($0.baseAddress!, other.baseAddress!, other.count) == 0 }
        }

        /// How many copies of the line, each with its newline, `input` holds from `start` on (at most `limit`).
        func countRepeats(in input: [UInt8], from start: Int, upTo limit: Int) -> Int {
            let length = line.count
            return input.withUnsafeBytes { input in
                line.withUnsafeBytes { line in
                    var offset = start
                    var count = 0
                    while count < limit, input.count - offset > length, input[offset + length] == 0x0A,
                        memcmp(input.baseAddress! + offset, line.baseAddress!, length) == 0
                    {
                        offset += length + 1
                        count += 1
                    }
                    return count
                }
            }
        }
    }

    private(set) var entry: Entry?

    /// The reply to replay for `line`, if it is the last vouched-for line and `generation` (asked only
    /// then) still gives the generation it had.
    func reply(to line: UnsafeRawBufferPointer, generation: (Request) -> Int?) -> [UInt8]? {
        guard let entry, entry.matches(line), generation(entry.request) == entry.generation else { return nil }
        return entry.reply
    }

    /// Keeps `reply` for `line` when `generation` vouches for its request.
    mutating func remember(line: UnsafeRawBufferPointer, request: Request, generation: Int?, reply: [UInt8]) {
        guard let generation else { return }
        // The entry shares the scratch's storage; the next reply's encoding gets storage of its own.
        entry = Entry(line: Array(line), request: request, generation: generation, reply: reply)
    }
}
