#!/usr/bin/env python3
"""A minimal client for `zut --mode rpc`, standard library only.

Usage: client.py [--yes | --no] PROMPT... [-- ZUT-ARGS...]

Starts zut (the binary named by $ZUT_BIN, default `zut` on PATH) in RPC
mode with ZUT-ARGS, sends PROMPT, prints the streamed answer on stdout and
tool activity on stderr, and answers each confirmation: --yes allows, --no
denies, otherwise it asks on the terminal. Exits when the turn is done:
0, or 1 when zut reported an error.
"""

import json
import os
import subprocess
import sys


def main(argv):
    zut_args = []
    if "--" in argv:
        cut = argv.index("--")
        argv, zut_args = argv[:cut], argv[cut + 1:]
    answer = None
    words = []
    for arg in argv:
        if arg == "--yes":
            answer = "allow"
        elif arg == "--no":
            answer = "deny"
        else:
            words.append(arg)
    prompt = " ".join(words) or "hello"

    zut = os.environ.get("ZUT_BIN", "zut")
    proc = subprocess.Popen(
        [zut, "--mode", "rpc", *zut_args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )

    def send(request):
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()

    # With ZUT_RPC_TOKEN set (zut inherits it), hello must come first.
    send({"id": "hello", "type": "hello", "token": os.environ.get("ZUT_RPC_TOKEN")})
    send({"id": "prompt", "type": "prompt", "message": prompt})

    status = 0
    for line in proc.stdout:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "response":
            if not msg["success"]:
                print(f"zut refused {msg['command']}: {msg['error']}", file=sys.stderr)
                status = 1
                break
        elif kind == "text_delta":
            sys.stdout.write(msg["delta"])
            sys.stdout.flush()
        elif kind == "tool_call":
            print(f"\n[tool] {msg['name']} {json.dumps(msg['args'])}", file=sys.stderr)
        elif kind == "confirmation_requested":
            decision = answer or ask(msg)
            send({"id": f"confirm-{msg['request_id']}", "type": "confirm",
                  "request_id": msg["request_id"], "decision": decision})
        elif kind in ("error", "ext_error"):
            print(f"\n[error] {msg.get('message')}", file=sys.stderr)
            if kind == "error":
                status = 1
        elif kind == "done":
            break

    # Closing stdin asks zut to shut its extensions down and exit.
    proc.stdin.close()
    proc.wait()
    print()
    return status


def ask(msg):
    """Asks the person at the terminal; without one, denies."""
    question = f"\nallow {msg['tool_name']}: {msg['preview']}? [y/N] "
    if not sys.stdin.isatty():
        print(question + "no terminal to ask on: denied", file=sys.stderr)
        return "deny"
    reply = input(question).strip().lower()
    return "allow" if reply in ("y", "yes") else "deny"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
