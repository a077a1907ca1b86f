"""What a widget is replaying, now and for the next click: a progress line, and one background thread.

UI plumbing for chapters 04–08 (not a concept). What it holds:

* :class:`Progress` — an ``ipywidgets.IntProgress`` (one step per replay a first visit must run), a text saying
  which, and a second text for what the background is precomputing; :func:`run_steps` runs steps on it;
* :class:`Worker` and :data:`WORKER` — one daemon thread running, one at a time, the jobs a widget queued (the
  replays its next click will likely need), from :data:`ctxlab.lab.replays.REPLAYS`, so a click that needs a
  replay the thread is running waits for it instead of running it twice. While another thread runs a replay
  (a click, a cell) the worker starts no new job, and the replay it is running waits at its next model call
  (:meth:`Worker.checkpoint`), so the click's replay has the CPU to itself; :func:`background_wanted` is the rule
  for using it at all.

The bar's updates are sent while the cell still runs (a kernel sends widget messages at once, from any thread), so
a learner sees it move during a long first visit. Nothing here prints into a cell, and nothing starts a thread on
a short transcript: a notebook on the bundled sample runs the same under nbval.
"""

from __future__ import annotations

import html
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ctxlab.lab.replays import REPLAYS
from ctxlab.messages import Conversation
from ctxlab.strategies import model_calls

LONG_CALLS = 150  # a transcript with more model calls than this gets its next replays precomputed by default


def background_wanted(conversation: Conversation, background: bool | None) -> bool:
    """``background`` as given, or for None: precompute when the transcript has more than :data:`LONG_CALLS` model
    calls (a replay then takes seconds; the bundled sample's take a tenth of one, and run in the foreground, so a
    notebook on it runs no thread). Chapters 04–08."""
    return len(model_calls(conversation)) > LONG_CALLS if background is None else bool(background)


class Progress:
    """``bar`` (IntProgress), ``text`` (what the foreground replays) and ``later`` (what the background does), in
    ``widget`` (an HBox the chapter widgets put under their controls). ``start(total, what)``, ``step(label)`` and
    ``done(text)`` move the bar; ``background(done, total, label)`` writes the second text. Chapters 04–08."""

    def __init__(self) -> None:
        import ipywidgets as W

        self.bar = W.IntProgress(value=1, min=0, max=1, layout=W.Layout(width="180px"))  # full: nothing to do
        self.text = W.HTML("")
        self.later = W.HTML("")
        self.widget = W.HBox([self.bar, self.text, self.later])
        self.steps = 0  # steps the bar moved in all (a test reads it; a person reads the bar)

    def start(self, total: int, what: str) -> None:
        """A first visit must run ``total`` replays (a whole number, at least 1) of ``what``. Chapters 04–08."""
        self.bar.bar_style = "info"
        self.bar.max = max(1, int(total))
        self.bar.value = 0
        self.text.value = f"replaying {html.escape(what)} (0 of {self.bar.max}) …"

    def step(self, label: str) -> None:
        """One replay done (``label`` names it). Chapters 04–08."""
        self.bar.value = min(self.bar.max, self.bar.value + 1)
        self.steps += 1
        self.text.value = f"replayed {html.escape(label)} ({self.bar.value} of {self.bar.max})"

    def done(self, text: str = "") -> None:
        """The bar at its end, and ``text`` (plain text, escaped here). Chapters 04–08."""
        self.bar.value = self.bar.max
        self.bar.bar_style = "success"
        self.text.value = html.escape(text)

    def background(self, done: int, total: int, label: str) -> None:
        """What the background has precomputed: ``done`` of ``total`` jobs, the last one ``label``. Called from the
        worker thread. Chapters 04–08."""
        self.later.value = ("" if done >= total else
                            f"<span style='color:#777'>· precomputing the next settings: {done} of {total} "
                            f"({html.escape(label)})</span>")


def run_steps(progress: Progress, steps: Sequence[tuple[str, Callable[[], Any]]], what: str,
              finished: str = "") -> list[Any]:
    """Run each (label, callable) in order with the bar moving one step per step, and return their results.
    No steps: the bar is only set to its end. Chapters 04–08."""
    out = []
    if steps:
        progress.start(len(steps), what)
        for label, fn in steps:
            out.append(fn())
            progress.step(label)
    progress.done(finished)
    return out


@dataclass
class Batch:
    """Jobs one widget queued: how many are done of how many, and the errors they raised (a CtxlabError is the
    replay's, kept by the cache; anything else is a bug, kept here rather than lost in a thread). Chapters 04–08."""

    total: int
    done: int = 0
    cancelled: bool = False
    errors: list[BaseException] = field(default_factory=list)
    finished: threading.Event = field(default_factory=threading.Event)


class Worker:
    """One daemon thread, started on the first :meth:`submit`, running queued jobs one at a time in order.

    ``WORKER.submit(owner, [("budgeted @ 30,000", fn), ...], progress)`` queues zero-argument callables;
    ``progress(done, total, label)`` is called on the worker thread after each. A new :meth:`submit` by the
    same owner drops what it still had queued (a widget re-plans at every click). While any other thread
    computes a replay (:meth:`foreground`), the worker starts no new job. Chapters 04–08.
    """

    def __init__(self) -> None:
        self._jobs: deque[tuple[int, str, Callable[[], Any], Batch, Callable | None]] = deque()
        self._cond = threading.Condition()
        self._foreground = 0
        self._busy = 0
        self._thread: threading.Thread | None = None
        self._batches: dict[int, Batch] = {}
        self.paused = 0  # times a background replay waited for another thread's (see checkpoint)

    def submit(self, owner: object, jobs: Sequence[tuple[str, Callable[[], Any]]],
               progress: Callable[[int, int, str], None] | None = None) -> Batch:
        """Queue ``jobs`` (label, callable) for ``owner``, dropping its earlier queued ones. Chapters 04–08."""
        batch = Batch(len(jobs))
        with self._cond:
            self._cancel(id(owner))
            self._batches[id(owner)] = batch
            self._jobs.extend((id(owner), label, fn, batch, progress) for label, fn in jobs)
            if not jobs:
                batch.finished.set()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="ctxlab-replays", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return batch

    def cancel(self, owner: object) -> None:
        """Drop the jobs ``owner`` still has queued (the one running finishes). Chapters 04–08."""
        with self._cond:
            self._cancel(id(owner))
            self._cond.notify_all()

    def _cancel(self, owner: int) -> None:
        kept = deque(j for j in self._jobs if j[0] != owner)
        for job in self._jobs:
            if job[0] == owner:
                job[3].cancelled = True
                job[3].finished.set()
        self._jobs = kept

    def wait(self, owner: object | None = None, timeout: float | None = None) -> bool:
        """Block until ``owner``'s queued jobs (None: every job) are done; False if ``timeout`` seconds passed
        first. Chapters 04–08."""
        with self._cond:
            def settled() -> bool:
                if owner is None:
                    return not self._jobs and not self._busy
                batch = self._batches.get(id(owner))
                return batch is None or batch.finished.is_set()
            return self._cond.wait_for(settled, timeout)

    def idle(self) -> bool:
        """Nothing queued and nothing running. Chapters 04–08."""
        with self._cond:
            return not self._jobs and not self._busy

    @contextmanager
    def foreground(self) -> Iterator[None]:
        """While inside, the worker starts no new job (what runs on the worker's own thread is not held back).
        Chapters 04–08."""
        mine = threading.current_thread() is not self._thread
        with self._cond:
            self._foreground += mine
        try:
            yield
        finally:
            with self._cond:
                self._foreground -= mine
                self._cond.notify_all()

    def checkpoint(self) -> None:
        """Called on the worker's thread between two model calls of a replay (:data:`REPLAYS`'s ``pause``): while
        another thread replays (:meth:`foreground`), wait here, so that the click's own replay has the CPU to itself.
        Elsewhere it returns at once. ``paused`` counts the waits. Chapters 04–08."""
        if not self._foreground or threading.current_thread() is not self._thread:
            return
        with self._cond:
            if self._foreground:
                self.paused += 1
                self._cond.wait_for(lambda: not self._foreground)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs and not self._foreground)
                _, label, fn, batch, progress = self._jobs.popleft()
                self._busy += 1
            try:
                fn()
            except BaseException as err:  # noqa: BLE001 - kept on the batch; a thread must not die of it
                batch.errors.append(err)
            with self._cond:
                self._busy -= 1
                batch.done += 1
                if batch.done >= batch.total or batch.cancelled:
                    batch.finished.set()
                self._cond.notify_all()
            if progress is not None:
                try:
                    progress(batch.done, batch.total, label)
                except Exception as err:  # noqa: BLE001 - a progress bar must not stop the work
                    batch.errors.append(err)


WORKER = Worker()  # the background thread every chapter widget queues its next replays on
REPLAYS.guard = WORKER.foreground  # a replay run on any other thread holds the worker back meanwhile
REPLAYS.pause = WORKER.checkpoint  # ... and pauses the one the worker is running, between two model calls
