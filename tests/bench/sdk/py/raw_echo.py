"""Benchmark input: tool `echo` written by hand against the wire protocol,
as small as it can be; the baseline sdk_echo.py is measured against."""

import json
import sys

out = sys.stdout


def emit(frame):
    out.write(json.dumps(frame, separators=(",", ":"), ensure_ascii=False) + "\n")
    out.flush()


emit({"type": "hello", "protocol_version": 2, "name": "raw-echo-py", "version": "1.0.0",
      "capabilities": ["tools"]})
for line in sys.stdin:
    msg = json.loads(line)
    kind = msg.get("type")
    if kind == "hello_ack":
        if msg.get("protocol_version") != 2:
            sys.exit("raw-echo-py: unsupported protocol version")
        emit({"type": "register_tool", "name": "echo", "description": "echo the arguments back",
              "schema": {"type": "object"}})
        emit({"type": "ready"})
    elif kind == "tool_call":
        emit({"type": "tool_result", "id": msg.get("id"), "content": [
            {"type": "text", "text": json.dumps(msg.get("args", {}), separators=(",", ":"), ensure_ascii=False)}]})
    elif kind == "shutdown":
        emit({"type": "shutdown_ack"})
        break
