"""zut_ext: write zut extensions in Python.

A zut extension is a subprocess that speaks newline-delimited JSON with the
host on stdin/stdout. This module does the talking: the handshake, the
registrations, dispatching host requests to your handlers on threads and
serialising every frame you send. It is one file with no dependencies beyond
the standard library, so it can be installed (``pip install ./sdk/python``)
or vendored by copying this file next to your script.

    import zut_ext as zx

    ext = zx.Extension("hello", "1.0.0")

    @ext.command("hello", "say hi")
    def hello(args: str) -> zx.Response:
        return zx.prompt(f"Greet {args or 'me'} in one sentence.")

    ext.run()

Invariants the module keeps:

- stdout carries protocol frames only. ``run()`` takes the real stdout for
  itself and points ``sys.stdout`` at stderr, so a stray ``print`` lands in
  the extension's log instead of corrupting the stream.
- Every write is one whole line under one lock; frames from different
  threads never interleave. Nothing is written after ``shutdown_ack``.
- Every ``command_invoked``, ``tool_call`` and ``event_intercept`` gets
  exactly one answer, even when the handler raises (commands and tools get an
  error answer, interceptors fail closed with ``block``), except a tool call
  that was cancelled: its result is discarded.
- Lifecycle events run in order on the reading thread. Commands, tools,
  interceptors and panel callbacks run concurrently: each starts on the
  thread that read its request, and if it is still busy after 2 ms another
  thread takes over reading, so a slow handler never holds up the next one.
- A malformed line or an unknown frame type is logged to stderr and skipped.
"""

from __future__ import annotations

import base64
import dataclasses
import inspect
import json
import re
import queue
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import (
    IO,
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

__all__ = [
    "PROTOCOL_VERSION",
    "CAPABILITIES",
    "WIDGET_ABOVE_INPUT",
    "ALERT_BELL",
    "NO_DETAILS",
    "FrameError",
    "HostInfo",
    "Session",
    "Event",
    "Panel",
    "Response",
    "ToolContent",
    "ToolResult",
    "ToolCallDecision",
    "TurnStartDecision",
    "AssistantMessageDecision",
    "UserMessageDecision",
    "ToolResultDecision",
    "AgentEndDecision",
    "APPROVE",
    "DERIVE",
    "ASK",
    "Cancel",
    "ToolCall",
    "BranchState",
    "schema_of",
    "Extension",
    "decode_frame",
    "encode_frame",
    "prompt",
    "insert",
    "display",
    "open_panel_response",
    "noop",
    "error",
    "text",
    "image",
    "image_bytes",
    "text_result",
    "error_result",
]

#: The protocol major this SDK speaks; a host answering another one is refused.
PROTOCOL_VERSION = 2

#: Capabilities announced in ``hello``. ``tool_cancel`` opts in to the host's
#: cancellation notices for abandoned tool calls.
CAPABILITIES = [
    "commands",
    "tools",
    "events",
    "alerts",
    "panels",
    "session_state",
    "status",
    "widgets",
    "tool_cancel",
]

#: The widget position the host renders above the input editor.
WIDGET_ABOVE_INPUT = "above_input"

#: The one alert kind hosts understand today: ring the terminal bell.
ALERT_BELL = "bell"

#: Event names an extension may intercept, in the order ``subscribe`` lists
#: them. The last three are protocol additions: hosts that have them say so
#: in ``hello_ack.features`` (see :attr:`HostInfo.features`).
_INTERCEPTABLE = ("tool_call", "turn_start", "assistant_message", "user_message", "tool_result", "agent_end")

#: ``ToolCallDecision.decision``: this call skips the confirmation dialog.
APPROVE = "approve"
#: ``ToolCallDecision.decision``: this call needs confirmation even under ``--yolo``.
ASK = "ask"

#: Session events that carry this extension's stored state (``state``).
_STATE_EVENTS = ("session_opened", "session_switched", "session_forked", "session_compacted")


class _NoDetails:
    """Marker for "this result carries no details" (``None`` means JSON null)."""

    _instance: Optional["_NoDetails"] = None

    def __new__(cls) -> "_NoDetails":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DETAILS"

    def __bool__(self) -> bool:
        return False


class _Derive:
    def __repr__(self) -> str:
        return "DERIVE"


#: The default ``schema`` of :meth:`Extension.tool`: derive it from the
#: handler's type hints and check arguments against it.
DERIVE: Any = _Derive()


#: Default of :attr:`ToolResult.details`: the ``details`` field is left out.
#: Set ``details=None`` to send an explicit JSON null, which clears the
#: extension's persisted state for the session branch.
NO_DETAILS: Any = _NoDetails()


# --------------------------------------------------------------------------
# Wire encoding


class FrameError(ValueError):
    """A host line that is not a frame: not JSON, not an object, or no ``type``."""


# The stdlib's own scanner (the one ``json.loads`` ends up in), called
# directly: ``json.loads`` on bytes first sniffs the encoding and runs two
# regular expressions around the scan, which costs more than the scan itself
# on a short frame.
# (The attribute is set in JSONDecoder.__init__ but not declared in the stubs.)
_SCAN: Callable[[str, int], Tuple[Any, int]] = getattr(json.JSONDecoder(), "scan_once")

# What ``json.loads`` accepts around a value.
_JSON_SPACE = " \t\n\r"


def decode_frame(line: Union[str, bytes]) -> Dict[str, Any]:
    """Parses one wire line into a frame dict.

    Unknown types and unknown fields are kept (the caller decides what to
    ignore). Raises :class:`FrameError` for anything that is not a JSON
    object with a string ``type``.
    """
    # Fast path: a UTF-8 line holding one JSON object with a string type,
    # which is every line a well-behaved host sends. Anything else (other
    # encodings, lone surrogates, leading space, errors) takes the full path
    # below, so both give the same answers.
    text = line
    if type(line) is bytes:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
    if type(text) is str and text[:1] == "{":
        try:
            value, end = _SCAN(text, 0)
        except (StopIteration, ValueError):
            pass
        else:
            if (
                type(value) is dict
                and type(value.get("type")) is str
                and (end == len(text) or not text[end:].strip(_JSON_SPACE))
            ):
                return value
    try:
        # json.loads takes bytes and ignores the line ending itself.
        value = json.loads(line)
    except UnicodeDecodeError:
        assert isinstance(line, bytes)
        return decode_frame(line.decode("utf-8", errors="replace"))
    except ValueError as err:
        raise FrameError(f"not json: {err}") from None
    if not isinstance(value, dict):
        raise FrameError(f"not a json object: {line[:80]!r}")
    kind = value.get("type")
    if not isinstance(kind, str):
        raise FrameError("frame has no string \"type\"")
    return value


# Built once: json.dumps with options builds a new encoder on every call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode_frame(frame: Mapping[str, Any]) -> str:
    """Encodes one frame as a compact JSON line without the trailing newline.

    Raises ``TypeError``/``ValueError`` for values JSON cannot carry (sets,
    NaN, ...), so a handler's bad result becomes an error answer, never a
    corrupt line.
    """
    return _ENCODER.encode(frame)


# A UTF-16 surrogate code point on its own in a ``str``.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


# A JSON string literal exactly as ``_ENCODER`` writes one (quotes included).
_json_str: Callable[[str], str] = json.encoder.encode_basestring


def _text_result_line(call_id: str, text: str) -> str:
    """``encode_frame`` of a one-text-block ``tool_result``, built directly.

    The answer to most tool calls; the same bytes the encoder would write,
    without making the frame's dicts and lists first.
    """
    return '{"type":"tool_result","id":' + _json_str(call_id) + ',"content":[{"type":"text","text":' + _json_str(text) + "}]}"


# --------------------------------------------------------------------------
# Host information and events


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _put(frame: Dict[str, Any], **fields: Any) -> Dict[str, Any]:
    """Adds the fields that are not empty strings: the wire leaves defaults out."""
    for k, v in fields.items():
        if v != "" and v is not None:
            frame[k] = v
    return frame


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


@dataclass
class Session:
    """The active session branch: its id, parent, file and fork point."""

    id: str = ""
    parent_id: str = ""
    path: str = ""
    cwd: str = ""
    fork_point: int = 0

    @staticmethod
    def from_json(v: Any) -> Optional["Session"]:
        """Builds a Session from its wire object, or ``None`` when absent."""
        if not isinstance(v, dict):
            return None
        return Session(
            id=_str(v.get("id")),
            parent_id=_str(v.get("parent_id")),
            path=_str(v.get("path")),
            cwd=_str(v.get("cwd")),
            fork_point=_int(v.get("fork_point")),
        )


@dataclass
class HostInfo:
    """What the host said about itself in ``hello_ack``.

    ``cwd`` is the user's project; the extension process itself runs in its
    own directory. ``data_dir`` is where the extension should keep its files.
    """

    protocol_version: int = 0
    zut_version: str = ""
    provider: str = ""
    model: str = ""
    cwd: str = ""
    extension_dir: str = ""
    data_dir: str = ""
    session: Optional[Session] = None
    #: Protocol additions the host supports (``late_registration``,
    #: ``tool_progress``, ...); empty on hosts that announce none.
    features: List[str] = field(default_factory=list)

    @staticmethod
    def from_frame(f: Mapping[str, Any]) -> "HostInfo":
        """Builds HostInfo from a ``hello_ack`` frame."""
        return HostInfo(
            protocol_version=_int(f.get("protocol_version")),
            zut_version=_str(f.get("zut_version")),
            provider=_str(f.get("provider")),
            model=_str(f.get("model")),
            cwd=_str(f.get("cwd")),
            extension_dir=_str(f.get("extension_dir")),
            data_dir=_str(f.get("data_dir")),
            session=Session.from_json(f.get("session")),
            features=[x for x in f.get("features") or [] if isinstance(x, str)]
            if isinstance(f.get("features"), list)
            else [],
        )


@dataclass
class Event:
    """A lifecycle event the extension subscribed to.

    Fields the event does not carry keep their zero value. ``state`` is this
    extension's own persisted snapshot (session events only); ``has_state``
    tells an explicit null apart from an absent field. ``raw`` is the whole
    frame, for fields newer hosts may add.
    """

    name: str = ""
    session: Optional[Session] = None
    state: Any = None
    has_state: bool = False
    step: int = 0
    stop: str = ""
    error: str = ""
    tool_id: str = ""
    tool_name: str = ""
    tool_args: Any = None
    tool_preview: str = ""
    text: str = ""
    #: ``tool_result``: whether the tool failed, the blocks it returned and
    #: the extension that served it (empty for built-in tools).
    is_error: bool = False
    content: List["ToolContent"] = field(default_factory=list)
    extension: str = ""
    #: ``agent_end``: model steps of this prompt so far, and how often the
    #: prompt was already continued.
    steps: int = 0
    continued: int = 0
    raw: Dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def from_frame(f: Dict[str, Any]) -> "Event":
        """Builds an Event from an ``event`` frame."""
        return Event(
            name=_str(f.get("event")),
            session=Session.from_json(f.get("session")),
            state=f.get("state"),
            has_state="state" in f,
            step=_int(f.get("step")),
            stop=_str(f.get("stop")),
            error=_str(f.get("error")),
            tool_id=_str(f.get("tool_id")),
            tool_name=_str(f.get("tool_name")),
            tool_args=f.get("tool_args"),
            tool_preview=_str(f.get("tool_preview")),
            text=_str(f.get("text")),
            is_error=f.get("is_error") is True,
            content=[ToolContent.from_json(b) for b in f.get("content") or [] if isinstance(b, dict)]
            if isinstance(f.get("content"), list)
            else [],
            extension=_str(f.get("extension")),
            steps=_int(f.get("steps")),
            continued=_int(f.get("continued")),
            raw=f,
        )


# --------------------------------------------------------------------------
# Answers: command responses, tool results, intercept decisions


@dataclass
class Panel:
    """An extension-owned panel: its id, title, body lines and footer hint."""

    id: str
    title: str = ""
    lines: List[str] = field(default_factory=list)
    footer: str = ""

    def to_json(self) -> Dict[str, Any]:
        """The wire object (``open_panel`` payload)."""
        return _put({"id": self.id}, title=self.title, lines=list(self.lines), footer=self.footer)


@dataclass
class Response:
    """The answer to a slash command.

    ``action`` is ``prompt``, ``insert``, ``display``, ``open_panel`` or
    ``noop``; a non-empty ``error`` is shown as an error whatever the action.
    """

    action: str = "noop"
    prompt: str = ""
    insert: str = ""
    display: str = ""
    open_panel: Optional[Panel] = None
    error: str = ""

    def to_frame(self, call_id: Any) -> Dict[str, Any]:
        """The ``command_response`` frame answering request ``call_id``."""
        f: Dict[str, Any] = {"type": "command_response", "id": call_id, "action": self.action or "noop"}
        if self.prompt:
            f["prompt"] = self.prompt
        if self.insert:
            f["insert"] = self.insert
        if self.display:
            f["display"] = self.display
        if self.open_panel is not None:
            f["open_panel"] = self.open_panel.to_json()
        if self.error:
            f["error"] = self.error
        return f


def prompt(t: str) -> Response:
    """Submit ``t`` as a user message; the agent runs a turn on it."""
    return Response(action="prompt", prompt=t)


def insert(t: str) -> Response:
    """Put ``t`` into the editor at the cursor without submitting it."""
    return Response(action="insert", insert=t)


def display(t: str) -> Response:
    """Show ``t`` as a note in the chat; no model call, not in the transcript."""
    return Response(action="display", display=t)


def open_panel_response(
    panel: Union[Panel, str],
    title: str = "",
    lines: Optional[Sequence[str]] = None,
    footer: str = "",
) -> Response:
    """Open an interactive panel; pass a :class:`Panel` or its fields."""
    if not isinstance(panel, Panel):
        panel = Panel(id=panel, title=title, lines=list(lines or []), footer=footer)
    return Response(action="open_panel", open_panel=panel)


def noop() -> Response:
    """The command was handled by the extension itself; the UI is unchanged."""
    return Response(action="noop")


def error(msg: str) -> Response:
    """Report ``msg`` as the command's error."""
    return Response(action="noop", error=msg)


@dataclass
class ToolContent:
    """One block of a tool result: ``text``, or ``image`` (base64 ``data``)."""

    type: str = "text"
    text: str = ""
    mime_type: str = ""
    data: str = ""

    def to_json(self) -> Dict[str, Any]:
        """The wire block."""
        if self.type == "text":
            return {"type": "text", "text": self.text}
        if self.type == "image":
            return {"type": "image", "mime_type": self.mime_type, "data": self.data}
        out: Dict[str, Any] = {"type": self.type}
        for k in ("text", "mime_type", "data"):
            if getattr(self, k):
                out[k] = getattr(self, k)
        return out

    @staticmethod
    def from_json(b: Mapping[str, Any]) -> "ToolContent":
        """A block from its wire object (unknown fields dropped)."""
        return ToolContent(
            type=_str(b.get("type")) or "text",
            text=_str(b.get("text")),
            mime_type=_str(b.get("mime_type")),
            data=_str(b.get("data")),
        )


def text(s: str) -> ToolContent:
    """A text block."""
    return ToolContent(type="text", text=s)


def image(mime_type: str, b64: str) -> ToolContent:
    """An image block from data that is already base64 (standard alphabet)."""
    return ToolContent(type="image", mime_type=mime_type, data=b64)


def image_bytes(mime_type: str, raw: bytes) -> ToolContent:
    """An image block from raw bytes; they are base64-encoded here."""
    return ToolContent(type="image", mime_type=mime_type, data=base64.b64encode(raw).decode("ascii"))


@dataclass
class ToolResult:
    """The answer to a tool call.

    ``details`` is opaque extension state the host persists for the session
    branch (never shown to the model): any JSON value, ``None`` sends an
    explicit null (clearing the state), :data:`NO_DETAILS` leaves it out.
    ``activate_tools`` names deferred tools to make available from now on.
    """

    content: List[ToolContent] = field(default_factory=list)
    is_error: bool = False
    activate_tools: List[str] = field(default_factory=list)
    details: Any = NO_DETAILS

    def to_frame(self, call_id: Any) -> Dict[str, Any]:
        """The ``tool_result`` frame answering request ``call_id``."""
        f: Dict[str, Any] = {
            "type": "tool_result",
            "id": call_id,
            "content": [c.to_json() for c in self.content],
        }
        if self.is_error:
            f["is_error"] = True
        if self.activate_tools:
            f["activate_tools"] = list(self.activate_tools)
        if self.details is not NO_DETAILS:
            f["details"] = self.details
        return f


def text_result(s: str, details: Any = NO_DETAILS) -> ToolResult:
    """A successful result with one text block."""
    return ToolResult(content=[text(s)], details=details)


def error_result(s: str) -> ToolResult:
    """A failed result with one text block the model can read."""
    return ToolResult(content=[text(s)], is_error=True)


@dataclass
class ToolCallDecision:
    """An interceptor's verdict on a tool call.

    ``block`` refuses it (the model sees ``reason``); otherwise
    ``modified_args`` (a JSON object) replaces the arguments the tool gets,
    and ``decision`` may be :data:`APPROVE` (skip the confirmation dialog)
    or :data:`ASK` (confirm even under ``--yolo``). Across extensions the
    host ranks block > ask > approve > allow.
    """

    block: bool = False
    reason: str = ""
    modified_args: Any = None
    decision: str = ""


@dataclass
class TurnStartDecision:
    """An interceptor's verdict on a turn: ``block`` it, or add hidden ``context``."""

    block: bool = False
    reason: str = ""
    context: str = ""


@dataclass
class AssistantMessageDecision:
    """An interceptor's verdict on the assistant's text: ``block`` it or ``replace_text``."""

    block: bool = False
    reason: str = ""
    replace_text: str = ""


@dataclass
class UserMessageDecision:
    """An interceptor's verdict on the prompt the user typed.

    ``block`` drops the prompt (the user sees ``reason``); otherwise
    ``replace_text`` is what the model sees and the session saves, and
    ``context`` is hidden context sent with every request of this prompt.
    """

    block: bool = False
    reason: str = ""
    replace_text: str = ""
    context: str = ""


@dataclass
class ToolResultDecision:
    """An interceptor's verdict on a tool's result, before the model sees it.

    ``block`` withholds it (the model gets an error result reading
    ``reason``); otherwise ``replace_content`` (when not ``None``) is what
    the model and the transcript get instead, and ``context`` is hidden
    context for the next request.
    """

    block: bool = False
    reason: str = ""
    replace_content: Optional[List[ToolContent]] = None
    context: str = ""


@dataclass
class AgentEndDecision:
    """An interceptor's verdict when the model ends a prompt.

    ``block`` means "not done yet": ``reason`` goes to the model as a user
    message and the prompt goes on (at most 8 times per prompt).
    """

    block: bool = False
    reason: str = ""

    @staticmethod
    def keep_going(reason: str) -> "AgentEndDecision":
        """Continue the prompt, telling the model ``reason``."""
        return AgentEndDecision(block=True, reason=reason)


# --------------------------------------------------------------------------
# Cancellation


class Cancel:
    """The cancellation signal of one interactive tool call.

    It is set when the host sends ``tool_cancel`` for the call, on
    ``shutdown`` and when stdin closes. Handlers poll :attr:`cancelled` or
    block in :meth:`wait`; a result returned after cancellation is dropped.
    """

    # Every tool call gets one, so it stays cheap: the Event behind wait()
    # is only made when someone waits.

    def __init__(self, call_id: Any = None) -> None:
        self.call_id = call_id
        self._cancelled = False
        self._event: Optional[threading.Event] = None
        self._callbacks: List[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        """Whether the call has been cancelled."""
        return self._cancelled

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until cancelled or ``timeout`` seconds pass; returns :attr:`cancelled`."""
        with self._lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def on_cancel(self, fn: Callable[[], None]) -> None:
        """Runs ``fn`` once when the call is cancelled (at once if it already is)."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(fn)
                return
        fn()

    def cancel(self) -> None:
        """Marks the call cancelled and runs the registered callbacks."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            if self._event is not None:
                self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:
                fn()
            except Exception:  # a callback must not break the canceller
                traceback.print_exc(file=sys.stderr)


class ToolCall(Cancel):
    """One running tool call: its id, its cancellation, and progress reports.

    Handlers get one when they ask for it: interactive tools as their first
    argument, plain tools as a second parameter (``fn(args, call)``), typed
    tools through a parameter annotated ``ToolCall``.
    """

    def __init__(self, call_id: Any = None, ext: Optional["Extension"] = None) -> None:
        super().__init__(call_id)
        self._ext = ext

    @property
    def id(self) -> Any:
        """The id of the ``tool_call`` frame (what ``tool_progress`` names)."""
        return self.call_id

    def progress(
        self, message: Optional[str] = None, progress: Optional[float] = None, total: Optional[float] = None
    ) -> None:
        """Tells the host the call is alive (``tool_progress``).

        Each report restarts the call's reply deadline on hosts with the
        ``tool_progress`` feature; others ignore it. Nothing is sent once the
        call was cancelled.
        """
        if self._ext is not None and not self.cancelled:
            self._ext.tool_progress(self.call_id, message, progress, total)


# --------------------------------------------------------------------------
# Per-branch state


def _copy_json(v: Any) -> Any:
    return json.loads(json.dumps(v)) if v is not None else None


class BranchState:
    """State that belongs to the active session branch, managed for you.

    Made by :meth:`Extension.state`. It starts as a copy of ``default``; a
    session event (opened, switched, forked, compacted) restores the
    branch's stored snapshot, or the default when the branch has none. Set
    :attr:`value` (or call :meth:`set`) in a tool handler and the SDK saves it
    as that tool result's ``details``; a tool that returns ``details``
    itself sets the value too. Reads and writes are thread-safe; mutate a
    copy and :meth:`set` it rather than changing the value in place.
    """

    def __init__(self, default: Any = None) -> None:
        self._default = _copy_json(default)
        self._lock = threading.Lock()
        self._value = _copy_json(default)
        self._dirty = False

    @property
    def value(self) -> Any:
        """The current branch's state."""
        with self._lock:
            return self._value

    @value.setter
    def value(self, v: Any) -> None:
        self.set(v)

    def get(self) -> Any:
        """The current branch's state (same as :attr:`value`)."""
        return self.value

    def set(self, v: Any) -> None:
        """Replaces the state; it is saved with the next tool result."""
        with self._lock:
            self._value = v
            self._dirty = True

    def update(self, fn: Callable[[Any], Any]) -> Any:
        """Sets the state to ``fn(current)`` atomically and returns it."""
        with self._lock:
            self._value = fn(self._value)
            self._dirty = True
            return self._value

    def _restore(self, ev: "Event") -> None:
        with self._lock:
            if ev.has_state and ev.state is not None:
                self._value = ev.state
            else:
                self._value = _copy_json(self._default)
            self._dirty = False

    def _take(self) -> Any:
        """The value to save, or NO_DETAILS when nothing changed."""
        with self._lock:
            if not self._dirty:
                return NO_DETAILS
            self._dirty = False
            return self._value

    def _saved(self, details: Any) -> None:
        with self._lock:
            self._value = details
            self._dirty = False


# --------------------------------------------------------------------------
# Tool arguments from type hints


class _SchemaError(TypeError):
    pass


_JSON_TYPE_NAMES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _hint_schema(hint: Any) -> Dict[str, Any]:
    """The JSON Schema of one type hint (the subset tool arguments use)."""
    import typing

    if hint is Any or hint is inspect.Parameter.empty:
        return {}
    if hint in _JSON_TYPE_NAMES:
        return {"type": _JSON_TYPE_NAMES[hint]}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_schema(hint)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _hint_schema(rest[0])  # Optional[T]: not required, same shape
        return {"anyOf": [_hint_schema(a) for a in rest]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        out: Dict[str, Any] = {"type": "array"}
        if args and args[0] is not Ellipsis:
            out["items"] = _hint_schema(args[0])
        return out
    if origin is dict or hint is dict:
        out = {"type": "object"}
        if len(args) == 2:
            out["additionalProperties"] = _hint_schema(args[1])
        return out
    raise _SchemaError(f"cannot describe type {hint!r} in JSON Schema")


def _fields_schema(fields: Sequence[Tuple[str, Any, bool]]) -> Dict[str, Any]:
    props = {name: _hint_schema(hint) for name, hint, _ in fields}
    out: Dict[str, Any] = {"type": "object", "properties": props}
    required = [name for name, _, req in fields if req]
    if required:
        out["required"] = required
    return out


def _is_optional(hint: Any) -> bool:
    import typing

    return type(None) in typing.get_args(hint)


def _dataclass_schema(cls: type) -> Dict[str, Any]:
    import typing

    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        fields.append((f.name, hints.get(f.name, Any), not has_default and not _is_optional(hints.get(f.name))))
    return _fields_schema(fields)


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _check(schema: Mapping[str, Any], v: Any, path: str) -> Optional[str]:
    """The first way ``v`` breaks ``schema`` (a plain subset), or ``None``."""
    where = f'field "{path}"' if path else "arguments"
    if "anyOf" in schema:
        if all(_check(s, v, path) is not None for s in schema["anyOf"]):
            return f"{where} matches none of the allowed shapes"
        return None
    if "enum" in schema and v not in schema["enum"]:
        return f"{where} must be one of {', '.join(json.dumps(e) for e in schema['enum'])}"
    want = schema.get("type")
    kind = _kind(v)
    if isinstance(want, str):
        ok = kind == want or (want == "number" and kind == "integer")
        if not ok:
            return f"{where} must be {want}, got {kind}"
    if kind == "object":
        props = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in v:
                inner = f"{path}.{name}" if path else name
                return f'missing required field "{inner}"'
        for name, sub in props.items():
            if name in v and not (v[name] is None and name not in (schema.get("required") or [])):
                err = _check(sub, v[name], f"{path}.{name}" if path else name)
                if err:
                    return err
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name, item in v.items():
                if name not in props:
                    err = _check(extra, item, f"{path}.{name}" if path else name)
                    if err:
                        return err
    if kind == "array" and isinstance(schema.get("items"), dict):
        for i, item in enumerate(v):
            err = _check(schema["items"], item, f"{path}[{i}]")
            if err:
                return err
    return None


def _build(hint: Any, v: Any) -> Any:
    """Turns checked JSON into the hinted type (dataclasses, tuples)."""
    import typing

    if v is None:
        return None
    if dataclasses.is_dataclass(hint) and isinstance(hint, type) and isinstance(v, dict):
        hints = typing.get_type_hints(hint)
        names = {f.name for f in dataclasses.fields(hint)}
        return hint(**{k: _build(hints.get(k, Any), x) for k, x in v.items() if k in names})
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        rest = [a for a in args if a is not type(None)]
        return _build(rest[0], v) if len(rest) == 1 else v
    if hint is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if origin in (list, set, frozenset, tuple) and isinstance(v, list):
        item = args[0] if args and args[0] is not Ellipsis else Any
        built = [_build(item, x) for x in v]
        return origin(built) if origin is not list else built
    if origin is dict and isinstance(v, dict) and len(args) == 2:
        return {k: _build(args[1], x) for k, x in v.items()}
    return v


class _Typed:
    """A handler whose parameters are the tool's arguments."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        import typing

        self.fn = fn
        sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn)
        self.call_param: Optional[str] = None
        self.whole: Optional[Tuple[str, type]] = None  # one dataclass parameter: the whole args
        params = []
        for p in sig.parameters.values():
            hint = hints.get(p.name, p.annotation)
            if hint is ToolCall or hint is Cancel:
                self.call_param = p.name
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise _SchemaError(f"{fn.__name__}: *args/**kwargs cannot describe tool arguments")
            params.append((p, hint))
        if len(params) == 1 and dataclasses.is_dataclass(params[0][1]) and isinstance(params[0][1], type):
            self.whole = (params[0][0].name, params[0][1])
            self.schema = _dataclass_schema(params[0][1])
        else:
            self.schema = _fields_schema(
                [(p.name, h, p.default is p.empty and not _is_optional(h)) for p, h in params]
            )
        self.hints = {p.name: h for p, h in params}

    def __call__(self, tool: str, args: Any, call: ToolCall) -> Any:
        err = _check(self.schema, args, "")
        if err:
            return error_result(f"invalid arguments for {tool}: {err}")
        kwargs: Dict[str, Any] = {}
        if self.whole is not None:
            kwargs[self.whole[0]] = _build(self.whole[1], args)
        else:
            for name, hint in self.hints.items():
                if name in args and args[name] is not None:
                    kwargs[name] = _build(hint, args[name])
        if self.call_param is not None:
            kwargs[self.call_param] = call
        return self.fn(**kwargs)


def schema_of(fn: Callable[..., Any]) -> Dict[str, Any]:
    """The JSON Schema :meth:`Extension.tool` derives from ``fn``'s type hints.

    Each parameter is an argument (required unless it has a default or is
    ``Optional``); a single dataclass parameter stands for the whole object;
    a parameter annotated :class:`ToolCall` is not an argument.
    """
    return _Typed(fn).schema


# --------------------------------------------------------------------------
# The extension

F = TypeVar("F", bound=Callable[..., Any])

CommandHandler = Callable[[str], Optional[Response]]
ToolHandler = Callable[[Any], Union[ToolResult, str, None]]
InteractiveHandler = Callable[[Cancel, Any], Union[ToolResult, str, None]]
EventHandler = Callable[[Event], None]


@dataclass
class _Command:
    name: str
    description: str
    fn: CommandHandler


@dataclass
class _Tool:
    name: str
    description: str
    schema: Any
    fn: Callable[..., Any]
    deferred: bool = False
    interactive: bool = False
    #: The handler's parameters are the arguments (schema derived, checked).
    typed: Optional[_Typed] = None
    #: A plain handler that takes the ToolCall as its second parameter.
    wants_call: bool = False

    def frame(self) -> Dict[str, Any]:
        f = _put({"type": "register_tool", "name": self.name}, description=self.description, schema=self.schema)
        if self.deferred:
            f["deferred"] = True
        if self.interactive:
            f["interactive"] = True
        return f


_STOP = object()  # _dispatch: serving is over

#: A handler still running after this many seconds on the reading thread
#: hands reading over to another thread (see ``Extension._lead``).
_HANDOVER_AFTER = 0.002

#: The watchdog behind the hand-over sleeps after this long without work.
_WATCH_IDLE = 0.1


def _positional_arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _plain_text_line(call_id: Any, result: Any) -> Optional[str]:
    """The wire line of ``result`` when it is one plain text block, else ``None``.

    Plain means a ``str`` or a bare :class:`ToolResult` (not a subclass)
    holding one :class:`ToolContent` of type ``text`` and nothing else, for
    a call whose id is a string: the common answer, encoded without the
    general encoder. Everything else goes through ``to_frame``.
    """
    if type(call_id) is not str:
        return None
    if type(result) is str:
        return _text_result_line(call_id, result)
    if type(result) is not ToolResult:
        return None
    content = result.content
    if (
        result.is_error
        or result.activate_tools
        or result.details is not NO_DETAILS
        or type(content) is not list
        or len(content) != 1
    ):
        return None
    block = content[0]
    if type(block) is not ToolContent or block.type != "text" or type(block.text) is not str:
        return None
    return _text_result_line(call_id, block.text)


class _HandshakeError(Exception):
    pass


class _Workers:
    """Runs each submitted call on a thread of its own, reusing idle threads.

    Starting a thread per request costs more than the request itself, so
    finished workers wait for the next call; when none is idle a new one is
    started, so a handler that blocks (an interactive tool waiting for a
    person) never delays another. At most ``keep_idle`` threads stay parked.
    """

    def __init__(self, keep_idle: int = 8) -> None:
        self._calls: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._keep_idle = keep_idle
        self._closed = False

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        with self._lock:
            reuse = self._idle > 0
            if reuse:
                self._idle -= 1  # that worker is now promised this call
        self._calls.put((fn, args))
        if not reuse:
            threading.Thread(target=self._work, daemon=True).start()

    def close(self) -> None:
        """Lets parked threads end; calls still running finish first."""
        with self._lock:
            self._closed = True
            parked, self._idle = self._idle, 0
        for _ in range(parked):
            self._calls.put(None)

    def _work(self) -> None:
        while True:
            call = self._calls.get()
            if call is None:
                return
            fn, args = call
            try:
                fn(*args)
            except BaseException:  # handlers guard themselves; this is a last resort
                traceback.print_exc(file=sys.stderr)
            with self._lock:
                if self._closed or self._idle >= self._keep_idle:
                    return
                self._idle += 1


class Extension:
    """One zut extension: register handlers, then call :meth:`run`.

    ``stdin``/``stdout`` default to the process's binary streams; pass other
    binary streams to drive an extension in-process. Registration methods
    take the handler as their last argument or, when it is left out, return
    a decorator.
    """

    def __init__(
        self,
        name: str,
        version: str = "",
        *,
        stdin: Optional[IO[bytes]] = None,
        stdout: Optional[IO[bytes]] = None,
    ) -> None:
        self.name = name
        self.version = version
        #: Filled from ``hello_ack`` before ``on_hello`` handlers run.
        self.host = HostInfo()
        #: Announced in ``hello``; :data:`CAPABILITIES` unless changed before :meth:`run`.
        self.capabilities: List[str] = list(CAPABILITIES)
        self._in = stdin
        self._out = stdout
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._closed = False
        self._announced = False
        self._commands: List[_Command] = []
        self._tools: List[_Tool] = []
        self._tool_index: Dict[str, _Tool] = {}
        self._events: Dict[str, EventHandler] = {}
        self._on_hello: List[Callable[[HostInfo], None]] = []
        self._tool_interceptor: Optional[Callable[[str, Any], Any]] = None
        self._turn_interceptor: Optional[Callable[[int], Any]] = None
        self._message_interceptor: Optional[Callable[[str], Any]] = None
        self._user_interceptor: Optional[Callable[[str], Any]] = None
        self._result_interceptor: Optional[Callable[[Event], Any]] = None
        self._end_interceptor: Optional[Callable[[Event], Any]] = None
        self._states: List[BranchState] = []
        self._panels: Dict[str, List[Optional[Callable[..., None]]]] = {}
        self._pending: Dict[Any, Cancel] = {}
        self._workers = _Workers()
        self._done = threading.Event()
        # The reading thread's running handler: a one-element slot holding its
        # start time, emptied by whoever settles who reads next (see _lead).
        self._role = threading.Lock()
        self._inline: List[float] = []
        self._watch_parked = True
        self._watch_wake = threading.Event()

    # ---- logging and writing

    def log(self, msg: str) -> None:
        """Writes ``[name] msg`` to stderr (the host keeps it in the extension's log)."""
        err = sys.__stderr__  # the real one, even when sys.stderr is replaced
        if err is None:
            return
        try:
            err.write(f"[{self.name}] {msg}\n")
            err.flush()
        except (OSError, ValueError):
            pass

    def _send(self, frame: Mapping[str, Any]) -> bool:
        """Writes one frame; returns False when it could not (closed pipe, after shutdown)."""
        return self._send_line(encode_frame(frame))

    def _send_line(self, text: str) -> bool:
        """Writes one encoded frame (see :func:`encode_frame`) as a line."""
        try:
            line = (text + "\n").encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (``os.listdir`` gives them for file names that
            # are not UTF-8): no UTF-8 JSON can carry one, escaped or not, so
            # it becomes U+FFFD instead of costing the whole frame.
            line = (_LONE_SURROGATE.sub("\ufffd", text) + "\n").encode("utf-8")
        with self._write_lock:
            if self._closed or self._out is None:
                return False
            try:
                self._out.write(line)
                self._out.flush()
                return True
            except (OSError, ValueError):
                self._closed = True
                return False

    # ---- registration

    def on_hello(self, fn: Callable[[HostInfo], None]) -> Callable[[HostInfo], None]:
        """Runs ``fn(host)`` after ``hello_ack``, before registrations are sent.

        Commands and tools registered inside ``fn`` are announced normally.
        Usable as a decorator.
        """
        self._on_hello.append(fn)
        return fn

    def command(self, name: str, description: str, fn: Optional[CommandHandler] = None) -> Any:
        """Registers slash command ``/name``; ``fn(args) -> Response``.

        ``args`` is the text after the command name. Returning ``None`` is a
        :func:`noop`. Registering after ``ready`` announces it at once.
        """

        def register(f: CommandHandler) -> CommandHandler:
            with self._state_lock:
                self._commands = [c for c in self._commands if c.name != name] + [_Command(name, description, f)]
            if self._announced:
                self._send(_put({"type": "register_command", "name": name}, description=description))
            return f

        return register(fn) if fn is not None else register

    def _add_tool(self, tool: _Tool) -> None:
        with self._state_lock:
            self._tools = [t for t in self._tools if t.name != tool.name] + [tool]
            self._tool_index[tool.name] = tool
        if self._announced:
            self._send(tool.frame())

    def _make_tool(self, name: str, description: str, schema: Any, f: Callable[..., Any], deferred: bool) -> _Tool:
        if schema is DERIVE:
            typed = _Typed(f)
            return _Tool(name, description, typed.schema, f, deferred=deferred, typed=typed)
        return _Tool(name, description, schema, f, deferred=deferred, wants_call=_positional_arity(f) >= 2)

    def tool(self, name: str, description: str, schema: Any = DERIVE, fn: Optional[Callable[..., Any]] = None) -> Any:
        """Registers a tool the model can call. Usable as a decorator.

        Without ``schema`` (or with :data:`DERIVE`), the handler's parameters are the arguments: the
        schema is derived from their type hints (``str``, ``int``, ``float``,
        ``bool``, lists, dicts, ``Optional``, ``Literal``, dataclasses; see
        :func:`schema_of`), the model's arguments are checked before the
        handler runs (a mismatch answers an error result naming the field)
        and passed as keyword arguments; a parameter annotated
        :class:`ToolCall` gets the running call.

        With a ``schema`` (JSON Schema), ``fn(args)`` gets the raw argument
        dict, or ``fn(args, call)`` when it takes two parameters. A returned
        ``str`` becomes a :func:`text_result`. Registering after ``ready``
        announces the tool at once (hosts with ``late_registration``); an
        existing tool of the same name is replaced.
        """
        if callable(schema) and fn is None and not isinstance(schema, dict):
            schema, fn = DERIVE, schema

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self._add_tool(self._make_tool(name, description, schema, f, False))
            return f

        return register(fn) if fn is not None else register

    def deferred_tool(self, name: str, description: str, schema: Any = DERIVE, fn: Optional[Callable[..., Any]] = None) -> Any:
        """Like :meth:`tool`, but hidden until a result names it in ``activate_tools``."""
        if callable(schema) and fn is None and not isinstance(schema, dict):
            schema, fn = DERIVE, schema

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self._add_tool(self._make_tool(name, description, schema, f, True))
            return f

        return register(fn) if fn is not None else register

    def unregister_tool(self, name: str) -> None:
        """Withdraws tool ``name``; the host stops offering it (``late_registration``)."""
        with self._state_lock:
            self._tools = [t for t in self._tools if t.name != name]
            self._tool_index.pop(name, None)
        if self._announced:
            self._send({"type": "unregister_tool", "name": name})

    def unregister_command(self, name: str) -> None:
        """Withdraws command ``/name`` (``late_registration``)."""
        with self._state_lock:
            self._commands = [c for c in self._commands if c.name != name]
        if self._announced:
            self._send({"type": "unregister_command", "name": name})

    def tool_progress(
        self, call_id: Any, message: Optional[str] = None, progress: Optional[float] = None, total: Optional[float] = None
    ) -> None:
        """Reports progress of tool call ``call_id`` (see :meth:`ToolCall.progress`)."""
        f: Dict[str, Any] = {"type": "tool_progress", "id": call_id}
        if message is not None:
            f["message"] = message
        if progress is not None:
            f["progress"] = progress
        if total is not None:
            f["total"] = total
        self._send(f)

    def state(self, default: Any = None) -> BranchState:
        """A :class:`BranchState` that follows the active session branch.

        Subscribes to the session events that carry state. Call it before
        :meth:`run`.
        """
        st = BranchState(default)
        self._states.append(st)
        for name in _STATE_EVENTS:
            if name not in self._events:
                self.on(name, lambda ev: None)
        return st

    def interactive_tool(
        self, name: str, description: str, schema: Any, fn: Optional[InteractiveHandler] = None
    ) -> Any:
        """Registers a tool that waits for a person; ``fn(cancel, args) -> ToolResult``.

        The host gives it no reply deadline, so the handler must watch
        ``cancel`` (see :class:`Cancel`) and close whatever it opened.
        """

        def register(f: InteractiveHandler) -> InteractiveHandler:
            self._add_tool(_Tool(name, description, schema, f, interactive=True))
            return f

        return register(fn) if fn is not None else register

    def on(self, event: str, fn: Optional[EventHandler] = None) -> Any:
        """Subscribes to lifecycle ``event``; ``fn(Event)`` runs in order on the reader.

        One handler per event name: registering again replaces it. Keep it
        quick, every later frame waits for it.
        """

        def register(f: EventHandler) -> EventHandler:
            new = event not in self._events
            self._events[event] = f
            if self._announced and new:
                self._send({"type": "subscribe", "events": [event], "intercept": []})
            return f

        return register(fn) if fn is not None else register

    def _set_interceptor(self, kind: str, attr: str, fn: Callable[..., Any]) -> None:
        new = getattr(self, attr) is None
        setattr(self, attr, fn)
        if self._announced and new:
            self._send({"type": "subscribe", "events": [], "intercept": [kind]})

    def intercept_tool_call(self, fn: Callable[[str, Any], Optional[ToolCallDecision]]) -> Any:
        """Sees every tool call before it runs: ``fn(tool, args) -> ToolCallDecision``.

        ``None`` allows the call unchanged. Usable as a decorator.
        """
        self._set_interceptor("tool_call", "_tool_interceptor", fn)
        return fn

    def intercept_user_message(self, fn: Callable[[str], Optional[UserMessageDecision]]) -> Any:
        """Sees each prompt before its first turn: ``fn(text) -> UserMessageDecision``."""
        self._set_interceptor("user_message", "_user_interceptor", fn)
        return fn

    def intercept_tool_result(self, fn: Callable[[Event], Optional[ToolResultDecision]]) -> Any:
        """Sees every tool's result before the model: ``fn(event) -> ToolResultDecision``.

        ``event`` has ``tool_id``, ``tool_name``, ``tool_args``, ``is_error``,
        ``content`` and ``extension`` (empty for built-in tools).
        """
        self._set_interceptor("tool_result", "_result_interceptor", fn)
        return fn

    def intercept_agent_end(self, fn: Callable[[Event], Optional[AgentEndDecision]]) -> Any:
        """Sees the end of each prompt: ``fn(event) -> AgentEndDecision``.

        ``event`` has ``text`` (the final answer), ``steps`` and ``continued``;
        :meth:`AgentEndDecision.keep_going` continues the prompt.
        """
        self._set_interceptor("agent_end", "_end_interceptor", fn)
        return fn

    def intercept_turn_start(self, fn: Callable[[int], Optional[TurnStartDecision]]) -> Any:
        """Sees every turn before the model is called: ``fn(step) -> TurnStartDecision``."""
        self._set_interceptor("turn_start", "_turn_interceptor", fn)
        return fn

    def intercept_assistant_message(self, fn: Callable[[str], Optional[AssistantMessageDecision]]) -> Any:
        """Sees the assistant's final text: ``fn(text) -> AssistantMessageDecision``."""
        self._set_interceptor("assistant_message", "_message_interceptor", fn)
        return fn

    def on_panel_key(
        self,
        panel_id: str,
        on_key: Optional[Callable[[str, str], None]] = None,
        on_close: Optional[Callable[[], None]] = None,
    ) -> None:
        """Routes keys of panel ``panel_id`` to ``on_key(key, text)`` and its
        closing by the user to ``on_close()``.

        ``text`` is the typed character when ``key`` is ``"rune"``. A
        ``None`` callback keeps the one registered before.
        """
        with self._state_lock:
            cur = self._panels.get(panel_id, [None, None])
            self._panels[panel_id] = [on_key or cur[0], on_close or cur[1]]

    def forget_panel(self, panel_id: str) -> None:
        """Drops the callbacks of ``panel_id`` (when the panel is gone for good)."""
        with self._state_lock:
            self._panels.pop(panel_id, None)

    # ---- runtime frames (fire and forget, safe from any thread)

    def notify(self, level: str, message: str) -> None:
        """A one-shot note (``info``, ``success``, ``warn``, ``error``)."""
        self._send(_put({"type": "notify"}, level=level, message=message))

    def set_status(self, key: str, text: str, level: Optional[str] = None) -> None:
        """Sets or replaces status item ``key``; empty ``text`` clears it."""
        f = _put({"type": "status", "key": key}, level=level)
        f["text"] = text
        self._send(f)

    def clear_status(self, key: str) -> None:
        """Removes status item ``key``."""
        self.set_status(key, "")

    def set_widget(self, id: str, position: str, title: str, lines: Sequence[str]) -> None:
        """Sets or replaces widget ``id`` (see :data:`WIDGET_ABOVE_INPUT`)."""
        self._send(_put({"type": "widget", "id": id}, position=position, title=title, lines=list(lines)))

    def clear_widget(self, id: str) -> None:
        """Removes widget ``id``."""
        self._send({"type": "widget_clear", "id": id})

    def alert(self, kind: str, reason: str = "") -> None:
        """Asks the host for an alert (``kind`` :data:`ALERT_BELL`); ``reason`` is metadata."""
        self._send(_put({"type": "alert", "kind": kind}, reason=reason))

    def clear_notes(self) -> None:
        """Removes every note this extension showed."""
        self._send({"type": "clear_notes"})

    def submit(self, text: str) -> None:
        """Submits ``text`` as a user prompt (interactive host only)."""
        self._send({"type": "submit", "text": text})

    def submit_slash(self, text: str) -> None:
        """Runs slash command ``text`` (starting with ``/``) as if typed."""
        self._send({"type": "submit_slash", "text": text})

    def open_panel(self, id: str, title: str, lines: Sequence[str], footer: str = "") -> None:
        """Opens panel ``id`` now (for example from a tool handler)."""
        self._send({"type": "open_panel", "panel": Panel(id, title, list(lines), footer).to_json()})

    def render_panel(self, id: str, title: str, lines: Sequence[str], footer: str = "") -> None:
        """Redraws open panel ``id``."""
        self._send(_put({"type": "panel_render", "panel_id": id}, title=title, lines=list(lines), footer=footer))

    def close_panel(self, id: str) -> None:
        """Closes panel ``id``."""
        self._send({"type": "panel_close", "panel_id": id})

    # ---- the loop

    def run(self) -> None:
        """Connects to the host and serves until ``shutdown`` or end of input.

        Returns normally on ``shutdown`` and on EOF. A failed handshake (the
        first host frame is not a matching ``hello_ack``) is reported on
        stderr and exits with status 1.
        """
        if self._in is None:
            self._in = sys.stdin.buffer
        if self._out is None:
            self._out = sys.stdout.buffer
            # stdout is the protocol; stray prints go to the log instead.
            sys.stdout = sys.stderr
        try:
            if not self._handshake():
                self._cancel_all()
                return
        except _HandshakeError as err:
            self.log(f"error: {err}")
            raise SystemExit(1) from None
        threading.Thread(target=self._watch, daemon=True).start()
        self._workers.submit(self._lead)
        self._done.wait()
        self._watch_wake.set()
        self._workers.close()

    def _read_line(self) -> Optional[bytes]:
        assert self._in is not None
        try:
            line = self._in.readline()
        except (OSError, ValueError):
            return None
        return line if line else None

    def _handshake(self) -> bool:
        hello = _put({"type": "hello", "protocol_version": PROTOCOL_VERSION, "name": self.name}, version=self.version)
        hello["capabilities"] = list(self.capabilities)
        self._send(hello)
        line = self._read_line()
        if line is None:
            return False
        try:
            ack = decode_frame(line)
        except FrameError as err:
            raise _HandshakeError(f"parse hello_ack: {err}") from None
        if ack["type"] != "hello_ack":
            raise _HandshakeError(f"first host frame must be hello_ack (got {ack['type']!r})")
        version = ack.get("protocol_version")
        if version != PROTOCOL_VERSION:
            raise _HandshakeError(f"unsupported host protocol version {version} (want {PROTOCOL_VERSION})")
        self.host = HostInfo.from_frame(ack)
        for fn in list(self._on_hello):
            try:
                fn(self.host)
            except Exception as err:
                self.log(f"on_hello handler failed: {err!r}\n{traceback.format_exc()}")
        self._announce()
        return True

    def _announce(self) -> None:
        for c in self._commands:
            self._send(_put({"type": "register_command", "name": c.name}, description=c.description))
        for t in self._tools:
            self._send(t.frame())
        intercept = [
            kind
            for kind, fn in zip(
                _INTERCEPTABLE,
                (
                    self._tool_interceptor,
                    self._turn_interceptor,
                    self._message_interceptor,
                    self._user_interceptor,
                    self._result_interceptor,
                    self._end_interceptor,
                ),
            )
            if fn is not None
        ]
        if self._events or intercept:
            self._send({"type": "subscribe", "events": list(self._events), "intercept": intercept})
        self._announced = True
        self._send({"type": "ready"})

    def _lead(self) -> None:
        """Reads and dispatches frames; runs handlers on this thread.

        A request is served by the thread that read it, so no thread
        wake-up sits between a request and its answer. Handlers must still
        run concurrently: when one is still busy after ``_HANDOVER_AFTER``,
        the watchdog (``_watch``) gives reading to another worker, and this
        thread, once its handler returns, goes back to the pool.

        Who reads next is settled by one ``list.pop`` on the handler's slot
        (``[start time]``), which is atomic: this thread pops it when the
        handler returns, the watchdog pops it to hand over, and only the
        one that gets the element acts.
        """
        assert self._in is not None
        readline = self._in.readline
        try:
            while True:
                try:
                    line = readline()
                except (OSError, ValueError):
                    break  # stdin is unusable: as good as closed
                if not line:
                    break  # stdin closed: the host is gone
                try:
                    frame = decode_frame(line)
                except FrameError as err:
                    if line.strip():
                        self.log(f"skipping malformed frame: {err}")
                    continue
                if frame["type"] == "tool_call":
                    work = self._on_tool_call(frame)
                else:
                    work = self._dispatch(frame)
                    if work is _STOP:
                        break
                if work is not None:
                    fn, args = work
                    slot = [time.monotonic()]
                    with self._role:
                        self._inline = slot
                        if self._watch_parked:
                            self._watch_parked = False
                            self._watch_wake.set()
                    fn(*args)
                    try:
                        slot.pop()
                    except IndexError:
                        return  # reading was handed over meanwhile
        except BaseException:
            self._cancel_all()
            self._done.set()
            raise
        self._cancel_all()
        self._done.set()

    def _watch(self) -> None:
        """Hands reading over when the reading thread's handler is slow.

        Ticks every ``_HANDOVER_AFTER`` while handlers run and parks after
        ``_WATCH_IDLE`` without one, so an idle extension costs nothing.
        Parking and publishing a handler's slot both happen under
        ``_role``, so a handler that starts as the watchdog parks is seen
        by one side or the other.
        """
        idle_since = time.monotonic() - _WATCH_IDLE  # nothing runs yet: park at once
        while not self._done.is_set():
            if time.monotonic() - idle_since >= _WATCH_IDLE:
                with self._role:
                    # Cleared first: run() sets it after _done, so its wake-up
                    # is either seen below or still pending at the wait.
                    self._watch_wake.clear()
                    park = not self._inline and not self._done.is_set()
                    self._watch_parked = park
                if park:
                    self._watch_wake.wait()  # set by the next handler, or by run() at the end
                idle_since = time.monotonic()
                continue
            self._done.wait(_HANDOVER_AFTER)
            slot = self._inline
            if slot:
                now = time.monotonic()
                idle_since = now
                try:
                    if now - slot[0] >= _HANDOVER_AFTER:
                        slot.pop()
                        self._workers.submit(self._lead)
                except IndexError:
                    pass  # the handler returned meanwhile: its thread reads on

    def _cancel_all(self) -> None:
        with self._state_lock:
            pending = list(self._pending.values())
            self._pending.clear()
        for c in pending:
            c.cancel()

    def _dispatch(self, f: Dict[str, Any]) -> Any:
        """Handles one host frame.

        Returns ``_STOP`` when serving ends, a ``(fn, args)`` handler call
        to run concurrently with further reading, or ``None``.
        """
        kind = f["type"]
        if kind == "command_invoked":
            return self._on_command(f)
        elif kind == "tool_call":
            return self._on_tool_call(f)
        elif kind == "tool_cancel":
            with self._state_lock:
                c = self._pending.get(f.get("id"))
            if c is not None:
                c.cancel()
        elif kind == "event":
            self._on_event(f)
        elif kind == "event_intercept":
            return (self._on_intercept, (f,))
        elif kind in ("panel_key", "panel_close"):
            return self._on_panel(f)
        elif kind == "shutdown":
            self._send({"type": "shutdown_ack"})
            with self._write_lock:
                self._closed = True
            return _STOP
        elif kind in ("hello_ack", "panel_resize"):
            pass  # a repeated ack, or a frame hosts define but we have no use for
        else:
            self.log(f"ignoring unknown frame type {kind!r}")
        return None

    # ---- commands

    def _find_command(self, name: str) -> Optional[_Command]:
        for c in self._commands:
            if c.name == name:
                return c
        low = name.lower()
        for c in self._commands:
            if c.name.lower() == low:
                return c
        return None

    def _on_command(self, f: Dict[str, Any]) -> Any:
        call_id = f.get("id")
        name = _str(f.get("name"))
        cmd = self._find_command(name)
        if cmd is None:
            self._send(error(f"no handler for /{name}").to_frame(call_id))
            return None
        return (self._run_command, (cmd, call_id, _str(f.get("args"))))

    def _run_command(self, cmd: _Command, call_id: Any, args: str) -> None:
        try:
            resp = cmd.fn(args)
            if resp is None:
                resp = noop()
            if not isinstance(resp, Response):
                raise TypeError(f"command handler returned {type(resp).__name__}, not Response")
            line = encode_frame(resp.to_frame(call_id))
        except Exception as err:
            self.log(f"command /{cmd.name} failed: {err!r}\n{traceback.format_exc()}")
            line = encode_frame(error(f"panic: {err}").to_frame(call_id))
        self._send_line(line)

    # ---- tools

    def _on_tool_call(self, f: Dict[str, Any]) -> Any:
        call_id = f.get("id")
        name = _str(f.get("name"))
        tool = self._tool_index.get(name)
        if tool is None:
            self._send(error_result(f'no handler for tool "{name}"').to_frame(call_id))
            return None
        args = f.get("args")
        if args is None:
            args = {}
        # Registered before the handler starts, so a tool_cancel read next
        # finds it even if the thread has not run yet.
        cancel = ToolCall(call_id, self)
        with self._state_lock:
            self._pending[call_id] = cancel
        return (self._run_tool, (tool, call_id, args, cancel))

    def _run_tool(self, tool: _Tool, call_id: Any, args: Any, cancel: ToolCall) -> None:
        try:
            if tool.typed is not None:
                result = tool.typed(tool.name, args, cancel)
            elif tool.interactive:
                result = tool.fn(cancel, args)
            elif tool.wants_call:
                result = tool.fn(args, cancel)
            else:
                result = tool.fn(args)
            if self._states:
                result = self._with_state(result)
            line = _plain_text_line(call_id, result)
            if line is None:
                if result is None:
                    result = ToolResult()
                elif isinstance(result, str):
                    result = text_result(result)
                if not isinstance(result, ToolResult):
                    raise TypeError(f"tool handler returned {type(result).__name__}, not ToolResult")
                line = encode_frame(result.to_frame(call_id))
        except Exception as err:
            self.log(f"tool {tool.name} failed: {err!r}\n{traceback.format_exc()}")
            line = encode_frame(error_result(f"panic: {err}").to_frame(call_id))
        with self._state_lock:
            if self._pending.get(call_id) is cancel:
                del self._pending[call_id]
        if cancel.cancelled:
            return  # the host has given up on this call
        self._send_line(line)

    def _with_state(self, result: Any) -> Any:
        """Puts changed branch state into ``result.details`` (one state: the value itself)."""
        if isinstance(result, str):
            result = text_result(result)
        elif result is None:
            result = ToolResult()
        if not isinstance(result, ToolResult):
            return result
        if result.details is not NO_DETAILS:
            for st in self._states:
                st._saved(result.details)
            return result
        changed = [st._take() for st in self._states]
        if any(c is not NO_DETAILS for c in changed):
            result.details = self._states[0].value if len(self._states) == 1 else [st.value for st in self._states]
        return result

    # ---- events and interception

    def _on_event(self, f: Dict[str, Any]) -> None:
        ev = Event.from_frame(f)
        if ev.name in _STATE_EVENTS:
            for st in self._states:
                st._restore(ev)
        fn = self._events.get(ev.name)
        if fn is None:
            return
        try:
            fn(ev)
        except Exception as err:
            self.log(f"event {ev.name} handler panicked: {err!r}\n{traceback.format_exc()}")

    def _decide(self, event: str, f: Dict[str, Any]) -> Tuple[Any, Dict[str, Any]]:
        """The interceptor's decision for ``event`` (``None``: none, or no
        interceptor) and the fields it sets when it does not block; ``None``
        and empty strings are left out of the answer."""
        if event == "tool_call" and self._tool_interceptor is not None:
            d = self._tool_interceptor(_str(f.get("tool_name")), f.get("tool_args"))
            return d, d and {
                "modified_args": d.modified_args,
                "decision": d.decision if d.decision in (APPROVE, ASK) else None,
            }
        if event == "user_message" and self._user_interceptor is not None:
            original = _str(f.get("text"))
            d = self._user_interceptor(original)
            return d, d and {
                "replace_text": d.replace_text if d.replace_text != original else "",
                "context": d.context,
            }
        if event == "tool_result" and self._result_interceptor is not None:
            d = self._result_interceptor(Event.from_frame(f))
            content = None
            if d is not None and d.replace_content is not None:
                content = [
                    c.to_json() if isinstance(c, ToolContent) else text(str(c)).to_json()
                    for c in d.replace_content
                ]
            return d, d and {"replace_content": content, "context": d.context}
        if event == "agent_end" and self._end_interceptor is not None:
            return self._end_interceptor(Event.from_frame(f)), {}
        if event == "turn_start" and self._turn_interceptor is not None:
            d = self._turn_interceptor(_int(f.get("step")))
            return d, d and {"context": d.context}
        if event == "assistant_message" and self._message_interceptor is not None:
            original = _str(f.get("text"))
            d = self._message_interceptor(original)
            return d, d and {"replace_text": d.replace_text if d.replace_text != original else ""}
        return None, {}

    def _on_intercept(self, f: Dict[str, Any]) -> None:
        out: Dict[str, Any] = {"type": "event_intercept_response", "id": f.get("id")}
        event = _str(f.get("event"))
        try:
            d, fields = self._decide(event, f)
            if d is not None:
                if d.block:
                    out["block"] = True
                if d.reason:
                    out["reason"] = d.reason
                if not d.block:
                    out.update((k, v) for k, v in fields.items() if v is not None and v != "")
            line = encode_frame(out)
        except Exception as err:
            self.log(f"{event} interceptor failed: {err!r}\n{traceback.format_exc()}")
            line = encode_frame({
                "type": "event_intercept_response",
                "id": f.get("id"),
                "block": True,
                "reason": f"intercept panic: {err}",
            })
        self._send_line(line)

    # ---- panels

    def _on_panel(self, f: Dict[str, Any]) -> Any:
        with self._state_lock:
            cbs = self._panels.get(_str(f.get("panel_id")))
        if cbs is None:
            return None
        on_key, on_close = cbs
        if f["type"] == "panel_key" and on_key is not None:
            return (self._guarded, ("panel key", on_key, _str(f.get("key")), _str(f.get("text"))))
        if f["type"] == "panel_close" and on_close is not None:
            return (self._guarded, ("panel close", on_close))
        return None

    def _guarded(self, what: str, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as err:
            self.log(f"{what} handler failed: {err!r}\n{traceback.format_exc()}")
