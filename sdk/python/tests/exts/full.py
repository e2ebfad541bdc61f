"""An extension that uses every part of the SDK's API, for test_api.py.

Its behaviour is chosen by what the test sends (command args, tool args,
event payloads) so one process can exercise many cases. After run() returns
it waits for handler threads, so everything they would write is on stdout
before the process exits.
"""

import json
import os
import sys
import threading
import time

import zut_ext as zx

ext = zx.Extension("full", "1.2.3")
gate = threading.Event()


def compact(v):
    return json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


@ext.on_hello
def on_hello(host: zx.HostInfo) -> None:
    ext.log(f"hello from host {host.zut_version}")
    print("a stray print must not reach the host")  # goes to stderr

    @ext.command("host", "show host info")
    def show_host(args: str) -> zx.Response:
        s = host.session
        return zx.display("|".join([
            str(host.protocol_version), host.zut_version, host.provider, host.model, host.cwd,
            host.extension_dir, host.data_dir,
            s.id if s else "-", s.parent_id if s else "-", str(s.fork_point) if s else "-",
        ]))


@ext.command("say", "answer with each response kind")
def say(args: str):
    kind, _, rest = args.partition(" ")
    if kind == "prompt":
        return zx.prompt(rest)
    if kind == "insert":
        return zx.insert(rest)
    if kind == "display":
        return zx.display(rest)
    if kind == "panel":
        return zx.open_panel_response("p1", "Title", [rest], "esc closes")
    if kind == "panelobj":
        return zx.open_panel_response(zx.Panel("p2", "T2", ["a", "b"]))
    if kind == "noop":
        return zx.noop()
    if kind == "error":
        return zx.error(rest)
    if kind == "none":
        return None
    if kind == "raise":
        raise RuntimeError(rest)
    if kind == "bad":
        return 42
    return zx.display(f"unknown kind {kind}")


def runtime(args: str) -> zx.Response:
    ext.notify("info", "n1")
    ext.set_status("s1", "working")
    ext.set_status("s2", "done", level="success")
    ext.clear_status("s1")
    ext.set_widget("w1", zx.WIDGET_ABOVE_INPUT, "W", ["l1", "l2"])
    ext.clear_widget("w1")
    ext.alert(zx.ALERT_BELL, "why")
    ext.clear_notes()
    ext.submit("go on")
    ext.submit_slash("/cmd x")
    ext.open_panel("p3", "P", ["x"], "f")
    ext.render_panel("p3", "P2", ["y"], "g")
    ext.close_panel("p3")
    return zx.noop()


ext.command("rt", "send every runtime frame", runtime)


@ext.command("gate", "release the slow tool")
def open_gate(args: str):
    gate.set()
    return zx.noop()


@ext.command("flood", "write big frames from many threads at once")
def flood(args: str):
    threads, per, size = (int(x) for x in args.split())
    start = threading.Barrier(threads)

    def worker(n: int) -> None:
        start.wait()
        for i in range(per):
            ext.notify("info", f"{n}:{i}:" + "x" * size)

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return zx.display("flooded")


@ext.command("grow", "register more after ready")
def grow(args: str):
    ext.command("grown", "registered late", lambda a: zx.display(f"grown {a}"))
    ext.tool("grown_tool", "registered late", {"type": "object"}, lambda a: "grown tool")
    ext.on("turn_end", lambda ev: ext.notify("info", f"turn_end {ev.stop}"))
    return zx.noop()


@ext.tool("echo", "echo the args", {"type": "object"})
def echo(args):
    return zx.text_result(compact(args))


@ext.tool("result", "answer with each result kind", {"type": "object"})
def result(args):
    kind = args.get("kind")
    if kind == "image":
        return zx.ToolResult(content=[zx.image("image/png", "iVBORw0KGgo="), zx.text("cap")])
    if kind == "image_bytes":
        return zx.ToolResult(content=[zx.image_bytes("image/gif", b"GIF89a")])
    if kind == "error":
        return zx.error_result("it failed")
    if kind == "details":
        return zx.text_result("ok", details={"n": 1})
    if kind == "details_null":
        return zx.ToolResult(content=[zx.text("cleared")], details=None)
    if kind == "activate":
        return zx.ToolResult(content=[zx.text("on")], activate_tools=["later"])
    if kind == "str":
        return "plain"
    if kind == "none":
        return None
    if kind == "raise":
        raise ValueError("kaput")
    if kind == "unserialisable":
        return zx.text_result("x", details={1, 2})
    return zx.text_result("default")


@ext.deferred_tool("later", "a deferred tool", {"type": "object", "properties": {}})
def later(args):
    return "later ran"


@ext.tool("nap", "sleeps args.ms milliseconds, answers args.n", {"type": "object"})
def nap(args):
    time.sleep(args.get("ms", 0) / 1000)
    return str(args.get("n"))


@ext.tool("slow", "waits for /gate", None)
def slow(args):
    return "slow done" if gate.wait(20) else "slow timed out"


@ext.interactive_tool("wait", "waits for cancellation", {"type": "object"})
def wait(cancel: zx.Cancel, args):
    started_cancelled = cancel.cancelled
    got = cancel.wait(20)
    ext.notify("warn", f"cancelled {cancel.call_id} {started_cancelled} {got}")
    marker = os.environ.get("CANCEL_MARKER")
    if marker:
        with open(marker, "a") as f:
            f.write(f"{cancel.call_id}\n")
    return "late result"


@ext.interactive_tool("ask", "asks through a panel", {"type": "object"})
def ask(cancel: zx.Cancel, args):
    panel = f"ask-{cancel.call_id}"
    answer: "list[str]" = []
    done = threading.Event()

    def key(k: str, t: str) -> None:
        if k == "rune" and t in ("y", "n"):
            answer.append(t)
            done.set()
        else:
            ext.render_panel(panel, "Ask", [args.get("q", ""), f"got {k}"], "y/n")

    def closed() -> None:
        answer.append("closed")
        done.set()

    ext.on_panel_key(panel, key, closed)
    cancel.on_cancel(done.set)
    ext.open_panel(panel, "Ask", [args.get("q", "")], "y/n")
    done.wait(20)
    ext.forget_panel(panel)
    if cancel.cancelled:
        ext.close_panel(panel)
        return "cancelled"
    return zx.text_result(answer[0] if answer else "none")


@ext.on("turn_start")
def turn(ev: zx.Event) -> None:
    ext.notify("info", f"turn {ev.step}")


@ext.on("session_opened")
def session(ev: zx.Event) -> None:
    s = ev.session
    ext.notify("info", compact({"id": s.id if s else None, "fork": s.fork_point if s else None,
                                "state": ev.state, "has_state": ev.has_state}))


@ext.on("tool_confirmation_requested")
def confirm(ev: zx.Event) -> None:
    ext.notify("info", f"confirm {ev.tool_name} {ev.tool_id} {ev.tool_preview}")


@ext.on("boom")
def boom(ev: zx.Event) -> None:
    raise RuntimeError("event handler broke")


@ext.intercept_tool_call
def guard(tool: str, args) -> zx.ToolCallDecision:
    if tool == "bash":
        return zx.ToolCallDecision(block=True, reason="no bash", modified_args={"ignored": True})
    if tool == "rewrite":
        return zx.ToolCallDecision(modified_args={"x": 1}, reason="rewrote")
    if tool == "explode":
        raise RuntimeError("guard broke")
    return None


@ext.intercept_turn_start
def turn_gate(step: int):
    if step == 1:
        return zx.TurnStartDecision(context="ctx1")
    if step == 2:
        return zx.TurnStartDecision(block=True, reason="stop", context="unused")
    if step == 3:
        raise RuntimeError("turn broke")
    return None


@ext.intercept_assistant_message
def scrub(text: str):
    if text == "blockme":
        return zx.AssistantMessageDecision(block=True, reason="hidden", replace_text="unused")
    return zx.AssistantMessageDecision(replace_text=text.replace("secret", "[redacted]"))


ext.run()
for t in threading.enumerate():
    if t is not threading.current_thread():
        t.join(timeout=10)
