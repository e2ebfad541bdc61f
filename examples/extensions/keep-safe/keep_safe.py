#!/usr/bin/env python3
"""keep-safe: two guards on the points beyond the reference protocol.

- tool_result: every tool's output (built-in, extension or MCP) is scanned
  before the model sees it; API keys, AWS key ids, private-key blocks and
  `password=`/`token=` assignments become `[redacted]`. The model, the
  transcript and the session file get the redacted text; the tool line
  says which extension replaced the result.
- agent_end: when the model says it is done, the project's test command
  (environment variable KEEP_SAFE_TEST, e.g. `cargo test -q`) runs; if it
  fails, the prompt goes on with the failure's tail as the next message.
  zut stops after 8 such rounds. Without KEEP_SAFE_TEST this guard is off.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

try:
    import zut_ext as zx
except ImportError:  # running from a checkout: use the SDK next door
    sys.path.insert(0, str(Path(__file__).resolve().parent.joinpath("../../../sdk/python")))
    import zut_ext as zx

ext = zx.Extension("keep-safe", "1.0.0")

# Broad on purpose: a false positive costs a few characters, a miss leaks a
# credential to a third party.
SECRETS = [
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
    re.compile(r"(?i)(\w*(?:password|passwd|secret|token|api_key))(\s*[=:]\s*)(\S+)"),
]

TEST_TIMEOUT_S = 600
TAIL_LINES = 30


def redact(text):
    """The text with every secret replaced; the number replaced."""
    count = 0
    for pattern in SECRETS:
        if pattern.groups == 3:
            text, n = pattern.subn(lambda m: m.group(1) + m.group(2) + "[redacted]", text)
        else:
            text, n = pattern.subn("[redacted]", text)
        count += n
    return text, count


@ext.intercept_tool_result
def scrub(ev: zx.Event):
    blocks, found = [], 0
    for block in ev.content:
        if block.type == "text":
            text, n = redact(block.text)
            found += n
            blocks.append(zx.ToolContent(type="text", text=text))
        else:
            blocks.append(block)
    if not found:
        return None  # unchanged
    return zx.ToolResultDecision(
        replace_content=blocks,
        context=f"{found} secret(s) in the output of {ev.tool_name} were redacted; do not try to recover them.",
    )


@ext.intercept_agent_end
def until_green(ev: zx.Event):
    command = os.environ.get("KEEP_SAFE_TEST", "").strip()
    if not command:
        return None
    try:
        # The extension runs in its own directory; the tests, in the project.
        run = subprocess.run(command, shell=True, capture_output=True, text=True,
                             timeout=TEST_TIMEOUT_S, stdin=subprocess.DEVNULL,
                             cwd=ext.host.cwd or None)
    except subprocess.TimeoutExpired:
        return zx.AgentEndDecision.keep_going(
            f"The tests (`{command}`) did not finish within {TEST_TIMEOUT_S} s. Find out why and fix it.")
    if run.returncode == 0:
        return None
    tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-TAIL_LINES:])
    return zx.AgentEndDecision.keep_going(
        f"The tests still fail (`{command}` exited {run.returncode}); you are not done yet.\n"
        f"Last lines of its output:\n{tail}\n"
        "Fix the cause, then finish.")


if __name__ == "__main__":
    ext.run()
