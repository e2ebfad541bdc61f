#!/usr/bin/env python3
"""redact-py: two interceptors, written against the zut wire protocol.

- assistant_message: before the user sees the model's answer, anything that
  looks like an API key (OpenAI/Anthropic style `sk-...`, AWS access key ids
  `AKIA...`) is replaced with `[redacted]`. Only what the user sees changes:
  the transcript keeps the original, so the model still knows what it said.
- turn_start: before each model request, hidden context with today's date
  is returned. It goes into that one request only; it is not a message and
  is not kept in the transcript.

Interceptors must answer every event_intercept, and quickly: zut waits at
most 5 s (ZUT_INTERCEPT_TIMEOUT_MS) per extension and then allows the event
unchanged.
"""

import datetime
import json
import re
import sys

NAME = "redact-py"
VERSION = "1.0.0"
PROTOCOL_VERSION = 2

# Deliberately broad: a false positive costs a few characters, a miss leaks
# a credential. `sk-` keys are long runs of [A-Za-z0-9_-]; AWS access key
# ids are AKIA plus 16 upper-case letters or digits.
SECRET = re.compile(r"\bsk-[A-Za-z0-9_-]{16,}|\bAKIA[0-9A-Z]{16}\b")

FRAMES = sys.stdout
sys.stdout = sys.stderr  # a stray print() must not reach the host


def emit(frame):
    try:
        FRAMES.write(json.dumps(frame) + "\n")
        FRAMES.flush()
    except BrokenPipeError:
        sys.exit(0)


def log(message):
    print(f"[{NAME}] {message}", file=sys.stderr, flush=True)


def redact(text):
    """Returns (new text, number of secrets replaced)."""
    return SECRET.subn("[redacted]", text)


def on_intercept(frame):
    response = {"type": "event_intercept_response", "id": frame["id"]}
    event = frame.get("event")
    if event == "assistant_message":
        text, count = redact(frame.get("text", ""))
        if count:
            log(f"redacted {count} secret(s) from an assistant message")
            # Only send replace_text when something changed: an empty
            # replace_text means "leave the text alone".
            response["replace_text"] = text
    elif event == "turn_start":
        now = datetime.datetime.now().astimezone()
        response["context"] = now.strftime("Current date: %A %d %B %Y (%Y-%m-%d), time zone %Z.")
    # Anything else (or nothing to change): the bare response allows it.
    emit(response)


def main():
    emit({"type": "hello", "protocol_version": PROTOCOL_VERSION,
          "name": NAME, "version": VERSION, "capabilities": ["events"]})

    for line in sys.stdin:
        try:
            frame = json.loads(line)
        except json.JSONDecodeError as err:
            log(f"ignoring a line that is not JSON: {err}")
            continue
        kind = frame.get("type")

        if kind == "hello_ack":
            if frame.get("protocol_version") != PROTOCOL_VERSION:
                log(f"unsupported protocol version {frame.get('protocol_version')}")
                return 1
            # Intercepting does not require subscribing to the event too.
            emit({"type": "subscribe", "events": [],
                  "intercept": ["assistant_message", "turn_start"]})
            emit({"type": "ready"})
        elif kind == "event_intercept":
            on_intercept(frame)
        elif kind == "shutdown":
            emit({"type": "shutdown_ack"})
            return 0
        else:
            log(f"ignoring frame {kind!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
