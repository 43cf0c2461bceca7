import Glibc
import SyncUpsAudio
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@Suite struct WAVFileTests {
    @Test func writesTheCanonicalHeader() {
        let header = WAVFile.header(dataBytes: 32_000)
        #expect(header.count == 44)
        #expect(
            header == Array("RIFF".utf8) + [0x24, 0x7D, 0, 0] + Array("WAVEfmt ".utf8) + [16, 0, 0, 0, 1, 0, 1, 0]
                + [0x80, 0x3E, 0, 0] + [0, 0x7D, 0, 0] + [2, 0, 16, 0] + Array("data".utf8) + [0, 0x7D, 0, 0]
        )
    }

    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs needs root (CI runs as root)"))
    func aWriteTheFullDiskTakesOnlyPartOfLeavesNothingBehind() throws {
        let disk = try SmallDisk(size: "64k")
        defer { disk.unmount() }
        let wav = try WAVFile(creating: disk.appending("full.wav"))
        // Room for a little less than the next chunks: the disk takes part of one, then refuses.
        let filler = open(disk.appending("filler"), O_WRONLY | O_CREAT, 0o600)
        _ = write(filler, [UInt8](repeating: 1, count: 64 * 1024 - 8192), 64 * 1024 - 8192)
        close(filler)
        let chunk = SpeechFixture.pattern(seconds: 0.1)
        var failed = false
        for _ in 0..<10 where !failed {
            do { try wav.append(chunk) } catch { failed = true }
        }
        #expect(failed, "the disk filled")
        let size = { () -> Int64 in
            var info = stat()
            stat(disk.appending("full.wav"), &info)
            return Int64(info.st_size)
        }
        #expect(size() == Int64(WAVFile.headerSize) + wav.dataBytes, "no part of the refused chunk stays")
        // With room again, what follows lands on whole frames, where the header says it ends.
        unlink(disk.appending("filler"))
        try wav.append(chunk)
        try wav.finish()
        #expect(size() == Int64(WAVFile.headerSize) + wav.dataBytes)
    }

    @Test func keepsAFileThatWasNeverFinishedPlayable() throws {
        let directory = TemporaryDirectory("wav")
        let path = directory.appending("crash.wav")
        do {
            let wav = try WAVFile(creating: path)
            try wav.append(SpeechFixture.pattern(seconds: 1))
            try wav.updateHeader()
            // Written after the last header update: what a crash would lose.
            try wav.append(SpeechFixture.pattern(seconds: 0.5))
        }
        // sox reads what the header says: at most the last second is missing.
        let soxi = try CommandResult.run("soxi", ["-D", path])
        #expect(soxi.standardOutput == "1.000000\n")
        #expect(try WAVFile.repair(path) == 1.5)
        #expect(try CommandResult.run("soxi", ["-D", path]).standardOutput == "1.500000\n")
    }

    @Test func repairsAHeaderThatWasNeverUpdated() throws {
        let directory = TemporaryDirectory("wav")
        let path = directory.appending("fresh.wav")
        let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT, mode: 0o600)
        try fd.writeAll(WAVFile.header(dataBytes: 0) + SpeechFixture.pattern(seconds: 2) + [7])  // a torn last frame
        fd.close()
        #expect(try WAVFile.repair(path) == 2)
        #expect(WAVFile.seconds(at: path) == 2)
        #expect(WAVFile.seconds(at: directory.appending("none.wav")) == nil)
    }

    @Test func refusesToOverwriteAnExistingFile() throws {
        let directory = TemporaryDirectory("wav")
        Files.write(directory.appending("taken.wav"), "x")
        #expect(throws: SystemError.self) { try WAVFile(creating: directory.appending("taken.wav")) }
        #expect(Files.readString(directory.appending("taken.wav")) == "x")
    }
}
