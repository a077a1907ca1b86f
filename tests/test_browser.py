"""Chapters 03 and 04 in a real browser: JupyterLab, Run All, move a control, read the DOM (06, 08: own files).

The unit tests drive the widgets from Python; these check the part they cannot: that a learner's
click in JupyterLab reaches the kernel and the widget's new picture comes back. Marked ``browser``
(not in the default run; about a minute a chapter on a busy 2-core machine); ``python run.py browser``
runs them. The few tests at the end without the mark check run.py's side of that command.

What they need: Python ``playwright`` (the ``browser`` extra) and a Chromium on this machine
(``/usr/bin/chromium`` on Debian, ``apt-get install chromium``; or any Chromium or Chrome named by
``CTXLAB_CHROMIUM``). They never download a browser (no ``playwright install``); without either
piece they skip and say why.

Each run starts its own JupyterLab on 127.0.0.1 (free port, no token) over a temporary copy of
``notebooks/`` (the committed notebooks are never touched), with Jupyter's and IPython's folders in
a temporary directory (nothing written to $HOME), the kernels under run.py's loopback-only network
guard, and Chromium told to resolve no host name but localhost.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHAPTER_03 = "03_interactions_and_budget.ipynb"
CHAPTER_04 = "04_prefix_cache_ledger.ipynb"

# Headless, and nothing that phones home (measured on Debian's chromium; see the project's notes).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"]

# JupyterLab settings for the run: no news or update toast over the notebook, and every cell kept in
# the DOM (JupyterLab 4 can leave cells out of view unrendered, which would hide a widget).
LAB_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}

SERVER_START_S = 60  # JupyterLab is up in ~3 s alone; 2 cores shared with other work can take far longer
RUN_ALL_MS = 180_000  # Run All of one chapter: ~5 s alone
REACT_MS = 60_000  # one control moved -> the kernel recomputes -> the DOM shows it


def load_run_py():
    """run.py as a module, for its test environment (temporary Jupyter dirs + the kernels' network guard)."""
    spec = importlib.util.spec_from_file_location("ctxlab_run_py_for_browser", REPO / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def find_chromium() -> str | None:
    """``CTXLAB_CHROMIUM`` (set by run.py, or by hand for a Chrome elsewhere), else the usual names."""
    return load_run_py().find_chromium()  # one search, shared with `python run.py browser`


def without_outputs(root: Path) -> None:
    """Clear every code cell's outputs and number in the copied notebooks: a numbered cell, and any
    widget on the page, then comes from this run and not from the committed outputs."""
    for path in root.glob("*.ipynb"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                cell["outputs"], cell["execution_count"] = [], None
        path.write_text(json.dumps(nb), encoding="utf-8")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    """Stop the server we started: SIGTERM (it shuts its kernels down), then SIGKILL its process group."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if hasattr(os, "killpg"):  # a kernel left behind is in the server's own group (start_new_session)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def wait_until_up(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with code {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/status", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    pytest.fail(f"JupyterLab not up after {SERVER_START_S} s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        pytest.skip("no Chromium on this machine (looked for /usr/bin/chromium, chromium, chromium-browser); "
                    "on Debian/Ubuntu: apt-get install chromium (or run `python run.py browser` as root, which does); "
                    "elsewhere set CTXLAB_CHROMIUM to a Chromium or Chrome executable")
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A JupyterLab of our own over a copy of notebooks/; yields its base URL; always stopped."""
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "notebooks"
    shutil.copytree(REPO / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    without_outputs(root)
    env = load_run_py().test_environment(tmp)
    settings = tmp / "lab-settings"
    settings.mkdir()
    (settings / "overrides.json").write_text(json.dumps(LAB_OVERRIDES), encoding="utf-8")
    port = free_port()
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--IdentityProvider.token=",
           "--ServerApp.password=", f"--ServerApp.root_dir={root}", f"--LabApp.app_settings_dir={settings}",
           f"--LabApp.user_settings_dir={tmp / 'lab-user-settings'}", f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp / "jupyterlab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=str(root), env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=hasattr(os, "killpg"))
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url, proc, log)
        yield url
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def browser(chromium: str):
    sync_api = pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed "
                                   "(pip install 'ctxlab[browser]' — or run `python run.py browser`)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)  # every wait is bounded
    try:
        yield page
    finally:
        context.close()


# ---- JupyterLab steps --------------------------------------------------------------------------------

def kernel_idle(page) -> None:
    """Wait for the status bar's "<kernel> | Idle" (the toolbar's idle circle shows before the kernel is ready)."""
    page.wait_for_function("() => /\\|\\s*Idle/.test(document.querySelector('#jp-main-statusbar')?.innerText || '')",
                           timeout=RUN_ALL_MS)


ERRORS = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"  # tracebacks and warnings


def open_and_run_all(page, lab: str, notebook: str) -> None:
    """Open a chapter, wait for its kernel, Run menu → Run All Cells, wait until every code cell has run."""
    page.goto(f"{lab}/lab/tree/{notebook}?reset")
    page.locator(".jp-Notebook .jp-CodeCell").first.wait_for(timeout=60_000)
    kernel_idle(page)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    # Done when every code cell has a number (none waiting or running, [*]) and the kernel is idle; or
    # at once when a cell raised (Run All stops there, and the cells after it would never get a number).
    page.wait_for_function(
        """() => {
            const failed = [...document.querySelectorAll(ERRORS)].some(e => e.innerText.includes('Traceback'));
            const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
            return failed || (prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.innerText))
                && /\\|\\s*Idle/.test(document.querySelector('#jp-main-statusbar')?.innerText || ''));
        }""".replace("ERRORS", json.dumps(ERRORS)), timeout=RUN_ALL_MS)
    errors = page.locator(ERRORS, has_text="Traceback")
    assert errors.count() == 0, f"{notebook}: a cell raised:\n{errors.first.inner_text()[:2000]}"


def widget_with(page, *labels: str):
    """The first widget output that holds controls with all these descriptions (no cell numbers involved)."""
    out = page.locator(".jp-OutputArea-output")
    for label in labels:
        out = out.filter(has=page.locator(".widget-label", has_text=re.compile(rf"^{re.escape(label)}$")))
    out = out.first
    out.wait_for(timeout=REACT_MS)
    return out


def control(widget, kind: str, label: str):
    """One control (``.widget-hslider``, ``.widget-dropdown``) of a widget, by its description."""
    return widget.locator(kind).filter(has=widget.page.locator(".widget-label",
                                                                has_text=re.compile(rf"^{re.escape(label)}$")))


def changed(read, old, done=None, timeout_ms: int = REACT_MS):
    """Read the DOM again (``read()``) until it differs from ``old`` (or ``done(new)`` holds); the last reading.

    Polls by locator, not by element: a widget redraws by replacing its HTML, so an element held
    from before would never change. Bounded by ``timeout_ms``; the caller's asserts then say what did not change.
    """
    done = done or (lambda new: new != old)
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        new = read()
        if done(new) or time.monotonic() > deadline:
            return new
        time.sleep(0.25)


def slider_value(handle) -> int:
    """A slider's value as its handle reports it to assistive technology (``aria-valuenow``, e.g. "47500.0")."""
    return round(float(handle.get_attribute("aria-valuenow")))


def numbers(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]


# ---- the tests -----------------------------------------------------------------------------------------

@pytest.mark.browser
def test_chapter_03_budget_slider_redraws_the_token_bar(page, lab: str) -> None:
    open_and_run_all(page, lab, CHAPTER_03)
    widget = widget_with(page, "profile", "budget")
    slider = control(widget, ".widget-hslider", "budget")
    handle = slider.locator("[role='slider']")
    label, bar = widget.locator(".widget-html").nth(0), widget.locator(".widget-html").nth(1)
    before = {"label": label.inner_text(), "bar": bar.inner_text(), "budget": slider_value(handle)}
    assert before["budget"] > 0 and "kept" in before["label"], before

    # One step along the slider with the keyboard (back one step when it stands at its end).
    at_end = before["budget"] >= float(handle.get_attribute("aria-valuemax"))
    handle.focus()
    handle.press("ArrowLeft" if at_end else "ArrowRight")
    changed(bar.inner_text, before["bar"])

    budget = slider_value(handle)
    assert budget != before["budget"]
    assert f"budget {budget:,}" in label.inner_text()  # the kernel answered for the new value
    # The bar's legend (tools, system, head, kept, free) adds up to the new budget: it was redrawn for it.
    legend = bar.inner_text()
    assert re.search(r"free [\d,]+", legend), legend
    assert sum(numbers(legend)) == budget, legend


@pytest.mark.browser
def test_chapter_04_pause_and_cache_rules_change_the_ledger(page, lab: str) -> None:
    open_and_run_all(page, lab, CHAPTER_04)
    widget = widget_with(page, "cache rules")  # the core widget: a pause slider and the cache rules' toggle
    label, table = widget.locator(".widget-html").nth(0), widget.locator("pre").first
    before = {"label": label.inner_text(), "table": table.inner_text()}
    assert "rules, 0-minute pause" in before["label"], before

    # The other provider's rules: click its toggle button; the kernel replays and redraws the label and table.
    buttons = widget.locator(".widget-toggle-button")
    other = next(b for b in buttons.all() if b.inner_text().strip() not in before["label"].split(" rules")[0])
    name = other.inner_text().strip()
    other.click()
    after = changed(label.inner_text, before["label"], lambda got: got.startswith(f"{name} rules"))
    assert after.startswith(f"{name} rules"), after
    assert table.inner_text() != before["table"]  # other reads / writes / costs around the pause

    # One step of the pause slider with the keyboard: the label names the new pause.
    handle = widget.locator(".widget-hslider [role='slider']").first
    handle.focus()
    handle.press("ArrowRight")
    minutes = changed(label.inner_text, after, lambda got: "1-minute pause" in got)
    assert "1-minute pause" in minutes and slider_value(handle) == 1, minutes


# ---- run.py's side (no browser needed) ---------------------------------------------------------------

def test_run_py_browser_selects_exactly_the_browser_tests() -> None:
    """run.py's ``-m browser`` comes after the addopts' ``-m 'not browser ...'`` and wins."""
    cmd = load_run_py().browser_pytest_command(sys.executable, ["--collect-only", "-q"])
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    out = subprocess.run(cmd, cwd=str(REPO), env=env, capture_output=True, text=True, timeout=120).stdout
    collected = sorted(line.split("::")[1] for line in out.splitlines() if "::" in line)
    assert collected == ["test_chapter_03_budget_slider_redraws_the_token_bar",
                         "test_chapter_04_pause_and_cache_rules_change_the_ledger",
                         "test_chapter_06_regeneration_and_placement_change_the_summary_bill",
                         "test_chapter_08_strategy_and_window_change_the_leaderboard"], out


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes: on Windows every file passes os.access(X_OK)")
def test_chromium_named_by_ctxlab_chromium_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_py = load_run_py()
    browser = tmp_path / "my-chrome"
    browser.write_text("#!/bin/sh\n", encoding="utf-8")
    browser.chmod(0o755)
    monkeypatch.setenv("CTXLAB_CHROMIUM", str(browser))
    assert find_chromium() == run_py.find_chromium() == str(browser)
    browser.chmod(0o644)  # not executable: passed over, never returned
    assert find_chromium() != str(browser) and run_py.find_chromium() != str(browser)


def test_the_browser_extra_installs_playwright_on_top_of_the_test_extra() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert "ctxlab[test]" in extras["browser"]
    assert any(re.match(r"playwright\b", req) for req in extras["browser"])
    provides = load_run_py().EXTRAS
    assert provides["browser"] >= provides["test"] | {"browser"}
