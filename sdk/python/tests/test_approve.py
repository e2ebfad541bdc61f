"""The approve example (examples/extensions/approve), driven as the host
would drive it."""

from __future__ import annotations

import unittest

from harness import REPO, ExtProc

APPROVE = REPO / "examples" / "extensions" / "approve" / "approve.py"


class Approve(unittest.TestCase):
    def setUp(self) -> None:
        # Without the SDK on PYTHONPATH: the example finds it in the checkout.
        self.ext = ExtProc(APPROVE, sdk_on_path=False)
        self.addCleanup(self.ext.close)
        self.frames = self.ext.handshake()

    def ask(self, cid: str, question: str = "Deploy now?") -> str:
        self.ext.send({"type": "tool_call", "id": cid, "name": "approve_ask", "args": {"question": question}})
        opened = self.ext.expect("open_panel")["panel"]
        self.assertEqual(opened["lines"], question.splitlines())
        return opened["id"]

    def result(self, cid: str) -> dict:
        return self.ext.expect("tool_result", id=cid)

    def policy(self) -> str:
        self.ext.send({"type": "command_invoked", "id": "p", "name": "approve"})
        return self.ext.expect("command_response", id="p")["display"]

    def test_registrations(self) -> None:
        tool = next(f for f in self.frames if f["type"] == "register_tool")
        self.assertEqual((tool["name"], tool["interactive"]), ("approve_ask", True))
        self.assertEqual(tool["schema"]["required"], ["question"])
        sub = next(f for f in self.frames if f["type"] == "subscribe")
        self.assertEqual(sub["events"], ["tool_confirmation_requested"])
        self.assertIn({"type": "register_command", "name": "approve",
                       "description": "show the approval policy; /approve bell on|off"}, self.frames)

    def test_y_approves_n_esc_and_close_deny(self) -> None:
        panel = self.ask("a1", "Deploy now?\nto production")
        self.ext.send({"type": "panel_key", "panel_id": panel, "key": "down"})
        self.assertIn("press y or n", self.ext.expect("panel_render", panel_id=panel)["lines"])
        self.ext.send({"type": "panel_key", "panel_id": panel, "key": "rune", "text": "y"})
        self.ext.expect("panel_close", panel_id=panel)  # the extension closes its panel, then answers
        r = self.result("a1")
        self.assertEqual((r["content"][0]["text"], "is_error" in r), ("approved", False))

        panel = self.ask("a2")
        self.ext.send({"type": "panel_key", "panel_id": panel, "key": "rune", "text": "n"})
        self.assertTrue(self.result("a2")["is_error"])

        panel = self.ask("a3")
        self.ext.send({"type": "panel_key", "panel_id": panel, "key": "esc"})
        self.assertTrue(self.result("a3")["is_error"])

        panel = self.ask("a4")
        self.ext.send({"type": "panel_close", "panel_id": panel})
        self.assertTrue(self.result("a4")["content"][0]["text"].startswith("denied"))
        self.assertIn("waiting: 0, approved: 1, denied: 3", self.policy())

    def test_tool_cancel_closes_the_panel_and_drops_the_answer(self) -> None:
        panel = self.ask("c1")
        self.assertIn("waiting: 1,", self.policy())
        self.ext.send({"type": "tool_cancel", "id": "c1"})
        self.ext.expect("panel_close", panel_id=panel)
        self.assertIn("waiting: 0, approved: 0, denied: 0", self.policy())
        self.ext.send({"type": "shutdown"})
        self.ext.expect("shutdown_ack")
        self.assertFalse([f for f in self.ext.seen if f["type"] == "tool_result"])

    def test_missing_question_is_the_models_error(self) -> None:
        self.ext.send({"type": "tool_call", "id": "m", "name": "approve_ask", "args": {}})
        r = self.result("m")
        self.assertTrue(r["is_error"])
        self.assertIn("question is required", r["content"][0]["text"])

    def test_confirmation_requests_ring_the_bell_unless_switched_off(self) -> None:
        self.ext.send({"type": "event", "event": "tool_confirmation_requested",
                       "tool_id": "x", "tool_name": "bash", "tool_preview": "rm -rf build"})
        alert = self.ext.expect("alert")
        self.assertEqual(alert["kind"], "bell")
        self.assertIn("bash", alert["reason"])
        self.ext.send({"type": "command_invoked", "id": "off", "name": "approve", "args": "bell off"})
        self.assertIn("bell when a tool waits for confirmation: off",
                      self.ext.expect("command_response", id="off")["display"])
        self.ext.send({"type": "event", "event": "tool_confirmation_requested", "tool_name": "write"})
        self.policy()  # events run in order on the reader: any alert would precede this answer
        self.assertEqual(len([f for f in self.ext.seen if f["type"] == "alert"]), 1)
        self.ext.send({"type": "command_invoked", "id": "bad", "name": "approve", "args": "loud"})
        self.assertIn("usage", self.ext.expect("command_response", id="bad")["error"])


if __name__ == "__main__":
    unittest.main()
