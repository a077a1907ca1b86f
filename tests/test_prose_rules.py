"""The prose states no provider rule the facts table contradicts (issue 13).

The chapters' markdown (notebooks/*.ipynb), README.md and docs/glossary.md state numbers the table in
ctxlab/tables/model_facts.py owns: cache read and write multipliers, cache lifetimes (TTLs), minimum cacheable
prompts, the size of Anthropic's hidden tool-use system prompt, and context windows. Each is found by a pattern
(a regex on the prose) and checked against the table for the models the sentence is about.

Which models a number is about: the models named nearest to it — in its clause (split at ``;``, parentheses,
dashes and ", and"), else its sentence, its paragraph (a list item and a table row are paragraphs of their
own), its cell (a notebook cell, or a README section), else every model in the table. A provider's name
("Anthropic", "OpenAI", "Gemini") stands for all of its models in the table; a model the table does not know
(``gpt-4``) means the number is not the table's to check. Where a clause names models, only those are
checked, so "0.1× on Claude Sonnet 4.6 and most other Claude models" checks Sonnet 4.6 alone. So "reads cost
0.1×" said of Anthropic fails (Claude Opus 5.5 reads at 0.05×); said of "Claude Sonnet 4.6 and Claude Opus 4.5"
it passes. Values are the table's on its read date
(2026-12-02); a sentence that names a year may state an older value the table records for that model.

Not checked: a myth box's **Claim** paragraph (quoted to be refuted), fenced code, and code cells (their
printed numbers are measured, not stated). The correct rules, per model: docs/providers.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctxlab.tables.model_facts import READ, TABLE, UnknownModelError, families, family_of, model_facts

REPO = Path(__file__).resolve().parents[1]
PROVIDERS = {"anthropic": r"\bAnthropic\b|\bClaude\b(?!\s+Code)", "openai": r"\bOpenAI\b|\bGPT\b",
             "google": r"\bGemini\b|\bGoogle\b"}
MODEL = re.compile(r"\b(?:claude-[a-z]+-[0-9][a-z0-9.-]*|gpt-[0-9][a-z0-9.-]*|gemini-[0-9][a-z0-9.-]*"
                   r"|(?:Claude\s+)?(?:Opus|Sonnet|Haiku|Fable|Mythos)\s+\d+(?:\.\d+)?(?![\d.]*\d)"
                   r"|GPT-\d+(?:\.\d+)?[a-z]?|Gemini\s+\d+(?:\.\d+)?\s+(?:Pro|Flash))")
CLAUSE = re.compile(r"[;()|]| — | – |,\s+(?:and|but|while|whereas)\s+")
DATED = re.compile(r"\b20\d\d\b")


# --- reading the prose: paragraphs, sentences, clauses, and the models each is about ------------------------

@dataclass(frozen=True)
class Scope:
    families: tuple[str, ...] | None  # None: a model the table does not know, so nothing to check


def model_id(mention: str) -> str:
    """'Claude Opus 4.5' / 'Opus 4.5' / 'GPT-5.6' / 'Gemini 2.5 Pro' -> an id family_of reads."""
    text = re.sub(r"\s+", "-", mention.strip().rstrip(".-").lower())
    if re.match(r"(opus|sonnet|haiku|fable|mythos)-", text):
        text = "claude-" + text
    if text.startswith("claude-"):
        text = re.sub(r"(?<=\d)\.(?=\d)", "-", text)
    return text


def scope_of(text: str) -> Scope | None:
    """The families ``text`` names (models first, else providers); None if it names neither."""
    known, unknown = [], False
    for m in MODEL.finditer(text):
        try:
            fam = family_of(model_id(m.group(0)))[0]
        except UnknownModelError:
            unknown = True
            continue
        if fam not in known:
            known.append(fam)
    if known:
        return Scope(tuple(known))
    if unknown:
        return Scope(None)
    rest = MODEL.sub(" ", text)
    named = [p for p, pattern in PROVIDERS.items() if re.search(pattern, rest)]
    if named:
        return Scope(tuple(f for f in families() if family_of(f)[1] in named))
    return None


def resolve(levels: list[str]) -> tuple[str, ...] | None:
    for text in levels:
        found = scope_of(text)
        if found is not None:
            return found.families
    return families()


def paragraphs(markdown: str) -> list[str]:
    """Paragraphs of markdown without code, quote marks and emphasis; list items and table rows stand alone."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    out: list[list[str]] = [[]]
    for line in text.splitlines():
        line = re.sub(r"^\s*>\s?", "", line).replace("*", "").replace("`", "")
        line = re.sub(r"\[([^\]]*)\]\([^)\s]*\)", r"\1", line)  # a link reads as its text
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            out.append([])
        elif stripped.startswith("|") or re.match(r"([-+]|\d+\.)\s", stripped):
            out += [[stripped], []]
        else:
            out[-1].append(stripped)
    return [" ".join(p) for p in out if p and not re.match(r"Claim\b", p[0])]


def sentences(paragraph: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+(?=[A-Z\"“(\[])", paragraph)


# --- the patterns: what a number in prose claims --------------------------------------------------------------

@dataclass(frozen=True)
class Claim:
    field: str
    values: tuple  # one value, or (low, high) for a range
    detail: str = ""  # "default" (TTL), or the tool_choice named
    range: bool = False


WORDS = {"a tenth": 0.1, "one tenth": 0.1, "twice the": 2.0}
MULT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?[×x](?![\w])(?!\s*[\d(])|\b(a tenth|one tenth|twice the)\b"
                  r"|(?<![\w.])(\d+(?:\.\d+)?)\s?%\s+(?:is the\s+)?(?:discount|cheaper|off)\b")
READ_KW = re.compile(r"\bread(?:s|ing)?\b|\bhits?\b", re.IGNORECASE)
WRITE_KW = re.compile(r"\bwrit(?:e|es|ing|ten)\b|\bwrote\b", re.IGNORECASE)
TIER = re.compile(r"(?:5|five)[- ]minute|\bhour\b|\b1[- ]hour|\bone[- ]hour", re.IGNORECASE)


def kind_at(clause: str, pos: int) -> str | None:
    before = [(m.end(), k) for k, kw in (("read", READ_KW), ("write", WRITE_KW)) for m in kw.finditer(clause[:pos])]
    if before:
        return max(before)[1]
    after = [(m.start(), k) for k, kw in (("read", READ_KW), ("write", WRITE_KW)) for m in kw.finditer(clause, pos)]
    return min(after)[1] if after else None


def multiplier_claims(clause: str, inherited: str | None) -> tuple[list[Claim], str | None]:
    claims, matches = [], list(MULT.finditer(clause))
    for i, m in enumerate(matches):
        if m.group(3):
            value, kind = round(1 - float(m.group(3)) / 100, 6), "read"
        else:
            value = float(m.group(1)) if m.group(1) else WORDS[m.group(2).lower()]
            kind = kind_at(clause, m.start()) or inherited
        if kind is None:
            continue
        inherited = kind
        if kind == "read":
            claims.append(Claim("cache_read_multiplier", (value,)))
            continue
        lo = matches[i - 1].end() if i else 0
        hi = matches[i + 1].start() if i + 1 < len(matches) else len(clause)
        after = [t.group(0).lower() for t in TIER.finditer(clause, m.end(), hi)]  # "1.25× for 5 minutes"
        before = [t.group(0).lower() for t in TIER.finditer(clause, lo, m.start())]  # "for an hour, 2×"
        tier = after[0] if after else (before[-1] if before else "")
        hour = "hour" in tier
        claims.append(Claim("cache_write_1h_multiplier" if hour else "cache_write_5m_multiplier", (value,)))
    if not matches:  # a clause with no number still says what the next one is about: "a cache read, (at a tenth)"
        inherited = kind_at(clause, len(clause)) or inherited
    return claims, inherited


N = r"(\d+|one|an?|five|ten|thirty|twenty-four)"
UNITS = {"minute": 60, "minutes": 60, "min": 60, "hour": 3600, "hours": 3600, "h": 3600}
NUMBERS = {"one": 1, "a": 1, "an": 1, "five": 5, "ten": 10, "thirty": 30, "twenty-four": 24}
TTL_PATTERNS = (
    re.compile(rf"\b{N}[- ]?(minutes?|min|hours?|h)\b\s*(?:TTL|lifetime|cache lifetime|retention)", re.IGNORECASE),
    re.compile(rf"(?:TTL|lifetime|lives|live for|retention|expires?)\b[^.;()]{{0,25}}?\b{N}[- ]?"
               rf"(minutes?|min|hours?|h)\b", re.IGNORECASE),
    re.compile(r"\bTTL is (\d+)()\b(?![- ]?(?:min|hour|h\b|%|\d))", re.IGNORECASE),
    re.compile(rf"\b{N}[- ]?(minutes?|min|hours?|h)\b by default", re.IGNORECASE),
)


def ttl_claims(clause: str) -> list[Claim]:
    claims, seen = [], set()
    for pattern in TTL_PATTERNS:
        for m in pattern.finditer(clause):
            if m.start(1) in seen or re.search(r"\d\s*(?:–|-|to)\s*$", clause[:m.start(1)]):
                continue  # counted already, or one end of a range ("5 to 10 minutes")
            seen.add(m.start(1))
            count = NUMBERS.get(m.group(1).lower()) or int(m.group(1))
            seconds = float(count * UNITS.get(m.group(2).lower() or "minutes", 60))
            default = "default" in clause.lower()
            claims.append(Claim("ttl_default_s" if default else "ttl_options_s", (seconds,),
                                "default" if default else ""))
    return claims


MIN_KW = re.compile(r"minimum|cacheable|cache[sd]? nothing under|or more is (?:stored|cached)|shortest prompt",
                    re.IGNORECASE)
TOKENS_N = re.compile(r"(?<![\d,.\w-])(\d{1,2},\d{3}|\d{3,5})(?![\d,.]\d|\d)")


def min_cache_claims(clause: str) -> list[Claim]:
    return [Claim("min_cache_tokens", (int(m.group(1).replace(",", "")),)) for m in TOKENS_N.finditer(clause)
            if any(abs(k.start() - m.start()) <= 60 for k in MIN_KW.finditer(clause))]


TOOL_KW = re.compile(r"tool-use system prompt|tool prompt|tool_choice", re.IGNORECASE)
TOOL_N = re.compile(r"(?<![\d,.])(\d{3})(?:\s*(?:–|-|to)\s*(\d{3}))?\s*tokens")
CHOICE = re.compile(r"tool_choice\W{0,3}(auto|none|any|tool)\b")


def tool_claims(clause: str) -> list[Claim]:
    if not TOOL_KW.search(clause):
        return []
    choice = CHOICE.search(clause)
    claims = []
    for m in TOOL_N.finditer(clause):
        values = (int(m.group(1)), int(m.group(2))) if m.group(2) else (int(m.group(1)),)
        claims.append(Claim("tool_prompt_tokens", values, choice.group(1) if choice else "", bool(m.group(2))))
    return claims


WINDOW_CUE = re.compile(r"context window|model's (?:own )?window|whose window|'s (?:own )?window|own window")
WINDOW_N = r"(\d+(?:\.\d+)?\s?[kKM]\b|\d{1,3}(?:,\d{3})+|\d{4,})"


def window_value(text: str) -> int:
    text = text.replace(",", "").replace(" ", "")
    scale = {"k": 1_000, "K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("kKM")) * scale)


def window_claims(clause: str) -> list[Claim]:
    claims = []
    for cue in WINDOW_CUE.finditer(clause):
        after = re.match(rf"\s*(?:of|is|:)?\s*{WINDOW_N}", clause[cue.end():cue.end() + 30])
        before = re.search(rf"{WINDOW_N}[- ](?:token[- ])?$", clause[max(0, cue.start() - 25):cue.start()])
        for m in (after, before):
            if m:
                claims.append(Claim("context_window_tokens", (window_value(m.group(1)),)))
    return claims


# --- checking a claim against the table ----------------------------------------------------------------------

def values_for(family: str, field: str, dated: bool) -> list:
    if dated:
        return [f.value for f in TABLE[family][field]]
    return [model_facts(family, on=READ).value(field)]


def tool_parts(value, choice: str) -> list[int]:
    if value is None:
        return []
    if choice:
        return [value.for_choice(choice)]
    return [value.auto_none_tokens, value.any_tool_tokens]


def problems(claim: Claim, scope: tuple[str, ...], dated: bool) -> list[str]:
    """'family: the table says X' for each family in scope the claim contradicts ([] = agrees)."""
    wrong = []
    if claim.field == "tool_prompt_tokens" and claim.range:
        parts = {fam: [p for v in values_for(fam, claim.field, dated) for p in tool_parts(v, claim.detail)]
                 for fam in scope}
        every = [p for ps in parts.values() for p in ps]
        if every and (min(every), max(every)) != claim.values:
            wrong.append(f"over {', '.join(scope)} the table gives {min(every)}–{max(every)}")
        return wrong
    stated = claim.values[0]
    for fam in scope:
        options = values_for(fam, claim.field, dated)
        if claim.field == "tool_prompt_tokens":
            known = [p for v in options for p in tool_parts(v, claim.detail)]
        elif claim.field == "ttl_options_s":
            known = [s for v in options + values_for(fam, "ttl_default_s", dated) if v is not None
                     for s in (v if isinstance(v, tuple) else (v,))]
        else:
            known = [v for v in options if v is not None]
        if known and not any(abs(float(v) - float(stated)) < 1e-9 for v in known):
            wrong.append(f"{fam}: {sorted(set(known))}")
    return wrong


def check_markdown(markdown: str, where: str) -> list[str]:
    """One message per stated number the table contradicts: where, the field, the families, the sentence."""
    failures = []
    for paragraph in paragraphs(markdown):
        for sentence in sentences(paragraph):
            formula = re.sub(r"(\d)\s?[×x]\s*(?=[\d(])", r"\1 times ", sentence)  # "0.9 × (read share)"
            clauses, kind = CLAUSE.split(formula), None
            for clause in clauses:
                mults, kind = multiplier_claims(clause, kind)
                for claim in mults + ttl_claims(clause) + min_cache_claims(clause) + tool_claims(clause) + \
                        window_claims(clause):
                    scope = resolve([clause, sentence, paragraph, markdown])
                    if scope is None:
                        continue
                    wrong = problems(claim, scope, bool(DATED.search(sentence)))
                    if wrong:
                        stated = "–".join(str(v) for v in claim.values)
                        failures.append(
                            f"{where}: {claim.field} {stated}{' (' + claim.detail + ')' if claim.detail else ''} "
                            f"is contradicted by the table for {'; '.join(wrong)} — in: «{sentence.strip()}». "
                            "Name the models it holds for (docs/providers.md).")
    return failures


# --- the prose this project ships ----------------------------------------------------------------------------

def prose() -> Iterator[tuple[str, str]]:
    """(where, markdown): every markdown cell of every chapter, and each section of README.md, the glossary, the
    maintainers' page and the cheat sheet."""
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] == "markdown":
                yield f"{path.name} cell {i}", "".join(cell["source"])
    for rel in ("README.md", "docs/glossary.md", "docs/maintainers.md", "docs/cheatsheet.md"):
        if not (REPO / rel).exists():
            continue
        text = re.sub(r"```.*?```", "", (REPO / rel).read_text(encoding="utf-8"), flags=re.DOTALL)
        for section in re.split(r"(?m)^(?=#{1,6} )", text):
            title = section.splitlines()[0].lstrip("# ").strip() if section.strip() else ""
            yield f"{rel} § {title}", section


def test_the_prose_states_no_rule_the_table_contradicts():
    failures = [f for where, text in prose() for f in check_markdown(text, where)]
    assert failures == [], "\n".join(failures)


def test_the_prose_is_read_at_all():
    """The reader finds the chapters' cells and the two documents, and patterns fire on the shipped prose."""
    found = list(prose())
    assert sum("ipynb" in w for w, _ in found) > 100
    assert any(w.startswith("README.md") for w, _ in found) and any("glossary" in w for w, _ in found)


# --- the checker itself, on sentences whose verdict is known --------------------------------------------------

BAD = [
    # Claude Opus 5.5 overview: "- Input\n- $4 / MTok", "- Cache read\n- $0.20 / MTok" (0.05×), read 2026-12-02.
    ("Anthropic's rules: reading costs 0.1× the input price, writing costs 1.25×.", "cache_read_multiplier 0.1"),
    ("Anything read from the cache is billed as a cache read, at about a tenth of the normal price.",
     "cache_read_multiplier 0.1"),
    # Tool use with Claude, Pricing (snapshot ff5b8ed): "| Claude Sonnet 4.6 | `auto`, `none` ... | 497 tokens ..."
    ("Anthropic adds a hidden tool-use system prompt of its own (346 tokens with `tool_choice: auto`).",
     "tool_prompt_tokens 346 (auto)"),
    # openai-python response_create_params.py (e43b422): "Organizations without ZDR enabled default to `24h`."
    ("An entry lives for its TTL: 5 minutes by default, restarted by each read.", "ttl_default_s 300.0"),
    ("With OpenAI, a cache entry lives 5 minutes by default.", "ttl_default_s 300.0"),
    ("| TTL | 生存时间 | how long a cache entry lives unused (5 minutes by default) | 04 |", "ttl_default_s 300.0"),
    ("| cache read | 缓存读取 | input tokens served from the cache (about a tenth of the normal input price) |",
     "cache_read_multiplier 0.1"),
    # Context windows (snapshot ff5b8ed): "Other Claude models, including Claude Sonnet 4.5, have a 200k-token ..."
    ("Claude Sonnet 4.5 has a context window of 1M tokens.", "context_window_tokens 1000000"),
    # Prompt caching, Cache limitations (ff5b8ed): "- 4,096 tokens for Claude Opus 4.6 and Claude Opus 4.5"
    ("The minimum cacheable prompt of Claude Opus 4.5 is 1,024 tokens.", "min_cache_tokens 1024"),
    # ... and from 2026-06-10: "- 2,048 tokens for [Claude Mythos Preview](...) and Claude Opus 4.7"
    ("The minimum cacheable prompt of Claude Opus 4.7 is 4,096 tokens.", "min_cache_tokens 4096"),
    ("OpenAI and Anthropic writes cost 1.25× the input price.", "cache_write_5m_multiplier 1.25"),
    ("Writes cost 1.25× for five minutes, 1.25× for an hour on Claude Sonnet 4.6.", "cache_write_1h_multiplier 1.25"),
    ("The 90 % is the discount on each token read, for every model.", "cache_read_multiplier 0.1"),
    ("Anthropic's hidden tool-use system prompt is 496–675 tokens with `tool_choice: auto`.",
     "tool_prompt_tokens 496–675"),
]
GOOD = [
    "Claude Sonnet 4.6 and Claude Opus 4.5 read at 0.1× the input price; Claude Opus 5.5 at 0.05×.",
    "On Claude Sonnet 4.6 a cache write costs 1.25× the input price for a 5-minute lifetime, 2× for an hour.",
    "Anthropic's cache entries live 5 minutes by default; OpenAI's default retention is 24 h on gpt-5.5.",
    "The minimum cacheable prompt of Claude Opus 4.7 fell from 4,096 to 2,048 tokens on 2026-06-10.",
    "Claude Sonnet 4.6 adds a hidden tool-use system prompt of 497 tokens with `tool_choice: auto`.",
    "Claude Opus 4.5's context window is 200,000 tokens; Claude Sonnet 4.6's context window is 1M.",
    "aider sent 10,466 tokens to gpt-4, whose window is 8,192.",
    "> **Claim** (a common summary): cached tokens are 90% cheaper, so caching cuts the bill by 90%.",
    "The prompt saving is 0.9 × (read share) − 0.25 × (write share); 4,860 = 37 × 128 + 124.",
    "Replayed at a 100,000-token window, half of pi's own; a coffee break of 6 minutes.",
    "* **OpenAI** bills no write on gpt-4o: its writes cost 1× the input price.",
]


@pytest.mark.parametrize(("sentence", "expected"), BAD, ids=[b[1] for b in BAD])
def test_the_checker_flags_a_contradicted_rule(sentence, expected):
    failures = check_markdown(sentence, "example")
    assert failures, f"not flagged: {sentence}"
    assert any(expected in f for f in failures), failures
    assert all(f.startswith("example: ") and sentence.replace("`", "")[:20] in f for f in failures)


@pytest.mark.parametrize("sentence", GOOD)
def test_the_checker_passes_a_correct_sentence(sentence):
    assert check_markdown(sentence, "example") == []


def test_a_number_is_about_the_models_named_nearest_to_it():
    assert scope_of("Claude Opus 4.5 and gpt-4o") == Scope(("claude-opus-4-5", "gpt-4o"))
    assert scope_of("as for Opus 4.5's 4,096 tokens") == Scope(("claude-opus-4-5",))
    assert scope_of("gpt-4, whose window is 8,192") == Scope(None)
    assert scope_of("a Claude Code session") is None
    assert len(scope_of("Anthropic's rules").families) == sum(f.startswith("claude-") for f in families())
    assert resolve(["at 1.25×", "Call 1 wrote all of it, at 1.25×", "* Anthropic, call 2: ..."]) == \
        scope_of("Anthropic").families
