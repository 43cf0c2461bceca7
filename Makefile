# syncupsd: build, run, test. `make run` and `make test` are the two commands a new user needs (README.md).

SWIFT ?= swift
RELEASE_FLAGS = -c release --static-swift-stdlib
RELEASE_BIN = $(shell $(SWIFT) build $(RELEASE_FLAGS) --show-bin-path 2>/dev/null)

# Debian packages: what building and running needs, and what the test suite needs on top.
RUN_PACKAGES = pkg-config libasound2-dev libsystemd-dev libpocketsphinx-dev pocketsphinx-en-us
TEST_PACKAGES = $(RUN_PACKAGES) pocketsphinx-testdata espeak-ng sox alsa-utils socat systemd python3

BENCH_PACKAGES = $(RUN_PACKAGES) pocketsphinx-testdata espeak-ng mpd valgrind

.PHONY: all build run test stress fuzz bench lint format deps deps-test clean

all: build

deps:
	@scripts/ensure-packages $(RUN_PACKAGES)

deps-test:
	@scripts/ensure-packages $(TEST_PACKAGES)

build: deps
	$(SWIFT) build $(RELEASE_FLAGS)

## Builds a release daemon and runs it in the foreground with the default XDG paths. Pass flags with ARGS="…".
run: build
	exec $(RELEASE_BIN)/syncupsd $(ARGS)

## Installs what the tests need, checks formatting, builds, and runs the whole suite.
test: deps-test lint
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## The crash-safety tests with many more SIGKILLs than `make test` runs (STRESS_ITERATIONS, default 5000).
STRESS_ITERATIONS ?= 5000
stress: deps-test
	$(SWIFT) build --build-tests
	SYNCUPS_STRESS_ITERATIONS=$(STRESS_ITERATIONS) $(SWIFT) test --skip-build --filter CrashSafetyTests

## Runs each fuzzer for FUZZ_SECONDS (default 60) from the committed corpus; see Tests/Fuzz/README.md.
FUZZ_SECONDS ?= 60
FUZZ_BUILD = -c release --scratch-path .build/fuzz --toolset .build/fuzz-toolset.json -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING
fuzz: deps
	@mkdir -p .build/fuzz-corpus/request .build/fuzz-corpus/file
	@# GNU gold crashes linking libFuzzer into Swift; use the toolchain's lld.
	@printf '{"schemaVersion":"1.0","linker":{"path":"%s"}}\n' "$$(dirname "$$(readlink -f "$$(command -v $(SWIFT))")")/ld.lld" > .build/fuzz-toolset.json
	$(SWIFT) build $(FUZZ_BUILD) --product syncups-fuzz-request
	$(SWIFT) build $(FUZZ_BUILD) --product syncups-fuzz-file
	SWIFT_BACKTRACE=enable=no .build/fuzz/release/syncups-fuzz-request -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -dict=Tests/Fuzz/request.dict \
		-artifact_prefix=.build/fuzz-crash-request- .build/fuzz-corpus/request Tests/Fuzz/Corpus/request
	SWIFT_BACKTRACE=enable=no .build/fuzz/release/syncups-fuzz-file -max_total_time=$(FUZZ_SECONDS) -max_len=16384 \
		-artifact_prefix=.build/fuzz-crash-file- .build/fuzz-corpus/file Tests/Fuzz/Corpus/file

## Benchmarks, side by side with MPD: tables on stdout, JSON in .build/bench/results.json (BENCH_ARGS="--quick").
bench:
	@scripts/ensure-packages $(BENCH_PACKAGES)
	$(SWIFT) build $(RELEASE_FLAGS) --product syncupsd
	$(SWIFT) build $(RELEASE_FLAGS) --product syncups-bench
	scripts/bench $(BENCH_ARGS)

lint:
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

clean:
	rm -rf .build
