// swift-tools-version: 6.2
// The package graph follows ARCHITECTURE.md: a pure core in the middle, IO edges around it, thin executables.

import PackageDescription

/// Settings shared by every Swift target: Swift 6 mode with strict concurrency, and no warnings tolerated.
///
/// Release builds leave out the run-time exclusivity checks (the compile-time ones stay). The daemon's state
/// lives in classes owned by one loop, and each access to a class's stored property was checked at run time:
/// at 8 pipelined `status` requests a batch, that was 2,600 of the daemon's 9,100 instructions per batch, and
/// at 512 about 10 % (callgrind, issue 18). Debug builds, which `make test` runs, keep every check, so an
/// overlapping access is still caught by the tests.
let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .treatAllWarnings(as: .error),
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "syncupsd",
    products: [
        .executable(name: "syncupsd", targets: ["syncupsd"]),
        .executable(name: "syncupsctl", targets: ["syncupsctl"]),
    ],
    targets: [
        // MARK: - C libraries and shims

        .target(name: "CSyncUpsShims", cSettings: [.define("_GNU_SOURCE")]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        // No pkgConfig: libpulse.pc adds -D_REENTRANT and -pthread, which SwiftPM refuses; the modulemap links.
        .systemLibrary(name: "CPulse", providers: [.apt(["libpulse-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // No pkgConfig: pocketsphinx.pc would link libsphinxad and its 30 dependencies (see shim.h).
        .systemLibrary(name: "CPocketSphinx", providers: [.apt(["libpocketsphinx-dev"])]),

        // MARK: - Pure core

        .target(name: "SyncUpsJSON", swiftSettings: strictSettings),
        .target(name: "SyncUpsCore", dependencies: ["SyncUpsJSON"], swiftSettings: strictSettings),
        .target(name: "SyncUpsProtocol", dependencies: ["SyncUpsCore", "SyncUpsJSON"], swiftSettings: strictSettings),

        // MARK: - IO edges

        .target(name: "SyncUpsPOSIX", dependencies: ["CSyncUpsShims"], swiftSettings: strictSettings),
        .target(
            name: "SyncUpsPersistence",
            dependencies: ["SyncUpsCore", "SyncUpsJSON", "SyncUpsPOSIX", "SyncUpsVoice"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "SyncUpsAudio", dependencies: ["SyncUpsCore", "SyncUpsPOSIX", "CALSA", "CPulse"],
            swiftSettings: strictSettings),
        .target(
            name: "SyncUpsSpeech",
            dependencies: ["SyncUpsCore", "SyncUpsJSON", "SyncUpsPOSIX", "CPocketSphinx"],
            swiftSettings: strictSettings
        ),
        .target(name: "SyncUpsSystemd", dependencies: ["SyncUpsPOSIX", "CSystemd"], swiftSettings: strictSettings),
        // The speaker encoder: pure computation (no IO, no clock), plain Swift SIMD. Optimised in debug builds
        // too: unoptimised, one 1.6 s embedding takes 12 s instead of 0.04 s, too slow for the real-voice tests.
        .target(
            name: "SyncUpsVoice", dependencies: ["SyncUpsJSON"],
            swiftSettings: strictSettings + [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // The desktop's session bus (sd-bus): the MPRIS player and notifications.
        .target(
            name: "SyncUpsBus", dependencies: ["SyncUpsCore", "SyncUpsPOSIX", "CSystemd"], swiftSettings: strictSettings
        ),

        // MARK: - Wiring and executables

        .target(
            name: "SyncUpsDaemon",
            dependencies: [
                "SyncUpsCore", "SyncUpsJSON", "SyncUpsProtocol", "SyncUpsPOSIX", "SyncUpsPersistence",
                "SyncUpsAudio", "SyncUpsSpeech", "SyncUpsSystemd", "SyncUpsVoice", "SyncUpsBus",
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "SyncUpsClient",
            dependencies: ["SyncUpsCore", "SyncUpsJSON", "SyncUpsProtocol", "SyncUpsPOSIX"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "syncupsd",
            dependencies: ["SyncUpsDaemon", "SyncUpsSystemd"],
            swiftSettings: strictSettings
        ),
        .executableTarget(name: "syncupsctl", dependencies: ["SyncUpsClient"], swiftSettings: strictSettings),

        // MARK: - Tests

        .target(
            name: "SyncUpsTestSupport",
            dependencies: [
                "SyncUpsCore", "SyncUpsJSON", "SyncUpsPOSIX", "SyncUpsPersistence", "SyncUpsAudio", "SyncUpsSpeech",
            ],
            path: "Tests/SyncUpsTestSupport",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "syncups-testtool",
            dependencies: ["SyncUpsCore", "SyncUpsPersistence", "SyncUpsPOSIX", "SyncUpsTestSupport"],
            path: "Tests/Tools/syncups-testtool",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "syncups-voice",
            dependencies: ["SyncUpsAudio", "SyncUpsPOSIX", "SyncUpsVoice"],
            path: "Tests/Tools/syncups-voice",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "syncups-fuzz-request",
            dependencies: ["FuzzDriver", "SyncUpsDaemon", "SyncUpsJSON", "SyncUpsPOSIX", "SyncUpsProtocol"],
            path: "Tests/Fuzz/syncups-fuzz-request",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "syncups-fuzz-file",
            dependencies: ["FuzzDriver", "SyncUpsCore", "SyncUpsJSON", "SyncUpsPOSIX"],
            path: "Tests/Fuzz/syncups-fuzz-file",
            swiftSettings: strictSettings
        ),
        .target(
            name: "FuzzDriver", dependencies: ["CSyncUpsShims", "SyncUpsPOSIX"], path: "Tests/Fuzz/FuzzDriver",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "syncups-bench",
            dependencies: [
                "CSyncUpsShims", "SyncUpsBus", "SyncUpsCore", "SyncUpsJSON", "SyncUpsPersistence", "SyncUpsPOSIX",
                "SyncUpsSpeech", "SyncUpsTestSupport",
            ],
            path: "Tests/Bench/syncups-bench",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsVoiceTests",
            dependencies: ["SyncUpsCore", "SyncUpsPersistence", "SyncUpsPOSIX", "SyncUpsVoice", "SyncUpsTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsJSONTests", dependencies: ["SyncUpsJSON", "SyncUpsTestSupport"], swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsPOSIXTests", dependencies: ["SyncUpsPOSIX", "SyncUpsTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsCoreTests",
            dependencies: ["SyncUpsCore", "SyncUpsJSON", "SyncUpsTestSupport"],
            resources: [.copy("Fixtures")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "SyncUpsCore", "SyncUpsJSON", "SyncUpsPOSIX", "SyncUpsTestSupport", "syncupsd", "syncupsctl",
                "syncups-fuzz-request",
                "syncups-fuzz-file",
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsAudioTests",
            dependencies: ["SyncUpsAudio", "SyncUpsPOSIX", "SyncUpsTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsSpeechTests",
            dependencies: ["SyncUpsSpeech", "SyncUpsCore", "SyncUpsPOSIX", "SyncUpsTestSupport"],
            resources: [.copy("Fixtures")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsProtocolTests", dependencies: ["SyncUpsJSON", "SyncUpsProtocol"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsDaemonTests",
            dependencies: ["SyncUpsDaemon", "SyncUpsJSON", "SyncUpsPOSIX", "SyncUpsProtocol", "SyncUpsTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsClientTests",
            dependencies: ["SyncUpsClient", "SyncUpsJSON", "SyncUpsTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SyncUpsPersistenceTests",
            dependencies: [
                "SyncUpsCore", "SyncUpsPersistence", "SyncUpsPOSIX", "SyncUpsTestSupport", "SyncUpsVoice",
                "syncups-testtool",
            ],
            swiftSettings: strictSettings
        ),
    ]
)
