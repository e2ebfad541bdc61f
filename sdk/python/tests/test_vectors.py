"""The shared protocol vectors (sdk/vectors), run against the Python SDK.

frames.json: host lines through the SDK's decoder; extension lines rebuilt
with the SDK's public API and compared, as JSON values, with the vector.
conversations/*.json: the declared extension (tests/exts/vector_ext.py) run
as a real process and driven step by step.

The directory is ``$ZUT_VECTORS_DIR`` or ``<repo>/sdk/vectors``; a missing
directory fails the run rather than skipping it.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import unittest
from pathlib import Path
from typing import Any, Callable, Dict, List

from harness import EXTS, REPO, TIMEOUT, ExtProc  # first: it puts the SDK on sys.path

import zut_ext as zx  # noqa: E402

VECTORS = Path(os.environ.get("ZUT_VECTORS_DIR") or REPO / "sdk" / "vectors")


def load_frames() -> List[Dict[str, Any]]:
    path = VECTORS / "frames.json"
    if not path.is_file():
        raise AssertionError(f"shared vectors not found: {path} (set ZUT_VECTORS_DIR)")
    return json.loads(path.read_text(encoding="utf-8"))


def matches(pattern: Any, value: Any) -> bool:
    """The vectors' match rule: objects as subsets, arrays exactly, "<any>" anything."""
    if pattern == "<any>":
        return True
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and matches(v, value[k]) for k, v in pattern.items())
    if isinstance(pattern, list):
        return (isinstance(value, list) and len(pattern) == len(value)
                and all(matches(p, v) for p, v in zip(pattern, value)))
    return type(pattern) is type(value) and pattern == value or (
        isinstance(pattern, (int, float)) and not isinstance(pattern, bool)
        and isinstance(value, (int, float)) and not isinstance(value, bool) and pattern == value)


class InProc:
    """An Extension run on a thread over OS pipes, for encoder checks."""

    def __init__(self, ext_setup: Callable[[zx.Extension], None], name: str = "vec", version: str = "1.0.0",
                 capabilities: Any = None) -> None:
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        self.host_w = os.fdopen(w_in, "wb")
        self.host_r = os.fdopen(r_out, "rb")
        self.ext = zx.Extension(name, version, stdin=os.fdopen(r_in, "rb"), stdout=os.fdopen(w_out, "wb"))
        if capabilities is not None:
            self.ext.capabilities = capabilities
        ext_setup(self.ext)
        self.frames: "queue.Queue[Any]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.runner = threading.Thread(target=self._run, daemon=True)
        self.runner.start()

    def _run(self) -> None:
        try:
            self.ext.run()
        finally:
            for stream in (self.ext._in, self.ext._out):
                if stream is not None:
                    stream.close()

    def _read(self) -> None:
        for line in self.host_r:
            self.frames.put(json.loads(line))
        self.frames.put(None)

    def send(self, frame: Dict[str, Any]) -> None:
        self.host_w.write((json.dumps(frame) + "\n").encode())
        self.host_w.flush()

    def expect(self, kind: str) -> Dict[str, Any]:
        while True:
            f = self.frames.get(timeout=TIMEOUT)
            if f is None:
                raise AssertionError(f"output ended before {kind}")
            if f["type"] == kind:
                return f

    def close(self) -> None:
        self.host_w.close()
        self.runner.join(TIMEOUT)
        self.host_r.close()


def noop_setup(ext: zx.Extension) -> None:
    pass


def encode_with_sdk(f: Dict[str, Any]) -> Dict[str, Any]:
    """Produces the frame ``f`` describes through the SDK's public API and
    returns what the SDK wrote."""
    kind = f["type"]
    if kind == "hello":
        p = InProc(noop_setup, f["name"], f.get("version", ""), f.get("capabilities"))
        try:
            return p.expect("hello")
        finally:
            p.close()

    setup = noop_setup
    if kind == "register_command":
        def setup(ext: zx.Extension) -> None:
            ext.command(f["name"], f.get("description", ""), lambda a: None)
    elif kind == "register_tool":
        def setup(ext: zx.Extension) -> None:
            if f.get("interactive"):
                reg = ext.interactive_tool
            elif f.get("deferred"):
                reg = ext.deferred_tool
            else:
                reg = ext.tool
            reg(f["name"], f.get("description", ""), f.get("schema"), lambda *a: None)
    elif kind == "subscribe":
        def setup(ext: zx.Extension) -> None:
            for e in f.get("events", []):
                ext.on(e, lambda ev: None)
            for i in f.get("intercept", []):
                getattr(ext, f"intercept_{i}")(lambda *a: None)
    elif kind == "event_intercept_response":
        decision: Dict[str, Any] = {k: f[k] for k in ("block", "reason") if k in f}
        if "replace_content" in f:
            event, payload = "tool_result", {"tool_name": "bash", "content": [{"type": "text", "text": "x"}]}

            def setup(ext: zx.Extension) -> None:
                ext.intercept_tool_result(lambda ev: zx.ToolResultDecision(
                    replace_content=[zx.ToolContent(**b) for b in f["replace_content"]],
                    context=f.get("context", ""), **decision))
        elif "context" in f and "replace_text" in f:
            event, payload = "user_message", {"text": "original prompt"}

            def setup(ext: zx.Extension) -> None:
                ext.intercept_user_message(lambda t: zx.UserMessageDecision(
                    replace_text=f["replace_text"], context=f["context"], **decision))
        elif "context" in f:
            event, payload = "turn_start", {"step": 1}

            def setup(ext: zx.Extension) -> None:
                ext.intercept_turn_start(lambda step: zx.TurnStartDecision(context=f["context"], **decision))
        elif "replace_text" in f:
            event, payload = "assistant_message", {"text": "original text"}

            def setup(ext: zx.Extension) -> None:
                ext.intercept_assistant_message(
                    lambda t: zx.AssistantMessageDecision(replace_text=f["replace_text"], **decision))
        else:
            event, payload = "tool_call", {"tool_name": "bash", "tool_args": {}}

            def setup(ext: zx.Extension) -> None:
                ext.intercept_tool_call(lambda tool, args: zx.ToolCallDecision(
                    modified_args=f.get("modified_args"), decision=f.get("decision", ""), **decision))
    elif kind == "tool_result":
        result = zx.ToolResult(
            content=[zx.ToolContent(**b) for b in f.get("content", [])],
            is_error=f.get("is_error", False),
            activate_tools=f.get("activate_tools", []),
            details=f["details"] if "details" in f else zx.NO_DETAILS,
        )

        def setup(ext: zx.Extension) -> None:
            ext.tool("t", "", None, lambda args: result)
    elif kind == "command_response":
        panel = f.get("open_panel")
        response = zx.Response(
            action=f.get("action", "noop"), prompt=f.get("prompt", ""), insert=f.get("insert", ""),
            display=f.get("display", ""), open_panel=zx.Panel(**panel) if panel else None,
            error=f.get("error", ""))

        def setup(ext: zx.Extension) -> None:
            ext.command("c", "", lambda args: response)

    p = InProc(setup)
    try:
        e = p.ext
        p.send({"type": "hello_ack", "protocol_version": 2})
        if kind in ("register_command", "register_tool", "subscribe", "ready"):
            return p.expect(kind)
        p.expect("ready")
        if kind == "event_intercept_response":
            p.send({"type": "event_intercept", "id": f["id"], "event": event, **payload})
        elif kind == "tool_result":
            p.send({"type": "tool_call", "id": f["id"], "name": "t", "args": {}})
        elif kind == "command_response":
            p.send({"type": "command_invoked", "id": f["id"], "name": "c"})
        elif kind == "shutdown_ack":
            p.send({"type": "shutdown"})
        elif kind == "notify":
            e.notify(f.get("level", ""), f["message"])
        elif kind == "status":
            e.set_status(f["key"], f["text"], f.get("level"))
        elif kind == "widget":
            e.set_widget(f["id"], f.get("position", ""), f.get("title", ""), f.get("lines", []))
        elif kind == "widget_clear":
            e.clear_widget(f["id"])
        elif kind == "alert":
            e.alert(f["kind"], f.get("reason", ""))
        elif kind == "clear_notes":
            e.clear_notes()
        elif kind == "submit":
            e.submit(f["text"])
        elif kind == "submit_slash":
            e.submit_slash(f["text"])
        elif kind == "open_panel":
            pn = f["panel"]
            e.open_panel(pn["id"], pn.get("title", ""), pn.get("lines", []), pn.get("footer", ""))
        elif kind == "panel_render":
            e.render_panel(f["panel_id"], f.get("title", ""), f.get("lines", []), f.get("footer", ""))
        elif kind == "panel_close":
            e.close_panel(f["panel_id"])
        elif kind == "unregister_tool":
            e.unregister_tool(f["name"])
        elif kind == "unregister_command":
            e.unregister_command(f["name"])
        elif kind == "tool_progress":
            zx.ToolCall(f["id"], e).progress(f.get("message"), f.get("progress"), f.get("total"))
        else:
            raise AssertionError(f"no SDK call produces a {kind!r} frame")
        return p.expect(kind)
    finally:
        p.close()


class Frames(unittest.TestCase):
    def test_host_lines_decode_or_are_rejected(self) -> None:
        vectors = [v for v in load_frames() if v["direction"] == "host_to_ext"]
        self.assertTrue(vectors)
        for v in vectors:
            with self.subTest(v["name"]):
                if v["valid"]:
                    self.assertEqual(zx.decode_frame(v["line"])["type"], v["type"])
                    self.assertEqual(zx.decode_frame(v["line"].encode())["type"], v["type"])
                else:
                    with self.assertRaises(zx.FrameError):
                        zx.decode_frame(v["line"])

    def test_extension_lines_are_what_the_sdk_writes(self) -> None:
        vectors = [v for v in load_frames() if v["direction"] == "ext_to_host"]
        self.assertTrue(vectors)
        for v in vectors:
            with self.subTest(v["name"]):
                expected = json.loads(v["line"])
                self.assertEqual(encode_with_sdk(expected), expected, v.get("note"))


class Conversations(unittest.TestCase):
    def test_every_conversation(self) -> None:
        files = sorted((VECTORS / "conversations").glob("*.json"))
        self.assertTrue(files, f"no conversations under {VECTORS} (set ZUT_VECTORS_DIR)")
        for path in files:
            with self.subTest(path.name):
                self.run_conversation(path)

    def run_conversation(self, path: Path) -> None:
        conv = json.loads(path.read_text(encoding="utf-8"))
        ext = ExtProc(EXTS / "vector_ext.py", str(path))
        self.addCleanup(ext.close)
        for i, step in enumerate(conv["steps"]):
            where = f"{path.name} step {i}: {step}"
            if "send" in step:
                try:
                    ext.send(step["send"])
                except BrokenPipeError:
                    self.fail(f"{where}: the extension stopped reading")
            elif "expect" in step:
                want = step["expect"]
                got = ext.expect(want["type"])
                self.assertTrue(matches(want, got), f"{where}: got {got}")
            elif "expect_none_before" in step:
                kind = step["expect_none_before"]
                rest = ext.rest()
                self.assertFalse([f for f in rest if f["type"] == kind], f"{where}: got {rest}")
            else:
                self.fail(f"{where}: unknown step")
        try:
            ext.close_stdin()
        except BrokenPipeError:
            pass
        ext.rest()
        code = ext.wait()
        if conv.get("exit", "clean") == "clean":
            self.assertEqual(code, 0, f"{path.name}: stderr {ext.stderr()}")
        else:
            self.assertNotEqual(code, 0, path.name)
            self.assertIn("protocol", ext.stderr())


if __name__ == "__main__":
    unittest.main()
