import SyncUpsJSON
import Testing

@testable import SyncUpsClient

@Suite struct StatusLineTests {
    let session: JSONValue = [
        "syncup": "5FD1", "title": "R&D <Core>", "state": "running", "secondsElapsed": 192, "duration": 900,
        "durationRemaining": 708, "speakerIndex": 1, "speaker": ["id": "A", "name": "Ann & Bob"], "attendeeCount": 6,
        "theme": ["name": "orange", "displayName": "Orange", "accent": "#000000", "main": "#FF8B42"],
        "transcript": "hello",
    ]

    /// Idle within the hour before a scheduled start, the bar counts down to it (whole minutes, rounded up);
    /// before that hour, and once it began, it says the idle text.
    @Test func countsDownToTheNextScheduledStandUpWhenIdle() {
        var line = StatusLine()
        line.upcoming = StatusLine.Upcoming(title: "Design", start: 10_000)
        #expect(line.render(.idle, format: .template("{speaker}"), now: 10_000 - 240) == "Design in 4 min")
        #expect(line.render(.idle, format: .template("{speaker}"), now: 10_000 - 181) == "Design in 4 min")
        #expect(line.render(.idle, format: .template("{speaker}"), now: 10_000 - 3600) == "Design in 60 min")
        #expect(line.render(.idle, format: .template("{speaker}"), now: 10_000 - 3601) == "no meeting")
        #expect(line.render(.idle, format: .template("{speaker}"), now: 10_000) == "no meeting")
        #expect(line.render(.idle, format: .template("{speaker}")) == "no meeting")
    }

    @Test func fillsTemplatesWithEveryPlaceholder() {
        let values = StatusLine.values(session)
        #expect(Set(values.keys) == Set(StatusLine.placeholders))
        #expect(
            StatusLine.fill(
                "{title}: {speaker} {speakerNumber}/{speakerCount} {elapsed}+{remaining}={duration} {progress}%", values
            )
                == "R&D <Core>: Ann & Bob 2/6 03:12+11:48=15:00 21%")
        #expect(
            StatusLine.fill("{{literal}} {unknown} {state} {main} on {accent} {theme}", values)
                == "{literal} {unknown} running #FF8B42 on #000000 orange")
    }

    @Test func saysCallAudioSilentOnlyWhenTheDaemonSaysTheCallSourceIsSilent() throws {
        guard case .object(var object) = session else { return }
        #expect(StatusLine.values(session)["callAudio"] == "")
        object["callAudio"] = ["state": "recording", "silent": false, "silentSeconds": 4]
        #expect(StatusLine.values(.object(object))["callAudio"] == "")
        object["callAudio"] = ["state": "recording", "silent": true, "silentSeconds": 12]
        #expect(
            StatusLine.fill("{speaker} {callAudio}", StatusLine.values(.object(object)))
                == "Ann & Bob call audio: silent")
    }

    /// `{speaking}` is who is heard by voice; `{speakingSuffix}` says it only when it is not the floor holder.
    @Test func saysWhoIsSpeakingInAnothersTurn() throws {
        guard case .object(var object) = session else { return }
        let speaker = try #require(object["speaker"])
        #expect(StatusLine.values(session)["speaking"] == "")
        object["speaking"] = speaker
        #expect(StatusLine.values(.object(object))["speakingSuffix"] == "")
        object["speaking"] = ["id": "C0000000-0000-0000-0000-000000000000", "name": "Cat"]
        #expect(
            StatusLine.fill("{speaker}{speakingSuffix}", StatusLine.values(.object(object)))
                == "Ann & Bob · Cat speaking in Ann & Bob's turn")
        #expect(StatusLine.values(.object(object))["speaking"] == "Cat")
    }

    /// `syncupsctl session` says it too, on its own line, and only when the voice is not the floor holder's.
    @Test func theSessionCommandSaysWhoIsSpeakingInAnothersTurn() throws {
        guard case .object(var object) = session else { return }
        #expect(!Format.session(session).contains("speaking"))
        object["speaking"] = object["speaker"]
        #expect(!Format.session(.object(object)).contains("speaking"))
        object["speaking"] = ["id": "C0000000-0000-0000-0000-000000000000", "name": "Cat"]
        let text = Format.session(.object(object))
        #expect(text.contains("\nspeaking:   Cat speaking in Ann & Bob's turn\n"), "\(text)")
    }

    /// Every shipped bar config uses the default text, so each shows the silent call without a change.
    @Test(arguments: [StatusLine.Format.polybar, .tmux, .waybar, .i3blocks])
    func theDefaultTextEndsInCallAudioSilentOnlyWhileTheCallIsSilent(format: StatusLine.Format) throws {
        guard case .object(var object) = session else { return }
        object["callAudio"] = ["state": "recording", "silent": false, "silentSeconds": 4]
        #expect(!StatusLine().render(.meeting(.object(object)), format: format).contains("call audio"))
        object["callAudio"] = ["state": "off", "reason": "--no-call", "device": nil, "recording": false]
        #expect(!StatusLine().render(.meeting(.object(object)), format: format).contains("call audio"))
        object["callAudio"] = ["state": "recording", "silent": true, "silentSeconds": 12]
        #expect(StatusLine().render(.meeting(.object(object)), format: format).contains("11:48 · call audio: silent"))
    }

    @Test func escapesPangoMarkupForWaybar() {
        let line = StatusLine().render(.meeting(session), format: .waybar)
        let object = try? JSONParser().parse(line)
        #expect(object?["text"] == "Ann &amp; Bob 2/6 · 11:48")
        #expect(
            object?["tooltip"] == "R&amp;D &lt;Core&gt;\rAnn &amp; Bob is speaking, 2 of 6\r03:12 elapsed, 11:48 left")
        #expect(object?["class"] == "running")
        #expect(object?["alt"] == "running")
        #expect(object?["percentage"] == 21)
    }

    @Test(arguments: [StatusLine.Format.waybar, .polybar, .i3blocks, .tmux, .json, .template("{speaker}")])
    func neverPrintsAnEmptyLine(format: StatusLine.Format) {
        for situation in [StatusLine.Situation.idle, .offline, .meeting(session)] {
            #expect(!StatusLine().render(situation, format: format).isEmpty)
        }
    }

    @Test func saysOfflineVisibly() {
        let waybar = try? JSONParser().parse(StatusLine().render(.offline, format: .waybar))
        #expect(waybar?["class"] == "offline")
        #expect(waybar?["text"] == "syncupsd offline")
        #expect(StatusLine().render(.offline, format: .polybar) == "syncupsd offline")
    }

    @Test func paintsPolybarI3blocksAndTmuxWithTheThemeColours() {
        #expect(
            StatusLine().render(.meeting(session), format: .polybar)
                == "%{B#FF8B42}%{F#000000} Ann & Bob 2/6 · 11:48 %{F-}%{B-}")
        #expect(
            StatusLine().render(.meeting(session), format: .tmux)
                == "#[fg=##000000,bg=##FF8B42] Ann & Bob 2/6 · 11:48 #[default]")
        let i3blocks = try? JSONParser().parse(StatusLine().render(.meeting(session), format: .i3blocks))
        #expect(
            i3blocks?["full_text"]
                == "<span background='#FF8B42' foreground='#000000'> Ann &amp; Bob 2/6 · 11:48 </span>")
        #expect(i3blocks?["short_text"] == "<span background='#FF8B42' foreground='#000000'> 11:48 </span>")
        #expect(i3blocks?["markup"] == "pango")
        #expect(i3blocks?["background"] == nil)
        #expect(i3blocks?["color"] == nil)
        #expect(i3blocks?["urgent"] == false)
    }

    /// i3blocks 1.4 reads JSON by scanning for quotes: a `\"` ends its string there, and it passes escapes on
    /// as they are. Whatever the names hold, the line must have neither, and still parse as the same text.
    @Test func writesI3blocksLinesThatI3blocks14ReadsWhole() {
        var object = session.objectValue ?? [:]
        object["speaker"] = ["id": "A", "name": #"Ann "the \ boss" O'Neil"#]
        let line = StatusLine().render(.meeting(.object(object)), format: .i3blocks)
        #expect(!line.contains("\\"))
        let parsed = try? JSONParser().parse(line)
        #expect(
            parsed?["full_text"]
                == "<span background='#FF8B42' foreground='#000000'> Ann &quot;the &#92; boss&quot; O&#39;Neil 2/6 · 11:48 </span>"
        )
        // No meeting: plain, escaped text in the bar's colours.
        var idle = StatusLine()
        idle.idleText = "<none>"
        #expect(
            idle.render(.idle, format: .i3blocks)
                == #"{"full_text":"&lt;none&gt;","short_text":"&lt;none&gt;","markup":"pango","urgent":false}"#)
    }

    @Test func escapesTheFormatCharactersOfPolybarAndTmux() {
        var line = StatusLine()
        line.textTemplate = "100% {title} #1 %{F#f00}"
        // Polybar: a tag-like "%{" is broken apart, a lone % left alone (polybar has no %% escape).
        #expect(line.render(.meeting(session), format: .polybar).contains(" 100% R&D <Core> #1 % {F#f00} "))
        #expect(line.render(.meeting(session), format: .tmux).contains(" 100% R&D <Core> ##1 %{F##f00} "))
    }

    @Test func saysWhenTheTimerIsNotRunning() {
        var object = session.objectValue ?? [:]
        object["state"] = "paused"
        let paused = JSONValue.object(object)
        #expect(
            StatusLine().render(.meeting(paused), format: .template("{speaker}{stateSuffix}")) == "Ann & Bob (paused)")
        #expect(StatusLine().render(.meeting(session), format: .template("{speaker}{stateSuffix}")) == "Ann & Bob")
        let waybar = try? JSONParser().parse(StatusLine().render(.meeting(paused), format: .waybar))
        #expect(waybar?["text"] == "Ann &amp; Bob 2/6 · 11:48 (paused)")
        #expect(waybar?["class"] == "paused")
    }

    @Test func computesProgressAsTheAppsBarDoes() {
        #expect(StatusLine.progress(["secondsElapsed": 0, "durationRemaining": 0]) == 0)
        #expect(StatusLine.progress(["secondsElapsed": 10, "durationRemaining": -5]) == 200)
        #expect(StatusLine.progress(["secondsElapsed": 1, "durationRemaining": 2]) == 33)
    }
}
