#!/usr/bin/env python3
"""approve: yes/no questions for the user, written with the Python SDK.

- Tool `approve_ask {question}` (interactive): opens a panel with the
  question and waits. `y` approves; `n`, Esc or closing the panel denies.
  When the host abandons the call (`tool_cancel`, shutdown, end of input)
  the panel is closed and the answer dropped.
- Event `tool_confirmation_requested`: rings the terminal bell, with the
  tool's name as the alert's reason, so a user in another window notices
  that zut waits for them.
- Command `/approve` shows the current policy and counts; `/approve bell
  on|off` switches the bell.
"""

import sys
import threading
from pathlib import Path

try:
    import zut_ext as zx
except ImportError:  # running from a checkout: use the SDK next door
    sys.path.insert(0, str(Path(__file__).resolve().parent.joinpath("../../../sdk/python")))
    import zut_ext as zx

ext = zx.Extension("approve", "1.0.0")

SCHEMA = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "A yes/no question for the user"},
    },
    "required": ["question"],
}
FOOTER = "y approve · n deny · esc close"


class Policy:
    """What /approve shows; shared by handler threads, hence the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bell = True
        self.next_id = 0
        self.waiting = 0
        self.approved = 0
        self.denied = 0


policy = Policy()


@ext.on("tool_confirmation_requested")
def ring(ev: zx.Event) -> None:
    with policy.lock:
        bell = policy.bell
    if bell:
        ext.alert(zx.ALERT_BELL, f"confirmation needed for tool {ev.tool_name}")


@ext.interactive_tool(
    "approve_ask",
    "Ask the user a yes/no question and wait for the answer. Use it before "
    "anything the user should sign off on; the result is approved or denied.",
    SCHEMA,
)
def approve_ask(cancel: zx.Cancel, args) -> zx.ToolResult:
    question = args.get("question") if isinstance(args, dict) else None
    if not isinstance(question, str) or not question.strip():
        return zx.error_result('question is required: call approve_ask with {"question": "<yes/no question>"}')

    with policy.lock:
        policy.next_id += 1
        policy.waiting += 1
        panel = f"approve-{policy.next_id}"
    lines = question.strip().splitlines()
    answer: list = []  # "y", "n" or "closed"; the first one wins
    answer_lock = threading.Lock()
    done = threading.Event()

    def decide(what: str) -> None:
        with answer_lock:
            if not answer:
                answer.append(what)
        done.set()

    def on_key(key: str, text: str) -> None:
        if key == "rune" and text.lower() in ("y", "n"):
            decide(text.lower())
        elif key == "esc":
            decide("n")
        else:
            ext.render_panel(panel, "Approval needed", lines + ["", "press y or n"], FOOTER)

    ext.on_panel_key(panel, on_key, lambda: decide("closed"))
    cancel.on_cancel(done.set)
    ext.open_panel(panel, "Approval needed", lines, FOOTER)
    done.wait()
    ext.forget_panel(panel)

    with policy.lock:
        policy.waiting -= 1
    with answer_lock:
        got = answer[0] if answer else None
    if cancel.cancelled or got != "closed":
        ext.close_panel(panel)  # the host closed it already on "closed"
    if cancel.cancelled:
        return zx.error_result("question cancelled")  # dropped by the SDK
    if got == "y":
        with policy.lock:
            policy.approved += 1
        return zx.text_result("approved")
    with policy.lock:
        policy.denied += 1
    return zx.error_result("denied: the user rejected this")


@ext.command("approve", "show the approval policy; /approve bell on|off")
def approve_cmd(args: str) -> zx.Response:
    words = args.split()
    if words[:1] == ["bell"] and len(words) == 2 and words[1] in ("on", "off"):
        with policy.lock:
            policy.bell = words[1] == "on"
    elif words:
        return zx.error("usage: /approve [bell on|off]")
    with policy.lock:
        return zx.display("\n".join([
            "approve policy:",
            "  approve_ask opens a panel: y approves; n, Esc or closing it denies",
            f"  bell when a tool waits for confirmation: {'on' if policy.bell else 'off'}",
            f"  waiting: {policy.waiting}, approved: {policy.approved}, denied: {policy.denied}",
        ]))


if __name__ == "__main__":
    ext.run()
