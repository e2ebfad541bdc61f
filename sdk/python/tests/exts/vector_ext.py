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


def tool_handler(behavior, state=None):
    if behavior == "progress":
        def slow(args, call):
            call.progress("step 1", 1, 2)
            call.progress("step 2", 2, 2)
            return zx.text_result("done")
        return slow
    if behavior == "late":
        def late(args, call):
            ext.tool(args["name"], "registered late", {"type": "object"}, tool_handler("echo"))
            ext.unregister_tool(args["drop"])
            ext.unregister_command(args["drop_command"])
            return "ok"
        return late
    if behavior == "count":
        def count(args):
            n = state.update(lambda v: {"n": v["n"] + 1})["n"]
            return str(n)
        return count

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

state = ext.state(spec["state"]["default"]) if "state" in spec else None

for t in spec.get("tools", []):
    if t["behavior"] == "typed_weather":
        @ext.tool(t["name"], t.get("description", ""))
        def weather(city: str, days: int = 1) -> str:
            return f"{city} {days}"
        continue
    register = ext.deferred_tool if t.get("deferred") else ext.tool
    register(t["name"], t.get("description", ""), t.get("schema"), tool_handler(t["behavior"], state))

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
        if tool == rule.get("approve_tool"):
            return zx.ToolCallDecision(decision=zx.APPROVE)
        if tool == rule.get("ask_tool"):
            return zx.ToolCallDecision(decision=zx.ASK)
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

if "user_message" in intercept:
    um = behavior.get("user_message", {})

    @ext.intercept_user_message
    def on_user(text):
        if um.get("block_if") and um["block_if"] in text:
            return zx.UserMessageDecision(block=True, reason=um.get("reason", ""))
        old, new = um.get("replace", ["", ""])
        return zx.UserMessageDecision(
            replace_text=text.replace(old, new) if old else "", context=um.get("context", ""))

if "tool_result" in intercept:
    secret = behavior.get("tool_result", {}).get("redact", "")

    @ext.intercept_tool_result
    def on_result(ev):
        if secret and any(secret in c.text for c in ev.content):
            return zx.ToolResultDecision(
                replace_content=[zx.text(c.text.replace(secret, "[redacted]")) for c in ev.content])
        return None

if "agent_end" in intercept:
    ae = behavior.get("agent_end", {})

    @ext.intercept_agent_end
    def on_end(ev):
        if ae.get("until") and ae["until"] not in ev.text:
            return zx.AgentEndDecision.keep_going(ae.get("reason", ""))
        return None

ext.run()
