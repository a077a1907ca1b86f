#!/usr/bin/env python3
"""The two quick-start commands of ctxlab. Standard library only; Linux, macOS and Windows.

    python run.py lab [--headless] [--port N]   set up .venv, then start JupyterLab on notebooks/
    python run.py test [pytest args...]         set up .venv, then run the tests and every notebook
    python run.py test --setup-only             set up only
    python run.py browser [pytest args...]      set up .venv (and Chromium), then the real-browser tests

Set-up: create ``.venv`` in the project with ``python -m venv`` if it is missing, install the
project editable with the ``lab`` (or ``test``) extra — with ``uv`` when it is on PATH, else
with pip — and record a hash of pyproject.toml in ``.venv/ctxlab-setup.json``; the next run
skips the install while that hash and the installed extra still match. Nothing is registered
outside the project (no user-wide kernel spec, no global packages).

The exit code is the exit code of JupyterLab or pytest (pytest's 5, "no tests collected",
counts as a failure).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import shutil
import socket
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / "ctxlab-setup.json"
NOTEBOOKS = ROOT / "notebooks"
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
MIN_PYTHON = (3, 10)
EXTRAS = {"lab": {"lab"}, "test": {"lab", "test"}, "browser": {"lab", "test", "browser"}}  # extra -> what installing it provides

# What pytest runs besides pyproject's addopts (which hold the network guard): every notebook with
# plain --nbval in this venv's kernel, two workers, one file per worker (nbval needs loadfile).
PYTEST_ARGS = ["--nbval", "--nbval-current-env", "-n", "2", "--dist", "loadfile", "-rs"]  # -rs: say why tests skip

# JupyterLab settings that keep it from asking a website for news or updates (offline workshops).
LAB_OVERRIDES = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}

# An IPython start-up file for the test run's kernels: they may talk to this machine only.
# (pytest-socket guards the pytest process; a kernel is a process of its own.)
KERNEL_NETWORK_GUARD = '''\
# Written by ctxlab's run.py into the temporary IPYTHONDIR of a test run; not used by `run.py lab`.
def _ctxlab_block_network():
    import ipaddress
    import socket

    true_connect, true_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def allowed(address):
        if not isinstance(address, tuple):
            return True  # a Unix socket path
        host = str(address[0]).split("%")[0]
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def blocked(address):
        return OSError(f"network blocked in ctxlab's test kernels: connect to {address!r}")

    def connect(self, address):
        if not allowed(address):
            raise blocked(address)
        return true_connect(self, address)

    def connect_ex(self, address):
        if not allowed(address):
            raise blocked(address)
        return true_connect_ex(self, address)

    connect.ctxlab_guard = connect_ex.ctxlab_guard = True
    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex


_ctxlab_block_network()
del _ctxlab_block_network
'''


def step(message: str) -> None:
    """One line per step, so a learner can see what is happening and where it stopped."""
    print(f"[run.py] {message}", flush=True)


def venv_python(venv: Path = VENV) -> Path:
    """The venv's own interpreter: ``.venv/bin/python`` or ``.venv\\Scripts\\python.exe``."""
    if os.name == "nt":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def pyproject_hash() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def read_stamp(path: Path = STAMP) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def setup_is_current(stamp: dict, extra: str, digest: str) -> bool:
    """True when the venv was set up from this pyproject.toml with an extra that covers ``extra``."""
    return stamp.get("pyproject_sha256") == digest and EXTRAS[extra] <= set(stamp.get("provides", ()))


def install_command(python: Path, extra: str, uv: str | None) -> list[str]:
    """The install command: ``uv pip install`` when uv is on PATH (much faster), else pip."""
    target = f".[{extra}]"
    if uv:
        # --compile-bytecode: uv skips it by default; without .pyc files every kernel recompiles
        # plotly and IPython from source (measured: the test run costs ~35% more CPU).
        return [uv, "pip", "install", "-q", "--compile-bytecode", "--python", str(python), "-e", target]
    return [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-e", target]


def run(cmd: list[str], **kwargs) -> int:
    """Run a command and wait; Ctrl-C goes to the child, which decides when to stop; a SIGTERM to
    run.py is passed on, so `kill` stops JupyterLab too instead of orphaning it."""
    proc = subprocess.Popen(cmd, **kwargs)
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, lambda signum, frame: proc.terminate())
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


def python_works(python: Path) -> bool:
    if not python.exists():
        return False
    try:
        return subprocess.run([str(python), "-c", "import sys"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def setup(extra: str) -> Path:
    """Make ``.venv`` hold the project with ``extra``; return the venv's python. Exits on failure."""
    if sys.version_info < MIN_PYTHON:
        sys.exit(f"[run.py] ctxlab needs Python {'.'.join(map(str, MIN_PYTHON))} or newer; this is "
                 f"{sys.version.split()[0]} ({sys.executable}). Install a newer Python and run again.")
    python, digest = venv_python(), pyproject_hash()
    stamp = read_stamp()
    if setup_is_current(stamp, extra, digest) and python_works(python):
        step(f"set-up is current (.venv has the '{extra}' extra, pyproject.toml unchanged): skipping install")
        return python

    started = time.monotonic()
    if not python_works(python):
        if VENV.exists():
            step(f"{python} does not run: recreating .venv")
            shutil.rmtree(VENV)
        step(f"creating .venv with {Path(sys.executable).name} -m venv (Python {sys.version.split()[0]})")
        code = run([sys.executable, "-m", "venv", str(VENV)])
        if code or not python.exists():
            sys.exit(f"[run.py] could not create {VENV} (exit {code}). On Debian/Ubuntu: apt install python3-venv.")
        stamp = {}
    uv = shutil.which("uv")
    cmd = install_command(python, extra, uv)
    step(f"installing ctxlab (editable) with the '{extra}' extra using {'uv' if uv else 'pip'} "
         f"(about {'10 s' if uv else '30 s'} here; longer on a first download over slow wifi): "
         f"{' '.join(cmd[1:] if uv else cmd[2:])}")
    code = run(cmd, cwd=str(ROOT))
    if code:
        sys.exit(f"[run.py] install failed (exit {code}); see the messages above. Offline? See README, 'For facilitators'.")

    overrides = VENV / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    step(f"writing JupyterLab settings (no news or update checks) to {overrides.relative_to(ROOT)}")
    overrides.parent.mkdir(parents=True, exist_ok=True)
    overrides.write_text(json.dumps(LAB_OVERRIDES, indent=2) + "\n", encoding="utf-8")

    step("checking the install: python -m ctxlab doctor")
    code = run([str(python), "-m", "ctxlab", "doctor"], cwd=str(ROOT))
    if code:
        sys.exit("[run.py] ctxlab doctor found a problem (FAIL lines above); set-up is not complete.")

    provides = set(EXTRAS[extra])
    if stamp.get("pyproject_sha256") == digest:
        provides |= set(stamp.get("provides", ()))
    STAMP.write_text(json.dumps({"pyproject_sha256": digest, "provides": sorted(provides),
                                 "python": sys.version.split()[0]}, indent=2) + "\n", encoding="utf-8")
    step(f"set-up done in {time.monotonic() - started:.0f} s")
    return python


def free_port(preferred: int = 8888, tries: int = 50) -> int:
    """The first port from ``preferred`` on that nothing listens on at 127.0.0.1."""
    for port in range(preferred, preferred + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    sys.exit(f"[run.py] no free port in {preferred}..{preferred + tries - 1}; pass --port N.")


def lab_command(python: Path | str, port: int, token: str, headless: bool) -> list[str]:
    """The JupyterLab command line: notebooks/ as root, loopback only, one Ctrl-C stops it."""
    cmd = [str(python), "-m", "jupyterlab", f"--ServerApp.root_dir={NOTEBOOKS}", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           "--ServerApp.answer_yes=True"]
    if headless:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers and CI machines run as root
    return cmd


def cmd_lab(args: argparse.Namespace) -> int:
    python = setup("lab")
    port = args.port or free_port()
    token = secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}/lab?token={token}"
    step(f"starting JupyterLab on notebooks/ at {url}")
    step("open that URL in a browser" if args.headless else "opening it in your browser")
    step("stop with Ctrl-C")
    return run(lab_command(python, port, token, args.headless), cwd=str(ROOT))


def test_environment(tmp: Path) -> dict[str, str]:
    """The environment of a test run: Jupyter and IPython write into ``tmp``, never into $HOME."""
    env = dict(os.environ)
    env["JUPYTER_CONFIG_DIR"] = str(tmp / "jupyter-config")
    env["JUPYTER_DATA_DIR"] = str(tmp / "jupyter-data")
    env["IPYTHONDIR"] = str(tmp / "ipython")
    env["JUPYTER_RUNTIME_DIR"] = str(tmp / "jupyter-runtime")
    env["JUPYTER_PLATFORM_DIRS"] = "1"  # silence jupyter_core's deprecation notice about the old dirs
    env.pop("PLOTLY_RENDERER", None)  # notebooks choose their renderer themselves
    env.pop("PYTEST_ADDOPTS", None)  # the command below is the whole configuration
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-ctxlab-no-network.py").write_text(KERNEL_NETWORK_GUARD, encoding="utf-8")
    return env


def pytest_command(python: Path | str, extra_args: list[str]) -> list[str]:
    """pytest over tests/ and notebooks/ (pyproject's testpaths) plus every notebook via nbval."""
    cmd = [str(python), "-m", "pytest", *PYTEST_ARGS]
    if SANITIZE.exists():
        cmd += ["--nbval-sanitize-with", str(SANITIZE.relative_to(ROOT))]
    return cmd + extra_args


def cmd_test(args: argparse.Namespace, pytest_args: list[str]) -> int:
    python = setup("test")
    if args.setup_only:
        step("set-up only: not running the tests")
        return 0
    with tempfile.TemporaryDirectory(prefix="ctxlab-test-", ignore_cleanup_errors=True) as tmp:
        env = test_environment(Path(tmp))
        cmd = pytest_command(python, pytest_args)
        step(f"running: pytest {' '.join(cmd[3:])}  (Jupyter/IPython dirs in {tmp}; network: loopback only)")
        code = run(cmd, cwd=str(ROOT), env=env)
    if code == 5:
        step("pytest collected no tests: that counts as a failure")
    elif code:
        step(f"tests failed (pytest exit code {code})")
    else:
        step("all tests passed")
    return code


# Where the real-browser tests look for the system's Chromium (tests/test_browser.py looks in the same places).
CHROMIUM_NAMES = ("/usr/bin/chromium", "chromium", "chromium-browser")


def find_chromium() -> str | None:
    """The system's Chromium (``CTXLAB_CHROMIUM`` first, then the usual names on PATH), or None."""
    for name in (os.environ.get("CTXLAB_CHROMIUM", ""), *CHROMIUM_NAMES):
        path = name if os.path.isabs(name) and os.access(name, os.X_OK) else shutil.which(name) if name else None
        if path:
            return path
    return None


def ensure_chromium() -> str | None:
    """Find Chromium; on Linux as root with apt-get, install Debian's ``chromium`` when it is missing
    (~20 s after ``apt-get update``). Never a browser download by playwright (``playwright install``)."""
    found = find_chromium()
    if found:
        step(f"Chromium: {found}")
        return found
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if sys.platform.startswith("linux") and is_root and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
            step(f"no Chromium found: running {' '.join(cmd)}")
            if run(cmd, env=env):
                step(f"{' '.join(cmd)} failed; the browser tests will be skipped")
                return None
        return find_chromium()
    step("no Chromium found: install it (Debian/Ubuntu: sudo apt-get install chromium) or set CTXLAB_CHROMIUM "
         "to a Chromium or Chrome executable; without it the browser tests are skipped")
    return None


def browser_pytest_command(python: Path | str, extra_args: list[str]) -> list[str]:
    """pytest on the real-browser tests only. This ``-m`` comes after pyproject's addopts and replaces
    their ``-m 'not browser and not thorough'``; the addopts' network guard stays."""
    return [str(python), "-m", "pytest", "-m", "browser", "-rs", "tests/test_browser.py", *extra_args]


def cmd_browser(pytest_args: list[str]) -> int:
    python = setup("browser")
    chromium = ensure_chromium()
    with tempfile.TemporaryDirectory(prefix="ctxlab-browser-", ignore_cleanup_errors=True) as tmp:
        env = test_environment(Path(tmp))
        if chromium:
            env["CTXLAB_CHROMIUM"] = chromium  # the tests use the browser found here
        cmd = browser_pytest_command(python, pytest_args)
        step(f"running: pytest {' '.join(cmd[3:])}  (JupyterLab + Chromium on 127.0.0.1; 1-3 minutes)")
        code = run(cmd, cwd=str(ROOT), env=env)
    if not chromium:
        step("no Chromium: nothing was tested in a browser (the tests were skipped)")
        return code or 1
    step("browser tests passed" if code == 0 else f"browser tests failed (pytest exit code {code})")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py", allow_abbrev=False, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    lab = sub.add_parser("lab", allow_abbrev=False, help="set up .venv, then start JupyterLab on notebooks/")
    lab.add_argument("--headless", action="store_true", help="do not open a browser; print the URL")
    lab.add_argument("--port", type=int, default=None, help="port (default: 8888 or the next free one)")
    test = sub.add_parser("test", allow_abbrev=False, help="set up .venv, then run the tests and every notebook (extra args go to pytest)")
    test.add_argument("--setup-only", action="store_true", help="set up .venv and stop")
    sub.add_parser("browser", allow_abbrev=False, help="set up .venv (and Chromium on Linux as root), then run the "
                   "real-browser tests (extra args go to pytest)")
    args, rest = parser.parse_known_args(argv)
    if args.command == "lab":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        return cmd_lab(args)
    if args.command == "browser":
        return cmd_browser(rest)
    return cmd_test(args, rest)


if __name__ == "__main__":
    sys.exit(main())
