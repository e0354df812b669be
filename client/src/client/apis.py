"""The request and response shapes of each SDK method learning() intercepts: where the
user's message is, how the memory goes in, and what the model answered (whole, or
accumulated from a stream). They read the SDKs' objects by field name, so the package
imports neither SDK: a dict (a request's message) and a pydantic model (a response, or a
message of an earlier response put back in the list) read the same."""

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

Kwargs = dict[str, Any]


@dataclass(frozen=True)
class Prompt:
    # The text of the last user message that has text: what the memory is searched for.
    query: str
    # The user's message to store: that text when the request ends with it, None when the
    # request goes on from tool results (the message was stored with the call that asked).
    user: str | None


@dataclass(frozen=True)
class ToolCall:
    id: str | None
    name: str
    arguments: str


@dataclass
class Reply:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    model: str | None = None


class Accumulator(Protocol):
    """Rebuilds a reply from a stream's items, as they pass."""

    @property
    def finished(self) -> bool:
        """Whether the model's end arrived (so a stream closed after it is not cut short)."""
        ...

    def add(self, item: object) -> None: ...

    def reply(self) -> Reply: ...


class Api(Protocol):
    name: str

    def normalize(self, kwargs: Kwargs) -> Kwargs:
        """The arguments with any one-shot iterable turned into a list, so that reading
        them leaves them intact for the SDK."""
        ...

    def prompt(self, kwargs: Kwargs) -> Prompt: ...

    def inject(self, kwargs: Kwargs, memory: str) -> Kwargs:
        """New arguments carrying the memory; the caller's objects are not changed."""
        ...

    def reply(self, result: object) -> Reply: ...

    def accumulator(self) -> Accumulator: ...


def get(obj: object, name: str) -> Any:
    """A field of a dict or an attribute of an object; None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def text_of(content: object, kinds: tuple[str, ...]) -> str:
    """A message's text: a string as it is; a list of parts, its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        parts = [get(part, "text") for part in content if get(part, "type") in kinds]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


def _given(value: object) -> object:
    """None for the SDKs' "not given" sentinels (`NOT_GIVEN`, `omit`), passed explicitly by
    some wrappers; the value otherwise."""
    return None if type(value).__name__ in ("NotGiven", "Omit") else value


def _listed(kwargs: Kwargs, name: str) -> Kwargs:
    value = kwargs.get(name)
    if value is None or isinstance(value, (str, list, Mapping)):
        return kwargs
    if isinstance(value, Iterable):
        return {**kwargs, name: list(value)}
    return kwargs


def _prompt(items: object, kinds: tuple[str, ...]) -> Prompt:
    """The last user message with text, and whether the request ends with it."""
    if not isinstance(items, list):
        return Prompt(query="", user=None)
    for position in range(len(items) - 1, -1, -1):
        item = items[position]
        if get(item, "role") != "user":
            continue
        text = text_of(get(item, "content"), kinds).strip()
        if text:
            return Prompt(query=text, user=text if position == len(items) - 1 else None)
    return Prompt(query="", user=None)


def _model(result: object) -> str | None:
    model = get(result, "model")
    return model if isinstance(model, str) else None


def _json_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- OpenAI: chat.completions.create ------------------------------------------------------


class ChatCompletions:
    """`messages`; the memory as a system message after a leading system (or developer)
    message; the reply is the first choice's message."""

    name = "openai.chat.completions"
    TEXT = ("text",)

    def normalize(self, kwargs: Kwargs) -> Kwargs:
        return _listed(kwargs, "messages")

    def prompt(self, kwargs: Kwargs) -> Prompt:
        return _prompt(kwargs.get("messages"), self.TEXT)

    def inject(self, kwargs: Kwargs, memory: str) -> Kwargs:
        given = kwargs.get("messages")
        if not isinstance(given, list):
            raise TypeError(f"messages is a {type(given).__name__}, not a list")
        messages = list(given)
        at = 1 if messages and get(messages[0], "role") in ("system", "developer") else 0
        messages.insert(at, {"role": "system", "content": memory})
        return {**kwargs, "messages": messages}

    def reply(self, result: object) -> Reply:
        choices = get(result, "choices") or []
        message = get(choices[0], "message") if choices else None
        content = get(message, "content")
        calls = [_chat_tool_call(call) for call in get(message, "tool_calls") or []]
        return Reply(
            text=content if isinstance(content, str) else "",
            tool_calls=calls,
            model=_model(result),
        )

    def accumulator(self) -> Accumulator:
        return ChatAccumulator()


def _chat_tool_call(call: object) -> ToolCall:
    if get(call, "type") == "custom":
        custom = get(call, "custom")
        return ToolCall(get(call, "id"), str(get(custom, "name")), str(get(custom, "input") or ""))
    function = get(call, "function")
    return ToolCall(
        get(call, "id"), str(get(function, "name")), str(get(function, "arguments") or "")
    )


class ChatAccumulator:
    def __init__(self) -> None:
        self.finished = False
        self._model: str | None = None
        self._text: list[str] = []
        # Per tool call index: its id, its name, the fragments of its arguments.
        self._calls: dict[int, tuple[list[str], list[str], list[str]]] = {}

    def add(self, item: object) -> None:
        self._model = self._model or _model(item)
        for choice in get(item, "choices") or []:
            if get(choice, "index") not in (0, None):
                continue
            delta = get(choice, "delta")
            content = get(delta, "content")
            if isinstance(content, str):
                self._text.append(content)
            for call in get(delta, "tool_calls") or []:
                ids, names, arguments = self._calls.setdefault(
                    int(get(call, "index") or 0), ([], [], [])
                )
                if get(call, "id"):
                    ids.append(str(get(call, "id")))
                function = get(call, "function")
                if get(function, "name"):
                    names.append(str(get(function, "name")))
                if isinstance(get(function, "arguments"), str):
                    arguments.append(get(function, "arguments"))
            if get(choice, "finish_reason"):
                self.finished = True

    def reply(self) -> Reply:
        calls = [
            ToolCall(ids[0] if ids else None, "".join(names), "".join(arguments))
            for _, (ids, names, arguments) in sorted(self._calls.items())
        ]
        return Reply(text="".join(self._text), tool_calls=calls, model=self._model)


# --- OpenAI: responses.create -------------------------------------------------------------


class Responses:
    """`input` (a string, or a list of items); the memory goes in `instructions`, after
    the caller's own; the reply is `output_text` and the function calls of `output`."""

    name = "openai.responses"
    TEXT = ("input_text", "text")

    def normalize(self, kwargs: Kwargs) -> Kwargs:
        return _listed(kwargs, "input")

    def prompt(self, kwargs: Kwargs) -> Prompt:
        given = kwargs.get("input")
        if isinstance(given, str):
            text = given.strip()
            return Prompt(query=text, user=text or None)
        return _prompt(given, self.TEXT)

    def inject(self, kwargs: Kwargs, memory: str) -> Kwargs:
        instructions = _given(kwargs.get("instructions"))
        if instructions is not None and not isinstance(instructions, str):
            raise TypeError(f"instructions is a {type(instructions).__name__}, not a string")
        if isinstance(instructions, str) and instructions.strip():
            memory = f"{instructions}\n\n{memory}"
        return {**kwargs, "instructions": memory}

    def reply(self, result: object) -> Reply:
        texts: list[str] = []
        calls: list[ToolCall] = []
        for item in get(result, "output") or []:
            kind = get(item, "type")
            if kind == "message":
                texts += [
                    str(get(part, "text"))
                    for part in get(item, "content") or []
                    if get(part, "type") == "output_text" and get(part, "text") is not None
                ]
            elif kind == "function_call":
                calls.append(_response_call(item))
        return Reply(text="".join(texts), tool_calls=calls, model=_model(result))

    def accumulator(self) -> Accumulator:
        return ResponsesAccumulator(self)


def _response_call(item: object) -> ToolCall:
    return ToolCall(
        get(item, "call_id") or get(item, "id"),
        str(get(item, "name")),
        str(get(item, "arguments") or ""),
    )


class ResponsesAccumulator:
    ENDED = ("response.completed", "response.incomplete")

    def __init__(self, api: Responses) -> None:
        self.finished = False
        self._api = api
        self._final: object = None
        self._text: list[str] = []
        self._calls: list[ToolCall] = []

    def add(self, item: object) -> None:
        kind = get(item, "type")
        if kind == "response.output_text.delta" and isinstance(get(item, "delta"), str):
            self._text.append(get(item, "delta"))
        elif kind == "response.output_item.done" and get(get(item, "item"), "type") == (
            "function_call"
        ):
            self._calls.append(_response_call(get(item, "item")))
        elif kind in self.ENDED:
            self._final = get(item, "response")
            self.finished = True

    def reply(self) -> Reply:
        if self._final is not None:
            return self._api.reply(self._final)
        return Reply(text="".join(self._text), tool_calls=list(self._calls))


# --- Anthropic: messages.create and messages.stream ---------------------------------------


class AnthropicMessages:
    """`messages`; the memory goes in `system` (after the caller's text, or as one more
    text block of a list); the reply is the text and tool_use blocks of the content."""

    name = "anthropic.messages"
    TEXT = ("text",)

    def normalize(self, kwargs: Kwargs) -> Kwargs:
        return _listed(_listed(kwargs, "messages"), "system")

    def prompt(self, kwargs: Kwargs) -> Prompt:
        return _prompt(kwargs.get("messages"), self.TEXT)

    def inject(self, kwargs: Kwargs, memory: str) -> Kwargs:
        system = _given(kwargs.get("system"))
        if isinstance(system, str) and system.strip():
            return {**kwargs, "system": f"{system}\n\n{memory}"}
        if isinstance(system, list) and system:
            return {**kwargs, "system": [*system, {"type": "text", "text": memory}]}
        if system is not None and not isinstance(system, (str, list)):
            # Replacing what the caller sent would lose it: the call goes as it was.
            raise TypeError(f"system is a {type(system).__name__}, not a string or a list")
        return {**kwargs, "system": memory}

    def reply(self, result: object) -> Reply:
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in get(result, "content") or []:
            kind = get(block, "type")
            if kind == "text" and isinstance(get(block, "text"), str):
                texts.append(get(block, "text"))
            elif kind in ("tool_use", "server_tool_use"):
                calls.append(
                    ToolCall(
                        get(block, "id"), str(get(block, "name")), _json_text(get(block, "input"))
                    )
                )
        return Reply(text="".join(texts), tool_calls=calls, model=_model(result))

    def accumulator(self) -> Accumulator:
        return AnthropicAccumulator()


class AnthropicAccumulator:
    """Rebuilds the reply from the raw events (message_start, content blocks, deltas)."""

    def __init__(self) -> None:
        self.finished = False
        self._model: str | None = None
        self._text: dict[int, list[str]] = {}
        self._calls: dict[int, tuple[str | None, str, list[str]]] = {}

    def add(self, item: object) -> None:
        kind = get(item, "type")
        index = get(item, "index")
        if kind == "message_start":
            self._model = _model(get(item, "message"))
        elif kind == "content_block_start" and isinstance(index, int):
            block = get(item, "content_block")
            if get(block, "type") == "text":
                self._text[index] = [str(get(block, "text") or "")]
            elif get(block, "type") in ("tool_use", "server_tool_use"):
                self._calls[index] = (get(block, "id"), str(get(block, "name")), [])
        elif kind == "content_block_delta" and isinstance(index, int):
            delta = get(item, "delta")
            if get(delta, "type") == "text_delta" and index in self._text:
                self._text[index].append(str(get(delta, "text") or ""))
            elif get(delta, "type") == "input_json_delta" and index in self._calls:
                self._calls[index][2].append(str(get(delta, "partial_json") or ""))
        elif kind == "message_stop":
            self.finished = True

    def reply(self) -> Reply:
        text = "".join("".join(pieces) for _, pieces in sorted(self._text.items()))
        calls = [
            ToolCall(call_id, name, "".join(parts) or "{}")
            for _, (call_id, name, parts) in sorted(self._calls.items())
        ]
        return Reply(text=text, tool_calls=calls, model=self._model)


CHAT = ChatCompletions()
RESPONSES = Responses()
ANTHROPIC = AnthropicMessages()
