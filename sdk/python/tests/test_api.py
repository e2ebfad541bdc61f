"""Every item of the SDK's API, exercised through a real extension process
(tests/exts/full.py) over pipes, the way the host drives it."""

from __future__ import annotations

import base64
import json
import tempfile
import unittest
from pathlib import Path

from harness import EXTS, ExtProc

FULL = EXTS / "full.py"


class FullExt(unittest.TestCase):
    """Starts full.py and completes the handshake for each test."""

    env: dict = {}

    def setUp(self) -> None:
        self.ext = ExtProc(FULL, env=self.env)
        self.addCleanup(self.ext.close)
        self.registrations = self.ext.handshake(
            session={"id": "b1", "parent_id": "r1", "path": "/s.jsonl", "fork_point": 4})

    def command(self, name: str, args: str = "", cid: str = "c1") -> dict:
        self.ext.send({"type": "command_invoked", "id": cid, "name": name, "args": args})
        return self.ext.expect("command_response", id=cid)

    def tool(self, name: str, args, cid: str = "t1") -> dict:
        self.ext.send({"type": "tool_call", "id": cid, "name": name, "args": args})
        return self.ext.expect("tool_result", id=cid)

    def intercept(self, cid: str, **payload) -> dict:
        self.ext.send({"type": "event_intercept", "id": cid, **payload})
        return self.ext.expect("event_intercept_response", id=cid)


class Handshake(FullExt):
    def test_hello_then_registrations_in_order_then_subscribe_then_ready(self) -> None:
        hello, *rest = self.registrations
        self.assertEqual(hello["protocol_version"], 2)
        self.assertEqual((hello["name"], hello["version"]), ("full", "1.2.3"))
        self.assertIn("tool_cancel", hello["capabilities"])
        kinds = [f["type"] for f in rest]
        self.assertEqual(kinds, ["register_command"] * 6 + ["register_tool"] * 7 + ["subscribe", "ready"])
        # Registration order, with the one made in on_hello last.
        self.assertEqual([f["name"] for f in rest[:6]], ["say", "rt", "gate", "flood", "grow", "host"])
        tools = {f["name"]: f for f in rest if f["type"] == "register_tool"}
        self.assertEqual(list(tools), ["echo", "result", "later", "nap", "slow", "wait", "ask"])
        self.assertEqual(tools["echo"]["schema"], {"type": "object"})
        self.assertNotIn("schema", tools["slow"], "no schema, no field")
        self.assertTrue(tools["later"]["deferred"])
        self.assertNotIn("interactive", tools["later"])
        self.assertTrue(tools["wait"]["interactive"])
        self.assertNotIn("deferred", tools["echo"])
        sub = rest[-2]
        self.assertEqual(sub["events"], ["turn_start", "session_opened", "tool_confirmation_requested", "boom"])
        self.assertEqual(sub["intercept"], ["tool_call", "turn_start", "assistant_message"])

    def test_host_info_is_available_to_on_hello_and_handlers(self) -> None:
        r = self.command("host")
        self.assertEqual(r["display"], "2|9.9.9|script|m|/proj|/ext|/ext|b1|r1|4")

    def test_log_and_stray_print_go_to_stderr(self) -> None:
        self.command("say", "noop")  # proves on_hello ran
        err = self.ext.stderr()
        self.assertIn("[full] hello from host 9.9.9", err)
        self.assertIn("a stray print must not reach the host", err)

    def test_shutdown_is_acked_and_the_process_exits_zero(self) -> None:
        self.ext.send({"type": "shutdown"})
        self.ext.expect("shutdown_ack")
        self.assertEqual(self.ext.rest(), [])
        self.assertEqual(self.ext.wait(), 0)

    def test_eof_ends_the_extension_cleanly(self) -> None:
        self.ext.close_stdin()
        self.assertEqual(self.ext.rest(), [])
        self.assertEqual(self.ext.wait(), 0)

    def test_malformed_lines_and_unknown_types_are_skipped(self) -> None:
        for line in ["not json", "[1,2]", '{"no":"type"}', '{"type":"from_the_future","x":1}', ""]:
            self.ext.send_raw(line)
        self.ext.send({"type": "hello_ack", "protocol_version": 2})  # a repeated ack is ignored
        self.assertEqual(self.command("say", "display still here")["display"], "still here")
        err = self.ext.stderr()
        self.assertIn("malformed", err)
        self.assertIn("from_the_future", err)


class BadHandshake(unittest.TestCase):
    def run_with_first_line(self, line: str) -> ExtProc:
        ext = ExtProc(FULL)
        self.addCleanup(ext.close)
        ext.expect("hello")
        ext.send_raw(line)
        self.assertEqual(ext.rest(), [], "nothing after hello: no registrations, no ready")
        self.assertEqual(ext.wait(), 1)
        return ext

    def test_protocol_mismatch_exits_nonzero(self) -> None:
        ext = self.run_with_first_line('{"type":"hello_ack","protocol_version":3}')
        self.assertIn("unsupported host protocol version 3 (want 2)", ext.stderr())

    def test_first_frame_must_be_hello_ack(self) -> None:
        ext = self.run_with_first_line('{"type":"command_invoked","id":"c","name":"say"}')
        self.assertIn("first host frame must be hello_ack", ext.stderr())

    def test_unparsable_hello_ack(self) -> None:
        ext = self.run_with_first_line("hello?")
        self.assertIn("parse hello_ack", ext.stderr())

    def test_eof_before_hello_ack_is_a_clean_end(self) -> None:
        ext = ExtProc(FULL)
        self.addCleanup(ext.close)
        ext.expect("hello")
        ext.close_stdin()
        self.assertEqual(ext.rest(), [])
        self.assertEqual(ext.wait(), 0)


class LateRegistration(FullExt):
    def test_registrations_after_ready_are_announced(self) -> None:
        self.command("grow")  # its frames precede its response
        late = self.ext.seen[-4:-1]
        self.assertEqual([(f["type"], f.get("name")) for f in late],
                         [("register_command", "grown"), ("register_tool", "grown_tool"), ("subscribe", None)])
        self.assertEqual(late[2], {"type": "subscribe", "events": ["turn_end"], "intercept": []})
        self.assertEqual(self.command("grown", "now", cid="c2")["display"], "grown now")
        self.assertEqual(self.tool("grown_tool", {})["content"][0]["text"], "grown tool")
        self.ext.send({"type": "event", "event": "turn_end", "stop": "end_turn"})
        self.assertEqual(self.ext.expect("notify")["message"], "turn_end end_turn")


class Commands(FullExt):
    def test_each_response_helper(self) -> None:
        self.assertEqual(self.command("say", "prompt p!"),
                         {"type": "command_response", "id": "c1", "action": "prompt", "prompt": "p!"})
        self.assertEqual(self.command("say", "insert i")["insert"], "i")
        self.assertEqual(self.command("say", "display d")["display"], "d")
        r = self.command("say", "panel body")
        self.assertEqual((r["action"], r["open_panel"]), (
            "open_panel", {"id": "p1", "title": "Title", "lines": ["body"], "footer": "esc closes"}))
        self.assertEqual(self.command("say", "panelobj")["open_panel"],
                         {"id": "p2", "title": "T2", "lines": ["a", "b"]})
        self.assertEqual(self.command("say", "noop"), {"type": "command_response", "id": "c1", "action": "noop"})
        self.assertEqual(self.command("say", "none")["action"], "noop")
        self.assertEqual(self.command("say", "error nope"),
                         {"type": "command_response", "id": "c1", "action": "noop", "error": "nope"})

    def test_names_match_case_insensitively(self) -> None:
        self.assertEqual(self.command("SAY", "display up")["display"], "up")

    def test_unknown_command_gets_an_error(self) -> None:
        self.assertEqual(self.command("nope")["error"], "no handler for /nope")

    def test_a_raising_or_wrong_handler_answers_with_an_error(self) -> None:
        self.assertEqual(self.command("say", "raise oops")["error"], "panic: oops")
        self.assertIn("not Response", self.command("say", "bad", cid="c2")["error"])
        self.assertEqual(self.command("say", "display alive", cid="c3")["display"], "alive")
        self.assertIn("RuntimeError", self.ext.stderr())

    def test_runtime_frames(self) -> None:
        self.command("rt")
        frames = [f for f in self.ext.seen if f["type"] not in ("command_response",)][-13:]
        self.assertEqual(frames, [
            {"type": "notify", "level": "info", "message": "n1"},
            {"type": "status", "key": "s1", "text": "working"},
            {"type": "status", "key": "s2", "level": "success", "text": "done"},
            {"type": "status", "key": "s1", "text": ""},
            {"type": "widget", "id": "w1", "position": "above_input", "title": "W", "lines": ["l1", "l2"]},
            {"type": "widget_clear", "id": "w1"},
            {"type": "alert", "kind": "bell", "reason": "why"},
            {"type": "clear_notes"},
            {"type": "submit", "text": "go on"},
            {"type": "submit_slash", "text": "/cmd x"},
            {"type": "open_panel", "panel": {"id": "p3", "title": "P", "lines": ["x"], "footer": "f"}},
            {"type": "panel_render", "panel_id": "p3", "title": "P2", "lines": ["y"], "footer": "g"},
            {"type": "panel_close", "panel_id": "p3"},
        ])

    def test_concurrent_writes_never_interleave(self) -> None:
        # 8 threads × 25 frames of 64 KiB at once: each line must parse
        # (ExtProc.next asserts it) and all of them must arrive whole.
        r = self.command("flood", "8 25 65536")
        self.assertEqual(r["display"], "flooded")
        floods = [f for f in self.ext.seen if f["type"] == "notify"]
        self.assertEqual(len(floods), 200)
        self.assertTrue(all(len(f["message"]) > 65536 for f in floods))


class Tools(FullExt):
    def test_echo(self) -> None:
        r = self.tool("echo", {"b": [1, 2], "a": "é"})
        self.assertEqual(r, {"type": "tool_result", "id": "t1",
                             "content": [{"type": "text", "text": '{"a":"é","b":[1,2]}'}]})

    def test_missing_args_are_an_empty_object(self) -> None:
        self.ext.send({"type": "tool_call", "id": "t9", "name": "echo"})
        self.assertEqual(self.ext.expect("tool_result", id="t9")["content"][0]["text"], "{}")

    def test_result_helpers(self) -> None:
        r = self.tool("result", {"kind": "image"})
        self.assertEqual(r["content"], [{"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgo="},
                                        {"type": "text", "text": "cap"}])
        r = self.tool("result", {"kind": "image_bytes"})
        self.assertEqual(base64.b64decode(r["content"][0]["data"]), b"GIF89a")
        self.assertEqual(r["content"][0]["mime_type"], "image/gif")
        r = self.tool("result", {"kind": "error"})
        self.assertEqual((r["is_error"], r["content"][0]["text"]), (True, "it failed"))
        r = self.tool("result", {"kind": "details"})
        self.assertEqual((r["details"], "is_error" in r), ({"n": 1}, False))
        r = self.tool("result", {"kind": "details_null"})
        self.assertIn("details", r)
        self.assertIsNone(r["details"], "an explicit null clears the state")
        self.assertNotIn("details", self.tool("result", {"kind": "x"}))
        self.assertEqual(self.tool("result", {"kind": "activate"})["activate_tools"], ["later"])
        self.assertEqual(self.tool("result", {"kind": "str"})["content"], [{"type": "text", "text": "plain"}])
        self.assertEqual(self.tool("result", {"kind": "none"})["content"], [])
        self.assertEqual(self.tool("later", {})["content"][0]["text"], "later ran")

    def test_failures_become_error_results_and_the_extension_keeps_serving(self) -> None:
        r = self.tool("result", {"kind": "raise"})
        self.assertEqual((r["is_error"], r["content"][0]["text"]), (True, "panic: kaput"))
        r = self.tool("result", {"kind": "unserialisable"}, cid="t2")
        self.assertTrue(r["is_error"])
        r = self.tool("nope", {}, cid="t3")
        self.assertEqual(r["content"][0]["text"], 'no handler for tool "nope"')
        self.assertEqual(self.tool("echo", {"x": 1}, cid="t4")["content"][0]["text"], '{"x":1}')

    def test_calls_run_concurrently(self) -> None:
        self.ext.send({"type": "tool_call", "id": "slow1", "name": "slow", "args": {}})
        # The slow call holds its thread; the echo behind it still answers.
        self.assertEqual(self.tool("echo", {"n": 2}, cid="fast")["content"][0]["text"], '{"n":2}')
        self.assertFalse(any(f.get("id") == "slow1" for f in self.ext.seen))
        self.command("gate")
        self.assertEqual(self.ext.expect("tool_result", id="slow1")["content"][0]["text"], "slow done")

    def test_a_burst_mixing_slow_and_quick_calls_gets_each_answer_once(self) -> None:
        # Calls that outlast the hand-over delay make the watchdog pass reading
        # to other threads mid-burst; every call must still be answered once.
        naps = [0, 0, 5, 0, 1, 0, 0, 3, 0, 8]
        calls = {f"n{i}": naps[i % len(naps)] for i in range(200)}
        self.ext.send_raw("\n".join(json.dumps({"type": "tool_call", "id": cid, "name": "nap",
                                                "args": {"ms": ms, "n": cid}}) for cid, ms in calls.items()))
        answers = [self.ext.expect("tool_result") for _ in calls]
        self.assertEqual(sorted(r["id"] for r in answers), sorted(calls))
        self.assertTrue(all(r["content"] == [{"type": "text", "text": r["id"]}] for r in answers))
        self.assertEqual(self.tool("echo", {}, cid="after")["content"][0]["text"], "{}")
        self.ext.close_stdin()
        self.assertFalse([f for f in self.ext.rest() if f["type"] == "tool_result"], "no second answer")
        self.assertEqual(self.ext.wait(), 0)


class Interactive(FullExt):
    def test_tool_cancel_cancels_and_the_result_is_dropped(self) -> None:
        self.ext.send({"type": "tool_call", "id": "w1", "name": "wait", "args": {}})
        self.ext.send({"type": "tool_cancel", "id": "w1"})
        self.assertTrue(self.ext.expect("notify")["message"].startswith("cancelled w1"))
        self.ext.send({"type": "tool_cancel", "id": "unknown"})  # ignored
        self.assertEqual(self.tool("echo", {}, cid="e")["content"][0]["text"], "{}")
        self.ext.close_stdin()  # full.py joins its threads before exiting
        rest = self.ext.rest()
        self.assertFalse([f for f in self.ext.seen if f["type"] == "tool_result" and f["id"] == "w1"], rest)
        self.assertEqual(self.ext.wait(), 0)

    def test_cancel_that_arrives_with_the_call_still_cancels(self) -> None:
        self.ext.send_raw(json.dumps({"type": "tool_call", "id": "w2", "name": "wait", "args": {}}) + "\n"
                          + json.dumps({"type": "tool_cancel", "id": "w2"}))
        msg = self.ext.expect("notify")["message"]
        self.assertTrue(msg.startswith("cancelled w2") and msg.endswith("True"), msg)

    def test_end_of_input_cancels(self) -> None:
        self.ext.send({"type": "tool_call", "id": "w3", "name": "wait", "args": {}})
        self.ext.close_stdin()
        msg = self.ext.expect("notify")["message"]
        self.assertTrue(msg.startswith("cancelled w3") and msg.endswith(" True"), msg)
        self.ext.rest()
        self.assertFalse([f for f in self.ext.seen if f["type"] == "tool_result"])

    def test_panel_keys_and_close_reach_the_handler(self) -> None:
        self.ext.send({"type": "tool_call", "id": "a1", "name": "ask", "args": {"q": "sure?"}})
        self.assertEqual(self.ext.expect("open_panel")["panel"]["lines"], ["sure?"])
        self.ext.send({"type": "panel_key", "panel_id": "ask-a1", "key": "down"})
        self.assertEqual(self.ext.expect("panel_render")["lines"], ["sure?", "got down"])
        self.ext.send({"type": "panel_key", "panel_id": "other", "key": "down"})  # not ours: ignored
        self.ext.send({"type": "panel_key", "panel_id": "ask-a1", "key": "rune", "text": "y"})
        self.assertEqual(self.ext.expect("tool_result", id="a1")["content"][0]["text"], "y")
        self.ext.send({"type": "tool_call", "id": "a2", "name": "ask", "args": {}})
        self.ext.expect("open_panel")
        self.ext.send({"type": "panel_close", "panel_id": "ask-a2"})
        self.assertEqual(self.ext.expect("tool_result", id="a2")["content"][0]["text"], "closed")

    def test_cancelled_ask_closes_its_panel(self) -> None:
        self.ext.send({"type": "tool_call", "id": "a3", "name": "ask", "args": {}})
        self.ext.expect("open_panel")
        self.ext.send({"type": "tool_cancel", "id": "a3"})
        self.assertEqual(self.ext.expect("panel_close")["panel_id"], "ask-a3")


class ShutdownCancels(unittest.TestCase):
    def test_shutdown_cancels_interactive_handlers(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            marker = Path(d) / "cancelled"
            ext = ExtProc(FULL, env={"CANCEL_MARKER": str(marker)})
            self.addCleanup(ext.close)
            ext.handshake()
            ext.send({"type": "tool_call", "id": "w9", "name": "wait", "args": {}})
            ext.send({"type": "shutdown"})
            ext.expect("shutdown_ack")
            self.assertEqual(ext.rest(), [], "nothing is written after shutdown_ack")
            self.assertEqual(ext.wait(), 0)
            self.assertEqual(marker.read_text(), "w9\n")


class Events(FullExt):
    def test_events_run_in_order_with_their_fields(self) -> None:
        for step in (1, 2, 3):
            self.ext.send({"type": "event", "event": "turn_start", "step": step})
        self.ext.send({"type": "event", "event": "session_opened",
                       "session": {"id": "b2", "fork_point": 6}, "state": {"v": 3}})
        self.ext.send({"type": "event", "event": "session_opened", "session": {"id": "b3"}})
        self.ext.send({"type": "event", "event": "tool_confirmation_requested",
                       "tool_id": "x1", "tool_name": "bash", "tool_preview": "ls"})
        self.ext.send({"type": "event", "event": "not_subscribed"})
        messages = [self.ext.expect("notify")["message"] for _ in range(6)]
        self.assertEqual(messages, [
            "turn 1", "turn 2", "turn 3",
            '{"fork":6,"has_state":true,"id":"b2","state":{"v":3}}',
            '{"fork":0,"has_state":false,"id":"b3","state":null}',
            "confirm bash x1 ls",
        ])

    def test_a_raising_event_handler_is_logged_and_serving_goes_on(self) -> None:
        self.ext.send({"type": "event", "event": "boom"})
        self.assertEqual(self.command("say", "display ok")["display"], "ok")
        self.assertIn("event boom handler panicked", self.ext.stderr())


class Intercepts(FullExt):
    def test_tool_call(self) -> None:
        r = self.intercept("i1", event="tool_call", tool_id="x", tool_name="bash", tool_args={"command": "ls"})
        self.assertEqual(r, {"type": "event_intercept_response", "id": "i1", "block": True, "reason": "no bash"})
        r = self.intercept("i2", event="tool_call", tool_name="rewrite", tool_args={})
        self.assertEqual(r, {"type": "event_intercept_response", "id": "i2",
                             "reason": "rewrote", "modified_args": {"x": 1}})
        r = self.intercept("i3", event="tool_call", tool_name="read", tool_args={})
        self.assertEqual(r, {"type": "event_intercept_response", "id": "i3"})

    def test_turn_start(self) -> None:
        self.assertEqual(self.intercept("i1", event="turn_start", step=1)["context"], "ctx1")
        r = self.intercept("i2", event="turn_start", step=2)
        self.assertEqual(r, {"type": "event_intercept_response", "id": "i2", "block": True, "reason": "stop"})
        self.assertEqual(self.intercept("i4", event="turn_start", step=4),
                         {"type": "event_intercept_response", "id": "i4"})

    def test_assistant_message(self) -> None:
        self.assertEqual(self.intercept("i1", event="assistant_message", text="a secret")["replace_text"],
                         "a [redacted]")
        self.assertEqual(self.intercept("i2", event="assistant_message", text="same"),
                         {"type": "event_intercept_response", "id": "i2"}, "an unchanged text is no rewrite")
        self.assertEqual(self.intercept("i3", event="assistant_message", text="blockme"),
                         {"type": "event_intercept_response", "id": "i3", "block": True, "reason": "hidden"})

    def test_a_raising_interceptor_fails_closed(self) -> None:
        r = self.intercept("i1", event="tool_call", tool_name="explode", tool_args={})
        self.assertEqual((r["block"], r["reason"]), (True, "intercept panic: guard broke"))
        r = self.intercept("i2", event="turn_start", step=3)
        self.assertEqual((r["block"], r["reason"]), (True, "intercept panic: turn broke"))

    def test_an_event_without_interceptor_is_allowed(self) -> None:
        self.assertEqual(self.intercept("i1", event="session_start"),
                         {"type": "event_intercept_response", "id": "i1"})


if __name__ == "__main__":
    unittest.main()
