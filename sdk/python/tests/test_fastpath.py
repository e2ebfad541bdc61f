"""The SDK's shortcuts for the common tool call give the same answers as
the general code they stand in for.

decode_frame reads a plain UTF-8 object line without ``json.loads``'s
encoding sniffing; a plain text tool result is written without building
its frame. Both are checked in-process against the general path over
lines and results chosen to sit on either side of the shortcut's
conditions, then once end to end through a real extension process.
"""

from __future__ import annotations

import json
import unittest
from typing import Any, List, Union

from harness import EXTS, ExtProc  # first: it puts the SDK on sys.path

import zut_ext as zx  # noqa: E402


def slow_decode(line: Union[str, bytes]) -> Any:
    """What decode_frame answered before it had a shortcut."""
    try:
        value = json.loads(line)
    except UnicodeDecodeError:
        assert isinstance(line, bytes)
        return slow_decode(line.decode("utf-8", errors="replace"))
    except ValueError:
        return zx.FrameError
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return zx.FrameError
    return value


def decode_or_error(line: Union[str, bytes]) -> Any:
    try:
        return zx.decode_frame(line)
    except zx.FrameError:
        return zx.FrameError


LINES: List[bytes] = [
    b'{"type":"tool_call","id":"c1","name":"echo","args":{"n":1}}\n',
    b'{"type":"tool_call","id":"c1","name":"echo","args":{"n":1}}',
    b'{"type":"tool_call"}\r\n',
    b'{"type":"tool_call"} \t \n',
    b'  {"type":"tool_call"}\n',  # leading space: the long way round, still a frame
    b'{"type":"x"} {"type":"y"}\n',  # extra data
    b'{"type":"x"}\x0c\n',  # form feed is not JSON whitespace
    b'{"type":"x"}\xc2\xa0\n',  # nor is a no-break space
    b'{"type":1}\n',
    b'{"kind":"x"}\n',
    b'{"type":"x","v":NaN}\n',
    b'{"type":"x"',
    b'{',
    b'{}\n',
    b'["type"]\n',
    b'"type"\n',
    b'\n',
    b'',
    b'\xef\xbb\xbf{"type":"bom"}\n',  # UTF-8 byte order mark
    '{"type":"utf16"}'.encode("utf-16-le"),
    '{"type":"utf16be"}'.encode("utf-16-be"),
    b'{"type":"x","s":"\xed\xa0\x80"}\n',  # an encoded lone surrogate
    b'{"type":"x","s":"\xff"}\n',  # not UTF-8 at all
    b'{"type":"x","s":"\\ud800"}\n',  # an escaped lone surrogate
    b'{"type":"x","s":"caf\xc3\xa9 \\u00e9"}\n',
    b'{"type":"x","s":"tab\there"}\n',  # raw control character in a string
    b'{"type":"x","type":"y"}\n',  # repeated key: the last one wins
    b'{"type":"x","deep":' + b"[" * 50 + b"]" * 50 + b"}\n",
]


class DecodeFrame(unittest.TestCase):
    def test_shortcut_agrees_with_json_loads(self) -> None:
        for line in LINES:
            for form in (line, line.decode("utf-8", errors="surrogateescape")):
                with self.subTest(line=form):
                    self.assertEqual(decode_or_error(form), slow_decode(form))

    def test_a_frame_is_a_fresh_dict_each_time(self) -> None:
        line = b'{"type":"tool_call","args":{"a":"same"}}\n'
        one, two = zx.decode_frame(line), zx.decode_frame(line)
        self.assertEqual(one, two)
        self.assertIsNot(one["args"], two["args"])


def general_line(call_id: Any, result: Any) -> str:
    """What _run_tool writes without the shortcut."""
    if result is None:
        result = zx.ToolResult()
    elif isinstance(result, str):
        result = zx.text_result(result)
    return zx.encode_frame(result.to_frame(call_id))


class Sub(zx.ToolResult):
    def to_frame(self, call_id: Any) -> Any:
        f = super().to_frame(call_id)
        f["extra"] = True
        return f


class MyStr(str):
    pass


class PlainTextLine(unittest.TestCase):
    def test_shortcut_writes_what_the_encoder_writes(self) -> None:
        texts = ["", "plain", 'q"uote\\back\nnl\ttab\x00\x1f\x7f', "é ü 中文 😀", "\u2028\u2029", "\ud800 lone"]
        for t in texts:
            for cid in ["c1", "", 'i"d\n', "é"]:
                for result in (t, zx.text_result(t)):
                    with self.subTest(text=t, id=cid, result=type(result).__name__):
                        line = zx._plain_text_line(cid, result)
                        self.assertIsNotNone(line)
                        self.assertEqual(line, general_line(cid, result))

    def test_everything_else_is_left_to_the_general_path(self) -> None:
        others: List[Any] = [
            None,
            zx.ToolResult(),
            zx.error_result("bad"),
            zx.text_result("x", details=None),
            zx.text_result("x", details={"n": 1}),
            zx.ToolResult(content=[zx.text("x")], activate_tools=["later"]),
            zx.ToolResult(content=[zx.text("a"), zx.text("b")]),
            zx.ToolResult(content=[zx.image("image/png", "AAAA")]),
            zx.ToolResult(content=(zx.text("tuple"),)),  # type: ignore[arg-type]
            zx.ToolResult(content=[zx.ToolContent(type="text", text=5)]),  # type: ignore[arg-type]
            zx.ToolResult(content=[zx.ToolContent(type="text", text=MyStr("sub"))]),
            Sub(content=[zx.text("x")]),
            MyStr("a str subclass"),
            42,
        ]
        for result in others:
            with self.subTest(result=result):
                self.assertIsNone(zx._plain_text_line("c1", result))
        for cid in [7, None, 1.5, MyStr("c1")]:
            with self.subTest(id=cid):
                self.assertIsNone(zx._plain_text_line(cid, "x"))
                self.assertIsNone(zx._plain_text_line(cid, zx.text_result("x")))


class EndToEnd(unittest.TestCase):
    def test_plain_and_general_answers_over_pipes(self) -> None:
        ext = ExtProc(EXTS / "full.py")
        self.addCleanup(ext.close)
        ext.handshake()
        for cid, args in [("s1", {"kind": "str"}), (17, {"kind": "str"}), ("s2", {"kind": "x"})]:
            ext.send({"type": "tool_call", "id": cid, "name": "result", "args": args})
            r = ext.expect("tool_result", id=cid)
            self.assertEqual(r["id"], cid)
            self.assertFalse(r.get("is_error", False), r)
        ext.send({"type": "tool_call", "id": "e1", "name": "echo", "args": {"s": "\ud800"}})
        r = ext.expect("tool_result", id="e1")
        # A lone surrogate cannot travel in UTF-8 JSON: it arrives replaced.
        self.assertEqual(json.loads(r["content"][0]["text"]), {"s": "\ufffd"})


class Utf8Only(unittest.TestCase):
    """Every line the SDK writes is valid UTF-8 JSON, whatever a handler returns."""

    def test_non_utf8_file_names_are_replaced_not_written(self) -> None:
        import os

        name = os.fsdecode(b"caf\xe9-\xff.txt")  # what os.listdir gives for such a file
        self.assertIn("\udce9", name)
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        ext = zx.Extension("u", "1", stdin=os.fdopen(r_in, "rb"), stdout=os.fdopen(w_out, "wb"))
        ext.tool("ls", "", {"type": "object"}, lambda args: zx.ToolResult(
            content=[zx.text(name)], details={"files": [name], name: 1}))
        host_w, host_r = os.fdopen(w_in, "wb"), os.fdopen(r_out, "rb")
        import threading

        t = threading.Thread(target=ext.run, daemon=True)
        t.start()
        host_w.write(b'{"type":"hello_ack","protocol_version":2}\n{"type":"tool_call","id":"1","name":"ls","args":{}}\n')
        host_w.flush()
        raw = b""
        for line in host_r:
            if b'"tool_result"' in line:
                raw = line
                break
        host_w.close()
        t.join(5)
        text = raw.decode("utf-8")  # strict: raises on anything that is not UTF-8
        self.assertNotIn("\\ud", text, "no surrogate escapes either")
        frame = json.loads(text)
        self.assertEqual(frame["content"][0]["text"], "caf\ufffd-\ufffd.txt")
        self.assertEqual(frame["details"]["files"], ["caf\ufffd-\ufffd.txt"])


if __name__ == "__main__":
    unittest.main()
