"""Builds the extension a shared conversation vector declares, with the
SDK's public API only, and runs it.

Usage: vector_ext.py CONVERSATION.json (the file's "extension" object is
the declaration; sdk/vectors/README.md describes its fields).
"""

import json
import sys

import zut_ext as zx

spec = json.load(open(sys.argv[1], encoding="utf-8"))["extension"]
ext = zx.Extension(spec["name"], spec.get("version", ""))


def substitute(value, args):
    if isinstance(value, str):
        return value.replace("{args}", args)
    if isinstance(value, dict):
        return {k: substitute(v, args) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, args) for v in value]
    return value


def command_handler(reply):
    def handle(args):
        r = substitute(reply, args)
        panel = r.get("open_panel")
        return zx.Response(
            action=r.get("action", "noop"),
            prompt=r.get("prompt", ""),
            insert=r.get("insert", ""),
            display=r.get("display", ""),
            open_panel=zx.Panel(**panel) if panel else None,
            error=r.get("error", ""),
        )
    return handle


def tool_handler(behavior):
    def handle(args):
        if behavior == "echo":
            return zx.text_result(json.dumps(args, separators=(",", ":"), sort_keys=True, ensure_ascii=False))
        if behavior == "error":
            return zx.error_result("boom")
        if behavior == "panic":
            raise RuntimeError("the vector asked this tool to fail")
        if behavior == "details":
            return zx.text_result("ok", details=args)
        if behavior == "image":
            return zx.ToolResult(content=[zx.image("image/png", "iVBORw0KGgo=")])
        raise ValueError(f"unknown vector tool behavior {behavior!r}")
    return handle


for c in spec.get("commands", []):
    ext.command(c["name"], c.get("description", ""), command_handler(c["reply"]))

for t in spec.get("tools", []):
    register = ext.deferred_tool if t.get("deferred") else ext.tool
    register(t["name"], t.get("description", ""), t.get("schema"), tool_handler(t["behavior"]))

for name in spec.get("events", []):
    ext.on(name, lambda ev: None)

behavior = spec.get("intercept_behavior", {})
intercept = spec.get("intercept", [])

if "tool_call" in intercept:
    rule = behavior.get("tool_call", {})

    @ext.intercept_tool_call
    def on_tool(tool, args):
        if tool == rule.get("block_tool"):
            return zx.ToolCallDecision(block=True, reason=rule.get("reason", ""))
        return None

if "turn_start" in intercept:
    context = behavior.get("turn_start", {}).get("context", "")
    ext.intercept_turn_start(lambda step: zx.TurnStartDecision(context=context))

if "assistant_message" in intercept:
    old, new = behavior.get("assistant_message", {}).get("replace", ["", ""])

    @ext.intercept_assistant_message
    def on_message(text):
        if old and old in text:
            return zx.AssistantMessageDecision(replace_text=text.replace(old, new))
        return None

ext.run()
