#!/usr/bin/env python3
"""hello-py: three slash commands, written against the zut wire protocol.

No SDK and no third-party modules: an extension is a program that writes
one JSON object per line on stdout and reads the host's frames, one per
line, on stdin. Diagnostics go to stderr, which zut appends to
$ZUT_HOME/logs/ext-hello-py.log.

Commands:
  /hello [name]   display "Hello, <name>!" (no model call)
  /greet [name]   ask the model for a short greeting (a prompt)
  /ping           a notification "pong", then a noop response
"""

import json
import sys

NAME = "hello-py"
VERSION = "1.0.0"
PROTOCOL_VERSION = 2

# stdout is reserved for frames. Keep the real stream for emit() and point
# sys.stdout at stderr, so a stray print() lands in the log instead of
# confusing the host.
FRAMES = sys.stdout
sys.stdout = sys.stderr


def emit(frame):
    """Writes one frame as one line and flushes it (pipes are buffered)."""
    try:
        FRAMES.write(json.dumps(frame) + "\n")
        FRAMES.flush()
    except BrokenPipeError:
        # The host is gone: nobody is left to talk to.
        sys.exit(0)


def log(message):
    print(f"[{NAME}] {message}", file=sys.stderr, flush=True)


def respond(request_id, action, **fields):
    """Answers a command_invoked frame; the id ties the two together."""
    emit({"type": "command_response", "id": request_id, "action": action, **fields})


def on_command(frame):
    name = frame.get("name", "").lower()
    args = frame.get("args", "").strip()  # omitted by the host when empty
    request_id = frame["id"]
    if name == "hello":
        respond(request_id, "display", display=f"Hello, {args or 'world'}!")
    elif name == "greet":
        who = args or "me"
        respond(request_id, "prompt",
                prompt=f"Greet {who} in one short, friendly sentence.")
    elif name == "ping":
        # A note first, then the response: "noop" tells the host there is
        # nothing more to show.
        emit({"type": "notify", "level": "info", "message": "pong"})
        respond(request_id, "noop")
    else:
        respond(request_id, "noop", error=f"{NAME} has no command /{name}")


def main():
    # The first line on stdout must be hello.
    emit({"type": "hello", "protocol_version": PROTOCOL_VERSION,
          "name": NAME, "version": VERSION, "capabilities": ["commands"]})

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
            # Registrations go after hello_ack; ready says they are complete.
            emit({"type": "register_command", "name": "hello",
                  "description": "say hello: /hello [name]"})
            emit({"type": "register_command", "name": "greet",
                  "description": "ask the model for a greeting: /greet [name]"})
            emit({"type": "register_command", "name": "ping",
                  "description": "answer with a pong notification"})
            emit({"type": "ready"})
        elif kind == "command_invoked":
            on_command(frame)
        elif kind == "shutdown":
            emit({"type": "shutdown_ack"})
            return 0
        else:
            # Unknown frame types are expected as the protocol grows.
            log(f"ignoring frame {kind!r}")

    # stdin closed without a shutdown frame: the host went away.
    return 0


if __name__ == "__main__":
    sys.exit(main())
