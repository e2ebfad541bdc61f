#!/usr/bin/env python3
"""weather-py: a tool the model can call, written against the zut wire protocol.

The tool `weather {city}` answers with a fake but deterministic report: the
same city always gets the same weather, derived from a hash of its name, so
the example works offline and its output can be tested.

The host sends `tool_call` frames with the model's arguments exactly as the
model produced them. Validating them is the extension's job: a bad call gets
a `tool_result` with `is_error: true` and a message the model can act on.
"""

import hashlib
import json
import sys

NAME = "weather-py"
VERSION = "1.0.0"
PROTOCOL_VERSION = 2

CONDITIONS = ["sunny", "partly cloudy", "overcast", "light rain",
              "heavy rain", "fog", "snow", "thunderstorms"]

# The JSON Schema the model sees. zut passes it to the provider as is.
SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name, e.g. Berlin"},
    },
    "required": ["city"],
}

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


def forecast(city):
    """The fake report for `city`: the hash picks temperature and sky."""
    digest = hashlib.sha256(city.strip().lower().encode("utf-8")).digest()
    celsius = digest[0] % 30 - 5  # -5 .. 24 °C
    sky = CONDITIONS[digest[1] % len(CONDITIONS)]
    return f"{city.strip()}: {celsius}°C, {sky} (fake data from the weather-py example)"


def result(call_id, text, is_error=False):
    frame = {"type": "tool_result", "id": call_id,
             "content": [{"type": "text", "text": text}]}
    if is_error:
        frame["is_error"] = True
    emit(frame)


def on_tool_call(frame):
    call_id = frame["id"]
    if frame.get("name") != "weather":
        result(call_id, f"{NAME} has no tool {frame.get('name')!r}", is_error=True)
        return
    args = frame.get("args")
    if not isinstance(args, dict):
        result(call_id, "invalid arguments: expected an object like {\"city\": \"Berlin\"}",
               is_error=True)
        return
    city = args.get("city")
    if city is None or (isinstance(city, str) and not city.strip()):
        result(call_id, "city is required: call weather with {\"city\": \"<name>\"}",
               is_error=True)
        return
    if not isinstance(city, str):
        result(call_id, f"city must be a string, got {json.dumps(city)}", is_error=True)
        return
    result(call_id, forecast(city))


def main():
    emit({"type": "hello", "protocol_version": PROTOCOL_VERSION,
          "name": NAME, "version": VERSION, "capabilities": ["tools"]})

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
            emit({"type": "register_tool", "name": "weather",
                  "description": "Get the current weather for a city.",
                  "schema": SCHEMA})
            emit({"type": "ready"})
        elif kind == "tool_call":
            # Answered in order, one at a time: each call is quick. A slow
            # tool would answer from a thread, since zut may send several
            # calls before the first result comes back.
            on_tool_call(frame)
        elif kind == "shutdown":
            emit({"type": "shutdown_ack"})
            return 0
        else:
            log(f"ignoring frame {kind!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
