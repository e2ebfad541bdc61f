"""Schemas derived from type hints, argument checks, the branch state helper
and the protocol additions, through the public API over real pipes."""

from __future__ import annotations

import json
import os
import threading
import unittest
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional

from harness import TIMEOUT  # first: it puts the SDK on sys.path

import zut_ext as zx  # noqa: E402


class Pipes:
    """An Extension served on a thread; the test plays the host."""

    def __init__(self, ext_setup: Any) -> None:
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        self.ext = zx.Extension("t", "1", stdin=os.fdopen(r_in, "rb"), stdout=os.fdopen(w_out, "wb"))
        ext_setup(self.ext)
        self.w = os.fdopen(w_in, "wb")
        self.r = os.fdopen(r_out, "rb")
        self.thread = threading.Thread(target=self.ext.run, daemon=True)
        self.thread.start()
        self.registrations = []
        self.send({"type": "hello_ack", "protocol_version": 2, "features": ["late_registration", "tool_progress"]})
        while True:
            f = self.next()
            if f["type"] != "hello":
                self.registrations.append(f)
            if f["type"] == "ready":
                break

    def send(self, frame: Dict[str, Any]) -> None:
        self.w.write((json.dumps(frame) + "\n").encode())
        self.w.flush()

    def next(self) -> Dict[str, Any]:
        line = self.r.readline()
        if not line:
            raise AssertionError("the extension's output ended")
        return json.loads(line.decode("utf-8"))

    def call(self, name: str, args: Any, cid: str = "1") -> Dict[str, Any]:
        self.send({"type": "tool_call", "id": cid, "name": name, "args": args})
        while True:
            f = self.next()
            if f["type"] == "tool_result" and f["id"] == cid:
                return f

    def close(self) -> None:
        self.w.close()
        self.thread.join(TIMEOUT)
        self.r.close()
        for s in (self.ext._in, self.ext._out):
            if s is not None:
                s.close()


@dataclass
class Point:
    x: float
    y: float = 0.0


@dataclass
class Shape:
    name: str
    points: List[Point] = field(default_factory=list)
    kind: Literal["open", "closed"] = "open"


class Typed(unittest.TestCase):
    def test_schema_from_parameters(self) -> None:
        def f(city: str, days: int = 1, units: Optional[str] = None, tags: List[str] = []) -> str:
            return ""

        self.assertEqual(zx.schema_of(f), {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "units": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["city"],
        })

    def test_schema_from_a_dataclass_and_the_call_parameter_is_no_argument(self) -> None:
        def f(shape: Shape, call: zx.ToolCall) -> str:
            return ""

        self.assertEqual(zx.schema_of(f), {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "points": {"type": "array", "items": {
                    "type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x"]}},
                "kind": {"enum": ["open", "closed"]},
            },
            "required": ["name"],
        })

    def test_an_unsupported_hint_is_refused_at_registration(self) -> None:
        ext = zx.Extension("t")

        def f(x: set) -> str:  # a bare set has no JSON shape we derive
            return ""

        with self.assertRaises(TypeError):
            ext.tool("f", "", f)

    def test_arguments_are_checked_and_built_before_the_handler(self) -> None:
        seen: List[Any] = []

        def setup(ext: zx.Extension) -> None:
            @ext.tool("draw", "draw a shape")
            def draw(shape: Shape, call: zx.ToolCall) -> str:
                seen.append((shape, call.id))
                return f"{shape.name}:{len(shape.points)}"

        p = Pipes(setup)
        self.addCleanup(p.close)
        self.assertEqual(p.registrations[0]["schema"]["required"], ["name"])
        r = p.call("draw", {"name": "tri", "points": [{"x": 1}, {"x": 2, "y": 3.5}]}, "c1")
        self.assertEqual(r["content"][0]["text"], "tri:2")
        self.assertEqual(seen, [(Shape("tri", [Point(1.0), Point(2, 3.5)]), "c1")])
        self.assertIsInstance(seen[0][0].points[0].x, float)
        bad = p.call("draw", {"name": "tri", "points": [{"x": 1}, {"y": 2}]}, "c2")
        self.assertTrue(bad["is_error"])
        self.assertEqual(bad["content"][0]["text"],
                         'invalid arguments for draw: missing required field "points[1].x"')
        bad = p.call("draw", {"name": "tri", "kind": "round"}, "c3")
        self.assertEqual(bad["content"][0]["text"],
                         'invalid arguments for draw: field "kind" must be one of "open", "closed"')
        bad = p.call("draw", {"name": True}, "c4")
        self.assertEqual(bad["content"][0]["text"],
                         'invalid arguments for draw: field "name" must be string, got boolean')
        self.assertEqual(len(seen), 1, "the handler never saw invalid arguments")


class Additions(unittest.TestCase):
    def test_features_progress_and_late_registration(self) -> None:
        box: Dict[str, Any] = {}

        def setup(ext: zx.Extension) -> None:
            box["ext"] = ext

            @ext.tool("work", "")
            def work(call: zx.ToolCall) -> str:
                call.progress("half", 1, 2)
                call.progress()
                return "done"

        p = Pipes(setup)
        self.addCleanup(p.close)
        ext = box["ext"]
        self.assertEqual(ext.host.features, ["late_registration", "tool_progress"])
        p.send({"type": "tool_call", "id": "w1", "name": "work", "args": {}})
        self.assertEqual(p.next(), {"type": "tool_progress", "id": "w1", "message": "half", "progress": 1, "total": 2})
        self.assertEqual(p.next(), {"type": "tool_progress", "id": "w1"})
        self.assertEqual(p.next()["type"], "tool_result")
        ext.command("later", "added after ready", lambda a: zx.display("hi"))
        self.assertEqual(p.next(), {"type": "register_command", "name": "later", "description": "added after ready"})
        ext.intercept_agent_end(lambda ev: None)
        self.assertEqual(p.next(), {"type": "subscribe", "events": [], "intercept": ["agent_end"]})
        ext.unregister_tool("work")
        self.assertEqual(p.next(), {"type": "unregister_tool", "name": "work"})
        self.assertTrue(p.call("work", {}, "w2")["is_error"], "an unregistered tool is unknown")

    def test_tool_result_event_fields_and_a_blocking_decision_drops_rewrites(self) -> None:
        seen: List[zx.Event] = []

        def setup(ext: zx.Extension) -> None:
            def on_result(ev: zx.Event) -> zx.ToolResultDecision:
                seen.append(ev)
                return zx.ToolResultDecision(block=True, reason="no", replace_content=[zx.text("x")], context="c")

            ext.intercept_tool_result(on_result)
            ext.intercept_tool_call(lambda t, a: zx.ToolCallDecision(block=True, reason="r", decision=zx.APPROVE))

        p = Pipes(setup)
        self.addCleanup(p.close)
        p.send({"type": "event_intercept", "id": "1", "event": "tool_result", "tool_id": "c", "tool_name": "bash",
                "tool_args": {"command": "ls"}, "is_error": True, "content": [{"type": "text", "text": "out"}],
                "extension": "x"})
        self.assertEqual(p.next(), {"type": "event_intercept_response", "id": "1", "block": True, "reason": "no"})
        ev = seen[0]
        self.assertEqual((ev.tool_name, ev.is_error, ev.extension, ev.content[0].text), ("bash", True, "x", "out"))
        p.send({"type": "event_intercept", "id": "2", "event": "tool_call", "tool_name": "bash", "tool_args": {}})
        self.assertEqual(p.next(), {"type": "event_intercept_response", "id": "2", "block": True, "reason": "r"})


class State(unittest.TestCase):
    def test_explicit_details_become_the_state_and_other_results_carry_none(self) -> None:
        box: Dict[str, Any] = {}

        def setup(ext: zx.Extension) -> None:
            box["st"] = ext.state([])
            ext.tool("save", "", {"type": "object"}, lambda a: zx.text_result("s", details=["a"]))
            ext.tool("look", "", {"type": "object"}, lambda a: json.dumps(box["st"].value))

        p = Pipes(setup)
        self.addCleanup(p.close)
        self.assertEqual(p.registrations[2]["events"],
                         ["session_opened", "session_switched", "session_forked", "session_compacted"])
        self.assertEqual(p.call("save", {}, "1")["details"], ["a"])
        r = p.call("look", {}, "2")
        self.assertEqual(r["content"][0]["text"], '["a"]')
        self.assertNotIn("details", r, "an unchanged state is not sent again")
        p.send({"type": "event", "event": "session_compacted", "session": {"id": "b"}, "state": None})
        self.assertEqual(p.call("look", {}, "3")["content"][0]["text"], "[]")


if __name__ == "__main__":
    unittest.main()
