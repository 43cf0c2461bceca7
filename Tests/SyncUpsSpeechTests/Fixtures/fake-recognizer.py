#!/usr/bin/env python3
"""A scripted recognizer speaking syncupsd's speech-command protocol, for tests.

Usage: fake-recognizer.py MODE
  echo     one final per second of audio ("second N"), a final per turn announced on fd 3
           ("turn NAME at T"), progress lines; exits 0 at EOF
  crash    reads one second of audio, then exits with status 3
  hang     reads audio, writes nothing
  flood    writes output as fast as it can
  logflood says it is up, then writes its log (stderr) as fast as it can
  longline writes a 2 MiB line
  error    reports an error line and exits 1
  garbage  writes a line that is not JSON, then behaves like echo
  early    exits 0 after one second of audio, before the meeting ends
  partials writes a partial every 10 ms for a second, then a final
  bigpartial   one ~900 KB partial (multi-byte characters), then behaves like echo
  bigerror     reports a ~900 KB error message
  wordflood    finals with empty text and 15,000 words each, then behaves like echo
  wordytext    20 finals of two 2,000-byte words (4 KB of words for 10 bytes of text), then behaves like echo
"""
import json
import os
import select
import sys

mode = sys.argv[1]
out = sys.stdout
stdin = sys.stdin.buffer
control = int(os.environ.get("SYNCUPS_CONTROL_FD", "-1"))


def emit(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


if mode == "flood":
    line = json.dumps({"type": "partial", "text": "x" * 1000, "start": 0, "end": 1}) + "\n"
    while True:
        out.write(line * 100)
if mode == "logflood":
    emit({"type": "progress", "time": 0})
    line = "warning: something the engine thinks worth saying again and again\n"
    while True:
        sys.stderr.write(line * 100)
if mode == "longline":
    out.write("x" * (2 << 20))
    out.flush()
    stdin.read()
    sys.exit(0)
if mode == "error":
    emit({"type": "error", "message": "no model found"})
    sys.exit(1)
if mode == "bigerror":
    emit({"type": "error", "message": "é" * 150000})
    stdin.read()
    sys.exit(1)
if mode == "bigpartial":
    emit({"type": "partial", "text": "start " + "é" * 150000 + " end", "start": 0, "end": 1})
    mode = "echo"  # the test feeds audio only once the partial was passed on
if mode == "wordflood":
    for index in range(4):
        emit({"type": "final", "text": "", "start": 0, "end": 1,
              "words": [{"word": "w", "start": 0.5, "end": 0.5} for _ in range(15000)]})
    mode = "echo"
if mode == "wordytext":
    for index in range(20):
        emit({"type": "final", "text": "long words", "start": 0, "end": 1,
              "words": [{"word": letter * 2000, "start": 0.5, "end": 0.5} for letter in "lw"]})
    mode = "echo"
if mode == "chatty":
    # 2000 finals of 100 bytes at once: 200 KB of "speech" in well under a second.
    for index in range(2000):
        out.write(json.dumps({"type": "final", "text": "%04d " % index + "w" * 95, "start": 0, "end": 0.1}) + "\n")
    out.flush()
    mode = "echo"
if mode == "garbage":
    out.write("this is not json\n")
    out.flush()
    mode = "echo"

received = 0
second = 0
control_buffer = b""
while True:
    readable = [0] + ([control] if control >= 0 else [])
    ready, _, _ = select.select(readable, [], [], 1.0)
    if control in ready:
        data = os.read(control, 4096)
        if not data:
            control = -1
        control_buffer += data
        while b"\n" in control_buffer:
            line, control_buffer = control_buffer.split(b"\n", 1)
            turn = json.loads(line)
            if mode in ("echo",):
                emit({"type": "final", "text": "turn %s at %.2f" % (turn["speaker"]["name"], turn["time"]),
                      "start": turn["time"], "end": turn["time"], "words": []})
    if 0 in ready:
        chunk = os.read(0, 32000)
        if not chunk:
            break
        received += len(chunk)
        if mode == "hang":
            continue
        while received >= (second + 1) * 32000:
            second += 1
            if mode == "partials":
                for index in range(100):
                    emit({"type": "partial", "text": "partial %d" % index, "start": 0, "end": second})
                    select.select([], [], [], 0.01)
                emit({"type": "final", "text": "after partials", "start": 0, "end": second,
                      "words": [{"word": "after", "start": 0.1, "end": 0.4}, {"word": "partials", "start": 0.5, "end": 0.9}]})
            else:
                emit({"type": "final", "text": "second %d" % second, "start": second - 1, "end": second,
                      "words": [{"word": "second", "start": second - 1, "end": second - 0.5},
                                {"word": str(second), "start": second - 0.5, "end": second}]})
            if mode == "crash" and second == 1:
                sys.exit(3)
            if mode == "early" and second == 1:
                sys.exit(0)
    if mode != "hang":
        emit({"type": "progress", "time": received / 32000})
if mode == "lastpartials":
    # Its last words as partials, the second right after the first, then the end: no final.
    emit({"type": "partial", "text": "one two", "start": 0.2, "end": 0.6})
    emit({"type": "partial", "text": "one two three", "start": 0.2, "end": 0.9})
sys.exit(0)
