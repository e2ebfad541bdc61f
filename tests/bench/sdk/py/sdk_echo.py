"""Benchmark input: tool `echo` written with the Python SDK; it answers
with the call's arguments as compact JSON text. Its twin raw_echo.py does
the same by hand, so the pair's timing ratio is the SDK's overhead."""

import json
import sys
from pathlib import Path

try:
    import zut_ext as zx
except ImportError:  # from a checkout: the SDK lives in sdk/python
    sys.path.insert(0, str(Path(__file__).resolve().parent.joinpath("../../../../sdk/python")))
    import zut_ext as zx

ext = zx.Extension("sdk-echo-py", "1.0.0")


@ext.tool("echo", "echo the arguments back", {"type": "object"})
def echo(args):
    return zx.text_result(json.dumps(args, separators=(",", ":"), ensure_ascii=False))


ext.run()
