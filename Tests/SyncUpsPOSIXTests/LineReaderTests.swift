import SyncUpsPOSIX
import Testing

@Suite struct LineReaderTests {
    func lines(_ reader: inout LineReader, _ count: Int) throws -> [String] {
        try (0..<count).map { _ in String(decoding: try reader.nextLine(timeout: .seconds(5)), as: UTF8.self) }
    }

    @Test func splitsLinesWhateverTheReadsBring() throws {
        let (read, write) = try FileDescriptor.pipe()
        defer { read.close() }
        var reader = LineReader(fd: read)
        try write.writeAll(Array("one\ntwo\nthr".utf8))
        #expect(try lines(&reader, 2) == ["one", "two"])
        #expect(throws: LineReader.Failure.timedOut) { try reader.nextLine(timeout: .zero) }
        try write.writeAll(Array("ee\n\nfour\n".utf8))
        #expect(try lines(&reader, 3) == ["three", "", "four"])
        // Thousands of lines in one read, as a flooding speech engine writes them.
        try write.writeAll(Array((0..<5_000).map { "line \($0)\n" }.joined().utf8))
        #expect(try lines(&reader, 5_000).last == "line 4999")
        try write.writeAll(Array("no newline".utf8))
        write.close()
        #expect(throws: LineReader.Failure.closed) { try reader.nextLine(timeout: .seconds(5)) }
    }

    @Test func skipsALineOverTheLimitAndGoesOn() throws {
        let (read, write) = try FileDescriptor.pipe()
        defer { read.close() }
        var reader = LineReader(fd: read, maxLineBytes: 10, keepsUnterminatedLastLine: true)
        try write.writeAll(Array("short\n\(String(repeating: "x", count: 25))\nafter\n0123456789ABC\nlast".utf8))
        write.close()
        #expect(try lines(&reader, 1) == ["short"])
        #expect(throws: LineReader.Failure.tooLong) { try reader.nextLine(timeout: .seconds(5)) }
        #expect(try lines(&reader, 1) == ["after"])
        #expect(throws: LineReader.Failure.tooLong) { try reader.nextLine(timeout: .seconds(5)) }
        // The last line without its newline counts once, then the stream is closed.
        #expect(try lines(&reader, 1) == ["last"])
        #expect(throws: LineReader.Failure.closed) { try reader.nextLine(timeout: .seconds(5)) }
    }
}
