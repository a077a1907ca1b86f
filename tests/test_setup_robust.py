"""run.py against a broken set-up: a half-made .venv, a port in use, an old Python, a Ctrl-C.

Every venv here is made in a temporary directory; the project's own .venv is never touched.
Loading run.py and its helpers come from tests/test_setup.py.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from test_setup import REPO, load_run_py, run_py  # noqa: E402  (tests/ is on sys.path, as for notebook_runner)

impl = run_py.impl  # run_impl.py: monkeypatch here, where run.py's functions look their names up
PY = Path(sys.executable).name
VERSION = sys.version.split()[0]


def half_made_venv(venv: Path) -> Path:
    """What ``python -m venv`` leaves when a Ctrl-C stops its ensurepip: a python that runs, no pip, no marker."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True, timeout=120)
    return venv


def shown_python(venv: Path) -> Path:
    return Path(venv.name, impl.venv_python(venv).relative_to(venv))


def rebuilt(venv: Path, need_pip: bool, monkeypatch: pytest.MonkeyPatch, capsys) -> str:
    """Run ensure_venv with the venv's creation stubbed; check it removed ``venv`` and made it again; its output."""
    made = []
    monkeypatch.setattr(impl, "make_venv", lambda v: made.append(v))
    assert impl.ensure_venv(venv, need_pip) is True
    assert made == [venv] and not venv.exists() and not venv.is_symlink()
    return capsys.readouterr().out


# ---- a .venv that cannot be used is named in one line, removed and made again ----

def test_a_venv_without_its_python_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    venv = tmp_path / ".venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /nowhere\n", encoding="utf-8")
    assert rebuilt(venv, False, monkeypatch, capsys) == (
        f"[run.py] {shown_python(venv)} is missing: removing .venv and creating it again\n")


def test_a_venv_whose_python_does_not_start_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    venv = tmp_path / ".venv"
    python = impl.venv_python(venv)
    python.parent.mkdir(parents=True)
    python.write_bytes(b"")  # an empty file: no interpreter starts from it, on any system
    python.chmod(0o755)
    assert rebuilt(venv, False, monkeypatch, capsys) == (
        f"[run.py] {shown_python(venv)} does not start: removing .venv and creating it again\n")


@pytest.mark.skipif(os.name == "nt", reason="venvs on Windows copy python.exe instead of linking it")
def test_a_venv_whose_python_links_to_a_removed_python_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys) -> None:
    venv, gone = tmp_path / ".venv", tmp_path / "python3.9-uninstalled"
    python = impl.venv_python(venv)
    python.parent.mkdir(parents=True)
    python.symlink_to(gone)
    assert rebuilt(venv, False, monkeypatch, capsys) == (
        f"[run.py] {shown_python(venv)} points to {gone}, which is gone (that Python upgraded or removed?): "
        "removing .venv and creating it again\n")


@pytest.mark.parametrize("need_pip", [True, False], ids=["pip-installs", "uv-installs"])
def test_a_venv_stopped_before_its_marker_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys,
                                                     need_pip: bool) -> None:
    """The issue's case: Ctrl-C in the first seconds of `run.py lab`. With uv too: the marker, not pip, decides."""
    venv = half_made_venv(tmp_path / ".venv")
    assert rebuilt(venv, need_pip, monkeypatch, capsys) == (
        "[run.py] .venv was never finished (set-up interrupted?): removing .venv and creating it again\n")


def test_a_finished_venv_without_pip_is_rebuilt_when_pip_installs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys) -> None:
    venv = half_made_venv(tmp_path / ".venv")
    (venv / impl.MARKER_NAME).write_text("{}\n", encoding="utf-8")
    assert rebuilt(venv, True, monkeypatch, capsys) == (
        "[run.py] .venv has no pip, which installs ctxlab when uv is not on PATH: removing .venv and creating it again\n")


@pytest.mark.parametrize("finished_by", ["marker", "stamp"])
def test_a_finished_venv_is_kept(tmp_path: Path, capsys, finished_by: str) -> None:
    """uv needs no pip in the venv; a venv from before the marker counts as finished by its set-up stamp
    (so every existing .venv, the project's own included, is kept)."""
    venv = half_made_venv(tmp_path / ".venv")
    name = impl.MARKER_NAME if finished_by == "marker" else impl.STAMP_NAME
    (venv / name).write_text(json.dumps({"pyproject_sha256": "abc", "provides": ["lab"]}), encoding="utf-8")
    assert impl.venv_problem(venv, need_pip=False) is None
    assert impl.ensure_venv(venv, need_pip=False) is False
    assert (venv / name).exists() and capsys.readouterr().out == ""


def test_a_half_made_venv_is_made_again_with_pip_and_its_marker(tmp_path: Path, capsys) -> None:
    """The real thing, once: removed (a file left in it is gone), made with ``python -m venv``, marker last."""
    venv = half_made_venv(tmp_path / ".venv")
    (venv / "left-over.txt").write_text("from the interrupted run\n", encoding="utf-8")
    assert impl.ensure_venv(venv, need_pip=True) is True
    assert capsys.readouterr().out.splitlines() == [
        "[run.py] .venv was never finished (set-up interrupted?): removing .venv and creating it again",
        f"[run.py] creating .venv with {PY} -m venv (Python {VERSION})"]
    assert not (venv / "left-over.txt").exists() and (venv / impl.MARKER_NAME).exists()
    assert impl.venv_problem(venv, need_pip=True) is None  # pip is there: the old code's next run failed on it


def test_the_venv_run_py_runs_on_is_never_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    venv = half_made_venv(tmp_path / ".venv")
    monkeypatch.setattr(impl.sys, "prefix", str(venv))  # as after `source .venv/bin/activate`
    with pytest.raises(SystemExit) as exc:
        impl.ensure_venv(venv, need_pip=True)
    assert exc.value.code == 1 and capsys.readouterr().err == (
        "[run.py] .venv was never finished (set-up interrupted?), and run.py runs on that venv's own Python: "
        "deactivate it (or open a new terminal) and run the same command with the system's Python\n")
    assert impl.venv_python(venv).exists()


def test_a_venv_that_cannot_be_removed_is_named_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys) -> None:
    venv = half_made_venv(tmp_path / ".venv")

    def in_use(path, **kwargs):
        raise PermissionError(13, "Permission denied", str(path / "Scripts" / "python.exe"))

    monkeypatch.setattr(impl.shutil, "rmtree", in_use)
    with pytest.raises(SystemExit) as exc:
        impl.remove_venv(venv)
    assert exc.value.code == 1 and capsys.readouterr().err == (
        f"[run.py] could not remove {venv} ([Errno 13] Permission denied: '{venv / 'Scripts' / 'python.exe'}'): "
        "close every JupyterLab, kernel and terminal using it, or delete the folder yourself, then run again\n")


@pytest.mark.parametrize("uv", [None, "/opt/uv/bin/uv"], ids=["pip", "uv"])
def test_a_ctrl_c_while_the_venv_is_made_is_rebuilt_by_the_next_set_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys, uv: str | None) -> None:
    """set-up of a project root in tmp: the first run's ``-m venv`` is cut short, the next run starts it again."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    venv, calls = tmp_path / ".venv", []

    def fake_run(cmd, *, stop_on_ctrl_c=False, **kwargs):
        calls.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            half_made_venv(Path(cmd[-1]))
            if len(calls) == 1:
                raise KeyboardInterrupt  # what run() raises once the interrupted venv has exited
        return 0

    monkeypatch.setattr(impl, "run", fake_run)
    monkeypatch.setattr(impl.shutil, "which", lambda name: uv)
    with pytest.raises(KeyboardInterrupt):
        impl.setup("lab", tmp_path)
    assert not (venv / impl.MARKER_NAME).exists()
    capsys.readouterr()
    python = impl.setup("lab", tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["[run.py] .venv was never finished (set-up interrupted?): removing .venv and creating it again",
                         f"[run.py] creating .venv with {PY} -m venv (Python {VERSION})"]
    assert calls[2] == impl.install_command(python, "lab", uv) and python == impl.venv_python(venv)
    assert (venv / impl.MARKER_NAME).exists() and impl.read_stamp(venv / impl.STAMP_NAME)["provides"] == ["lab"]


def test_a_ctrl_c_in_set_up_ends_with_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def interrupted(args, rest):
        raise KeyboardInterrupt

    monkeypatch.setattr(impl, "cmd_test", interrupted)
    try:
        code = impl.main(["test", "--setup-only"])
    except KeyboardInterrupt:  # would stop the whole pytest run
        pytest.fail("KeyboardInterrupt left run.py's main")
    assert code == 130
    assert capsys.readouterr().err == (
        "[run.py] stopped by Ctrl-C; the next run finishes the set-up (an unfinished .venv is made again)\n")


# ---- the port: checked before JupyterLab starts ----

@pytest.fixture
def occupied_port():
    """A port something listens on at 127.0.0.1 (as another JupyterLab would)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        yield server.getsockname()[1]


def no_setup_no_jupyterlab(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_run(*args, **kwargs):
        raise AssertionError("run.py went on to set up or start JupyterLab")

    monkeypatch.setattr(impl, "setup", must_not_run)
    monkeypatch.setattr(impl, "run", must_not_run)


def test_an_explicit_port_in_use_stops_before_set_up_with_one_line(occupied_port: int, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys) -> None:
    no_setup_no_jupyterlab(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        impl.main(["lab", "--headless", "--port", str(occupied_port)])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == ""  # no URL printed for a port JupyterLab cannot use
    assert err == (f"[run.py] port {occupied_port} is in use (another JupyterLab or server?): stop what uses it, "
                   "pass another --port, or leave --port out to take the next free one\n")


def test_a_port_taken_during_set_up_stops_before_jupyterlab(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taker:
        port = impl.free_port(18900)

        def setup_while_another_server_starts(extra):
            taker.bind(("127.0.0.1", port))
            taker.listen(1)
            return Path("python")

        no_setup_no_jupyterlab(monkeypatch)
        monkeypatch.setattr(impl, "setup", setup_while_another_server_starts)
        with pytest.raises(SystemExit) as exc:
            impl.main(["lab", "--headless", "--port", str(port)])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == "" and err.startswith(f"[run.py] port {port} is in use") and err.count("\n") == 1


def test_with_no_port_given_the_next_free_one_is_taken_and_named(occupied_port: int, capsys) -> None:
    port = impl.choose_port(None, default=occupied_port)
    assert port > occupied_port and impl.port_problem(port) is None
    assert capsys.readouterr().out == f"[run.py] port {occupied_port} is not free: using {port}\n"


@pytest.mark.parametrize("value", ["0", "70000", "8888x"])
def test_a_port_that_is_no_port_is_refused_by_the_option(monkeypatch: pytest.MonkeyPatch, capsys, value: str) -> None:
    no_setup_no_jupyterlab(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        impl.main(["lab", "--port", value])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"run.py lab: error: argument --port: '{value}' is not a port: give a number from 1 to 65535")


# ---- an old Python gets the version message, not a SyntaxError ----

def test_run_py_parses_as_an_old_python_up_to_its_version_check() -> None:
    """Python parses the whole file before running its first line: run.py must parse everywhere. ``ast`` goes back
    to 3.4 only (feature_version); Python 2 also refuses a non-ASCII byte without a coding line, and
    ``from __future__ import annotations`` is a SyntaxError before 3.7 that ``ast`` does not flag."""
    source = (REPO / "run.py").read_bytes()
    assert source.isascii()
    tree = ast.parse(source.decode("ascii"), feature_version=(3, 4))
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "__future__"]
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.AnnAssign, ast.JoinedStr))]


@pytest.mark.parametrize("version, advice", [
    ((2, 7, 18, "final", 0), "Try python3 run.py lab --headless, or install a newer Python and run again."),
    ((3, 6, 15, "final", 0), "Install a newer Python and run again."),
], ids=["2.7", "3.6"])
def test_an_old_python_gets_the_version_message(monkeypatch: pytest.MonkeyPatch, version, advice: str) -> None:
    """run.py loaded as a (fake) old Python would run it: it exits with the message before loading run_impl.py."""
    shown = ".".join(map(str, version[:3]))
    monkeypatch.setattr(sys, "version_info", version)
    monkeypatch.setattr(sys, "version", f"{shown} (default, Jan 1 2020, 00:00:00)")
    monkeypatch.setattr(sys, "executable", "/usr/bin/python")
    monkeypatch.setattr(sys, "argv", ["run.py", "lab", "--headless"])
    with pytest.raises(SystemExit) as exc:
        load_run_py()
    assert exc.value.code == f"[run.py] ctxlab needs Python 3.10 or newer; this is {shown} (/usr/bin/python). {advice}"


def test_python_2_on_windows_is_told_of_the_launcher() -> None:
    message = run_py.too_old((2, 7, 18, "final", 0), "2.7.18 (default)", r"C:\Python27\python.exe", ["run.py"], "nt")
    assert message == (r"[run.py] ctxlab needs Python 3.10 or newer; this is 2.7.18 (C:\Python27\python.exe). "
                       "Try py -3 run.py lab, or install a newer Python and run again.")
    assert run_py.too_old(sys.version_info, sys.version, sys.executable, ["run.py"], os.name) is None


def old_pythons() -> list:
    """Pythons that could not parse the old run.py (2.x, 3.0-3.6) on this machine: pyenv's versions and python2*,
    python3.N on PATH (not pyenv's shims). 3.7-3.9 parsed it and got its message; the fake versions above cover them."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = [(p.parent.parent.name, str(p)) for p in sorted(pyenv.glob("*/bin/python"))] if pyenv.is_dir() else []
    for name in ("python2", "python2.7", *(f"python3.{minor}" for minor in range(7))):
        found = shutil.which(name)
        if found and "shims" not in Path(found).parts:
            candidates.append((name.removeprefix("python"), found))
    seen, found = set(), []
    for version, path in candidates:
        if re.fullmatch(r"(2(\.\d+)*|3\.[0-6](\.\d+)*)", version) and os.path.realpath(path) not in seen:
            seen.add(os.path.realpath(path))
            found.append(pytest.param(path, id=version))
    return found


@pytest.mark.parametrize("python", old_pythons() or [pytest.param(None, id="none")])
def test_the_old_pythons_on_this_machine_print_the_version_message(python: str | None, tmp_path: Path) -> None:
    if python is None:
        pytest.skip("no Python 2.x or 3.0-3.6 here (looked in pyenv's versions and for python2*, python3.N on PATH)")
    shutil.copy(REPO / "run.py", tmp_path / "run.py")  # alone: the check comes before run_impl.py is looked for
    done = subprocess.run([python, "run.py", "lab"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert re.fullmatch(r"\[run\.py\] ctxlab needs Python 3\.10 or newer; this is [23]\.\d+\.\d+\S* \(.+\)\. "
                        r"(Try python3 run\.py lab, or i|I)nstall a newer Python and run again\.\n", done.stderr), done.stderr
