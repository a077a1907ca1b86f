"""Token accounting (metering): how many tokens a text, a message, the tools and a request cost.

Two kinds of counter share one protocol, :class:`TokenCounter`:

* exact counters — tiktoken's ``o200k_base`` (GPT-4o, GPT-4.1, GPT-5, o-series) and
  ``cl100k_base`` (GPT-4, GPT-3.5), loaded offline (see ``offline_encodings``);
* estimators — ``chars/3`` and ``chars/4``: characters divided by an average, rounded up. The
  texts we teach from use chars/3 "because it slightly over-estimates"; chapter 01 measures
  where that holds (English prose, code) and where it fails (Chinese, base64, dense JSON).

On top of the text, a provider adds a few tokens per message and per request. The
:class:`MessageMeter` applies the profile's overheads and counts every message once.

Simplified on purpose: tool-call ids and tool-result ids are not counted (the providers'
templates are undocumented); tool definitions use OpenAI's documented recipe for every
provider, extended to nested schemas (see :func:`tools_tokens` for how sure). o200k is not
Claude's tokenizer — Claude counts are estimates, and the profile says so. Taught in chapter 01.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, Sequence

from ctxlab.tables.offline_encodings import get_encoding
from ctxlab.messages import Conversation, ImagePart, Message, Part, TextPart, ThinkingPart, ToolCallPart, ToolSpec
from ctxlab.tables.profiles import ModelProfile


class TokenCounter(Protocol):
    """Anything that turns text into a token count. ``name`` is shown in tables. Chapter 01."""

    name: str
    exact: bool

    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class TiktokenCounter:
    """Exact tokens of a tiktoken encoding, times ``calibration`` (1.0 = exact). ``count("hello world")`` → 2.
    Chapter 01."""

    encoding_name: str = "o200k_base"
    calibration: float = 1.0

    @property
    def name(self) -> str:
        return self.encoding_name if self.calibration == 1.0 else f"{self.encoding_name} × {self.calibration:g}"

    @property
    def exact(self) -> bool:
        return self.calibration == 1.0

    def encode(self, text: str) -> list[int]:
        # Special-token strings inside a transcript are data, not control tokens.
        return get_encoding(self.encoding_name).encode(text, disallowed_special=())

    def count(self, text: str) -> int:
        n = len(self.encode(text)) if text else 0
        return n if self.calibration == 1.0 else math.ceil(n * self.calibration)


@dataclass(frozen=True)
class CharsPerTokenCounter:
    """An estimator: ``ceil(len(text) / chars_per_token)``. ``chars/4`` of "abcdefgh" → 2. Chapter 01."""

    chars_per_token: float

    @property
    def name(self) -> str:
        return f"chars/{self.chars_per_token:g}"

    exact: bool = False

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


def counter_for(profile: ModelProfile) -> TokenCounter:
    """The counter a profile implies: its tokenizer, scaled by its calibration factor. Chapter 01."""
    return TiktokenCounter(profile.tokenizer, profile.calibration)


def image_tokens(part: ImagePart, rule: str) -> int:
    """Tokens of one image.

    ``anthropic``: ``ceil(w*h/750)``, at most 1,600 (Anthropic 'Vision' docs; images are resized to
    ~1.15 megapixels). ``openai``: 85 + 170 per 512-px tile after fitting into 2048 and scaling the
    short side to 768 (OpenAI 'Vision' docs, high detail). Unknown size: the rule's maximum. Chapter 01.
    """
    if rule == "anthropic":
        if not (part.width and part.height):
            return 1600
        return min(1600, math.ceil(part.width * part.height / 750))
    if not (part.width and part.height):
        return 85 + 170 * 4
    w, h = float(part.width), float(part.height)
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def tools_tokens(tools: Sequence[ToolSpec], counter: TokenCounter) -> int:
    """Tokens of ``tools`` (ToolSpecs: name, description, JSON-schema ``parameters``) under ``counter``: the OpenAI
    cookbook's recipe for gpt-4o function definitions, applied to nested schemas too.

    The recipe (OpenAI cookbook, 'How to count tokens with tiktoken', section 7, read 2026-11-30): per function
    7 + ``name:description``; 3 if it has properties, then per property 3 + ``name:type:description`` (trailing
    period dropped), an enum -3 + 3 per item + the item; 12 once at the end. The cookbook stops at the top-level
    properties; ctxlab applies the same rule at every depth (as MCP servers emit): a property's own
    ``properties`` add 3 + their properties by the rule above; its ``items`` (arrays) and each ``anyOf`` /
    ``oneOf`` / ``allOf`` alternative count as a property with an empty name. A nested property therefore never
    lowers the count, and a flat tool (no nested schema) counts exactly as the cookbook says.

    How sure: the cookbook's recipe is itself approximate (fitted to gpt-4o's rendering; other OpenAI models
    may differ), the nested extension is ctxlab's (OpenAI does not document how nested schemas are
    rendered) and Anthropic publishes no recipe at all (for Claude: an o200k estimate times the calibration).
    Expect a few percent off on flat tools, more on deeply nested ones. Chapter 01.
    """
    total = 12 if tools else 0
    for tool in tools:
        total += 7 + counter.count(f"{tool.name}:{tool.description.rstrip('.')}")
        total += schema_tokens(tool.parameters if isinstance(tool.parameters, dict) else {}, counter)
    return total


def schema_tokens(schema: dict[str, Any], counter: TokenCounter) -> int:
    """Tokens a JSON schema nests (not its own line), by :func:`tools_tokens`' rule. ``{}`` → 0. Chapter 01."""
    properties = schema.get("properties")
    ok = isinstance(properties, dict) and properties
    total = 3 + sum(property_tokens(str(k), v, counter) for k, v in properties.items()) if ok else 0
    items = schema.get("items")
    inner = [*(items if isinstance(items, list) else [items])]
    inner += [alt for key in ("anyOf", "oneOf", "allOf") if isinstance(schema.get(key), list) for alt in schema[key]]
    return total + sum(property_tokens("", x, counter) for x in inner if isinstance(x, dict))


def property_tokens(key: str, schema: Any, counter: TokenCounter) -> int:
    """Tokens of one property: 3 + ``key:type:description`` (trailing period dropped), a non-empty enum -3 + 3 per
    item + the item, then what it nests (:func:`schema_tokens`). Never below 3. Chapter 01."""
    schema = schema if isinstance(schema, dict) else {}
    total = 3
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        total += -3 + sum(3 + counter.count(str(item)) for item in enum)
    desc = str(schema.get("description", "")).rstrip(".")
    return total + counter.count(f"{key}:{schema.get('type', '')}:{desc}") + schema_tokens(schema, counter)


class MessageMeter:
    """Counts messages, system prompt and tools under one profile, each message once.

    ``meter = MessageMeter(profile)``; ``meter.message(m)`` → tokens of ``m`` including the
    per-message overhead. Counts are cached by message identity, so a context built again on
    the next call counts only the new messages. (``ctxlab/fast/``'s meter, a subclass, also
    remembers the units of the histories it built contexts from: bonus reading.) Chapter 01.
    """

    def __init__(self, profile: ModelProfile, counter: TokenCounter | None = None) -> None:
        self.profile = profile
        self.counter = counter or counter_for(profile)
        # id(msg) -> [msg, tokens with thinking, tokens without] (None: not counted yet): one entry a message
        self._cache: dict[int, list[Any]] = {}
        self._parts: dict[int, tuple[Part, int]] = {}  # id(part) -> (part, tokens): a shared part counted once
        self._words: dict[str, int] = {}  # role or participant name -> tokens (a few short strings, counted once)
        self._heads: dict[tuple[str, int], tuple[Any, int]] = {}  # ("tools" | "system", id(seq)) -> (seq, tokens)

    def text(self, text: str) -> int:
        return self.counter.count(text)

    def message(self, msg: Message, include_thinking: bool = True) -> int:
        """Tokens of one message: overhead + role + parts (+ name). Thinking only if asked."""
        slot = 1 if include_thinking else 2
        hit = self._cache.get(id(msg))
        if hit is None or hit[0] is not msg:  # the stored message keeps its id from being reused
            hit = self._cache[id(msg)] = [msg, None, None]
        elif hit[slot] is not None:
            return hit[slot]
        n = hit[slot] = self.overhead(msg) + sum(self.part(p) for p in msg.parts
                                                 if include_thinking or not isinstance(p, ThinkingPart))
        return n

    def overhead(self, msg: Message) -> int:
        """The tokens a message costs beyond its parts: per-message overhead, role, name."""
        n = self.profile.per_message_tokens + self._word(msg.role)
        if msg.name:
            n += self.profile.per_name_tokens + self._word(msg.name)
        return n

    def _word(self, text: str) -> int:
        n = self._words.get(text)
        if n is None:
            n = self._words[text] = self.counter.count(text)
        return n

    def part(self, part: Part) -> int:
        """Tokens of one part: text, thinking text, tool name + arguments, or an image by size. Counted once per
        part, remembered by identity: a message counted with and without its thinking, or copied by a wire rule
        (``dataclasses.replace`` keeps the parts it does not change), shares the count."""
        hit = self._parts.get(id(part))
        if hit is not None and hit[0] is part:  # the stored part keeps its id from being reused
            return hit[1]
        n = self._count_part(part)
        self._parts[id(part)] = (part, n)
        return n

    def _count_part(self, part: Part) -> int:
        if isinstance(part, (TextPart, ThinkingPart)):
            return self.counter.count(part.text)
        if isinstance(part, ToolCallPart):
            return self.counter.count(part.name) + self.counter.count(part.arguments)
        if isinstance(part, ImagePart):
            return image_tokens(part, self.profile.images)
        return 0

    def system(self, blocks: Sequence[str]) -> int:
        """Tokens of the system prompt blocks (as one system message under OpenAI rules)."""
        if not blocks:
            return 0
        return self._head("system", blocks, lambda: sum(self.counter.count(b) for b in blocks)
                          + (self.profile.per_message_tokens if self.profile.provider != "anthropic" else 0))

    def tools(self, tools: Sequence[ToolSpec]) -> int:
        """Tokens of the tool definitions plus any hidden tool-use system prompt of the provider."""
        if not tools:
            return 0
        return self._head("tools", tools, lambda: tools_tokens(tools, self.counter) + self.profile.tool_system_tokens)

    def _head(self, kind: str, seq: Sequence[Any], count: Callable[[], int]) -> int:
        """The system prompt and the tools come back unchanged on every call: count each sequence once,
        remembered by identity (the sequence is stored so its id cannot be reused). Only tuples: a list may change."""
        if not isinstance(seq, tuple):
            return count()
        hit = self._heads.get((kind, id(seq)))
        if hit is not None and hit[0] is seq:
            return hit[1]
        n = count()
        self._heads[(kind, id(seq))] = (seq, n)
        return n

    def messages(self, msgs: Iterable[Message]) -> int:
        return sum(self.message(m) for m in msgs)


@dataclass(frozen=True)
class InferredHead:
    """A static head (system prompt + tools) the transcript did not record, sized from usage.

    ``tokens`` = the first recorded call's total input tokens minus ctxlab's count of the
    messages before it and of the per-request overhead. Always labelled *inferred*: it carries the counter's error too.
    Chapter 01.
    """

    tokens: int
    call_message_id: str
    recorded_input_tokens: int
    counted_message_tokens: int

    def __str__(self) -> str:
        return (f"inferred static head: {self.tokens:,} tokens = recorded input "
                f"{self.recorded_input_tokens:,} at {self.call_message_id!r} - counted messages "
                f"{self.counted_message_tokens:,}")


def thinking_counts(profile: ModelProfile, position: int, last_user: int) -> bool:
    """Whether the thinking of the message at ``position`` (an index into the sent messages) counts toward the
    prompt, by the profile's rule (``model_facts`` ``thinking_rule``; Anthropic 'Thinking', snapshot 2026-08-22):
    always under ``all`` (keep_all: earlier "thinking blocks remain in context, count toward the window"); under
    ``current_turn`` (last_turn_only: "the API strips them automatically") only after the newest real user message
    at ``last_user`` (-1: none); never under ``none``. ``current_turn``, user at 4 → 3 counts nothing, 5 counts.
    Chapter 01."""
    return profile.thinking == "all" or (profile.thinking == "current_turn" and position > last_user)


def infer_static_head(conversation: Conversation, meter: MessageMeter) -> InferredHead | None:
    """Size the unrecorded part of the static head from the first call that recorded usage.

    The head is the tool definitions and the system prompt. When the transcript records the tools,
    nothing is inferred (None). When it records the system prompt but not the tools (Codex rollouts
    and Copilot logs keep the instructions, never the built-in tools), the system prompt is counted
    with the messages and the rest is the tools' share. None also when no usage is recorded.
    Chapter 02. Example: recorded 4,003 tokens, messages 8, no system, overhead 3 → head 3,992.
    """
    if conversation.tools:
        return None
    before: list[Message] = []
    system = meter.system(conversation.system) if conversation.system else 0
    for msg in conversation.messages:
        if msg.role == "assistant" and msg.usage and msg.usage.total_input_tokens > 0:
            # the per-request overhead is part of the recorded prompt but not of the head
            counted = (meter.messages(m for m in before if m.origin != "meta") + meter.profile.per_request_tokens
                       + system)
            recorded = msg.usage.total_input_tokens
            return InferredHead(max(0, recorded - counted), msg.id, recorded, counted)
        before.append(msg)
    return None
