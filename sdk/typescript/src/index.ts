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

// ---------------------------------------------------------------------------
// The few Node built-ins this file uses, declared here so that neither the
// build nor the published declarations depend on @types/node.

/** The readable side of a byte or text stream (process.stdin by default). */
export interface InputStream {
  on(event: "data", listener: (chunk: string | Uint8Array) => void): unknown;
  on(event: "end" | "close", listener: () => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  removeAllListeners?(event?: string): unknown;
  setEncoding?(encoding: "utf8"): unknown;
  pause?(): unknown;
  destroy?(): unknown;
}

/** The writable side of a stream (process.stdout and process.stderr by default). */
export interface OutputStream {
  write(chunk: string, callback?: (err?: Error | null) => void): boolean;
  on?(event: "error", listener: (err: Error) => void): unknown;
}

declare const process: {
  stdin: InputStream;
  stdout: OutputStream;
  stderr: OutputStream;
  exitCode?: number;
};

declare const Buffer: {
  from(data: Uint8Array): { toString(encoding: "base64"): string };
};

declare global {
  /** Cancellation signal handed to interactive tools (the web platform's type). */
  interface AbortSignal {
    readonly aborted: boolean;
    readonly reason: any;
    addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
    removeEventListener(type: "abort", listener: () => void): void;
  }
}

interface AbortControllerLike {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

const TextDecoderImpl = (globalThis as unknown as {
  TextDecoder: new () => { decode(bytes: Uint8Array, options: { stream: boolean }): string };
}).TextDecoder;

const AbortControllerImpl = (globalThis as unknown as {
  AbortController: new () => AbortControllerLike;
}).AbortController;

// ---------------------------------------------------------------------------
// JSON and the wire format.

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** The major protocol version this SDK speaks; the host must answer with the same. */
export const PROTOCOL_VERSION = 2;

/** What `hello` advertises: everything the SDK can handle, including `tool_cancel`. */
export const CAPABILITIES: readonly string[] = [
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

/**
 * Interceptable events, in the order `subscribe` lists them. The last three
 * are protocol additions: hosts that have them list their features in
 * `hello_ack.features` ({@link HostInfo.features}).
 */
export type InterceptKind =
  | "tool_call"
  | "turn_start"
  | "assistant_message"
  | "user_message"
  | "tool_result"
  | "agent_end";

/** Session events that carry this extension's stored state. */
const STATE_EVENTS = ["session_opened", "session_switched", "session_forked", "session_compacted"];

/** The branch identity zut reports in `hello_ack` and in session events. */
export interface WireSession {
  id: string;
  parent_id?: string;
  path?: string;
  cwd?: string;
  fork_point?: number;
}

/** One block of a tool result: text, or a base64-encoded image. */
export type WireContent =
  | { type: "text"; text: string }
  | { type: "image"; mime_type: string; data: string };

/** The panel a `command_response` of action `open_panel` or an `open_panel` frame shows. */
export interface WirePanel {
  id: string;
  title?: string;
  lines?: string[];
  footer?: string;
}

/** Frames an extension writes (stdout). */
export type ExtToHostFrame =
  | { type: "hello"; protocol_version: number; name: string; version: string; capabilities: string[] }
  | { type: "register_command"; name: string; description: string }
  | {
      type: "register_tool";
      name: string;
      description: string;
      schema: Json;
      deferred?: boolean;
      interactive?: boolean;
    }
  | { type: "subscribe"; events: string[]; intercept: string[] }
  | { type: "ready" }
  | {
      type: "tool_result";
      id: string;
      content: WireContent[];
      is_error?: boolean;
      activate_tools?: string[];
      details?: Json;
    }
  | {
      type: "command_response";
      id: string;
      action: string;
      prompt?: string;
      insert?: string;
      display?: string;
      open_panel?: WirePanel;
      error?: string;
    }
  | {
      type: "event_intercept_response";
      id: string;
      block?: boolean;
      reason?: string;
      modified_args?: Json;
      replace_text?: string;
      replace_content?: WireContent[];
      context?: string;
      decision?: "approve" | "ask";
    }
  | { type: "tool_progress"; id: string; message?: string; progress?: number; total?: number }
  | { type: "unregister_tool"; name: string }
  | { type: "unregister_command"; name: string }
  | { type: "notify"; level: string; message: string }
  | { type: "status"; key: string; level?: string; text: string }
  | { type: "widget"; id: string; position: string; title: string; lines: string[] }
  | { type: "widget_clear"; id: string }
  | { type: "alert"; kind: string; reason: string }
  | { type: "clear_notes" }
  | { type: "submit"; text: string }
  | { type: "submit_slash"; text: string }
  | { type: "open_panel"; panel: WirePanel }
  | { type: "panel_render"; panel_id: string; title?: string; lines?: string[]; footer?: string }
  | { type: "panel_close"; panel_id: string }
  | { type: "shutdown_ack" };

/** Frames the host writes (stdin). Unknown types decode as {@link UnknownFrame}. */
export type HostToExtFrame =
  | {
      type: "hello_ack";
      protocol_version: number;
      zut_version?: string;
      provider?: string;
      model?: string;
      cwd?: string;
      extension_dir?: string;
      data_dir?: string;
      session?: WireSession;
      features?: string[];
    }
  | { type: "command_invoked"; id: string; name: string; args?: string }
  | { type: "tool_call"; id: string; name: string; args?: Json }
  | { type: "tool_cancel"; id: string }
  | {
      type: "event";
      event: string;
      session?: WireSession;
      state?: Json;
      step?: number;
      stop?: string;
      error?: string;
      tool_id?: string;
      tool_name?: string;
      tool_args?: Json;
      tool_preview?: string;
      text?: string;
      is_error?: boolean;
      content?: WireContent[];
      extension?: string;
      steps?: number;
      continued?: number;
    }
  | {
      type: "event_intercept";
      id: string;
      event: string;
      tool_id?: string;
      tool_name?: string;
      tool_args?: Json;
      step?: number;
      text?: string;
      is_error?: boolean;
      content?: WireContent[];
      extension?: string;
      steps?: number;
      continued?: number;
    }
  | { type: "panel_key"; panel_id: string; key: string; text?: string }
  | { type: "panel_close"; panel_id: string }
  | { type: "panel_resize"; panel_id: string; width?: number; height?: number }
  | { type: "shutdown" };

/** A host frame of a type this SDK does not know; tolerated and skipped. */
export interface UnknownFrame {
  type: string;
  [field: string]: unknown;
}

/** Why a line is not a frame. */
export class FrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FrameError";
  }
}

/** Why {@link Extension.run} gave up before `ready`. */
export class HandshakeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HandshakeError";
  }
}

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
export function isKnownHostFrame(frame: HostToExtFrame | UnknownFrame): frame is HostToExtFrame {
  return HOST_TYPES.has(frame.type);
}

/**
 * Decodes one line from the host (without its newline). Accepts any JSON
 * object with a string `type`, including types and fields this SDK does not
 * know; throws {@link FrameError} for anything else.
 */
export function decodeFrame(line: string): HostToExtFrame | UnknownFrame {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    throw new FrameError(`not json: ${messageOf(err)}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new FrameError("not a json object");
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== "string") {
    throw new FrameError("missing \"type\"");
  }
  return value as HostToExtFrame | UnknownFrame;
}

function textField(o: Record<string, unknown>, key: string): string {
  const v = o[key];
  return typeof v === "string" ? v : "";
}

function optional<T extends object>(out: T, key: string, value: unknown, keep: boolean): void {
  if (keep) (out as Record<string, unknown>)[key] = value;
}

function wireContent(block: Record<string, unknown>): WireContent {
  if (block.type === "image") {
    return { type: "image", mime_type: textField(block, "mime_type"), data: textField(block, "data") };
  }
  return { type: "text", text: textField(block, "text") };
}

function wirePanel(p: Record<string, unknown>): WirePanel {
  const out: WirePanel = { id: textField(p, "id") };
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
export function encodeFrame(frame: ExtToHostFrame): string {
  const line = JSON.stringify(canonical(frame as unknown as Record<string, unknown>));
  // JSON.stringify escapes a lone surrogate as `\udXXX`, which no UTF-8
  // JSON reader accepts; such strings are made well-formed (U+FFFD) first.
  // The check is cheap and almost never true, so the common path is one pass.
  return line.includes("\\ud") ? JSON.stringify(wellFormed(JSON.parse(line))) : line;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function wellFormed(v: unknown): unknown {
  if (typeof v === "string") return v.replace(LONE_SURROGATE, "\ufffd");
  if (Array.isArray(v)) return v.map(wellFormed);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[wellFormed(k) as string] = wellFormed(x);
    return out;
  }
  return v;
}

function canonical(f: Record<string, unknown>): Record<string, unknown> {
  const has = (k: string) => f[k] !== undefined;
  const out: Record<string, unknown> = { type: f.type };
  const copy = (...keys: string[]) => {
    for (const k of keys) if (has(k)) out[k] = f[k];
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
        ? f.content.map((b) => wireContent((b ?? {}) as Record<string, unknown>))
        : [];
      copy("is_error", "activate_tools", "details");
      break;
    case "command_response":
      copy("id", "action", "prompt", "insert", "display");
      if (f.open_panel && typeof f.open_panel === "object") {
        out.open_panel = wirePanel(f.open_panel as Record<string, unknown>);
      }
      copy("error");
      break;
    case "event_intercept_response":
      copy("id", "block", "reason", "modified_args", "replace_text");
      if (Array.isArray(f.replace_content)) {
        out.replace_content = f.replace_content.map((b) => wireContent((b ?? {}) as Record<string, unknown>));
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
      out.panel = wirePanel((f.panel ?? {}) as Record<string, unknown>);
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
      for (const k of Object.keys(f)) if (has(k)) out[k] = f[k];
  }
  return out;
}

// ---------------------------------------------------------------------------
// The API's own types (camelCase), converted to and from the wire at the edge.

/** The branch identity of the active session. */
export interface Session {
  id: string;
  parentId?: string;
  path?: string;
  cwd?: string;
  forkPoint?: number;
}

/** What the host said about itself in `hello_ack`. */
export interface HostInfo {
  protocolVersion: number;
  zutVersion: string;
  provider: string;
  model: string;
  /** The user's project directory (the extension itself runs in its own directory). */
  cwd: string;
  extensionDir: string;
  /** Where the extension should keep its own files. */
  dataDir: string;
  /** Present when a session was already open when the extension started. */
  session?: Session;
  /** Protocol additions the host supports (`late_registration`, `tool_progress`, …). */
  features: string[];
}

/** A lifecycle event the extension subscribed to with {@link Extension.on}. */
export interface Event {
  name: string;
  session?: Session;
  /** This extension's own persisted state, on session events (absent when it has none). */
  state?: Json;
  step?: number;
  stop?: string;
  error?: string;
  toolId?: string;
  toolName?: string;
  toolArgs?: Json;
  toolPreview?: string;
  text?: string;
  /** `tool_result`: the tool failed. */
  isError?: boolean;
  /** `tool_result`: the blocks the tool returned. */
  content?: Content[];
  /** `tool_result`: the extension that served the call (absent for built-in tools). */
  extension?: string;
  /** `agent_end`: model steps of this prompt so far. */
  steps?: number;
  /** `agent_end`: how often this prompt was already continued. */
  continued?: number;
}

/** Panel contents. Lines are shown as given; the host draws the frame. */
export interface Panel {
  id: string;
  title: string;
  lines: string[];
  footer: string;
}

/** What a slash command answers. Build one with the helpers ({@link display}, …). */
export interface Response {
  action: "prompt" | "insert" | "display" | "open_panel" | "noop" | "";
  prompt?: string;
  insert?: string;
  display?: string;
  openPanel?: Panel;
  /** Shown as an error whatever the action. */
  error?: string;
}

/** One block of tool output. */
export type Content =
  | { type: "text"; text: string }
  | { type: "image"; mimeType: string; data: string };

/** What a tool answers. Build one with {@link textResult}, {@link errorResult}, or by hand. */
export interface ToolResult {
  content: Content[];
  isError?: boolean;
  /** Deferred tools of this extension that become available after this result. */
  activateTools?: string[];
  /**
   * Opaque state zut stores for the active session branch and hands back in
   * session events. `undefined` sends nothing; `null` clears the stored state.
   */
  details?: Json;
}

/** A tool-call interceptor's verdict. The empty object allows the call unchanged. */
export interface ToolCallDecision {
  block?: boolean;
  reason?: string;
  /** The complete replacement arguments (ignored when blocking). */
  modifiedArgs?: JsonObject;
  /**
   * `approve`: this call skips the confirmation dialog; `ask`: it needs
   * confirmation even under `--yolo`. Across extensions: block > ask > approve > allow.
   */
  decision?: "approve" | "ask";
}

/** A user-message interceptor's verdict on the prompt as typed. */
export interface UserMessageDecision {
  /** Drop the prompt; the user sees `reason`. */
  block?: boolean;
  reason?: string;
  /** What the model sees and the session saves instead (ignored when blocking). */
  replaceText?: string;
  /** Hidden context sent with every request of this prompt, never saved. */
  context?: string;
}

/** A tool-result interceptor's verdict, before the model sees the result. */
export interface ToolResultDecision {
  /** Withhold the result: the model gets an error result reading `reason`. */
  block?: boolean;
  reason?: string;
  /** The blocks the model and the transcript get instead (ignored when blocking). */
  replaceContent?: Content[];
  /** Hidden context for the next request. */
  context?: string;
}

/** An agent-end interceptor's verdict: `block` means "keep going" and `reason` goes to the model. */
export interface AgentEndDecision {
  block?: boolean;
  reason?: string;
}

/** A turn-start interceptor's verdict. */
export interface TurnStartDecision {
  block?: boolean;
  reason?: string;
  /** Hidden context for the upcoming model request only (ignored when blocking). */
  context?: string;
}

/** An assistant-message interceptor's verdict. */
export interface AssistantMessageDecision {
  block?: boolean;
  reason?: string;
  /** The text the user sees instead (ignored when blocking, empty, or unchanged). */
  replaceText?: string;
}

/** Levels for {@link Extension.notify} and {@link Extension.setStatus}. */
export type Level = "info" | "success" | "warn" | "error";

/** Widget placement; the host treats anything else as `above_input`. */
export const WIDGET_ABOVE_INPUT = "above_input";

/** The one alert kind hosts act on: ring the terminal bell. */
export const ALERT_BELL = "bell";

/** Tool arguments as the model produced them (a JSON object). */
export type ToolArgs = { [key: string]: Json };

/** What an interactive tool's handler gets besides its arguments. */
export interface ToolContext {
  /** The call's correlation id. */
  id: string;
  /**
   * Aborted when the host cancels the call (`tool_cancel`), on `shutdown`, or
   * when stdin closes. A result returned after that is discarded.
   */
  signal: AbortSignal;
  /**
   * Tells the host the call is alive (`tool_progress`); on hosts with the
   * `tool_progress` feature each report restarts the call's reply deadline.
   */
  progress(message?: string, progress?: number, total?: number): void;
}

type MaybePromise<T> = T | Promise<T>;

export type CommandHandler = (args: string) => MaybePromise<Response>;
export type ToolHandler = (args: ToolArgs, ctx: ToolContext) => MaybePromise<ToolResult>;
export type InteractiveToolHandler = (ctx: ToolContext, args: ToolArgs) => MaybePromise<ToolResult>;
export type EventHandler = (event: Event) => MaybePromise<void>;
export type ToolCallInterceptor = (tool: string, args: ToolArgs) => MaybePromise<ToolCallDecision>;
export type TurnStartInterceptor = (step: number) => MaybePromise<TurnStartDecision>;
export type AssistantMessageInterceptor = (text: string) => MaybePromise<AssistantMessageDecision>;
export type UserMessageInterceptor = (text: string) => MaybePromise<UserMessageDecision>;
export type ToolResultInterceptor = (event: Event) => MaybePromise<ToolResultDecision>;
export type AgentEndInterceptor = (event: Event) => MaybePromise<AgentEndDecision>;
export type PanelKeyHandler = (key: string, text: string) => MaybePromise<void>;
export type PanelCloseHandler = () => MaybePromise<void>;

// ---------------------------------------------------------------------------
// Helpers.

/** Submit `text` as a new user message (the agent runs a turn). */
export function prompt(text: string): Response {
  return { action: "prompt", prompt: text };
}

/** Put `text` into the editor at the cursor, without sending it. */
export function insert(text: string): Response {
  return { action: "insert", insert: text };
}

/** Show `text` as a one-off note; nothing reaches the model. */
export function display(text: string): Response {
  return { action: "display", display: text };
}

/** Open an interactive panel owned by this extension (see {@link Extension.onPanelKey}). */
export function openPanelResponse(panel: Panel): Response {
  return { action: "open_panel", openPanel: panel };
}

/** Nothing for the host to do (the extension handled it, e.g. with notify). */
export function noop(): Response {
  return { action: "noop" };
}

/** Report a failure: the host shows `message` as an error. */
export function error(message: string): Response {
  return { action: "noop", error: message };
}

/** A text block. */
export function text(s: string): Content {
  return { type: "text", text: s };
}

/** An image block from base64 data. */
export function image(mimeType: string, base64: string): Content {
  return { type: "image", mimeType, data: base64 };
}

/** An image block from raw bytes (encoded here). */
export function imageBytes(mimeType: string, raw: Uint8Array): Content {
  return image(mimeType, Buffer.from(raw).toString("base64"));
}

/** A successful result holding one text block. */
export function textResult(s: string): ToolResult {
  return { content: [text(s)] };
}

/** A failed result holding one text block; the model sees the message. */
export function errorResult(s: string): ToolResult {
  return { content: [text(s)], isError: true };
}

/** An agent-end verdict that continues the prompt, telling the model `reason`. */
export function keepGoing(reason: string): AgentEndDecision {
  return { block: true, reason };
}

// ---------------------------------------------------------------------------
// Typed tool arguments: a small schema builder.

/**
 * A JSON Schema together with the TypeScript type it describes and a check
 * of untrusted values against it. Build one with {@link s}.
 */
export class Schema<T> {
  /** Phantom: the described type, for {@link Infer}. */
  declare readonly __type?: T;
  /** @internal */
  constructor(
    /** The JSON Schema sent in `register_tool`. */
    readonly json: JsonObject,
    /** @internal The first way `v` breaks the schema, or undefined. */
    readonly check: (v: unknown, path: string) => string | undefined,
    /** @internal Optional object fields may be absent. */
    readonly optional = false,
  ) {}

  /** The same schema with a `description` (shown to the model). */
  describe(description: string): Schema<T> {
    return new Schema<T>({ ...this.json, description }, this.check, this.optional);
  }
}

/** The TypeScript type a {@link Schema} describes. */
export type Infer<S> = S extends Schema<infer T> ? T : never;

type Shape = { [key: string]: Schema<unknown> };
type OptionalKeys<P extends Shape> = { [K in keyof P]: P[K] extends Schema<infer T> ? (undefined extends T ? K : never) : never }[keyof P];
type ObjectOf<P extends Shape> = { [K in Exclude<keyof P, OptionalKeys<P>>]: Infer<P[K]> } & {
  [K in OptionalKeys<P>]?: Infer<P[K]>;
};

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function where(path: string): string {
  return path ? `field "${path}"` : "arguments";
}

function primitive<T>(type: string, ok: (v: unknown) => boolean): Schema<T> {
  return new Schema<T>({ type }, (v, path) => (ok(v) ? undefined : `${where(path)} must be ${type}, got ${kindOf(v)}`));
}

/** The schema builder: `s.object({ city: s.string(), days: s.optional(s.integer()) })`. */
export const s = {
  string: (): Schema<string> => primitive("string", (v) => typeof v === "string"),
  number: (): Schema<number> => primitive("number", (v) => typeof v === "number" && Number.isFinite(v)),
  integer: (): Schema<number> => primitive("integer", (v) => typeof v === "number" && Number.isInteger(v)),
  boolean: (): Schema<boolean> => primitive("boolean", (v) => typeof v === "boolean"),
  /** One of the given strings or numbers. */
  enum: <const V extends readonly (string | number)[]>(values: V): Schema<V[number]> =>
    new Schema<V[number]>({ enum: [...values] as Json[] }, (v, path) =>
      values.includes(v as V[number])
        ? undefined
        : `${where(path)} must be one of ${values.map((x) => JSON.stringify(x)).join(", ")}`,
    ),
  array: <T>(items: Schema<T>): Schema<T[]> =>
    new Schema<T[]>({ type: "array", items: items.json }, (v, path) => {
      if (!Array.isArray(v)) return `${where(path)} must be array, got ${kindOf(v)}`;
      for (let i = 0; i < v.length; i++) {
        const err = items.check(v[i], `${path}[${i}]`);
        if (err) return err;
      }
      return undefined;
    }),
  /** A field that may be absent (or null). */
  optional: <T>(inner: Schema<T>): Schema<T | undefined> =>
    new Schema<T | undefined>(inner.json, (v, path) => (v === undefined || v === null ? undefined : inner.check(v, path)), true),
  object: <P extends Shape>(props: P): Schema<ObjectOf<P>> => {
    const required = Object.keys(props).filter((k) => !props[k].optional);
    const json: JsonObject = { type: "object", properties: {} };
    for (const [k, p] of Object.entries(props)) (json.properties as JsonObject)[k] = p.json;
    if (required.length > 0) json.required = required;
    return new Schema<ObjectOf<P>>(json, (v, path) => {
      if (v === null || typeof v !== "object" || Array.isArray(v)) return `${where(path)} must be object, got ${kindOf(v)}`;
      const o = v as Record<string, unknown>;
      for (const k of required) {
        if (!(k in o)) return `missing required field "${path ? `${path}.${k}` : k}"`;
      }
      for (const [k, p] of Object.entries(props)) {
        if (k in o) {
          const err = p.check(o[k], path ? `${path}.${k}` : k);
          if (err) return err;
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
export class BranchState<T extends Json> {
  private current: T;
  private dirty = false;

  /** @internal */
  constructor(private readonly initial: T) {
    this.current = copyJson(initial);
  }

  /** The current branch's state. */
  get value(): T {
    return this.current;
  }

  set value(v: T) {
    this.set(v);
  }

  /** Replaces the state; it is saved with the next tool result. */
  set(v: T): void {
    this.current = v;
    this.dirty = true;
  }

  /** Sets the state to `fn(current)` and returns it. */
  update(fn: (current: T) => T): T {
    this.set(fn(this.current));
    return this.current;
  }

  /** @internal */
  restore(state: Json | undefined): void {
    this.current = state === undefined || state === null ? copyJson(this.initial) : (state as T);
    this.dirty = false;
  }

  /** @internal The value to save, or undefined when nothing changed. */
  take(): T | undefined {
    if (!this.dirty) return undefined;
    this.dirty = false;
    return this.current;
  }

  /** @internal */
  saved(details: Json): void {
    this.current = details as T;
    this.dirty = false;
  }
}

function copyJson<T extends Json>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

// ---------------------------------------------------------------------------
// Conversions at the edge.

function fromWireSession(s: WireSession | undefined): Session | undefined {
  if (!s || typeof s !== "object") return undefined;
  const out: Session = { id: typeof s.id === "string" ? s.id : "" };
  if (typeof s.parent_id === "string") out.parentId = s.parent_id;
  if (typeof s.path === "string") out.path = s.path;
  if (typeof s.cwd === "string") out.cwd = s.cwd;
  if (typeof s.fork_point === "number") out.forkPoint = s.fork_point;
  return out;
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function toWirePanel(p: Panel): WirePanel {
  return { id: p.id, title: p.title, lines: p.lines ?? [], footer: p.footer };
}

function toWireResult(id: string, r: ToolResult): ExtToHostFrame {
  const frame: Extract<ExtToHostFrame, { type: "tool_result" }> = {
    type: "tool_result",
    id,
    content: (r.content ?? []).map(toWireContent),
  };
  if (r.isError) frame.is_error = true;
  if (r.activateTools && r.activateTools.length > 0) frame.activate_tools = r.activateTools;
  if (r.details !== undefined) frame.details = r.details;
  return frame;
}

function toWireResponse(id: string, r: Response): ExtToHostFrame {
  const frame: Extract<ExtToHostFrame, { type: "command_response" }> = {
    type: "command_response",
    id,
    action: r.action || "noop",
  };
  if (r.prompt) frame.prompt = r.prompt;
  if (r.insert) frame.insert = r.insert;
  if (r.display) frame.display = r.display;
  if (r.openPanel) frame.open_panel = toWirePanel(r.openPanel);
  if (r.error) frame.error = r.error;
  return frame;
}

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return String(err);
  } catch {
    return "unprintable error";
  }
}

function isThenable<T>(v: MaybePromise<T>): v is Promise<T> {
  return v !== null && typeof v === "object" && typeof (v as { then?: unknown }).then === "function";
}

/** The fields of an `event_intercept_response` besides its type and id. */
type InterceptAnswer = Omit<Extract<ExtToHostFrame, { type: "event_intercept_response" }>, "type" | "id">;

/** What every interceptor's verdict has. */
interface Verdict {
  block?: boolean;
  reason?: string;
}

/** One interception: the interceptor's call, and the answer its verdict makes. */
interface Interception {
  call: () => MaybePromise<unknown>;
  answer: (verdict: unknown) => InterceptAnswer;
}

/**
 * The one answer path of every interception: `block` and `reason` from any
 * verdict, and, when it does not block, the event's own `fields` (those
 * left undefined, null or empty are not sent).
 */
function interception<D extends Verdict>(
  call: () => MaybePromise<D | undefined>,
  fields: (verdict: D) => InterceptAnswer,
): Interception {
  return {
    call,
    answer: (verdict) => {
      // `verdict` is what `call` returned.
      const d = verdict as D | undefined;
      const out: InterceptAnswer = {};
      if (d?.block) out.block = true;
      if (d?.reason) out.reason = d.reason;
      if (d && !d.block) {
        for (const [k, v] of Object.entries(fields(d))) {
          if (v !== undefined && v !== null && v !== "") (out as Record<string, unknown>)[k] = v;
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
function settle<T>(f: () => MaybePromise<T>, done: (v: T) => void, failed: (e: unknown) => void): Promise<void> | undefined {
  let v: MaybePromise<T>;
  try {
    v = f();
  } catch (e) {
    failed(e);
    return undefined;
  }
  if (isThenable(v)) return v.then(done, failed);
  done(v);
  return undefined;
}

function fromWireContent(c: WireContent): Content {
  return c.type === "image" ? { type: "image", mimeType: str(c.mime_type), data: str(c.data) } : { type: "text", text: str(c.text) };
}

function toWireContent(c: Content): WireContent {
  return c.type === "image" ? { type: "image", mime_type: c.mimeType, data: c.data } : { type: "text", text: c.text };
}

/** The API's view of an `event` or `event_intercept` frame. */
function eventOf(frame: Extract<HostToExtFrame, { type: "event" | "event_intercept" }>): Event {
  const f = frame as Extract<HostToExtFrame, { type: "event" }>;
  const ev: Event = { name: str(f.event) };
  const session = fromWireSession(f.session);
  if (session) ev.session = session;
  if (f.state !== undefined) ev.state = f.state;
  if (typeof f.step === "number") ev.step = f.step;
  if (typeof f.stop === "string") ev.stop = f.stop;
  if (typeof f.error === "string") ev.error = f.error;
  if (typeof f.tool_id === "string") ev.toolId = f.tool_id;
  if (typeof f.tool_name === "string") ev.toolName = f.tool_name;
  if (f.tool_args !== undefined) ev.toolArgs = f.tool_args;
  if (typeof f.tool_preview === "string") ev.toolPreview = f.tool_preview;
  if (typeof f.text === "string") ev.text = f.text;
  if (typeof f.is_error === "boolean") ev.isError = f.is_error;
  if (Array.isArray(f.content)) {
    ev.content = f.content.filter((b) => b !== null && typeof b === "object").map(fromWireContent);
  }
  if (typeof f.extension === "string") ev.extension = f.extension;
  if (typeof f.steps === "number") ev.steps = f.steps;
  if (typeof f.continued === "number") ev.continued = f.continued;
  return ev;
}

function registerFrame(t: ToolEntry): ExtToHostFrame {
  const frame: ExtToHostFrame = { type: "register_tool", name: t.name, description: t.description, schema: t.schema };
  if (t.deferred) frame.deferred = true;
  if (t.interactive) frame.interactive = true;
  return frame;
}

function argsObject(v: unknown): ToolArgs {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as ToolArgs) : {};
}

// ---------------------------------------------------------------------------
// The extension.

/** Where an {@link Extension} reads and writes; the process's stdio by default. */
export interface Streams {
  input?: InputStream;
  output?: OutputStream;
  errors?: OutputStream;
}

interface ToolEntry {
  name: string;
  description: string;
  schema: Json;
  deferred: boolean;
  interactive: boolean;
  plain?: ToolHandler;
  ctx?: InteractiveToolHandler;
  /** Arguments are checked against this before the handler runs. */
  typed?: Schema<unknown>;
}

interface PanelEntry {
  onKey?: PanelKeyHandler;
  onClose?: PanelCloseHandler;
}

type Phase = "idle" | "handshake" | "running" | "done";

/**
 * One extension: register handlers, then call {@link Extension.run}.
 *
 * ```ts
 * const ext = new Extension("hello", "1.0.0");
 * ext.command("hello", "say hi", (args) => display(`hi ${args}`));
 * ext.run();
 * ```
 */
export class Extension {
  readonly name: string;
  readonly version: string;
  /** Filled in from `hello_ack` before {@link Extension.onHello} callbacks run. */
  host: HostInfo | undefined;

  private readonly input: InputStream;
  private readonly output: OutputStream;
  private readonly errors: OutputStream;

  private readonly commands = new Map<string, { description: string; handler: CommandHandler }>();
  private readonly tools = new Map<string, ToolEntry>();
  private readonly events = new Map<string, EventHandler>();
  private readonly panels = new Map<string, PanelEntry>();
  private readonly helloHooks: ((host: HostInfo) => MaybePromise<void>)[] = [];
  private toolCallInterceptor: ToolCallInterceptor | undefined;
  private turnStartInterceptor: TurnStartInterceptor | undefined;
  private assistantMessageInterceptor: AssistantMessageInterceptor | undefined;
  private userMessageInterceptor: UserMessageInterceptor | undefined;
  private toolResultInterceptor: ToolResultInterceptor | undefined;
  private agentEndInterceptor: AgentEndInterceptor | undefined;
  private readonly states: BranchState<Json>[] = [];

  /** Interactive calls in flight, by correlation id. */
  private readonly running = new Map<string, AbortControllerLike>();

  private phase: Phase = "idle";
  private announced = false;
  private pending = "";
  private readonly queue: string[] = [];
  private busy = false;
  private eof = false;
  private finish: ((err?: Error) => void) | undefined;
  /** For inputs that deliver bytes: keeps a character split across chunks whole. */
  private readonly decoder = new TextDecoderImpl();

  constructor(name: string, version: string, streams: Streams = {}) {
    this.name = name;
    this.version = version;
    this.input = streams.input ?? process.stdin;
    this.output = streams.output ?? process.stdout;
    this.errors = streams.errors ?? process.stderr;
  }

  // -- registration ---------------------------------------------------------

  /** Runs `fn` with the host's info after `hello_ack`, before registrations are sent. */
  onHello(fn: (host: HostInfo) => MaybePromise<void>): this {
    this.helloHooks.push(fn);
    return this;
  }

  /**
   * A slash command `/name`; `args` is what the user typed after it, trimmed.
   * Registered after `ready`, it is announced at once (hosts with the
   * `late_registration` feature).
   */
  command(name: string, description: string, handler: CommandHandler): this {
    this.commands.set(name, { description, handler });
    if (this.announced) this.send({ type: "register_command", name, description });
    return this;
  }

  /**
   * A tool the model can call. With a {@link Schema} from {@link s}, the
   * model's arguments are checked before the handler runs (a mismatch answers
   * an error result naming the field) and the handler gets them typed; with
   * a plain JSON Schema it gets them as sent. The handler's second argument
   * is the call's {@link ToolContext} (id, cancellation, progress).
   * Registered after `ready`, the tool is announced at once.
   */
  tool<S extends Schema<any>>(
    name: string,
    description: string,
    schema: S,
    handler: (args: Infer<S>, ctx: ToolContext) => MaybePromise<ToolResult>,
  ): this;
  tool(name: string, description: string, schema: Json, handler: ToolHandler): this;
  tool(name: string, description: string, schema: Json | Schema<any>, handler: (args: any, ctx: ToolContext) => MaybePromise<ToolResult>): this {
    return this.addTool(this.entry(name, description, schema, false, handler));
  }

  /** A tool the model only sees once a result names it in `activateTools`. */
  deferredTool<S extends Schema<any>>(
    name: string,
    description: string,
    schema: S,
    handler: (args: Infer<S>, ctx: ToolContext) => MaybePromise<ToolResult>,
  ): this;
  deferredTool(name: string, description: string, schema: Json, handler: ToolHandler): this;
  deferredTool(name: string, description: string, schema: Json | Schema<any>, handler: (args: any, ctx: ToolContext) => MaybePromise<ToolResult>): this {
    return this.addTool(this.entry(name, description, schema, true, handler));
  }

  private entry(name: string, description: string, schema: Json | Schema<any>, deferred: boolean, handler: ToolHandler): ToolEntry {
    if (schema instanceof Schema) {
      return { name, description, schema: schema.json, deferred, interactive: false, plain: handler, typed: schema };
    }
    return { name, description, schema, deferred, interactive: false, plain: handler };
  }

  /** Withdraws a tool; the host stops offering it (`late_registration`). */
  unregisterTool(name: string): void {
    this.tools.delete(name);
    if (this.announced) this.send({ type: "unregister_tool", name });
  }

  /** Withdraws a command (`late_registration`). */
  unregisterCommand(name: string): void {
    this.commands.delete(name);
    if (this.announced) this.send({ type: "unregister_command", name });
  }

  /** Reports progress of the tool call `id` (see {@link ToolContext.progress}). */
  toolProgress(id: string, message?: string, progress?: number, total?: number): void {
    const frame: Extract<ExtToHostFrame, { type: "tool_progress" }> = { type: "tool_progress", id };
    if (message !== undefined) frame.message = message;
    if (progress !== undefined) frame.progress = progress;
    if (total !== undefined) frame.total = total;
    this.send(frame);
  }

  /**
   * A {@link BranchState} that follows the active session branch; subscribes
   * to the session events that carry state. Call it before {@link Extension.run}.
   */
  state<T extends Json>(initial: T): BranchState<T> {
    const st = new BranchState<T>(initial);
    this.states.push(st as unknown as BranchState<Json>);
    for (const name of STATE_EVENTS) if (!this.events.has(name)) this.events.set(name, () => undefined);
    return st;
  }

  /**
   * A tool that waits for a person (no host reply deadline). Its handler must
   * give up when `ctx.signal` aborts; whatever it returns after that is dropped.
   */
  interactiveTool(name: string, description: string, schema: Json, handler: InteractiveToolHandler): this {
    return this.addTool({ name, description, schema, deferred: false, interactive: true, ctx: handler });
  }

  /** Observe a lifecycle event (one handler per name; a second call replaces the first). */
  on(event: string, handler: EventHandler): this {
    const fresh = !this.events.has(event);
    this.events.set(event, handler);
    if (this.announced && fresh) this.send({ type: "subscribe", events: [event], intercept: [] });
    return this;
  }

  private lateIntercept(kind: InterceptKind, fresh: boolean): this {
    if (this.announced && fresh) this.send({ type: "subscribe", events: [], intercept: [kind] });
    return this;
  }

  /** Block or rewrite tool calls before they run, or approve them / ask for confirmation. */
  interceptToolCall(fn: ToolCallInterceptor): this {
    const fresh = !this.toolCallInterceptor;
    this.toolCallInterceptor = fn;
    return this.lateIntercept("tool_call", fresh);
  }

  /** Block a turn before the model is called, or add hidden context to it. */
  interceptTurnStart(fn: TurnStartInterceptor): this {
    const fresh = !this.turnStartInterceptor;
    this.turnStartInterceptor = fn;
    return this.lateIntercept("turn_start", fresh);
  }

  /** Suppress or rewrite the assistant's text before the user sees it. */
  interceptAssistantMessage(fn: AssistantMessageInterceptor): this {
    const fresh = !this.assistantMessageInterceptor;
    this.assistantMessageInterceptor = fn;
    return this.lateIntercept("assistant_message", fresh);
  }

  /** Judge each prompt before its first turn: block it, rewrite it, or add hidden context. */
  interceptUserMessage(fn: UserMessageInterceptor): this {
    const fresh = !this.userMessageInterceptor;
    this.userMessageInterceptor = fn;
    return this.lateIntercept("user_message", fresh);
  }

  /**
   * See every tool's result before the model does (`event` has `toolId`,
   * `toolName`, `toolArgs`, `isError`, `content`, `extension`): replace it,
   * withhold it, or add hidden context.
   */
  interceptToolResult(fn: ToolResultInterceptor): this {
    const fresh = !this.toolResultInterceptor;
    this.toolResultInterceptor = fn;
    return this.lateIntercept("tool_result", fresh);
  }

  /** See the end of each prompt (`event.text`, `steps`, `continued`); {@link keepGoing} continues it. */
  interceptAgentEnd(fn: AgentEndInterceptor): this {
    const fresh = !this.agentEndInterceptor;
    this.agentEndInterceptor = fn;
    return this.lateIntercept("agent_end", fresh);
  }

  /**
   * Callbacks for a panel this extension opened: `onKey` for each key the
   * user presses (`text` is the character for key `rune`), `onClose` when the
   * user closes it. An omitted callback keeps the one registered before.
   */
  onPanelKey(panelId: string, onKey?: PanelKeyHandler, onClose?: PanelCloseHandler): this {
    const entry = this.panels.get(panelId) ?? {};
    if (onKey) entry.onKey = onKey;
    if (onClose) entry.onClose = onClose;
    this.panels.set(panelId, entry);
    return this;
  }

  /** Forget a panel's callbacks (for example once it is closed). */
  forgetPanel(panelId: string): void {
    this.panels.delete(panelId);
  }

  private addTool(t: ToolEntry): this {
    this.tools.set(t.name, t);
    if (this.announced) this.send(registerFrame(t));
    return this;
  }

  // -- runtime calls (fire and forget) ---------------------------------------

  /** Writes `[name] msg` to stderr, which zut keeps in the extension's log. */
  log(msg: string): void {
    try {
      this.errors.write(`[${this.name}] ${msg}\n`);
    } catch {
      // stderr gone: nothing left to tell
    }
  }

  /** A one-off note for the user. */
  notify(level: Level | string, message: string): void {
    this.send({ type: "notify", level, message });
  }

  /** Set a persistent status item; empty text removes it. */
  setStatus(key: string, text: string, level?: Level | string): void {
    const frame: ExtToHostFrame = { type: "status", key, text };
    if (level) frame.level = level;
    this.send(frame);
  }

  /** Remove a status item. */
  clearStatus(key: string): void {
    this.send({ type: "status", key, text: "" });
  }

  /** Set or replace a persistent widget. */
  setWidget(id: string, position: string, title: string, lines: string[]): void {
    this.send({ type: "widget", id, position: position || WIDGET_ABOVE_INPUT, title, lines });
  }

  /** Remove a widget. */
  clearWidget(id: string): void {
    this.send({ type: "widget_clear", id });
  }

  /** Ask the host for an alert (kind {@link ALERT_BELL}); `reason` is metadata. */
  alert(kind: string, reason: string): void {
    this.send({ type: "alert", kind, reason });
  }

  /** Remove every note this extension showed. */
  clearNotes(): void {
    this.send({ type: "clear_notes" });
  }

  /** Send `text` as if the user typed it (interactive host only). */
  submit(text: string): void {
    this.send({ type: "submit", text });
  }

  /** Run a slash command (text starting with `/`) as if the user typed it. */
  submitSlash(text: string): void {
    this.send({ type: "submit_slash", text });
  }

  /** Open a panel without a command (for example from an interactive tool). */
  openPanel(id: string, title: string, lines: string[], footer: string): void {
    this.send({ type: "open_panel", panel: { id, title, lines, footer } });
  }

  /** Redraw an open panel. */
  renderPanel(id: string, title: string, lines: string[], footer: string): void {
    this.send({ type: "panel_render", panel_id: id, title, lines, footer });
  }

  /** Close a panel this extension opened. */
  closePanel(id: string): void {
    this.send({ type: "panel_close", panel_id: id });
  }

  private send(frame: ExtToHostFrame): void {
    if (this.phase !== "running" && this.phase !== "handshake") return;
    this.write(frame);
  }

  private write(frame: ExtToHostFrame): void {
    try {
      this.output.write(encodeFrame(frame) + "\n");
    } catch (err) {
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
  run(): Promise<void> {
    if (this.phase !== "idle") return Promise.reject(new Error("run called twice"));
    const done = new Promise<void>((resolve, reject) => {
      this.finish = (err?: Error) => {
        if (err) reject(err);
        else resolve();
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
      protocol_version: PROTOCOL_VERSION,
      name: this.name,
      version: this.version,
      capabilities: [...CAPABILITIES],
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

  private onData(chunk: string | Uint8Array): void {
    if (this.phase === "done") return;
    this.pending += typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    let start = 0;
    let nl = this.pending.indexOf("\n", start);
    while (nl !== -1) {
      this.queue.push(this.pending.slice(start, nl));
      start = nl + 1;
      nl = this.pending.indexOf("\n", start);
    }
    if (start > 0) this.pending = this.pending.slice(start);
    this.pump();
  }

  private onEnd(): void {
    if (this.eof) return;
    this.eof = true;
    if (this.pending.length > 0) {
      // A last line without its newline still counts.
      this.queue.push(this.pending);
      this.pending = "";
    }
    this.pump();
  }

  /** Handles queued lines in order, pausing while an ordered handler runs. */
  private pump(): void {
    while (!this.busy && this.queue.length > 0 && this.phase !== "done") {
      let line = this.queue.shift() as string;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line.trim() === "") continue;
      const wait = this.phase === "handshake" ? this.handshake(line) : this.dispatch(line);
      if (wait) {
        this.busy = true;
        wait.then(
          () => {
            this.busy = false;
            this.pump();
          },
          (err) => {
            this.busy = false;
            this.log(`internal error: ${messageOf(err)}`);
            this.pump();
          },
        );
      }
    }
    if (!this.busy && this.queue.length === 0 && this.eof && this.phase !== "done") {
      // End of input: the host is gone (or never spoke). Not an error.
      this.stop();
    }
  }

  private fail(message: string): void {
    this.log(message);
    process.exitCode = 1;
    this.stop(new HandshakeError(message));
  }

  private stop(err?: Error): void {
    if (this.phase === "done") return;
    this.phase = "done";
    for (const c of this.running.values()) c.abort(new Error("extension stopping"));
    this.running.clear();
    this.input.removeAllListeners?.("data");
    this.input.pause?.();
    this.input.destroy?.();
    this.finish?.(err);
  }

  private handshake(line: string): Promise<void> | undefined {
    let frame: HostToExtFrame | UnknownFrame;
    try {
      frame = decodeFrame(line);
    } catch (err) {
      this.fail(`parse hello_ack: ${messageOf(err)}`);
      return undefined;
    }
    if (frame.type !== "hello_ack") {
      this.fail(`first host frame must be hello_ack (got "${frame.type}")`);
      return undefined;
    }
    const ack = frame as Extract<HostToExtFrame, { type: "hello_ack" }>;
    if (ack.protocol_version !== PROTOCOL_VERSION) {
      this.fail(`unsupported host protocol version ${JSON.stringify(ack.protocol_version ?? null)} (want ${PROTOCOL_VERSION})`);
      return undefined;
    }
    const host: HostInfo = {
      protocolVersion: ack.protocol_version,
      zutVersion: str(ack.zut_version),
      provider: str(ack.provider),
      model: str(ack.model),
      cwd: str(ack.cwd),
      extensionDir: str(ack.extension_dir),
      dataDir: str(ack.data_dir),
      features: Array.isArray(ack.features) ? ack.features.filter((f): f is string => typeof f === "string") : [],
    };
    const session = fromWireSession(ack.session);
    if (session) host.session = session;
    this.host = host;
    this.phase = "running";
    return this.runHelloHooks(host, 0);
  }

  private runHelloHooks(host: HostInfo, from: number): Promise<void> | undefined {
    for (let i = from; i < this.helloHooks.length; i++) {
      const hook = this.helloHooks[i];
      const wait = settle(
        () => hook(host),
        () => undefined,
        (err) => this.log(`onHello failed: ${messageOf(err)}`),
      );
      if (wait) return wait.then(() => this.runHelloHooks(host, i + 1));
    }
    this.announce();
    return undefined;
  }

  private announce(): void {
    if (this.phase !== "running") return;
    for (const [name, c] of this.commands) {
      this.write({ type: "register_command", name, description: c.description });
    }
    for (const t of this.tools.values()) this.write(registerFrame(t));
    const intercept: InterceptKind[] = [];
    if (this.toolCallInterceptor) intercept.push("tool_call");
    if (this.turnStartInterceptor) intercept.push("turn_start");
    if (this.assistantMessageInterceptor) intercept.push("assistant_message");
    if (this.userMessageInterceptor) intercept.push("user_message");
    if (this.toolResultInterceptor) intercept.push("tool_result");
    if (this.agentEndInterceptor) intercept.push("agent_end");
    if (this.events.size > 0 || intercept.length > 0) {
      this.write({ type: "subscribe", events: [...this.events.keys()], intercept });
    }
    this.write({ type: "ready" });
    this.announced = true;
  }

  private dispatch(line: string): Promise<void> | undefined {
    let frame: HostToExtFrame | UnknownFrame;
    try {
      frame = decodeFrame(line);
    } catch (err) {
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
        if (onKey) this.background(`panel ${frame.panel_id} key handler`, () => onKey(str(frame.key), str(frame.text)));
        return undefined;
      }
      case "panel_close": {
        const p = this.panels.get(str(frame.panel_id));
        const onClose = p?.onClose;
        if (onClose) this.background(`panel ${frame.panel_id} close handler`, () => onClose());
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

  private background(what: string, f: () => MaybePromise<void>): void {
    settle(f, () => undefined, (err) => this.log(`${what} failed: ${messageOf(err)}`));
  }

  private onCommand(id: string, name: string, args: string): void {
    const c = this.commands.get(name);
    if (!c) {
      this.send(toWireResponse(id, error(`no handler for /${name}`)));
      return;
    }
    settle(
      () => c.handler(args),
      (r) => this.send(toWireResponse(id, r ?? noop())),
      (err) => this.send(toWireResponse(id, error(`panic: ${messageOf(err)}`))),
    );
  }

  private onToolCall(id: string, name: string, args: ToolArgs): void {
    const t = this.tools.get(name);
    if (!t) {
      this.send(toWireResult(id, errorResult(`no handler for tool "${name}"`)));
      return;
    }
    // Registered before the handler starts, so a cancel that arrives at
    // any point after this reaches it.
    const controller = new AbortControllerImpl();
    this.running.set(id, controller);
    const ctx: ToolContext = {
      id,
      signal: controller.signal,
      progress: (message?: string, progress?: number, total?: number) => {
        if (!controller.signal.aborted) this.toolProgress(id, message, progress, total);
      },
    };
    const answer = (r: ToolResult) => {
      if (controller.signal.aborted) return; // the host stopped waiting
      this.running.delete(id);
      this.send(toWireResult(id, this.withState(r ?? textResult(""))));
    };
    const failed = (err: unknown) => answer(errorResult(`panic: ${messageOf(err)}`));
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
    const handler = t.plain as ToolHandler;
    settle(() => handler(args, ctx), answer, failed);
  }

  /** Puts changed branch state into the result's `details` (one state: the value itself). */
  private withState(r: ToolResult): ToolResult {
    if (this.states.length === 0) return r;
    if (r.details !== undefined) {
      for (const st of this.states) st.saved(r.details);
      return r;
    }
    const changed = this.states.map((st) => st.take());
    if (changed.every((c) => c === undefined)) return r;
    const details: Json = this.states.length === 1 ? this.states[0].value : this.states.map((st) => st.value);
    return { ...r, details };
  }

  private onEvent(frame: Extract<HostToExtFrame, { type: "event" }>): Promise<void> | undefined {
    if (STATE_EVENTS.includes(str(frame.event))) for (const st of this.states) st.restore(frame.state);
    const handler = this.events.get(str(frame.event));
    if (!handler) return undefined;
    const ev = eventOf(frame);
    return settle(
      () => handler(ev),
      () => undefined,
      (err) => this.log(`event ${ev.name} handler failed: ${messageOf(err)}`),
    );
  }

  private onIntercept(frame: Extract<HostToExtFrame, { type: "event_intercept" }>): void {
    const id = str(frame.id);
    const reply = (fields: InterceptAnswer) => this.send({ type: "event_intercept_response", id, ...fields });
    const asked = this.interceptionOf(frame);
    // No interceptor (or an interception this SDK does not know): allow, so the host never waits.
    if (!asked) return reply({});
    settle(asked.call, (d) => reply(asked.answer(d)), (err) =>
      reply({ block: true, reason: `intercept panic: ${messageOf(err)}` }),
    );
  }

  /** The interceptor call for `frame`, and the fields each verdict sets when it does not block. */
  private interceptionOf(frame: Extract<HostToExtFrame, { type: "event_intercept" }>): Interception | undefined {
    switch (frame.event) {
      case "tool_call": {
        const f = this.toolCallInterceptor;
        return f && interception(
          () => f(str(frame.tool_name), argsObject(frame.tool_args)),
          (d) => ({
            modified_args: d.modifiedArgs,
            decision: d.decision === "approve" || d.decision === "ask" ? d.decision : undefined,
          }),
        );
      }
      case "turn_start": {
        const f = this.turnStartInterceptor;
        return f && interception(
          () => f(typeof frame.step === "number" ? frame.step : 0),
          (d) => ({ context: d.context }),
        );
      }
      case "assistant_message": {
        const f = this.assistantMessageInterceptor;
        const original = str(frame.text);
        return f && interception(
          () => f(original),
          (d) => ({ replace_text: d.replaceText !== original ? d.replaceText : undefined }),
        );
      }
      case "user_message": {
        const f = this.userMessageInterceptor;
        const original = str(frame.text);
        return f && interception(
          () => f(original),
          (d) => ({ replace_text: d.replaceText !== original ? d.replaceText : undefined, context: d.context }),
        );
      }
      case "tool_result": {
        const f = this.toolResultInterceptor;
        return f && interception(
          () => f(eventOf(frame)),
          (d) => ({
            replace_content: Array.isArray(d.replaceContent) ? d.replaceContent.map(toWireContent) : undefined,
            context: d.context,
          }),
        );
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

