"""``docs/providers.md``, the provider rules a learner reads, written from the per-model facts table.

:func:`render` turns :func:`ctxlab.tables.model_facts.all_facts` into Markdown: one section per rule (windows,
maximum output, cache minimum, cache multipliers, cache lifetimes, caching mode, earlier turns' thinking,
tokenizer, tool-use system prompt, lifecycle), one table row per value, families collapsed where the value,
the dates and the source agree; then the changes over time and the disagreements the table's notes record.
Every row gives the page (title, address, section), the page date or mirror snapshot, the read date and the
status (documented / measured / assumed). ``python tools/make_providers_doc.py`` writes the file and
``tests/test_providers_doc.py`` fails when it differs from :func:`render`. Pure: no file I/O. Chapters 01, 04.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

from ctxlab.tables.model_facts import READ, Fact, Lifecycle, ToolPrompt, all_facts, families, family_of, model_facts
from ctxlab.tables.cache_rules import rule_for
from ctxlab.tables.profiles import profile_for

DOC_PATH = "docs/providers.md"
REGENERATE = "python tools/make_providers_doc.py"

# (section heading, the fields it shows, their labels in the "rule" column); chapter that teaches it.
SECTIONS: tuple[tuple[str, tuple[tuple[str, str], ...], str], ...] = (
    ("Context window and input limit", (("context_window_tokens", "context window"),
                                        ("max_input_tokens", "maximum input")), "01, 03"),
    ("Maximum output", (("max_output_tokens", "maximum output (`max_tokens`)"),), "03"),
    ("Minimum cacheable prompt", (("min_cache_tokens", "minimum cacheable prompt"),), "04"),
    ("Cache price multipliers", (("cache_write_5m_multiplier", "cache write (5-minute; OpenAI's one write price)"),
                                 ("cache_write_1h_multiplier", "cache write (1-hour)"),
                                 ("cache_read_multiplier", "cache read")), "04"),
    ("Cache lifetimes", (("ttl_options_s", "lifetimes offered"), ("ttl_default_s", "default lifetime")), "04"),
    ("Caching mode", (("cache_mode", "caching mode"),), "04"),
    ("Earlier turns' thinking", (("thinking_rule", "earlier thinking"),), "01, 04"),
    ("Tokenizer", (("tokenizer", "tokenizer generation"),
                   ("o200k_calibration", "ctxlab's factor (provider tokens per o200k token)")), "01"),
    ("Tool-use system prompt", (("tool_prompt_tokens", "hidden tool-use system prompt"),), "01"),
    ("Lifecycle", (("lifecycle", "lifecycle"),), "00"),
)
MODES = {"breakpoints": "breakpoints: `cache_control` marks, up to 4, a read looks back 20 blocks",
         "longest_prefix_128": "automatic: longest shared prefix, in 128-token steps",
         "breakpoints_prompt_cache_options": "breakpoints: `prompt_cache_options`, implicit and explicit",
         "implicit_and_explicit": "implicit (automatic) and explicit caches"}
THINKING = {"keep_all": "kept: every earlier turn's thinking stays in context (counted as input)",
            "last_turn_only": "last turn only: earlier thinking is stripped"}
PROVIDER_NAMES = {"anthropic": "Anthropic", "openai": "OpenAI", "google": "Google"}


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:g} h"
    return f"{seconds / 60:g} min"


def format_value(field: str, value: object) -> str:
    """One value as the table shows it. ``format_value("cache_read_multiplier", 0.05)`` → ``"0.05×"``;
    ``format_value("ttl_options_s", (300.0, 3600.0))`` → ``"5 min, 1 h"``; None → ``"not known"``."""
    if value is None:
        return "not known"
    if field == "max_input_tokens" and value == "window":
        return "the window (no separate input limit)"
    if field.endswith("_multiplier"):
        return f"{value:g}×"
    if field == "ttl_options_s":
        return ", ".join(_duration(s) for s in value)  # type: ignore[union-attr]
    if field == "ttl_default_s":
        return _duration(value)  # type: ignore[arg-type]
    if field == "cache_mode":
        return MODES.get(str(value), str(value))
    if field == "thinking_rule":
        return THINKING.get(str(value), str(value))
    if field == "o200k_calibration":
        return f"{value:.3f}"
    if field == "tokenizer":
        if value.ratio_low is None or value.relative_to == "itself":  # type: ignore[attr-defined]
            return f"`{value.generation}`"  # type: ignore[attr-defined]
        low, high = value.ratio_low, value.ratio_high  # type: ignore[attr-defined]
        ratio = f"{low:g}×" if low == high else f"{low:g}–{high:g}×"
        return f"`{value.generation}`: {ratio} the tokens of `{value.relative_to}`"  # type: ignore[attr-defined]
    if isinstance(value, ToolPrompt):
        return f"{value.auto_none_tokens} tokens (`auto`, `none`) / {value.any_tool_tokens} (`any`, `tool`)"
    if isinstance(value, Lifecycle):
        return _lifecycle(value)
    if isinstance(value, int):
        return f"{value:,} tokens"
    return str(value)


def _lifecycle(life: Lifecycle) -> str:
    published = getattr(life, "published_state", None) or getattr(life, "state", "")
    text = published
    if life.deprecated_on:
        text += f", deprecated {life.deprecated_on}"
    if life.retires_on:
        text += f", retires {life.retires_on}"
    if life.retires_not_before:
        text += f", retires not sooner than {life.retires_not_before}"
        if life.retires_not_before < READ:
            text += f" (a date already past on {READ}; the page read names no retirement date yet)"
    now = life.state_on(READ)
    return text + (f" (so **{now}** as of {READ})" if now != published else "")


def span(since: date | None, until: date | None) -> str:
    """The dates a fact holds, for a reader (``until`` is exclusive, so the last day shown is the day before).
    ``span(None, date(2026, 6, 10))`` → ``"to 2026-06-09"``; ``span(None, None)`` → ``"all dates read"``."""
    last = (until - timedelta(days=1)).isoformat() if until else None
    if since and last:
        return f"{since.isoformat()} to {last}"
    if since:
        return f"from {since.isoformat()}"
    return f"to {last}" if last else "all dates read"


def _link(title: str, url: str) -> str:
    if url.startswith("https://"):
        return f"[{title}]({url})"
    target = url[len("docs/"):] if url.startswith("docs/") else "../" + url
    return f"[{title}]({target})"


def models(names: Iterable[str]) -> str:
    """The families of one row: "every Anthropic model in the table" when they are all of a provider's."""
    names = list(names)
    by_provider: dict[str, list[str]] = {}
    for fam in families():
        by_provider.setdefault(family_of(fam)[1], []).append(fam)
    for provider, fams in by_provider.items():
        if sorted(names) == sorted(fams):
            return f"every {PROVIDER_NAMES[provider]} model in the table ({len(fams)})"
    return ", ".join(f"`{n}`" for n in names)


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rows(field: str) -> list[tuple[Fact, list[str]]]:
    """(a fact, the families it holds for) for one field, families collapsed where the value as shown, the dates
    and the source (page, snapshot, section, status) agree; in table order, oldest first within a family."""
    groups: dict[tuple, tuple[Fact, list[str]]] = {}
    for fam, name, fact in all_facts():
        if name == field:
            src = fact.source
            key = (format_value(field, fact.value), fact.since, fact.until, src.title, src.url, src.page_date,
                   src.section, src.status)
            groups.setdefault(key, (fact, []))[1].append(fam)
    order = {fam: i for i, fam in enumerate(families())}
    return sorted(groups.values(), key=lambda g: (order[g[1][0]], g[0].since or date.min))


def _table(label: str, field: str) -> list[str]:
    lines = []
    for fact, fams in _rows(field):
        src = fact.source
        where = _link(_esc(src.title), src.url) + (f" § {_esc(src.section)}" if src.section else "")
        lines.append(f"| {label} | {_esc(format_value(field, fact.value))} | {models(fams)} | "
                     f"{span(fact.since, fact.until)} | {where} | {_esc(src.page_date)} | {src.read} | {src.status} |")
    return lines


def changes(field: str) -> list[str]:
    """One line per family group whose value changed over the dates read, e.g. for ``min_cache_tokens``:
    ``"`claude-opus-4-7`: 4,096 tokens to 2026-06-09 → 2,048 tokens from 2026-06-10"``."""
    per_family: dict[str, list[Fact]] = {}
    for fam, name, fact in all_facts():
        if name == field:
            per_family.setdefault(fam, []).append(fact)
    groups: dict[str, list[str]] = {}
    for fam, facts in per_family.items():
        if len(facts) > 1:
            steps = " → ".join(f"{format_value(field, f.value)} ({span(f.since, f.until)})" for f in facts)
            groups.setdefault(steps, []).append(fam)
    return [f"* {models(fams)}: {steps}" for steps, fams in groups.items()]


def disagreements(field: str) -> list[str]:
    """The table's notes that record a disagreement between sources for one field, each once, with its families."""
    notes: dict[str, list[str]] = {}
    for fam, name, fact in all_facts():
        if name == field and "Disagreement" in fact.source.note:
            notes.setdefault(fact.source.note, [])
            if fam not in notes[fact.source.note]:
                notes[fact.source.note].append(fam)
    return [f"* {models(fams)}: {_esc(note)}" for note, fams in notes.items()]


HEAD = f"""# Provider rules per model

<!-- Generated from ctxlab/tables/model_facts.py by `{REGENERATE}`: do not edit by hand. -->

The rules ctxlab simulates, per model family, as the providers' pages state them. Each row gives a value, the
models it holds for, the dates it holds (the dates the *documentation* changed, not necessarily the API), the
page it comes from (title, address, section), the page's date or the mirror snapshot read, the day it was read,
and its status:

* **documented** — the provider's own page says it (a ratio of two documented prices counts as documented);
* **measured** — ctxlab measured it on a recorded transcript;
* **assumed** — from a third party, or not found; "not known" means ctxlab falls back (the price table, or no
  check).

How the table is built, every source page and each disagreement with both sides:
[provider_facts.md](provider_facts.md). The verbatim quote behind every value:
`ctxlab.tables.model_facts.model_facts(model)`, field `.source.quote`. Everything below was read on {READ}.
"""


def uses(heading: str) -> list[str]:
    """What ctxlab does with one section's values where that is not simply "uses them", from the code's own
    answers (``profile_for``, ``rule_for``), so this text cannot drift either. Chapters 01 and 04."""
    if heading == "Context window and input limit":
        lines = [f"* `{fam}`: this table {p:,} ({model_facts(fam).context_window_tokens.source.status}); ctxlab "
                 f"uses {w:,} from {profile_for(fam).window_source}" for fam in families()
                 for p, w in [(model_facts(fam).value("context_window_tokens"), profile_for(fam).context_window)]
                 if p and p != w]
        return ["ctxlab's profiles (`profile_for`) take a window from this table only where its status is"
                " documented; elsewhere the price table's window is used:", "", *lines] if lines else []
    if heading == "Cache price multipliers":
        return ["The ledger prices every call from the price table (`ctxlab/tables/prices.py`, genai-prices), not"
                " from these multipliers; where both know a model they agree (`tests/test_cache_rules_facts.py`)."
                " OpenAI's read multipliers are not known here (no OpenAI page read states one per model);"
                " chapter 04 prints them from the price table."]
    if heading == "Cache lifetimes":
        lines = [f"* `{fam}`: the table's default {_duration(t)} is explicit caching's; the simulator assumes "
                 f"{_duration(rule_for(fam).ttl_s)} for implicit caching (`rule_for(model).ttl_s`), which no page"
                 " read states" for fam in families() for t in [model_facts(fam).value("ttl_default_s")]
                 if t and model_facts(fam).value("cache_mode") == "implicit_and_explicit" and rule_for(fam).ttl_s != t]
        return ["How the simulators differ from the table:", "", *lines] if lines else []
    return []


def render() -> str:
    """The whole of ``docs/providers.md`` as a string (ends with a newline). Deterministic: the same table gives
    the same text. Chapters 01 and 04 link here for every provider number they state."""
    out = [HEAD]
    for heading, fields, chapter in SECTIONS:
        out += [f"## {heading}", "", f"Taught in chapter{'s' if ',' in chapter else ''} {chapter}.", "",
                "| rule | value | models | holds | source | page date | read | status |",
                "|---|---|---|---|---|---|---|---|"]
        for field, label in fields:
            out += _table(label, field)
        changed = [line for field, _ in fields for line in changes(field)]
        if changed:
            out += ["", "Changes over time:", "", *changed]
        if uses(heading):
            out += ["", *uses(heading)]
        disputed = [line for field, _ in fields for line in disagreements(field)]
        if disputed:
            out += ["", "Where sources disagree (the table takes the newest first-party page):", "", *disputed]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
