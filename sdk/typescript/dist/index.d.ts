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
declare global {
    /** Cancellation signal handed to interactive tools (the web platform's type). */
    interface AbortSignal {
        readonly aborted: boolean;
        readonly reason: any;
        addEventListener(type: "abort", listener: () => void, options?: {
            once?: boolean;
        }): void;
        removeEventListener(type: "abort", listener: () => void): void;
    }
}
/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | {
    [key: string]: Json;
};
/** A JSON object. */
export type JsonObject = {
    [key: string]: Json;
};
/** The major protocol version this SDK speaks; the host must answer with the same. */
export declare const PROTOCOL_VERSION = 2;
/** What `hello` advertises: everything the SDK can handle, including `tool_cancel`. */
export declare const CAPABILITIES: readonly string[];
/**
 * Interceptable events, in the order `subscribe` lists them. The last three
 * are protocol additions: hosts that have them list their features in
 * `hello_ack.features` ({@link HostInfo.features}).
 */
export type InterceptKind = "tool_call" | "turn_start" | "assistant_message" | "user_message" | "tool_result" | "agent_end";
/** The branch identity zut reports in `hello_ack` and in session events. */
export interface WireSession {
    id: string;
    parent_id?: string;
    path?: string;
    cwd?: string;
    fork_point?: number;
}
/** One block of a tool result: text, or a base64-encoded image. */
export type WireContent = {
    type: "text";
    text: string;
} | {
    type: "image";
    mime_type: string;
    data: string;
};
/** The panel a `command_response` of action `open_panel` or an `open_panel` frame shows. */
export interface WirePanel {
    id: string;
    title?: string;
    lines?: string[];
    footer?: string;
}
/** Frames an extension writes (stdout). */
export type ExtToHostFrame = {
    type: "hello";
    protocol_version: number;
    name: string;
    version: string;
    capabilities: string[];
} | {
    type: "register_command";
    name: string;
    description: string;
} | {
    type: "register_tool";
    name: string;
    description: string;
    schema: Json;
    deferred?: boolean;
    interactive?: boolean;
} | {
    type: "subscribe";
    events: string[];
    intercept: string[];
} | {
    type: "ready";
} | {
    type: "tool_result";
    id: string;
    content: WireContent[];
    is_error?: boolean;
    activate_tools?: string[];
    details?: Json;
} | {
    type: "command_response";
    id: string;
    action: string;
    prompt?: string;
    insert?: string;
    display?: string;
    open_panel?: WirePanel;
    error?: string;
} | {
    type: "event_intercept_response";
    id: string;
    block?: boolean;
    reason?: string;
    modified_args?: Json;
    replace_text?: string;
    replace_content?: WireContent[];
    context?: string;
    decision?: "approve" | "ask";
} | {
    type: "tool_progress";
    id: string;
    message?: string;
    progress?: number;
    total?: number;
} | {
    type: "unregister_tool";
    name: string;
} | {
    type: "unregister_command";
    name: string;
} | {
    type: "notify";
    level: string;
    message: string;
} | {
    type: "status";
    key: string;
    level?: string;
    text: string;
} | {
    type: "widget";
    id: string;
    position: string;
    title: string;
    lines: string[];
} | {
    type: "widget_clear";
    id: string;
} | {
    type: "alert";
    kind: string;
    reason: string;
} | {
    type: "clear_notes";
} | {
    type: "submit";
    text: string;
} | {
    type: "submit_slash";
    text: string;
} | {
    type: "open_panel";
    panel: WirePanel;
} | {
    type: "panel_render";
    panel_id: string;
    title?: string;
    lines?: string[];
    footer?: string;
} | {
    type: "panel_close";
    panel_id: string;
} | {
    type: "shutdown_ack";
};
/** Frames the host writes (stdin). Unknown types decode as {@link UnknownFrame}. */
export type HostToExtFrame = {
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
} | {
    type: "command_invoked";
    id: string;
    name: string;
    args?: string;
} | {
    type: "tool_call";
    id: string;
    name: string;
    args?: Json;
} | {
    type: "tool_cancel";
    id: string;
} | {
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
} | {
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
} | {
    type: "panel_key";
    panel_id: string;
    key: string;
    text?: string;
} | {
    type: "panel_close";
    panel_id: string;
} | {
    type: "panel_resize";
    panel_id: string;
    width?: number;
    height?: number;
} | {
    type: "shutdown";
};
/** A host frame of a type this SDK does not know; tolerated and skipped. */
export interface UnknownFrame {
    type: string;
    [field: string]: unknown;
}
/** Why a line is not a frame. */
export declare class FrameError extends Error {
    constructor(message: string);
}
/** Why {@link Extension.run} gave up before `ready`. */
export declare class HandshakeError extends Error {
    constructor(message: string);
}
/** Whether a decoded frame is one of the types {@link HostToExtFrame} lists. */
export declare function isKnownHostFrame(frame: HostToExtFrame | UnknownFrame): frame is HostToExtFrame;
/**
 * Decodes one line from the host (without its newline). Accepts any JSON
 * object with a string `type`, including types and fields this SDK does not
 * know; throws {@link FrameError} for anything else.
 */
export declare function decodeFrame(line: string): HostToExtFrame | UnknownFrame;
/**
 * Encodes an extension frame as one wire line (no newline). Known frame
 * types keep exactly their protocol fields, in protocol order; an optional
 * field that is absent (undefined) is left out, so `details: null` is kept
 * (it clears state) while a missing `details` is not sent.
 */
export declare function encodeFrame(frame: ExtToHostFrame): string;
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
export type Content = {
    type: "text";
    text: string;
} | {
    type: "image";
    mimeType: string;
    data: string;
};
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
export declare const WIDGET_ABOVE_INPUT = "above_input";
/** The one alert kind hosts act on: ring the terminal bell. */
export declare const ALERT_BELL = "bell";
/** Tool arguments as the model produced them (a JSON object). */
export type ToolArgs = {
    [key: string]: Json;
};
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
/** Submit `text` as a new user message (the agent runs a turn). */
export declare function prompt(text: string): Response;
/** Put `text` into the editor at the cursor, without sending it. */
export declare function insert(text: string): Response;
/** Show `text` as a one-off note; nothing reaches the model. */
export declare function display(text: string): Response;
/** Open an interactive panel owned by this extension (see {@link Extension.onPanelKey}). */
export declare function openPanelResponse(panel: Panel): Response;
/** Nothing for the host to do (the extension handled it, e.g. with notify). */
export declare function noop(): Response;
/** Report a failure: the host shows `message` as an error. */
export declare function error(message: string): Response;
/** A text block. */
export declare function text(s: string): Content;
/** An image block from base64 data. */
export declare function image(mimeType: string, base64: string): Content;
/** An image block from raw bytes (encoded here). */
export declare function imageBytes(mimeType: string, raw: Uint8Array): Content;
/** A successful result holding one text block. */
export declare function textResult(s: string): ToolResult;
/** A failed result holding one text block; the model sees the message. */
export declare function errorResult(s: string): ToolResult;
/** An agent-end verdict that continues the prompt, telling the model `reason`. */
export declare function keepGoing(reason: string): AgentEndDecision;
/**
 * A JSON Schema together with the TypeScript type it describes and a check
 * of untrusted values against it. Build one with {@link s}.
 */
export declare class Schema<T> {
    /** The JSON Schema sent in `register_tool`. */
    readonly json: JsonObject;
    /** @internal The first way `v` breaks the schema, or undefined. */
    readonly check: (v: unknown, path: string) => string | undefined;
    /** @internal Optional object fields may be absent. */
    readonly optional: boolean;
    /** Phantom: the described type, for {@link Infer}. */
    readonly __type?: T;
    /** @internal */
    constructor(
    /** The JSON Schema sent in `register_tool`. */
    json: JsonObject, 
    /** @internal The first way `v` breaks the schema, or undefined. */
    check: (v: unknown, path: string) => string | undefined, 
    /** @internal Optional object fields may be absent. */
    optional?: boolean);
    /** The same schema with a `description` (shown to the model). */
    describe(description: string): Schema<T>;
}
/** The TypeScript type a {@link Schema} describes. */
export type Infer<S> = S extends Schema<infer T> ? T : never;
type Shape = {
    [key: string]: Schema<unknown>;
};
type OptionalKeys<P extends Shape> = {
    [K in keyof P]: P[K] extends Schema<infer T> ? (undefined extends T ? K : never) : never;
}[keyof P];
type ObjectOf<P extends Shape> = {
    [K in Exclude<keyof P, OptionalKeys<P>>]: Infer<P[K]>;
} & {
    [K in OptionalKeys<P>]?: Infer<P[K]>;
};
/** The schema builder: `s.object({ city: s.string(), days: s.optional(s.integer()) })`. */
export declare const s: {
    string: () => Schema<string>;
    number: () => Schema<number>;
    integer: () => Schema<number>;
    boolean: () => Schema<boolean>;
    /** One of the given strings or numbers. */
    enum: <const V extends readonly (string | number)[]>(values: V) => Schema<V[number]>;
    array: <T>(items: Schema<T>) => Schema<T[]>;
    /** A field that may be absent (or null). */
    optional: <T>(inner: Schema<T>) => Schema<T | undefined>;
    object: <P extends Shape>(props: P) => Schema<ObjectOf<P>>;
};
/**
 * State that belongs to the active session branch, managed for you; made by
 * {@link Extension.state}. It starts as a copy of the default; a session
 * event (opened, switched, forked, compacted) restores the branch's stored
 * snapshot, or the default when the branch has none. Set it in a tool
 * handler and the SDK saves it as that tool result's `details`; a tool that
 * returns `details` itself sets it too.
 */
export declare class BranchState<T extends Json> {
    private readonly initial;
    private current;
    private dirty;
    /** @internal */
    constructor(initial: T);
    /** The current branch's state. */
    get value(): T;
    set value(v: T);
    /** Replaces the state; it is saved with the next tool result. */
    set(v: T): void;
    /** Sets the state to `fn(current)` and returns it. */
    update(fn: (current: T) => T): T;
    /** @internal */
    restore(state: Json | undefined): void;
    /** @internal The value to save, or undefined when nothing changed. */
    take(): T | undefined;
    /** @internal */
    saved(details: Json): void;
}
/** Where an {@link Extension} reads and writes; the process's stdio by default. */
export interface Streams {
    input?: InputStream;
    output?: OutputStream;
    errors?: OutputStream;
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
export declare class Extension {
    readonly name: string;
    readonly version: string;
    /** Filled in from `hello_ack` before {@link Extension.onHello} callbacks run. */
    host: HostInfo | undefined;
    private readonly input;
    private readonly output;
    private readonly errors;
    private readonly commands;
    private readonly tools;
    private readonly events;
    private readonly panels;
    private readonly helloHooks;
    private toolCallInterceptor;
    private turnStartInterceptor;
    private assistantMessageInterceptor;
    private userMessageInterceptor;
    private toolResultInterceptor;
    private agentEndInterceptor;
    private readonly states;
    /** Interactive calls in flight, by correlation id. */
    private readonly running;
    private phase;
    private announced;
    private pending;
    private readonly queue;
    private busy;
    private eof;
    private finish;
    /** For inputs that deliver bytes: keeps a character split across chunks whole. */
    private readonly decoder;
    constructor(name: string, version: string, streams?: Streams);
    /** Runs `fn` with the host's info after `hello_ack`, before registrations are sent. */
    onHello(fn: (host: HostInfo) => MaybePromise<void>): this;
    /**
     * A slash command `/name`; `args` is what the user typed after it, trimmed.
     * Registered after `ready`, it is announced at once (hosts with the
     * `late_registration` feature).
     */
    command(name: string, description: string, handler: CommandHandler): this;
    /**
     * A tool the model can call. With a {@link Schema} from {@link s}, the
     * model's arguments are checked before the handler runs (a mismatch answers
     * an error result naming the field) and the handler gets them typed; with
     * a plain JSON Schema it gets them as sent. The handler's second argument
     * is the call's {@link ToolContext} (id, cancellation, progress).
     * Registered after `ready`, the tool is announced at once.
     */
    tool<S extends Schema<any>>(name: string, description: string, schema: S, handler: (args: Infer<S>, ctx: ToolContext) => MaybePromise<ToolResult>): this;
    tool(name: string, description: string, schema: Json, handler: ToolHandler): this;
    /** A tool the model only sees once a result names it in `activateTools`. */
    deferredTool<S extends Schema<any>>(name: string, description: string, schema: S, handler: (args: Infer<S>, ctx: ToolContext) => MaybePromise<ToolResult>): this;
    deferredTool(name: string, description: string, schema: Json, handler: ToolHandler): this;
    private entry;
    /** Withdraws a tool; the host stops offering it (`late_registration`). */
    unregisterTool(name: string): void;
    /** Withdraws a command (`late_registration`). */
    unregisterCommand(name: string): void;
    /** Reports progress of the tool call `id` (see {@link ToolContext.progress}). */
    toolProgress(id: string, message?: string, progress?: number, total?: number): void;
    /**
     * A {@link BranchState} that follows the active session branch; subscribes
     * to the session events that carry state. Call it before {@link Extension.run}.
     */
    state<T extends Json>(initial: T): BranchState<T>;
    /**
     * A tool that waits for a person (no host reply deadline). Its handler must
     * give up when `ctx.signal` aborts; whatever it returns after that is dropped.
     */
    interactiveTool(name: string, description: string, schema: Json, handler: InteractiveToolHandler): this;
    /** Observe a lifecycle event (one handler per name; a second call replaces the first). */
    on(event: string, handler: EventHandler): this;
    private lateIntercept;
    /** Block or rewrite tool calls before they run, or approve them / ask for confirmation. */
    interceptToolCall(fn: ToolCallInterceptor): this;
    /** Block a turn before the model is called, or add hidden context to it. */
    interceptTurnStart(fn: TurnStartInterceptor): this;
    /** Suppress or rewrite the assistant's text before the user sees it. */
    interceptAssistantMessage(fn: AssistantMessageInterceptor): this;
    /** Judge each prompt before its first turn: block it, rewrite it, or add hidden context. */
    interceptUserMessage(fn: UserMessageInterceptor): this;
    /**
     * See every tool's result before the model does (`event` has `toolId`,
     * `toolName`, `toolArgs`, `isError`, `content`, `extension`): replace it,
     * withhold it, or add hidden context.
     */
    interceptToolResult(fn: ToolResultInterceptor): this;
    /** See the end of each prompt (`event.text`, `steps`, `continued`); {@link keepGoing} continues it. */
    interceptAgentEnd(fn: AgentEndInterceptor): this;
    /**
     * Callbacks for a panel this extension opened: `onKey` for each key the
     * user presses (`text` is the character for key `rune`), `onClose` when the
     * user closes it. An omitted callback keeps the one registered before.
     */
    onPanelKey(panelId: string, onKey?: PanelKeyHandler, onClose?: PanelCloseHandler): this;
    /** Forget a panel's callbacks (for example once it is closed). */
    forgetPanel(panelId: string): void;
    private addTool;
    /** Writes `[name] msg` to stderr, which zut keeps in the extension's log. */
    log(msg: string): void;
    /** A one-off note for the user. */
    notify(level: Level | string, message: string): void;
    /** Set a persistent status item; empty text removes it. */
    setStatus(key: string, text: string, level?: Level | string): void;
    /** Remove a status item. */
    clearStatus(key: string): void;
    /** Set or replace a persistent widget. */
    setWidget(id: string, position: string, title: string, lines: string[]): void;
    /** Remove a widget. */
    clearWidget(id: string): void;
    /** Ask the host for an alert (kind {@link ALERT_BELL}); `reason` is metadata. */
    alert(kind: string, reason: string): void;
    /** Remove every note this extension showed. */
    clearNotes(): void;
    /** Send `text` as if the user typed it (interactive host only). */
    submit(text: string): void;
    /** Run a slash command (text starting with `/`) as if the user typed it. */
    submitSlash(text: string): void;
    /** Open a panel without a command (for example from an interactive tool). */
    openPanel(id: string, title: string, lines: string[], footer: string): void;
    /** Redraw an open panel. */
    renderPanel(id: string, title: string, lines: string[], footer: string): void;
    /** Close a panel this extension opened. */
    closePanel(id: string): void;
    private send;
    private write;
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
    run(): Promise<void>;
    private onData;
    private onEnd;
    /** Handles queued lines in order, pausing while an ordered handler runs. */
    private pump;
    private fail;
    private stop;
    private handshake;
    private runHelloHooks;
    private announce;
    private dispatch;
    private background;
    private onCommand;
    private onToolCall;
    /** Puts changed branch state into the result's `details` (one state: the value itself). */
    private withState;
    private onEvent;
    private onIntercept;
    /** The interceptor call for `frame`, and the fields each verdict sets when it does not block. */
    private interceptionOf;
}
export {};
