import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// Every input in the fuzzers' committed corpus (including the crashes the fuzzers once found) runs
/// through the same checks as under libFuzzer.
@Suite struct FuzzCorpusTests {
    @Test(arguments: [("syncups-fuzz-request", "request"), ("syncups-fuzz-file", "file")])
    func replaysTheCorpusWithoutACrash(fuzzer: String, corpus: String) throws {
        let directory = BuiltProducts.repositoryRoot + "/Tests/Fuzz/Corpus/" + corpus
        let inputs = Files.list(directory).map { directory + "/" + $0 }
        #expect(inputs.count >= 4)
        let scratch = TemporaryDirectory("fuzz-replay")
        let result = try CommandResult.run(BuiltProducts.path(fuzzer), inputs, environment: ["TMPDIR": scratch.path])
        #expect(result.exitCode == 0, "\(result.standardError)")
        #expect(result.standardOutput == "replayed \(inputs.count) inputs\n")
    }
}
