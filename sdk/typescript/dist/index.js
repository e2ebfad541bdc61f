"use strict";
/**
 * zut-ext: write zut extensions in TypeScript or JavaScript.
 *
 * An extension is a subprocess that talks to zut in newline-delimited JSON:
 * it writes frames on stdout, reads the host's frames on stdin, and keeps
 * stdout for frames only (diagnostics go to stderr, which zut stores in the
 * extension's log). This module is the whole SDK in one dependency-free file
 * for Node 18 or later: the frame types of both directions, a decoder and an
 * encoder, and {@link Extension}, which performs the handshake, announces
 * registrations and dispatches the host's requests to your handlers.
 *
 * Invariants the implementation keeps:
 * - One frame is one `write` of one complete line, so frames never interleave.
 * - Nothing is written before `hello`, and nothing after `shutdown_ack`.
 * - Every `command_invoked`, `tool_call` and `event_intercept` gets exactly one
 *   answer, even when its handler throws or rejects; an interactive tool call
 *   that was cancelled gets none (the host stopped waiting for it).
 * - A line the decoder rejects, or a frame of an unknown type, is reported on
 *   stderr and skipped; it never stops the extension.
 * - Lifecycle events are handled one at a time in arrival order: frames after
 *   an event wait until its handler (and the promise it returns) is done.
 *   Commands, tools, intercepts and panel callbacks are started in arrival
 *   order but never waited for, so a slow one does not hold up the others.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.Extension = exports.BranchState = exports.s = exports.Schema = exports.ALERT_BELL = exports.WIDGET_ABOVE_INPUT = exports.HandshakeError = exports.FrameError = exports.CAPABILITIES = exports.PROTOCOL_VERSION = void 0;
exports.isKnownHostFrame = isKnownHostFrame;
exports.decodeFrame = decodeFrame;
exports.encodeFrame = encodeFrame;
exports.prompt = prompt;
exports.insert = insert;
exports.display = display;
exports.openPanelResponse = openPanelResponse;
exports.noop = noop;
exports.error = error;
exports.text = text;
exports.image = image;
exports.imageBytes = imageBytes;
exports.textResult = textResult;
exports.errorResult = errorResult;
exports.keepGoing = keepGoing;
const TextDecoderImpl = globalThis.TextDecoder;
const AbortControllerImpl = globalThis.AbortController;
/** The major protocol version this SDK speaks; the host must answer with the same. */
exports.PROTOCOL_VERSION = 2;
/** What `hello` advertises: everything the SDK can handle, including `tool_cancel`. */
exports.CAPABILITIES = [
    "commands",
    "tools",
    "events",
    "alerts",
    "panels",
    "session_state",
    "status",
    "widgets",
    "tool_cancel",
];
/** Session events that carry this extension's stored state. */
const STATE_EVENTS = ["session_opened", "session_switched", "session_forked", "session_compacted"];
/** Why a line is not a frame. */
class FrameError extends Error {
    constructor(message) {
        super(message);
        this.name = "FrameError";
    }
}
exports.FrameError = FrameError;
/** Why {@link Extension.run} gave up before `ready`. */
class HandshakeError extends Error {
    constructor(message) {
        super(message);
        this.name = "HandshakeError";
    }
}
exports.HandshakeError = HandshakeError;
const HOST_TYPES = new Set([
    "hello_ack",
    "command_invoked",
    "tool_call",
    "tool_cancel",
    "event",
    "event_intercept",
    "panel_key",
    "panel_close",
    "panel_resize",
    "shutdown",
]);
/** Whether a decoded frame is one of the types {@link HostToExtFrame} lists. */
function isKnownHostFrame(frame) {
    return HOST_TYPES.has(frame.type);
}
/**
 * Decodes one line from the host (without its newline). Accepts any JSON
 * object with a string `type`, including types and fields this SDK does not
 * know; throws {@link FrameError} for anything else.
 */
function decodeFrame(line) {
    let value;
    try {
        value = JSON.parse(line);
    }
    catch (err) {
        throw new FrameError(`not json: ${messageOf(err)}`);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
        throw new FrameError("not a json object");
    }
    const type = value.type;
    if (typeof type !== "string") {
        throw new FrameError("missing \"type\"");
    }
    return value;
}
function textField(o, key) {
    const v = o[key];
    return typeof v === "string" ? v : "";
}
function optional(out, key, value, keep) {
    if (keep)
        out[key] = value;
}
function wireContent(block) {
    if (block.type === "image") {
        return { type: "image", mime_type: textField(block, "mime_type"), data: textField(block, "data") };
    }
    return { type: "text", text: textField(block, "text") };
}
function wirePanel(p) {
    const out = { id: textField(p, "id") };
    optional(out, "title", p.title, typeof p.title === "string");
    optional(out, "lines", p.lines, Array.isArray(p.lines));
    optional(out, "footer", p.footer, typeof p.footer === "string");
    return out;
}
/**
 * Encodes an extension frame as one wire line (no newline). Known frame
 * types keep exactly their protocol fields, in protocol order; an optional
 * field that is absent (undefined) is left out, so `details: null` is kept
 * (it clears state) while a missing `details` is not sent.
 */
function encodeFrame(frame) {
    const line = JSON.stringify(canonical(frame));
    // JSON.stringify escapes a lone surrogate as `\udXXX`, which no UTF-8
    // JSON reader accepts; such strings are made well-formed (U+FFFD) first.
    // The check is cheap and almost never true, so the common path is one pass.
    return line.includes("\\ud") ? JSON.stringify(wellFormed(JSON.parse(line))) : line;
}
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
function wellFormed(v) {
    if (typeof v === "string")
        return v.replace(LONE_SURROGATE, "\ufffd");
    if (Array.isArray(v))
        return v.map(wellFormed);
    if (v !== null && typeof v === "object") {
        const out = {};
        for (const [k, x] of Object.entries(v))
            out[wellFormed(k)] = wellFormed(x);
        return out;
    }
    return v;
}
function canonical(f) {
    const has = (k) => f[k] !== undefined;
    const out = { type: f.type };
    const copy = (...keys) => {
        for (const k of keys)
            if (has(k))
                out[k] = f[k];
    };
    switch (f.type) {
        case "hello":
            copy("protocol_version", "name", "version", "capabilities");
            break;
        case "register_command":
            copy("name", "description");
            break;
        case "register_tool":
            copy("name", "description", "schema", "deferred", "interactive");
            break;
        case "subscribe":
            copy("events", "intercept");
            break;
        case "tool_result":
            copy("id");
            out.content = Array.isArray(f.content)
                ? f.content.map((b) => wireContent((b ?? {})))
                : [];
            copy("is_error", "activate_tools", "details");
            break;
        case "command_response":
            copy("id", "action", "prompt", "insert", "display");
            if (f.open_panel && typeof f.open_panel === "object") {
                out.open_panel = wirePanel(f.open_panel);
            }
            copy("error");
            break;
        case "event_intercept_response":
            copy("id", "block", "reason", "modified_args", "replace_text");
            if (Array.isArray(f.replace_content)) {
                out.replace_content = f.replace_content.map((b) => wireContent((b ?? {})));
            }
            copy("context", "decision");
            break;
        case "tool_progress":
            copy("id", "message", "progress", "total");
            break;
        case "unregister_tool":
        case "unregister_command":
            copy("name");
            break;
        case "notify":
            copy("level", "message");
            break;
        case "status":
            copy("key", "level", "text");
            break;
        case "widget":
            copy("id", "position", "title", "lines");
            break;
        case "widget_clear":
            copy("id");
            break;
        case "alert":
            copy("kind", "reason");
            break;
        case "submit":
        case "submit_slash":
            copy("text");
            break;
        case "open_panel":
            out.panel = wirePanel((f.panel ?? {}));
            break;
        case "panel_render":
            copy("panel_id", "title", "lines", "footer");
            break;
        case "panel_close":
            copy("panel_id");
            break;
        default:
            // ready, clear_notes, shutdown_ack carry nothing else; anything else
            // is not ours to judge, so it goes out as given.
            for (const k of Object.keys(f))
                if (has(k))
                    out[k] = f[k];
    }
    return out;
}
/** Widget placement; the host treats anything else as `above_input`. */
exports.WIDGET_ABOVE_INPUT = "above_input";
/** The one alert kind hosts act on: ring the terminal bell. */
exports.ALERT_BELL = "bell";
// ---------------------------------------------------------------------------
// Helpers.
/** Submit `text` as a new user message (the agent runs a turn). */
function prompt(text) {
    return { action: "prompt", prompt: text };
}
/** Put `text` into the editor at the cursor, without sending it. */
function insert(text) {
    return { action: "insert", insert: text };
}
/** Show `text` as a one-off note; nothing reaches the model. */
function display(text) {
    return { action: "display", display: text };
}
/** Open an interactive panel owned by this extension (see {@link Extension.onPanelKey}). */
function openPanelResponse(panel) {
    return { action: "open_panel", openPanel: panel };
}
/** Nothing for the host to do (the extension handled it, e.g. with notify). */
function noop() {
    return { action: "noop" };
}
/** Report a failure: the host shows `message` as an error. */
function error(message) {
    return { action: "noop", error: message };
}
/** A text block. */
function text(s) {
    return { type: "text", text: s };
}
/** An image block from base64 data. */
function image(mimeType, base64) {
    return { type: "image", mimeType, data: base64 };
}
/** An image block from raw bytes (encoded here). */
function imageBytes(mimeType, raw) {
    return image(mimeType, Buffer.from(raw).toString("base64"));
}
/** A successful result holding one text block. */
function textResult(s) {
    return { content: [text(s)] };
}
/** A failed result holding one text block; the model sees the message. */
function errorResult(s) {
    return { content: [text(s)], isError: true };
}
/** An agent-end verdict that continues the prompt, telling the model `reason`. */
function keepGoing(reason) {
    return { block: true, reason };
}
// ---------------------------------------------------------------------------
// Typed tool arguments: a small schema builder.
/**
 * A JSON Schema together with the TypeScript type it describes and a check
 * of untrusted values against it. Build one with {@link s}.
 */
class Schema {
    /** @internal */
    constructor(
    /** The JSON Schema sent in `register_tool`. */
    json, 
    /** @internal The first way `v` breaks the schema, or undefined. */
    check, 
    /** @internal Optional object fields may be absent. */
    optional = false) {
        this.json = json;
        this.check = check;
        this.optional = optional;
    }
    /** The same schema with a `description` (shown to the model). */
    describe(description) {
        return new Schema({ ...this.json, description }, this.check, this.optional);
    }
}
exports.Schema = Schema;
function kindOf(v) {
    if (v === null)
        return "null";
    if (Array.isArray(v))
        return "array";
    if (typeof v === "number")
        return Number.isInteger(v) ? "integer" : "number";
    return typeof v;
}
function where(path) {
    return path ? `field "${path}"` : "arguments";
}
function primitive(type, ok) {
    return new Schema({ type }, (v, path) => (ok(v) ? undefined : `${where(path)} must be ${type}, got ${kindOf(v)}`));
}
/** The schema builder: `s.object({ city: s.string(), days: s.optional(s.integer()) })`. */
exports.s = {
    string: () => primitive("string", (v) => typeof v === "string"),
    number: () => primitive("number", (v) => typeof v === "number" && Number.isFinite(v)),
    integer: () => primitive("integer", (v) => typeof v === "number" && Number.isInteger(v)),
    boolean: () => primitive("boolean", (v) => typeof v === "boolean"),
    /** One of the given strings or numbers. */
    enum: (values) => new Schema({ enum: [...values] }, (v, path) => values.includes(v)
        ? undefined
        : `${where(path)} must be one of ${values.map((x) => JSON.stringify(x)).join(", ")}`),
    array: (items) => new Schema({ type: "array", items: items.json }, (v, path) => {
        if (!Array.isArray(v))
            return `${where(path)} must be array, got ${kindOf(v)}`;
        for (let i = 0; i < v.length; i++) {
            const err = items.check(v[i], `${path}[${i}]`);
            if (err)
                return err;
        }
        return undefined;
    }),
    /** A field that may be absent (or null). */
    optional: (inner) => new Schema(inner.json, (v, path) => (v === undefined || v === null ? undefined : inner.check(v, path)), true),
    object: (props) => {
        const required = Object.keys(props).filter((k) => !props[k].optional);
        const json = { type: "object", properties: {} };
        for (const [k, p] of Object.entries(props))
            json.properties[k] = p.json;
        if (required.length > 0)
            json.required = required;
        return new Schema(json, (v, path) => {
            if (v === null || typeof v !== "object" || Array.isArray(v))
                return `${where(path)} must be object, got ${kindOf(v)}`;
            const o = v;
            for (const k of required) {
                if (!(k in o))
                    return `missing required field "${path ? `${path}.${k}` : k}"`;
            }
            for (const [k, p] of Object.entries(props)) {
                if (k in o) {
                    const err = p.check(o[k], path ? `${path}.${k}` : k);
                    if (err)
                        return err;
                }
            }
            return undefined;
        });
    },
};
// ---------------------------------------------------------------------------
// Per-branch state.
/**
 * State that belongs to the active session branch, managed for you; made by
 * {@link Extension.state}. It starts as a copy of the default; a session
 * event (opened, switched, forked, compacted) restores the branch's stored
 * snapshot, or the default when the branch has none. Set it in a tool
 * handler and the SDK saves it as that tool result's `details`; a tool that
 * returns `details` itself sets it too.
 */
class BranchState {
    /** @internal */
    constructor(initial) {
        this.initial = initial;
        this.dirty = false;
        this.current = copyJson(initial);
    }
    /** The current branch's state. */
    get value() {
        return this.current;
    }
    set value(v) {
        this.set(v);
    }
    /** Replaces the state; it is saved with the next tool result. */
    set(v) {
        this.current = v;
        this.dirty = true;
    }
    /** Sets the state to `fn(current)` and returns it. */
    update(fn) {
        this.set(fn(this.current));
        return this.current;
    }
    /** @internal */
    restore(state) {
        this.current = state === undefined || state === null ? copyJson(this.initial) : state;
        this.dirty = false;
    }
    /** @internal The value to save, or undefined when nothing changed. */
    take() {
        if (!this.dirty)
            return undefined;
        this.dirty = false;
        return this.current;
    }
    /** @internal */
    saved(details) {
        this.current = details;
        this.dirty = false;
    }
}
exports.BranchState = BranchState;
function copyJson(v) {
    return v === undefined ? v : JSON.parse(JSON.stringify(v));
}
// ---------------------------------------------------------------------------
// Conversions at the edge.
function fromWireSession(s) {
    if (!s || typeof s !== "object")
        return undefined;
    const out = { id: typeof s.id === "string" ? s.id : "" };
    if (typeof s.parent_id === "string")
        out.parentId = s.parent_id;
    if (typeof s.path === "string")
        out.path = s.path;
    if (typeof s.cwd === "string")
        out.cwd = s.cwd;
    if (typeof s.fork_point === "number")
        out.forkPoint = s.fork_point;
    return out;
}
function str(v) {
    return typeof v === "string" ? v : "";
}
function toWirePanel(p) {
    return { id: p.id, title: p.title, lines: p.lines ?? [], footer: p.footer };
}
function toWireResult(id, r) {
    const frame = {
        type: "tool_result",
        id,
        content: (r.content ?? []).map(toWireContent),
    };
    if (r.isError)
        frame.is_error = true;
    if (r.activateTools && r.activateTools.length > 0)
        frame.activate_tools = r.activateTools;
    if (r.details !== undefined)
        frame.details = r.details;
    return frame;
}
function toWireResponse(id, r) {
    const frame = {
        type: "command_response",
        id,
        action: r.action || "noop",
    };
    if (r.prompt)
        frame.prompt = r.prompt;
    if (r.insert)
        frame.insert = r.insert;
    if (r.display)
        frame.display = r.display;
    if (r.openPanel)
        frame.open_panel = toWirePanel(r.openPanel);
    if (r.error)
        frame.error = r.error;
    return frame;
}
function messageOf(err) {
    if (err instanceof Error)
        return err.message;
    try {
        return String(err);
    }
    catch {
        return "unprintable error";
    }
}
function isThenable(v) {
    return v !== null && typeof v === "object" && typeof v.then === "function";
}
/**
 * The one answer path of every interception: `block` and `reason` from any
 * verdict, and, when it does not block, the event's own `fields` (those
 * left undefined, null or empty are not sent).
 */
function interception(call, fields) {
    return {
        call,
        answer: (verdict) => {
            // `verdict` is what `call` returned.
            const d = verdict;
            const out = {};
            if (d?.block)
                out.block = true;
            if (d?.reason)
                out.reason = d.reason;
            if (d && !d.block) {
                for (const [k, v] of Object.entries(fields(d))) {
                    if (v !== undefined && v !== null && v !== "")
                        out[k] = v;
                }
            }
            return out;
        },
    };
}
/**
 * Calls `f`, then `done` with its value or `failed` with what it threw or
 * rejected with. Synchronous handlers complete synchronously (no extra tick
 * on the hot path); the returned promise, if any, settles after `done`.
 */
function settle(f, done, failed) {
    let v;
    try {
        v = f();
    }
    catch (e) {
        failed(e);
        return undefined;
    }
    if (isThenable(v))
        return v.then(done, failed);
    done(v);
    return undefined;
}
function fromWireContent(c) {
    return c.type === "image" ? { type: "image", mimeType: str(c.mime_type), data: str(c.data) } : { type: "text", text: str(c.text) };
}
function toWireContent(c) {
    return c.type === "image" ? { type: "image", mime_type: c.mimeType, data: c.data } : { type: "text", text: c.text };
}
/** The API's view of an `event` or `event_intercept` frame. */
function eventOf(frame) {
    const f = frame;
    const ev = { name: str(f.event) };
    const session = fromWireSession(f.session);
    if (session)
        ev.session = session;
    if (f.state !== undefined)
        ev.state = f.state;
    if (typeof f.step === "number")
        ev.step = f.step;
    if (typeof f.stop === "string")
        ev.stop = f.stop;
    if (typeof f.error === "string")
        ev.error = f.error;
    if (typeof f.tool_id === "string")
        ev.toolId = f.tool_id;
    if (typeof f.tool_name === "string")
        ev.toolName = f.tool_name;
    if (f.tool_args !== undefined)
        ev.toolArgs = f.tool_args;
    if (typeof f.tool_preview === "string")
        ev.toolPreview = f.tool_preview;
    if (typeof f.text === "string")
        ev.text = f.text;
    if (typeof f.is_error === "boolean")
        ev.isError = f.is_error;
    if (Array.isArray(f.content)) {
        ev.content = f.content.filter((b) => b !== null && typeof b === "object").map(fromWireContent);
    }
    if (typeof f.extension === "string")
        ev.extension = f.extension;
    if (typeof f.steps === "number")
        ev.steps = f.steps;
    if (typeof f.continued === "number")
        ev.continued = f.continued;
    return ev;
}
function registerFrame(t) {
    const frame = { type: "register_tool", name: t.name, description: t.description, schema: t.schema };
    if (t.deferred)
        frame.deferred = true;
    if (t.interactive)
        frame.interactive = true;
    return frame;
}
function argsObject(v) {
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : {};
}
/**
 * One extension: register handlers, then call {@link Extension.run}.
 *
 * ```ts
 * const ext = new Extension("hello", "1.0.0");
 * ext.command("hello", "say hi", (args) => display(`hi ${args}`));
 * ext.run();
 * ```
 */
class Extension {
    constructor(name, version, streams = {}) {
        this.commands = new Map();
        this.tools = new Map();
        this.events = new Map();
        this.panels = new Map();
        this.helloHooks = [];
        this.states = [];
        /** Interactive calls in flight, by correlation id. */
        this.running = new Map();
        this.phase = "idle";
        this.announced = false;
        this.pending = "";
        this.queue = [];
        this.busy = false;
        this.eof = false;
        /** For inputs that deliver bytes: keeps a character split across chunks whole. */
        this.decoder = new TextDecoderImpl();
        this.name = name;
        this.version = version;
        this.input = streams.input ?? process.stdin;
        this.output = streams.output ?? process.stdout;
        this.errors = streams.errors ?? process.stderr;
    }
    // -- registration ---------------------------------------------------------
    /** Runs `fn` with the host's info after `hello_ack`, before registrations are sent. */
    onHello(fn) {
        this.helloHooks.push(fn);
        return this;
    }
    /**
     * A slash command `/name`; `args` is what the user typed after it, trimmed.
     * Registered after `ready`, it is announced at once (hosts with the
     * `late_registration` feature).
     */
    command(name, description, handler) {
        this.commands.set(name, { description, handler });
        if (this.announced)
            this.send({ type: "register_command", name, description });
        return this;
    }
    tool(name, description, schema, handler) {
        return this.addTool(this.entry(name, description, schema, false, handler));
    }
    deferredTool(name, description, schema, handler) {
        return this.addTool(this.entry(name, description, schema, true, handler));
    }
    entry(name, description, schema, deferred, handler) {
        if (schema instanceof Schema) {
            return { name, description, schema: schema.json, deferred, interactive: false, plain: handler, typed: schema };
        }
        return { name, description, schema, deferred, interactive: false, plain: handler };
    }
    /** Withdraws a tool; the host stops offering it (`late_registration`). */
    unregisterTool(name) {
        this.tools.delete(name);
        if (this.announced)
            this.send({ type: "unregister_tool", name });
    }
    /** Withdraws a command (`late_registration`). */
    unregisterCommand(name) {
        this.commands.delete(name);
        if (this.announced)
            this.send({ type: "unregister_command", name });
    }
    /** Reports progress of the tool call `id` (see {@link ToolContext.progress}). */
    toolProgress(id, message, progress, total) {
        const frame = { type: "tool_progress", id };
        if (message !== undefined)
            frame.message = message;
        if (progress !== undefined)
            frame.progress = progress;
        if (total !== undefined)
            frame.total = total;
        this.send(frame);
    }
    /**
     * A {@link BranchState} that follows the active session branch; subscribes
     * to the session events that carry state. Call it before {@link Extension.run}.
     */
    state(initial) {
        const st = new BranchState(initial);
        this.states.push(st);
        for (const name of STATE_EVENTS)
            if (!this.events.has(name))
                this.events.set(name, () => undefined);
        return st;
    }
    /**
     * A tool that waits for a person (no host reply deadline). Its handler must
     * give up when `ctx.signal` aborts; whatever it returns after that is dropped.
     */
    interactiveTool(name, description, schema, handler) {
        return this.addTool({ name, description, schema, deferred: false, interactive: true, ctx: handler });
    }
    /** Observe a lifecycle event (one handler per name; a second call replaces the first). */
    on(event, handler) {
        const fresh = !this.events.has(event);
        this.events.set(event, handler);
        if (this.announced && fresh)
            this.send({ type: "subscribe", events: [event], intercept: [] });
        return this;
    }
    lateIntercept(kind, fresh) {
        if (this.announced && fresh)
            this.send({ type: "subscribe", events: [], intercept: [kind] });
        return this;
    }
    /** Block or rewrite tool calls before they run, or approve them / ask for confirmation. */
    interceptToolCall(fn) {
        const fresh = !this.toolCallInterceptor;
        this.toolCallInterceptor = fn;
        return this.lateIntercept("tool_call", fresh);
    }
    /** Block a turn before the model is called, or add hidden context to it. */
    interceptTurnStart(fn) {
        const fresh = !this.turnStartInterceptor;
        this.turnStartInterceptor = fn;
        return this.lateIntercept("turn_start", fresh);
    }
    /** Suppress or rewrite the assistant's text before the user sees it. */
    interceptAssistantMessage(fn) {
        const fresh = !this.assistantMessageInterceptor;
        this.assistantMessageInterceptor = fn;
        return this.lateIntercept("assistant_message", fresh);
    }
    /** Judge each prompt before its first turn: block it, rewrite it, or add hidden context. */
    interceptUserMessage(fn) {
        const fresh = !this.userMessageInterceptor;
        this.userMessageInterceptor = fn;
        return this.lateIntercept("user_message", fresh);
    }
    /**
     * See every tool's result before the model does (`event` has `toolId`,
     * `toolName`, `toolArgs`, `isError`, `content`, `extension`): replace it,
     * withhold it, or add hidden context.
     */
    interceptToolResult(fn) {
        const fresh = !this.toolResultInterceptor;
        this.toolResultInterceptor = fn;
        return this.lateIntercept("tool_result", fresh);
    }
    /** See the end of each prompt (`event.text`, `steps`, `continued`); {@link keepGoing} continues it. */
    interceptAgentEnd(fn) {
        const fresh = !this.agentEndInterceptor;
        this.agentEndInterceptor = fn;
        return this.lateIntercept("agent_end", fresh);
    }
    /**
     * Callbacks for a panel this extension opened: `onKey` for each key the
     * user presses (`text` is the character for key `rune`), `onClose` when the
     * user closes it. An omitted callback keeps the one registered before.
     */
    onPanelKey(panelId, onKey, onClose) {
        const entry = this.panels.get(panelId) ?? {};
        if (onKey)
            entry.onKey = onKey;
        if (onClose)
            entry.onClose = onClose;
        this.panels.set(panelId, entry);
        return this;
    }
    /** Forget a panel's callbacks (for example once it is closed). */
    forgetPanel(panelId) {
        this.panels.delete(panelId);
    }
    addTool(t) {
        this.tools.set(t.name, t);
        if (this.announced)
            this.send(registerFrame(t));
        return this;
    }
    // -- runtime calls (fire and forget) ---------------------------------------
    /** Writes `[name] msg` to stderr, which zut keeps in the extension's log. */
    log(msg) {
        try {
            this.errors.write(`[${this.name}] ${msg}\n`);
        }
        catch {
            // stderr gone: nothing left to tell
        }
    }
    /** A one-off note for the user. */
    notify(level, message) {
        this.send({ type: "notify", level, message });
    }
    /** Set a persistent status item; empty text removes it. */
    setStatus(key, text, level) {
        const frame = { type: "status", key, text };
        if (level)
            frame.level = level;
        this.send(frame);
    }
    /** Remove a status item. */
    clearStatus(key) {
        this.send({ type: "status", key, text: "" });
    }
    /** Set or replace a persistent widget. */
    setWidget(id, position, title, lines) {
        this.send({ type: "widget", id, position: position || exports.WIDGET_ABOVE_INPUT, title, lines });
    }
    /** Remove a widget. */
    clearWidget(id) {
        this.send({ type: "widget_clear", id });
    }
    /** Ask the host for an alert (kind {@link ALERT_BELL}); `reason` is metadata. */
    alert(kind, reason) {
        this.send({ type: "alert", kind, reason });
    }
    /** Remove every note this extension showed. */
    clearNotes() {
        this.send({ type: "clear_notes" });
    }
    /** Send `text` as if the user typed it (interactive host only). */
    submit(text) {
        this.send({ type: "submit", text });
    }
    /** Run a slash command (text starting with `/`) as if the user typed it. */
    submitSlash(text) {
        this.send({ type: "submit_slash", text });
    }
    /** Open a panel without a command (for example from an interactive tool). */
    openPanel(id, title, lines, footer) {
        this.send({ type: "open_panel", panel: { id, title, lines, footer } });
    }
    /** Redraw an open panel. */
    renderPanel(id, title, lines, footer) {
        this.send({ type: "panel_render", panel_id: id, title, lines, footer });
    }
    /** Close a panel this extension opened. */
    closePanel(id) {
        this.send({ type: "panel_close", panel_id: id });
    }
    send(frame) {
        if (this.phase !== "running" && this.phase !== "handshake")
            return;
        this.write(frame);
    }
    write(frame) {
        try {
            this.output.write(encodeFrame(frame) + "\n");
        }
        catch (err) {
            this.log(`write failed: ${messageOf(err)}`);
        }
    }
    // -- the loop -------------------------------------------------------------
    /**
     * Sends `hello`, waits for `hello_ack`, runs the {@link Extension.onHello}
     * callbacks, announces every registration, sends `ready`, then serves the
     * host until `shutdown` or the end of stdin, when the promise resolves.
     *
     * When the handshake fails (the first line is not a `hello_ack`, or names
     * another protocol major), the reason goes to stderr, `process.exitCode`
     * becomes 1 and the promise rejects with a {@link HandshakeError}. That
     * rejection is already marked handled, so `ext.run()` without `await` still
     * ends the process quietly with status 1.
     */
    run() {
        if (this.phase !== "idle")
            return Promise.reject(new Error("run called twice"));
        const done = new Promise((resolve, reject) => {
            this.finish = (err) => {
                if (err)
                    reject(err);
                else
                    resolve();
            };
        });
        done.catch(() => undefined);
        this.phase = "handshake";
        this.output.on?.("error", (err) => {
            // EPIPE once the host is gone: stop quietly, the host decides our fate.
            this.log(`stdout: ${messageOf(err)}`);
            this.stop();
        });
        this.write({
            type: "hello",
            protocol_version: exports.PROTOCOL_VERSION,
            name: this.name,
            version: this.version,
            capabilities: [...exports.CAPABILITIES],
        });
        this.input.setEncoding?.("utf8");
        this.input.on("data", (chunk) => this.onData(chunk));
        this.input.on("end", () => this.onEnd());
        this.input.on("close", () => this.onEnd());
        this.input.on("error", (err) => {
            this.log(`stdin: ${messageOf(err)}`);
            this.onEnd();
        });
        return done;
    }
    onData(chunk) {
        if (this.phase === "done")
            return;
        this.pending += typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
        let start = 0;
        let nl = this.pending.indexOf("\n", start);
        while (nl !== -1) {
            this.queue.push(this.pending.slice(start, nl));
            start = nl + 1;
            nl = this.pending.indexOf("\n", start);
        }
        if (start > 0)
            this.pending = this.pending.slice(start);
        this.pump();
    }
    onEnd() {
        if (this.eof)
            return;
        this.eof = true;
        if (this.pending.length > 0) {
            // A last line without its newline still counts.
            this.queue.push(this.pending);
            this.pending = "";
        }
        this.pump();
    }
    /** Handles queued lines in order, pausing while an ordered handler runs. */
    pump() {
        while (!this.busy && this.queue.length > 0 && this.phase !== "done") {
            let line = this.queue.shift();
            if (line.endsWith("\r"))
                line = line.slice(0, -1);
            if (line.trim() === "")
                continue;
            const wait = this.phase === "handshake" ? this.handshake(line) : this.dispatch(line);
            if (wait) {
                this.busy = true;
                wait.then(() => {
                    this.busy = false;
                    this.pump();
                }, (err) => {
                    this.busy = false;
                    this.log(`internal error: ${messageOf(err)}`);
                    this.pump();
                });
            }
        }
        if (!this.busy && this.queue.length === 0 && this.eof && this.phase !== "done") {
            // End of input: the host is gone (or never spoke). Not an error.
            this.stop();
        }
    }
    fail(message) {
        this.log(message);
        process.exitCode = 1;
        this.stop(new HandshakeError(message));
    }
    stop(err) {
        if (this.phase === "done")
            return;
        this.phase = "done";
        for (const c of this.running.values())
            c.abort(new Error("extension stopping"));
        this.running.clear();
        this.input.removeAllListeners?.("data");
        this.input.pause?.();
        this.input.destroy?.();
        this.finish?.(err);
    }
    handshake(line) {
        let frame;
        try {
            frame = decodeFrame(line);
        }
        catch (err) {
            this.fail(`parse hello_ack: ${messageOf(err)}`);
            return undefined;
        }
        if (frame.type !== "hello_ack") {
            this.fail(`first host frame must be hello_ack (got "${frame.type}")`);
            return undefined;
        }
        const ack = frame;
        if (ack.protocol_version !== exports.PROTOCOL_VERSION) {
            this.fail(`unsupported host protocol version ${JSON.stringify(ack.protocol_version ?? null)} (want ${exports.PROTOCOL_VERSION})`);
            return undefined;
        }
        const host = {
            protocolVersion: ack.protocol_version,
            zutVersion: str(ack.zut_version),
            provider: str(ack.provider),
            model: str(ack.model),
            cwd: str(ack.cwd),
            extensionDir: str(ack.extension_dir),
            dataDir: str(ack.data_dir),
            features: Array.isArray(ack.features) ? ack.features.filter((f) => typeof f === "string") : [],
        };
        const session = fromWireSession(ack.session);
        if (session)
            host.session = session;
        this.host = host;
        this.phase = "running";
        return this.runHelloHooks(host, 0);
    }
    runHelloHooks(host, from) {
        for (let i = from; i < this.helloHooks.length; i++) {
            const hook = this.helloHooks[i];
            const wait = settle(() => hook(host), () => undefined, (err) => this.log(`onHello failed: ${messageOf(err)}`));
            if (wait)
                return wait.then(() => this.runHelloHooks(host, i + 1));
        }
        this.announce();
        return undefined;
    }
    announce() {
        if (this.phase !== "running")
            return;
        for (const [name, c] of this.commands) {
            this.write({ type: "register_command", name, description: c.description });
        }
        for (const t of this.tools.values())
            this.write(registerFrame(t));
        const intercept = [];
        if (this.toolCallInterceptor)
            intercept.push("tool_call");
        if (this.turnStartInterceptor)
            intercept.push("turn_start");
        if (this.assistantMessageInterceptor)
            intercept.push("assistant_message");
        if (this.userMessageInterceptor)
            intercept.push("user_message");
        if (this.toolResultInterceptor)
            intercept.push("tool_result");
        if (this.agentEndInterceptor)
            intercept.push("agent_end");
        if (this.events.size > 0 || intercept.length > 0) {
            this.write({ type: "subscribe", events: [...this.events.keys()], intercept });
        }
        this.write({ type: "ready" });
        this.announced = true;
    }
    dispatch(line) {
        let frame;
        try {
            frame = decodeFrame(line);
        }
        catch (err) {
            this.log(`malformed frame skipped: ${messageOf(err)}`);
            return undefined;
        }
        if (!isKnownHostFrame(frame)) {
            this.log(`unknown frame type "${frame.type}" skipped`);
            return undefined;
        }
        switch (frame.type) {
            case "hello_ack":
                return undefined; // a repeat changes nothing
            case "command_invoked":
                this.onCommand(str(frame.id), str(frame.name), str(frame.args));
                return undefined;
            case "tool_call":
                this.onToolCall(str(frame.id), str(frame.name), argsObject(frame.args));
                return undefined;
            case "tool_cancel": {
                const c = this.running.get(str(frame.id));
                if (c) {
                    this.running.delete(str(frame.id));
                    c.abort(new Error("cancelled by the host"));
                }
                return undefined;
            }
            case "event":
                return this.onEvent(frame);
            case "event_intercept":
                this.onIntercept(frame);
                return undefined;
            case "panel_key": {
                const p = this.panels.get(str(frame.panel_id));
                const onKey = p?.onKey;
                if (onKey)
                    this.background(`panel ${frame.panel_id} key handler`, () => onKey(str(frame.key), str(frame.text)));
                return undefined;
            }
            case "panel_close": {
                const p = this.panels.get(str(frame.panel_id));
                const onClose = p?.onClose;
                if (onClose)
                    this.background(`panel ${frame.panel_id} close handler`, () => onClose());
                return undefined;
            }
            case "panel_resize":
                return undefined;
            case "shutdown":
                this.write({ type: "shutdown_ack" });
                this.stop();
                return undefined;
        }
    }
    background(what, f) {
        settle(f, () => undefined, (err) => this.log(`${what} failed: ${messageOf(err)}`));
    }
    onCommand(id, name, args) {
        const c = this.commands.get(name);
        if (!c) {
            this.send(toWireResponse(id, error(`no handler for /${name}`)));
            return;
        }
        settle(() => c.handler(args), (r) => this.send(toWireResponse(id, r ?? noop())), (err) => this.send(toWireResponse(id, error(`panic: ${messageOf(err)}`))));
    }
    onToolCall(id, name, args) {
        const t = this.tools.get(name);
        if (!t) {
            this.send(toWireResult(id, errorResult(`no handler for tool "${name}"`)));
            return;
        }
        // Registered before the handler starts, so a cancel that arrives at
        // any point after this reaches it.
        const controller = new AbortControllerImpl();
        this.running.set(id, controller);
        const ctx = {
            id,
            signal: controller.signal,
            progress: (message, progress, total) => {
                if (!controller.signal.aborted)
                    this.toolProgress(id, message, progress, total);
            },
        };
        const answer = (r) => {
            if (controller.signal.aborted)
                return; // the host stopped waiting
            this.running.delete(id);
            this.send(toWireResult(id, this.withState(r ?? textResult(""))));
        };
        const failed = (err) => answer(errorResult(`panic: ${messageOf(err)}`));
        if (t.interactive && t.ctx) {
            const handler = t.ctx;
            settle(() => handler(ctx, args), answer, failed);
            return;
        }
        if (t.typed) {
            const err = t.typed.check(args, "");
            if (err) {
                answer(errorResult(`invalid arguments for ${name}: ${err}`));
                return;
            }
        }
        const handler = t.plain;
        settle(() => handler(args, ctx), answer, failed);
    }
    /** Puts changed branch state into the result's `details` (one state: the value itself). */
    withState(r) {
        if (this.states.length === 0)
            return r;
        if (r.details !== undefined) {
            for (const st of this.states)
                st.saved(r.details);
            return r;
        }
        const changed = this.states.map((st) => st.take());
        if (changed.every((c) => c === undefined))
            return r;
        const details = this.states.length === 1 ? this.states[0].value : this.states.map((st) => st.value);
        return { ...r, details };
    }
    onEvent(frame) {
        if (STATE_EVENTS.includes(str(frame.event)))
            for (const st of this.states)
                st.restore(frame.state);
        const handler = this.events.get(str(frame.event));
        if (!handler)
            return undefined;
        const ev = eventOf(frame);
        return settle(() => handler(ev), () => undefined, (err) => this.log(`event ${ev.name} handler failed: ${messageOf(err)}`));
    }
    onIntercept(frame) {
        const id = str(frame.id);
        const reply = (fields) => this.send({ type: "event_intercept_response", id, ...fields });
        const asked = this.interceptionOf(frame);
        // No interceptor (or an interception this SDK does not know): allow, so the host never waits.
        if (!asked)
            return reply({});
        settle(asked.call, (d) => reply(asked.answer(d)), (err) => reply({ block: true, reason: `intercept panic: ${messageOf(err)}` }));
    }
    /** The interceptor call for `frame`, and the fields each verdict sets when it does not block. */
    interceptionOf(frame) {
        switch (frame.event) {
            case "tool_call": {
                const f = this.toolCallInterceptor;
                return f && interception(() => f(str(frame.tool_name), argsObject(frame.tool_args)), (d) => ({
                    modified_args: d.modifiedArgs,
                    decision: d.decision === "approve" || d.decision === "ask" ? d.decision : undefined,
                }));
            }
            case "turn_start": {
                const f = this.turnStartInterceptor;
                return f && interception(() => f(typeof frame.step === "number" ? frame.step : 0), (d) => ({ context: d.context }));
            }
            case "assistant_message": {
                const f = this.assistantMessageInterceptor;
                const original = str(frame.text);
                return f && interception(() => f(original), (d) => ({ replace_text: d.replaceText !== original ? d.replaceText : undefined }));
            }
            case "user_message": {
                const f = this.userMessageInterceptor;
                const original = str(frame.text);
                return f && interception(() => f(original), (d) => ({ replace_text: d.replaceText !== original ? d.replaceText : undefined, context: d.context }));
            }
            case "tool_result": {
                const f = this.toolResultInterceptor;
                return f && interception(() => f(eventOf(frame)), (d) => ({
                    replace_content: Array.isArray(d.replaceContent) ? d.replaceContent.map(toWireContent) : undefined,
                    context: d.context,
                }));
            }
            case "agent_end": {
                const f = this.agentEndInterceptor;
                return f && interception(() => f(eventOf(frame)), () => ({}));
            }
            default:
                return undefined;
        }
    }
}
exports.Extension = Extension;
