"""Chapter 09's first step: where each coding agent keeps its transcripts, and a look for them in your home folder.

:data:`LOCATIONS` is a dated table, one row per agent: the folder the agent writes (per OS, relative to the
home folder or to ``%LOCALAPPDATA%``), the files under it, the environment variable that moves it, the
ctxlab format that reads them, the page or source file the row was taken from and the date it was read.
:func:`find_transcripts` globs those folders (newest file first, a few per agent);
:func:`locations_rows` / :func:`found_rows` are the rows the chapter prints; :data:`HOOKS` maps ctxlab's
:class:`~ctxlab.loop.AgentLoop` onto the place each agent lets you change its context.

Simplified on purpose: aider writes into the repository it runs in, so only the home folder and two levels
below it are searched for it; OpenHands' CLI stores one file per event (a folder per conversation), listed
as the folder. No file is opened, only listed. Taught in chapter 09.
"""

from __future__ import annotations

import html
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

READ = "2026-12-02"
SYSTEMS = ("linux", "macos", "windows")


@dataclass(frozen=True)
class Location:
    """Where one agent keeps its transcripts. ``roots``: per OS, ``(base, folder)`` — ``base`` is ``"home"``
    (``Path.home()``, ``%USERPROFILE%`` on Windows) or ``"localappdata"`` (``%LOCALAPPDATA%``); ``None`` where
    the agent does not run natively. ``pattern``: the glob of transcript files under the folder; ``env``: the
    variable that replaces the folder when set; ``format``: ctxlab's reader (``python -m ctxlab inspect``);
    ``source`` / ``read``: the page or file the row comes from and the date it was read. Chapter 09."""

    agent: str
    format: str
    roots: Mapping[str, tuple[str, str] | None]
    pattern: str
    env: str | None
    source: str
    read: str = READ

    def where(self, system: str) -> str:
        """The folder as a person writes it on ``system``: ``~/.claude``, ``%LOCALAPPDATA%\\x``, or a note
        when the agent has no native build there. ``Location.where("windows")`` → ``%USERPROFILE%\\.claude``."""
        root = self.roots.get(system)
        if root is None:
            return "WSL only"
        base, folder = root
        if system == "windows":
            head = "%USERPROFILE%" if base == "home" else "%LOCALAPPDATA%"
            return head + ("\\" + folder.replace("/", "\\") if folder else "")
        return "~" + ("/" + folder if folder else "")


def _same(folder: str) -> dict[str, tuple[str, str] | None]:
    return {s: ("home", folder) for s in SYSTEMS}


LOCATIONS: tuple[Location, ...] = (
    Location("Claude Code", "claude-code", _same(".claude"), "projects/*/*.jsonl", "CLAUDE_CONFIG_DIR",
             "https://code.claude.com/docs/en/claude-directory (~/.claude, %USERPROFILE%\\.claude on Windows; "
             "transcripts kept there); projects/<folder>/<session>.jsonl: ctxlab/io/formats/claude_code.py"),
    Location("Codex CLI", "codex", _same(".codex"), "sessions/*/*/*/rollout-*.jsonl", "CODEX_HOME",
             "https://developers.openai.com/codex/config-basic (~/.codex); CODEX_HOME: developers.openai.com"
             "/docs/config-file/environment-variables; sessions/YYYY/MM/DD: ctxlab/io/formats/codex.py"),
    Location("pi", "pi", _same(".pi/agent"), "sessions/*/*.jsonl", "PI_CODING_AGENT_DIR",
             "badlogic/pi-mono packages/coding-agent (getAgentDir: PI_CODING_AGENT_DIR or <home>/.pi/agent; "
             "sessions/--<cwd>--/); ctxlab/io/formats/pi.py"),
    Location("Gemini CLI", "gemini-cli", _same(".gemini"), "tmp/*/chats/session-*.json*", "GEMINI_CLI_HOME",
             "https://geminicli.com/docs/cli/session-management (~/.gemini/tmp/<project_hash>/chats/); "
             "https://geminicli.com/docs/cli/commands (C:\\Users\\<you>\\.gemini\\tmp on Windows)"),
    Location("Copilot CLI", "copilot-cli", _same(".copilot"), "session-state/*/events.jsonl", "COPILOT_HOME",
             "https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-config-dir-reference "
             "(~/.copilot, session-state/ holds session history)"),
    Location("OpenHands CLI", "openhands-events", {"linux": ("home", ".openhands"), "macos": ("home", ".openhands"),
                                                   "windows": None}, "conversations/*/events", None,
             "https://docs.openhands.dev/openhands/usage/cli/resume (~/.openhands/conversations); "
             "https://docs.openhands.dev/openhands/usage/cli/quick-start.md (Windows: WSL)"),
    Location("aider", "aider", _same(""), ".aider.chat.history.md", None,
             "aider writes .aider.chat.history.md in the repository it runs in (--chat-history-file moves it): "
             "ctxlab/io/formats/aider.py"),
    Location("mini-swe-agent", "mini-swe-agent",
             {"linux": ("home", ".config/mini-swe-agent"), "macos": ("home", "Library/Application Support/"
                                                                     "mini-swe-agent"),
              "windows": ("localappdata", "mini-swe-agent/mini-swe-agent")}, "last_mini_run.traj.json",
             "MSWEA_GLOBAL_CONFIG_DIR",
             "SWE-agent/mini-swe-agent src/minisweagent/__init__.py (platformdirs user_config_dir, "
             "MSWEA_GLOBAL_CONFIG_DIR)"),
)


def this_system(name: str | None = None) -> str:
    """``"linux"``, ``"macos"`` or ``"windows"`` for ``platform.system()`` (or ``name``); anything else is read as
    Linux. ``this_system("Darwin")`` → ``"macos"``. Chapter 09."""
    name = (name or platform.system()).lower()
    return "macos" if name == "darwin" else "windows" if name.startswith("win") else "linux"


def root_folder(location: Location, system: str, home: Path, environ: Mapping[str, str]) -> Path | None:
    """The folder ``location`` writes on ``system``: ``environ[location.env]`` when set, else its root under
    ``home`` (``%LOCALAPPDATA%``: ``environ["LOCALAPPDATA"]`` or ``home/AppData/Local``); None where the agent
    has no native build. Chapter 09."""
    if location.env and environ.get(location.env):
        return Path(environ[location.env]).expanduser()
    root = location.roots.get(system)
    if root is None:
        return None
    base, folder = root
    start = home if base == "home" else Path(environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    return start / folder if folder else start


@dataclass(frozen=True)
class Found:
    """A transcript file (or OpenHands' events folder) found by :func:`find_transcripts`: the agent, the
    ctxlab format, its path, its size in bytes and its modification time (seconds since the epoch). Chapter 09."""

    agent: str
    format: str
    path: Path
    size_bytes: int
    mtime_s: float


def _patterns(location: Location) -> tuple[str, ...]:
    if location.format == "aider":  # the repositories under home, two levels deep
        return (location.pattern, "*/" + location.pattern, "*/*/" + location.pattern)
    return (location.pattern,)


def find_transcripts(home: str | Path | None = None, system: str | None = None,
                     environ: Mapping[str, str] | None = None, per_agent: int = 3) -> tuple[Found, ...]:
    """Every agent's transcripts under ``home`` (default ``Path.home()``) laid out as on ``system`` (default this
    one), newest first, at most ``per_agent`` each, in :data:`LOCATIONS` order. ``environ`` (default
    ``os.environ``) supplies the variables that move a folder and ``LOCALAPPDATA``. Nothing is opened; a folder
    that cannot be listed is skipped. Chapter 09."""
    home = Path(home).expanduser() if home is not None else Path.home()
    system = system or this_system()
    environ = os.environ if environ is None else environ
    out: list[Found] = []
    for loc in LOCATIONS:
        root = root_folder(loc, system, home, environ)
        if root is None or not root.is_dir():
            continue
        seen: list[Found] = []
        for pattern in _patterns(loc):
            try:
                for p in root.glob(pattern):
                    st = p.stat()
                    seen.append(Found(loc.agent, loc.format, p, st.st_size, st.st_mtime))
            except OSError:
                continue
        out += sorted(seen, key=lambda f: (-f.mtime_s, str(f.path)))[:per_agent]
    return tuple(out)


def shown_path(path: Path, home: str | Path | None = None) -> str:
    """``path`` as the chapter prints it: under ``home`` as ``~/...`` (forward slashes), else its name only —
    never an absolute path. Chapter 09."""
    home = Path(home).expanduser() if home is not None else Path.home()
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return path.name


def found_rows(found: tuple[Found, ...], home: str | Path | None = None) -> list[tuple[str, str, str, str]]:
    """One row per found file: agent, ctxlab format, path (:func:`shown_path`), size in kB. Chapter 09."""
    return [(f.agent, f.format, shown_path(f.path, home), f"{f.size_bytes / 1000:,.0f} kB") for f in found]


def found_summary(found: tuple[Found, ...], home: str | Path | None = None) -> str:
    """The one line the chapter prints about the scan: what it found, or ``none found: set TRANSCRIPT`` with the
    folders it looked in. Chapter 09."""
    if not found:
        return "none found: set TRANSCRIPT to a transcript of yours (the table above says where they live)"
    agents = list(dict.fromkeys(f.agent for f in found))
    return f"found {len(found)} transcript(s) of {', '.join(agents)}; newest: {shown_path(found[0].path, home)}"


LOCATION_COLUMNS = ("agent", "folder", "transcripts in it", "moved by")


def locations_rows(system: str) -> list[tuple[str, str, str, str]]:
    """The table the chapter prints for ``system`` (:data:`LOCATION_COLUMNS`). Chapter 09."""
    return [(loc.agent, loc.where(system), loc.pattern, loc.env or "—") for loc in LOCATIONS]


@dataclass(frozen=True)
class Hook:
    """Where an agent or framework lets you change what is sent before a model call: its name for the place,
    what ctxlab's piece there is, and the source (read :data:`READ`). Chapter 09."""

    agent: str
    hook: str
    ctxlab: str
    source: str


HOOKS: tuple[Hook, ...] = (
    Hook("ctxlab", "AgentLoop.next_request()", "strategy.decide(history, call) builds the context",
         "ctxlab/loop.py"),
    Hook("pi", "transformContext(messages, signal)", "AgentMessage[] in, AgentMessage[] out, before convertToLlm",
         "badlogic/pi-mono packages/agent/src/types.ts (AgentLoopConfig)"),
    Hook("Claude Code", "auto-compact; PreCompact hook", "the trigger is yours only via autoCompactWindow; the "
         "hook adds custom instructions", "https://code.claude.com/docs/en/hooks#precompact"),
    Hook("Codex CLI", "model_auto_compact_token_limit; compact_prompt", "the trigger (tokens) and the summary "
         "prompt", "https://developers.openai.com/codex/config-reference"),
    Hook("LangChain", "trim_messages; SummarizationMiddleware", "trigger=..., keep=... in create_agent(middleware="
         "[...])", "https://docs.langchain.com/oss/python/langchain/middleware/built-in"),
)
HOOK_COLUMNS = ("agent", "where you change the context", "ctxlab's piece there")


def hook_rows() -> list[tuple[str, str, str]]:
    """:data:`HOOKS` as the chapter prints them (:data:`HOOK_COLUMNS`). Chapter 09."""
    return [(h.agent, h.hook, h.ctxlab) for h in HOOKS]


class LocationsTable:
    """:data:`LOCATIONS` for display: an HTML table (every OS, the source and the date read) in JupyterLab, and a
    plain-text list as its text form. Chapter 09."""

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("agent", "Linux", "macOS", "Windows", "transcripts", "moved by",
                                                  "ctxlab format", "source", "read"))
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
            loc.agent, loc.where("linux"), loc.where("macos"), loc.where("windows"), loc.pattern, loc.env or "—",
            loc.format, loc.source, loc.read)) + "</tr>" for loc in LOCATIONS)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __repr__(self) -> str:
        return f"LocationsTable({len(LOCATIONS)} agents, read {READ})"
