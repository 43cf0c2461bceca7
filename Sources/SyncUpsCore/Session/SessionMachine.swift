import FoundationEssentials

/// The recording session as a pure state machine: the SyncUps app's RecordMeeting reducer, with its bugs
/// fixed, as facts in and effects out. It never reads a clock, never touches a file: the daemon's
/// `SessionController` feeds it events and performs the effects it returns.
public struct SessionMachine: Sendable, Equatable {
    /// Where the meeting is.
    public enum Phase: String, Sendable, Equatable {
        /// The timer counts.
        case running
        /// The timer is stopped (the app pauses while any alert shows); audio keeps recording.
        case paused
        /// `next` at the last speaker: paused, waiting for `end` (the app's non-discardable "End meeting?").
        case ending
    }

    /// How a meeting ends.
    public enum EndAction: String, Sendable, Equatable {
        case save
        case discard
    }

    public enum Event: Sendable, Equatable {
        /// One second of running time has passed.
        case timerTicked
        case nextRequested
        case pauseRequested
        case resumeRequested
        case endRequested(EndAction)
        /// The sync-up was edited mid-meeting; attendee and duration changes apply from the next tick.
        case syncUpEdited(SyncUp)
        /// The sync-up was deleted mid-meeting: the meeting is discarded.
        case syncUpDeleted
        /// The recognizer's transcript so far (final text, then the provisional tail).
        case transcriptChanged(String)
        /// The recognizer failed for good; the meeting goes on without transcription.
        case speechFailed(String)
        /// Audio trouble (capture or cue); reported, the meeting goes on.
        case audioTrouble(String)
        /// After `settle`: the recording has stopped and the recognizer has given its last words.
        case settled
    }

    /// What the daemon must do.
    public enum Effect: Sendable, Equatable {
        /// Tell `session` subscribers; the daemon attaches the whole session object.
        case publish(Notification)
        /// A new speaker has the floor: mark the turn in the audio timeline and force an utterance boundary.
        case beginTurn(speakerIndex: Int)
        /// Play the speaker-change cue (never at the meeting's end).
        case playCue
        case stopTimer
        case startTimer
        /// Stop feeding the recognizer (after its failure).
        case stopTranscribing
        /// The meeting is to be saved: stop recording, let the recognizer finish its last utterance, then
        /// send `settled`. (Saving waits for this, so the saved meeting has its last words and whole audio.)
        case settle
        /// Insert this meeting at index 0 of the sync-up's meetings and persist it now.
        case saveMeeting(Meeting)
        /// Delete the meeting's audio; nothing is saved.
        case discardMeeting
        /// Stop capture, timer and recognizer; the session is over.
        case finish
    }

    /// The session events of protocol.md (`session.<name>`).
    public enum Notification: Sendable, Equatable {
        case started
        case tick
        case speaker
        case paused
        case resumed
        case ending
        case updated
        case transcript
        case error(String)
        case ended(Ending)
    }

    /// How a session ended, for `session.ended`.
    public enum Ending: Sendable, Equatable {
        /// Time ran out and the meeting was saved.
        case finished(Meeting)
        /// `session.end save`.
        case saved(Meeting)
        /// `session.end discard`.
        case discarded
        /// The sync-up was deleted during its meeting.
        case syncUpDeleted
    }

    public private(set) var syncUp: SyncUp
    public let meetingID: Meeting.ID
    public let startDate: Date
    public private(set) var phase: Phase = .running
    public private(set) var secondsElapsed = 0
    public private(set) var speakerIndex = 0
    public private(set) var transcript = ""
    public private(set) var isTranscribing: Bool
    public private(set) var isOver = false
    /// Set while waiting for `settled` before saving.
    public private(set) var pendingEnding: Ending?

    /// A new session, running from its first second; perform the returned effects (and start the timer).
    public static func start(
        syncUp: SyncUp,
        meetingID: Meeting.ID,
        startDate: Date,
        transcribes: Bool
    ) -> (SessionMachine, [Effect]) {
        let machine = SessionMachine(
            syncUp: syncUp, meetingID: meetingID, startDate: startDate, isTranscribing: transcribes)
        return (machine, [.startTimer, .beginTurn(speakerIndex: 0), .publish(.started)])
    }

    private init(syncUp: SyncUp, meetingID: Meeting.ID, startDate: Date, isTranscribing: Bool) {
        self.syncUp = syncUp
        self.meetingID = meetingID
        self.startDate = startDate
        self.isTranscribing = isTranscribing
    }

    // MARK: - Derived

    public var durationSeconds: Int { syncUp.durationSeconds }
    public var secondsPerAttendee: Int { syncUp.secondsPerAttendee }
    public var durationRemaining: Int { durationSeconds - secondsElapsed }
    public var lastSpeakerIndex: Int { max(0, syncUp.attendees.count - 1) }
    public var speaker: Attendee? {
        syncUp.attendees.indices.contains(speakerIndex) ? syncUp.attendees[speakerIndex] : nil
    }

    /// The meeting as it would be saved now.
    public var meeting: Meeting { Meeting(id: meetingID, date: startDate, transcript: transcript) }

    // MARK: - Events

    /// Handles one event. Requests that do not apply in the current phase are refused and change nothing.
    public mutating func handle(_ event: Event) throws(SessionRejection) -> [Effect] {
        guard !isOver else { throw SessionRejection("the session is over") }
        if let ending = pendingEnding {
            // Saving: only the recognizer's last words (or its failure) still matter.
            switch event {
            case .settled:
                pendingEnding = nil
                return complete(ending)
            case .transcriptChanged, .speechFailed, .audioTrouble, .timerTicked, .syncUpEdited:
                break
            case .syncUpDeleted:
                pendingEnding = nil
                return complete(.syncUpDeleted)
            case .nextRequested, .pauseRequested, .resumeRequested, .endRequested:
                throw SessionRejection("the meeting is being saved")
            }
        }
        switch event {
        case .timerTicked: return tick()
        case .nextRequested: return next()
        case .pauseRequested:
            switch phase {
            case .running:
                phase = .paused
                return [.stopTimer, .publish(.paused)]
            case .paused: throw SessionRejection("the meeting is already paused")
            case .ending: throw SessionRejection("the meeting is ending: save it with session.end or resume it")
            }
        case .resumeRequested:
            guard phase != .running else { throw SessionRejection("the meeting is not paused") }
            phase = .running
            return [.startTimer, .publish(.resumed)]
        case .endRequested(let action):
            switch action {
            case .save: return finish(.saved(meeting))
            case .discard:
                // The app offers no "Discard" in the alert that `next` at the last speaker raises.
                guard phase != .ending else {
                    throw SessionRejection(
                        "the meeting reached its last speaker: save it (session.end save) or resume it first")
                }
                return finish(.discarded)
            }
        case .syncUpEdited(let edited):
            syncUp = edited
            speakerIndex = min(speakerIndex, lastSpeakerIndex)
            return [.publish(.updated)]
        case .syncUpDeleted:
            return finish(.syncUpDeleted)
        case .transcriptChanged(let text):
            guard isTranscribing, text != transcript else { return [] }
            transcript = text
            return [.publish(.transcript)]
        case .speechFailed(let message):
            guard isTranscribing else { return [] }
            isTranscribing = false
            // The app's `speechFailure`: mark where transcription stopped, if anything was transcribed.
            if !transcript.isEmpty { transcript += " ❌" }
            return [.stopTranscribing, .publish(.error(message)), .publish(.transcript)]
        case .audioTrouble(let message):
            return [.publish(.error(message))]
        case .settled:
            return []
        }
    }

    /// Ends the session; a save first waits for the recording and the transcript to settle.
    private mutating func finish(_ ending: Ending) -> [Effect] {
        switch ending {
        case .finished, .saved:
            pendingEnding = ending
            let wasRunning = phase == .running
            let wasEnding = phase == .ending
            phase = .ending
            return (wasRunning ? [.stopTimer] : []) + (wasEnding ? [] : [.publish(.ending)]) + [.settle]
        case .discarded, .syncUpDeleted:
            return complete(ending)
        }
    }

    /// The app's `timerTick`, fixed: the meeting ends when the elapsed time reaches the duration even when
    /// the duration does not divide evenly, and the speaker never passes the last attendee.
    private mutating func tick() -> [Effect] {
        guard phase == .running else { return [] }
        secondsElapsed += 1
        if secondsElapsed >= durationSeconds {
            return [.publish(.tick)] + finish(.finished(meeting))
        }
        let share = secondsPerAttendee
        if share > 0 && secondsElapsed.isMultiple(of: share) && speakerIndex < lastSpeakerIndex {
            speakerIndex += 1
            return [.publish(.tick), .beginTurn(speakerIndex: speakerIndex), .playCue, .publish(.speaker)]
        }
        return [.publish(.tick)]
    }

    /// The app's `nextButtonTapped`: the next speaker takes the floor at the start of their slot; at the last
    /// speaker the meeting stops and waits to be saved.
    private mutating func next() -> [Effect] {
        guard phase != .ending else {
            return []  // already waiting for `end`, as a second tap on the app's button shows the same alert
        }
        guard speakerIndex < lastSpeakerIndex else {
            let wasRunning = phase == .running
            phase = .ending
            return (wasRunning ? [.stopTimer] : []) + [.publish(.ending)]
        }
        speakerIndex += 1
        secondsElapsed = speakerIndex * secondsPerAttendee
        return [.beginTurn(speakerIndex: speakerIndex), .playCue, .publish(.speaker)]
    }

    private mutating func complete(_ ending: Ending) -> [Effect] {
        isOver = true
        var final = ending
        var effects: [Effect] = []
        switch ending {
        case .finished:
            final = .finished(meeting)
            effects.append(.saveMeeting(meeting))
        case .saved:
            final = .saved(meeting)
            effects.append(.saveMeeting(meeting))
        case .discarded, .syncUpDeleted:
            effects.append(.discardMeeting)
        }
        return effects + [.finish, .publish(.ended(final))]
    }
}

/// A session request that does not apply now, with the reason (→ `invalid_state` on the wire).
public struct SessionRejection: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
