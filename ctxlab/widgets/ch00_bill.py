"""Chapter 00: a real agent's bill, and loading your own transcript.

What it holds:

* :func:`read_bill` — ``data/pi_bill.csv`` (one row per model call of a real pi session, with the
  usage and cost pi recorded) as :class:`BillCall` rows;
* :func:`summarize` — the bill's totals: cost, prompt tokens, the share read from the prompt cache,
  and what the same calls would have cost with no cache at all;
* :func:`find_rewrites` — the calls that wrote again, to the cache, a prefix the previous call had
  already cached, with the cause the record shows (a pause longer than the cache lifetime, a
  thinking-setting or model change, a compaction) or none;
* :class:`BillWidget` — the cumulative cost line; one control: price the same calls as billed or
  with no prompt cache;
* :class:`TranscriptUpload` — a file picker that saves the chosen file to a fresh temporary
  directory (never next to the learner's files) and loads it.

Simplified on purpose: prices per token are recovered from the bill itself (recorded cost divided
by tokens, per model), not from a price table; "re-written" tokens are
``min(cache_write, previously cached − cache_read)`` — the part of what the previous call left in
the cache (its cache read + cache write) that this call paid to write again instead of reading.
Anthropic's documented cache lifetime is 5 minutes from the last use (the default ``ephemeral``
TTL); the bill's ``gap_s`` is start to start, which is when the previous call last used the cache.
"""

from __future__ import annotations

import csv
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ctxlab.messages import Conversation
from ctxlab.base.safe_text import shown
from ctxlab.widgets._plots import COLOURS, figure, show_in

CACHE_TTL_S = 300  # Anthropic's default prompt-cache lifetime, refreshed on every use
_INT = ("input", "cache_read", "cache_write", "output")
_FLOAT = ("cost_input", "cost_output", "cost_cache_read", "cost_cache_write", "cost_total")


@dataclass(frozen=True)
class BillCall:
    """One model call of the bill. Tokens are the provider's buckets (``input`` = uncached part); costs in USD."""

    call: int
    timestamp: str
    model: str
    stop_reason: str
    gap_s: float | None
    input: int
    cache_read: int
    cache_write: int
    output: int
    cost_input: float
    cost_output: float
    cost_cache_read: float
    cost_cache_write: float
    cost_total: float
    event: str

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token of the call: uncached + cache read + cache write."""
        return self.input + self.cache_read + self.cache_write


def read_bill(path: str | Path) -> list[BillCall]:
    """The rows of a bill CSV (``data/pi_bill.csv``'s columns). ``read_bill(PI_BILL)[0].call`` → 1."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        out.append(BillCall(
            call=int(r["call"]), timestamp=r["timestamp"], model=r["model"], stop_reason=r["stop_reason"],
            gap_s=float(r["gap_s"]) if r["gap_s"] else None,
            **{k: int(float(r[k] or 0)) for k in _INT}, **{k: float(r[k] or 0) for k in _FLOAT},
            event=r.get("event") or ""))
    return out


@dataclass(frozen=True)
class Prices:
    """USD per token of one model, recovered from the bill: recorded cost / recorded tokens."""

    input: float
    cache_read: float
    cache_write: float
    output: float


def prices_from_bill(calls: Sequence[BillCall]) -> dict[str, Prices]:
    """model -> :class:`Prices`; a bucket the model never used gets the price 0."""
    def per_token(rows: list[BillCall], cost: str, tokens: str) -> float:
        n = sum(getattr(c, tokens) for c in rows)
        return sum(getattr(c, cost) for c in rows) / n if n else 0.0

    out: dict[str, Prices] = {}
    for model in sorted({c.model for c in calls}):
        mine = [c for c in calls if c.model == model]
        out[model] = Prices(per_token(mine, "cost_input", "input"), per_token(mine, "cost_cache_read", "cache_read"),
                            per_token(mine, "cost_cache_write", "cache_write"), per_token(mine, "cost_output", "output"))
    return out


@dataclass(frozen=True)
class BillSummary:
    """The bill's totals. Tokens in tokens, money in USD; ``cache_read_share`` is of all prompt tokens."""

    calls: int
    empty_calls: int  # aborted or failed requests recorded with zero usage
    cost_usd: float
    no_cache_cost_usd: float  # the same calls with every prompt token at the uncached input price
    prompt_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    output_tokens: int

    @property
    def cache_read_share(self) -> float:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def saved_share(self) -> float:
        """How much cheaper the bill is than the same calls without a prompt cache (0.8 = 80 %)."""
        return 1 - self.cost_usd / self.no_cache_cost_usd if self.no_cache_cost_usd else 0.0

    def rows(self) -> list[tuple[str, str]]:
        """(what, value) lines for a text table."""
        return [
            ("model calls", f"{self.calls:,}"),
            ("  of which recorded with zero usage", f"{self.empty_calls:,}"),
            ("prompt tokens", f"{self.prompt_tokens:,}"),
            ("  read from the cache", f"{self.cache_read_tokens:,}"),
            ("  written to the cache", f"{self.cache_write_tokens:,}"),
            ("  uncached", f"{self.uncached_tokens:,}"),
            ("output tokens", f"{self.output_tokens:,}"),
            ("share of prompt tokens read from cache", f"{100 * self.cache_read_share:.1f}%"),
            ("cost as billed", f"${self.cost_usd:,.2f}"),
            ("cost of the same calls with no prompt cache", f"${self.no_cache_cost_usd:,.2f}"),
            ("saved by the cache", f"{100 * self.saved_share:.1f}%"),
        ]


def no_cache_cost(call: BillCall, prices: Prices) -> float:
    """The call's cost had every prompt token been charged at the uncached input price."""
    return call.prompt_tokens * prices.input + call.cost_output


def summarize(calls: Sequence[BillCall]) -> BillSummary:
    """Totals of a bill. On ``data/pi_bill.csv``: 484 calls, the recorded cost pi summed."""
    prices = prices_from_bill(calls)
    return BillSummary(
        calls=len(calls), empty_calls=sum(1 for c in calls if c.prompt_tokens == 0),
        cost_usd=sum(c.cost_total for c in calls),
        no_cache_cost_usd=sum(no_cache_cost(c, prices[c.model]) for c in calls),
        prompt_tokens=sum(c.prompt_tokens for c in calls), cache_read_tokens=sum(c.cache_read for c in calls),
        cache_write_tokens=sum(c.cache_write for c in calls), uncached_tokens=sum(c.input for c in calls),
        output_tokens=sum(c.output for c in calls))


@dataclass(frozen=True)
class Rewrite:
    """A call that wrote again what the previous call had cached.

    ``rewritten_tokens`` = min(cache_write, previously cached − cache_read), where "previously cached"
    is the previous call's cache read + cache write; ``gap_s`` is the time since the previous call
    that used the cache; ``extra_usd`` what writing instead of reading those tokens cost.
    """

    call: int
    gap_s: float
    previous_prompt_tokens: int
    cache_read: int
    cache_write: int
    rewritten_tokens: int
    extra_usd: float
    cause: str
    event: str


def _cause(gap_s: float, events: str, ttl_s: int) -> str:
    causes = []
    if "compaction" in events:
        causes.append("compaction rewrote the history")
    if "thinking_level_change" in events:
        causes.append("thinking setting changed")
    if "model_change" in events:
        causes.append("model changed")
    if gap_s > ttl_s:
        causes.append(f"pause of {gap_s / 60:.1f} min > {ttl_s // 60}-min cache lifetime")
    return "; ".join(causes) or "none recorded"


def find_rewrites(calls: Sequence[BillCall], min_tokens: int = 10_000, ttl_s: int = CACHE_TTL_S) -> list[Rewrite]:
    """Calls that re-wrote at least ``min_tokens`` of the previous prompt, with the recorded cause.

    Calls recorded with zero usage (aborted requests) are skipped: they neither read nor refresh
    the cache, so the gap and the events they carry count toward the next call that did.
    ``previous_prompt_tokens`` is kept for reference: the whole prompt of the previous call.
    """
    prices = prices_from_bill(calls)
    out: list[Rewrite] = []
    previous: BillCall | None = None
    gap, events = 0.0, []
    for c in calls:
        gap += c.gap_s or 0.0
        if c.event:
            events.append(c.event)
        if c.prompt_tokens == 0:
            continue
        if previous is not None:
            cached = previous.cache_read + previous.cache_write  # what the previous call left in the cache
            rewritten = max(0, min(c.cache_write, cached - c.cache_read))
            if rewritten >= min_tokens:
                p = prices[c.model]
                joined = ";".join(events)
                out.append(Rewrite(c.call, round(gap, 3), previous.prompt_tokens, c.cache_read, c.cache_write,
                                   rewritten, rewritten * (p.cache_write - p.cache_read), _cause(gap, joined, ttl_s),
                                   joined))
        previous, gap, events = c, 0.0, []
    return out


def rewrite_rows(rewrites: Sequence[Rewrite]) -> list[dict[str, Any]]:
    """Rows for :func:`ctxlab.lab.workbook.text_table` (columns: call, gap, rewritten, extra, cause)."""
    return [{"call": r.call, "gap": f"{r.gap_s:.0f} s", "rewritten": r.rewritten_tokens,
             "extra": f"${r.extra_usd:.2f}", "cause": r.cause} for r in rewrites]


REWRITE_COLUMNS = ("call", "gap", "rewritten", "extra", "cause")


def notable_rewrites(rewrites: Sequence[Rewrite]) -> dict[str, Rewrite]:
    """The largest re-write with each kind of recorded cause: ``{"after a pause": ..., ...}`` (kinds absent are left out)."""
    kinds = {"after a pause": ("pause",), "after a thinking or model change": ("thinking", "model changed"),
             "after a compaction": ("compaction",), "with no recorded cause": ("none recorded",)}
    out = {}
    for label, words in kinds.items():
        found = [r for r in rewrites if any(w in r.cause for w in words)]
        if found:
            out[label] = max(found, key=lambda r: r.rewritten_tokens)
    return out


def tokens_figure(calls: Sequence[BillCall]):  # -> plotly Figure
    """Prompt tokens of each call, stacked: read from the cache, written to it, uncached."""
    import plotly.graph_objects as go

    fig = figure("Prompt tokens per call", xaxis_title="model call", yaxis_title="tokens", barmode="stack",
                 bargap=0, legend=dict(orientation="h", y=-0.2))
    x = [c.call for c in calls]
    for name, attr, colour in (("read from cache", "cache_read", COLOURS["cost"]),
                               ("written to cache", "cache_write", COLOURS["rewrite"]),
                               ("uncached", "input", COLOURS["dropped"])):
        fig.add_trace(go.Bar(x=x, y=[getattr(c, attr) for c in calls], name=name, marker_color=colour,
                             marker_line_width=0))
    return fig
PRICINGS = ("as billed", "no prompt cache")


@dataclass(frozen=True)
class BillView:
    """What :class:`BillWidget` shows for one choice: the cumulative cost after each call (USD)."""

    pricing: str
    total_usd: float
    cumulative_usd: tuple[float, ...]
    rewrite_calls: tuple[int, ...]


class BillWidget:
    """The cumulative cost of a real session; the one choice: as billed, or the same calls with no cache.

    ``w = BillWidget(read_bill(PI_BILL)); w.pricing.value = "no prompt cache"; w.state.total_usd`` →
    the no-cache total. ``w.widget`` is what a notebook displays.
    """

    def __init__(self, calls: Sequence[BillCall], *, min_rewrite_tokens: int = 10_000) -> None:
        import ipywidgets as W

        self.calls = list(calls)
        self.summary = summarize(self.calls)
        self.rewrites = find_rewrites(self.calls, min_rewrite_tokens)
        self._prices = prices_from_bill(self.calls)
        self.pricing = W.ToggleButtons(options=PRICINGS, value=PRICINGS[0], description="price:")
        self.controls = W.HBox([self.pricing])
        self.label = W.HTML()
        self.plot = W.Output()
        self.widget = W.VBox([self.controls, self.label, self.plot])
        self.state = self.compute(self.pricing.value)
        self.pricing.observe(self._on_change, names="value")
        self._render()

    def compute(self, pricing: str) -> BillView:
        """The cumulative cost line under ``pricing`` (one of :data:`PRICINGS`)."""
        if pricing not in PRICINGS:
            raise ValueError(f"pricing must be one of {PRICINGS}, not {pricing!r}")
        running, line = 0.0, []
        for c in self.calls:
            running += c.cost_total if pricing == PRICINGS[0] else no_cache_cost(c, self._prices[c.model])
            line.append(running)
        return BillView(pricing, running, tuple(line), tuple(r.call for r in self.rewrites))

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(change["new"])
        self._render()

    def figure(self):  # -> plotly Figure
        """The cumulative cost line of :attr:`state`, re-write calls marked."""
        import plotly.graph_objects as go

        s = self.state
        x = [c.call for c in self.calls]
        y = [round(v, 4) for v in s.cumulative_usd]
        fig = figure(f"Cumulative cost, {s.pricing}: ${s.total_usd:,.2f}", xaxis_title="model call",
                     yaxis_title="USD", showlegend=True, legend=dict(x=0.01, y=0.99))
        colour = COLOURS["cost"] if s.pricing == PRICINGS[0] else COLOURS["no_cache"]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=s.pricing, line=dict(color=colour, width=2)))
        at = {c.call: i for i, c in enumerate(self.calls)}
        marks = [r for r in self.rewrites]
        fig.add_trace(go.Scatter(
            x=[r.call for r in marks], y=[y[at[r.call]] for r in marks], mode="markers",
            name="prefix re-written to the cache", marker=dict(color=COLOURS["rewrite"], size=9, symbol="diamond"),
            text=[f"call {r.call}: {r.rewritten_tokens:,} tokens re-written ({r.cause})" for r in marks],
            hoverinfo="text"))
        return fig

    def _render(self) -> None:
        s = self.state
        self.label.value = (f"<b>{s.pricing}</b>: ${s.total_usd:,.2f} over {len(self.calls):,} calls "
                            f"({len(s.rewrite_calls)} calls re-wrote the cached prefix)")
        show_in(self.plot, self.figure())

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"BillWidget(pricing={self.pricing.value!r}, total=${self.state.total_usd:,.2f})"
        return bundle


# ---- loading a learner's own transcript ----------------------------------------------------------

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def save_upload(name: str, content: bytes, directory: str | Path | None = None) -> Path:
    """Write uploaded bytes to a fresh temporary directory (or ``directory``); returns the file's path.

    The name is reduced to its last component and safe characters: ``"../a b.jsonl"`` → ``a_b.jsonl``.
    """
    base = _SAFE_NAME.sub("_", Path(name.replace("\\", "/")).name).strip("._") or "transcript.jsonl"
    folder = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="ctxlab-upload-"))
    target = folder / base
    target.write_bytes(content)
    return target


class TranscriptUpload:
    """A file picker for your own transcript: saves it to a temporary directory and loads it.

    After an upload, ``.path`` is the temporary copy, ``.conversation`` the loaded conversation (the
    longest when the file holds several) and ``.error`` the reason when it could not be read.
    Nothing is written next to your own files.
    """

    def __init__(self) -> None:
        import ipywidgets as W

        self.upload = W.FileUpload(accept=".jsonl,.json,.traj", multiple=False, description="transcript")
        self.status = W.HTML("<i>no file chosen: the chapters use the bundled sample</i>")
        self.controls = W.HBox([self.upload])
        self.widget = W.VBox([self.controls, self.status])
        self.path: Path | None = None
        self.conversation: Conversation | None = None
        self.error: str | None = None
        self.upload.observe(self._on_upload, names="value")

    def _on_upload(self, change: dict[str, Any]) -> None:
        files = change["new"]
        if not files:
            return
        f = files[0]
        self.load(f["name"], bytes(f["content"]))

    def load(self, name: str, content: bytes) -> Conversation | None:
        """Save and read one file (what an upload does); returns the conversation or ``None``."""
        from ctxlab.lab.workbook import load_workbook_conversation

        self.path = save_upload(name, content)
        try:
            self.conversation = load_workbook_conversation(self.path)
            self.error = None
        except Exception as err:  # shown to the learner, not raised into the widget machinery
            self.conversation, self.error = None, f"{type(err).__name__}: {err}"
        if self.conversation is not None:
            c = self.conversation
            self.status.value = (f"loaded <b>{shown(self.path.name, html=True)}</b>: {len(c.messages):,} messages; "
                                 f"set <code>TRANSCRIPT = upload.path</code> to use it in the chapters")
        else:
            self.status.value = (f"<span style='color:#c62828'>could not read {shown(self.path.name, html=True)}: "
                                 f"{shown(self.error, html=True)}</span>")  # the error quotes the file
        return self.conversation

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = "TranscriptUpload(choose a .jsonl / .json / .traj transcript)"
        return bundle
