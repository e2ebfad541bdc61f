"""Plays the host for SDK tests: runs an extension script as a real
subprocess over pipes, writes host frames to its stdin and reads its frames
with a deadline.

Reading happens on a thread that queues every stdout line, so a test never
blocks forever on a silent extension: each wait ends at its timeout with an
assertion error that lists what did arrive.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
SDK_DIR = HERE.parent
REPO = SDK_DIR.parent.parent
EXTS = HERE / "exts"

# The in-process tests import the SDK from this checkout, not an installed copy.
if str(SDK_DIR) not in sys.path:
    sys.path.insert(0, str(SDK_DIR))

#: Default wait for one frame; generous because the machine is shared.
TIMEOUT = 10.0

_EOF = object()


class ExtProc:
    """One extension process and the host side of its pipes."""

    def __init__(self, script: Path, *args: str, env: Optional[Dict[str, str]] = None,
                 cwd: Optional[Path] = None, sdk_on_path: bool = True) -> None:
        self.stderr_file = tempfile.TemporaryFile()
        full_env = dict(os.environ)
        full_env.pop("PYTHONPATH", None)
        if sdk_on_path:
            full_env["PYTHONPATH"] = str(SDK_DIR)
        full_env["PYTHONUNBUFFERED"] = "1"
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, str(script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
            cwd=str(cwd or script.parent),
            env=full_env,
        )
        self.lines: "queue.Queue[Any]" = queue.Queue()
        self.seen: List[Dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw.decode("utf-8"))
        self.lines.put(_EOF)

    # ---- host → extension

    def send(self, frame: Dict[str, Any]) -> None:
        self.send_raw(json.dumps(frame))

    def send_raw(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    # ---- extension → host

    def next(self, timeout: float = TIMEOUT) -> Optional[Dict[str, Any]]:
        """The next frame, or None at end of output. Every stdout line must
        be a JSON object: anything else fails the test."""
        try:
            item = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no frame within {timeout}s; seen {self.seen[-8:]}; stderr: {self.stderr()}")
        if item is _EOF:
            self.lines.put(_EOF)
            return None
        assert item.endswith("\n"), f"frame without newline: {item!r}"
        frame = json.loads(item)
        assert isinstance(frame, dict) and isinstance(frame.get("type"), str), item
        self.seen.append(frame)
        return frame

    def expect(self, kind: str, timeout: float = TIMEOUT, **fields: Any) -> Dict[str, Any]:
        """Skips frames until one of type ``kind`` whose ``fields`` match."""
        skipped = []
        while True:
            frame = self.next(timeout)
            if frame is None:
                raise AssertionError(f"end of output waiting for {kind} {fields}; skipped {skipped}; "
                                     f"stderr: {self.stderr()}")
            if frame["type"] == kind and all(frame.get(k) == v for k, v in fields.items()):
                return frame
            skipped.append(frame)

    def rest(self, timeout: float = TIMEOUT) -> List[Dict[str, Any]]:
        """Every frame until the end of output."""
        out = []
        while True:
            frame = self.next(timeout)
            if frame is None:
                return out
            out.append(frame)

    def handshake(self, **ack: Any) -> List[Dict[str, Any]]:
        """Answers hello; returns the frames up to and including ready."""
        hello = self.expect("hello")
        frame = {"type": "hello_ack", "protocol_version": 2, "zut_version": "9.9.9",
                 "provider": "script", "model": "m", "cwd": "/proj",
                 "extension_dir": "/ext", "data_dir": "/ext"}
        frame.update(ack)
        self.send(frame)
        frames = [hello]
        while True:
            f = self.next()
            assert f is not None, f"ended before ready: {frames}; stderr: {self.stderr()}"
            frames.append(f)
            if f["type"] == "ready":
                return frames

    def wait(self, timeout: float = TIMEOUT) -> int:
        return self.proc.wait(timeout=timeout)

    def stderr(self) -> str:
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode("utf-8", errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for s in (self.proc.stdin, self.proc.stdout):
            try:
                if s is not None:
                    s.close()
            except OSError:
                pass
        self.stderr_file.close()
