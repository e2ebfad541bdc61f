#!/usr/bin/env python3
"""@NAME@: a zut extension.

- /@NAME@ [who]   shows "hello, <who> from @NAME@" (no model call)
- @TOOL@          a tool the model can call; returns its arguments as text

zut_ext.py beside this file is the zut Python SDK (one file, standard
library only): it does the handshake, registration and dispatch, so this
file is only handlers. stdout carries protocol frames; write diagnostics to
stderr (ext.log), which zut keeps in $ZUT_HOME/logs/ext-@NAME@.log.
"""

import json

import zut_ext as zx

ext = zx.Extension("@NAME@", "0.1.0")  # the name must match extension.json


@ext.command("@NAME@", "say hello: /@NAME@ [who]")
def greet(args: str) -> zx.Response:
    return zx.display(f"hello, {args or 'you'} from @NAME@")


@ext.tool("@TOOL@", "Return the arguments of the call as JSON text.", {"type": "object"})
def echo(args) -> zx.ToolResult:
    return zx.text_result(json.dumps(args, sort_keys=True))


if __name__ == "__main__":
    ext.run()
