"""The body of run.py: the set-up, JupyterLab and the test run (Python 3.10+, standard library only).

Run it through ``python run.py lab`` / ``python run.py test`` (run.py's own docstring lists the
commands): run.py first checks the Python version with syntax every Python can parse, then loads
this file. Its names are run.py's too (``run_py.setup``, ``run_py.lab_command``: tests/test_setup.py).

Set-up: create ``.venv`` in the project with ``python -m venv`` if it is missing, install the
project editable with the ``lab`` (or ``test``) extra — with ``uv`` when it is on PATH, else
with pip — and record a hash of pyproject.toml in ``.venv/ctxlab-setup.json``; the next run
skips the install while that hash and the installed extra still match. A ``.venv`` that cannot be
used is removed and made again, with one line saying why: its python missing or not starting, its
creation never finished (``.venv/ctxlab-venv.json`` is written last, after ``python -m venv``
returned; a venv from before that marker counts as finished when it has the set-up stamp), or no
pip when pip is the installer. A Ctrl-C during set-up stops it with one line; the next run
carries on. Nothing is registered outside the project (no user-wide kernel spec, no global
packages).

The exit code is the exit code of JupyterLab or pytest (pytest's 5, "no tests collected",
counts as a failure); 2 for a ``--port`` that cannot be used; 130 after a Ctrl-C in set-up.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import secrets
import shutil
import socket
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP_NAME = "ctxlab-setup.json"  # in .venv: pyproject.toml's hash and the extras installed, written when set-up is done
STAMP = VENV / STAMP_NAME
MARKER_NAME = "ctxlab-venv.json"  # in .venv: written last by make_venv, so a venv without it was never finished
NOTEBOOKS = ROOT / "notebooks"
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
DEFAULT_PORT = 8888
EXTRAS = {"lab": {"lab"}, "test": {"lab", "test"}, "browser": {"lab", "test", "browser"}}  # extra -> what installing it provides

# What pytest runs besides pyproject's addopts (which hold the network guard): every notebook with
# plain --nbval in this venv's kernel, two workers, one file per worker (nbval needs loadfile), the files in the order
# tests/conftest.py gives them (the long chapter runs first, so neither worker is left alone at the end).
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


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr, then exit with ``code``."""
    print(f"[run.py] {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def venv_python(venv: Path = VENV) -> Path:
    """The venv's own interpreter: ``.venv/bin/python`` or ``.venv\\Scripts\\python.exe``."""
    if os.name == "nt":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def pyproject_hash(root: Path = ROOT) -> str:
    return hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()


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


def run(cmd: list[str], *, stop_on_ctrl_c: bool = False, **kwargs) -> int:
    """Run a command and wait; Ctrl-C goes to the child, which decides when to stop; a SIGTERM to
    run.py is passed on, so `kill` stops JupyterLab too instead of orphaning it. With
    ``stop_on_ctrl_c`` (the set-up's steps), KeyboardInterrupt is raised once the child has ended."""
    proc = subprocess.Popen(cmd, **kwargs)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: proc.terminate())
    interrupted = False
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                interrupted = True
    finally:
        if previous is not None:  # None: a handler not set from Python, which cannot be put back
            signal.signal(signal.SIGTERM, previous)
    if interrupted and stop_on_ctrl_c:
        raise KeyboardInterrupt
    return code


def python_works(python: Path, code: str = "import sys") -> bool:
    """True when ``python -c code`` exits 0 (``"import pip"``: the venv has pip)."""
    if not python.exists():
        return False
    try:
        return subprocess.run([str(python), "-c", code], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def venv_problem(venv: Path, need_pip: bool) -> str | None:
    """Why the existing ``venv`` cannot be used, as a clause for one line (``".venv/bin/python does
    not start"``), or None when it can. In this order: its python is missing (or links to a Python
    that is gone); it does not start; the venv was never finished (no marker and no set-up stamp);
    with ``need_pip`` (pip installs: uv is not on PATH), ``import pip`` fails."""
    python = venv_python(venv)
    shown = Path(venv.name, python.relative_to(venv))
    if not python.exists():
        if python.is_symlink():
            return f"{shown} points to {os.readlink(python)}, which is gone (that Python upgraded or removed?)"
        return f"{shown} is missing"
    if not python_works(python):
        return f"{shown} does not start"
    if not (venv / MARKER_NAME).exists() and not read_stamp(venv / STAMP_NAME):
        return f"{venv.name} was never finished (set-up interrupted?)"
    if need_pip and not python_works(python, "import pip"):
        return f"{venv.name} has no pip, which installs ctxlab when uv is not on PATH"
    return None


def _retry_writable(func, path, _exc) -> None:
    os.chmod(path, stat.S_IWRITE)  # Windows: a read-only file stops rmtree
    func(path)


def remove_venv(venv: Path) -> None:
    """Delete ``venv``, its marker and stamp first (a removal cut short leaves it unfinished); a link
    is unlinked, never followed. Exits with one line when that fails (Windows: a file in use)."""
    try:
        if venv.is_symlink() or venv.is_file():
            venv.unlink()
            return
        for name in (MARKER_NAME, STAMP_NAME):
            (venv / name).unlink(missing_ok=True)
        shutil.rmtree(venv, **{"onexc" if sys.version_info >= (3, 12) else "onerror": _retry_writable})
    except OSError as err:
        fail(f"could not remove {venv} ({err}): close every JupyterLab, kernel and terminal using it, "
             "or delete the folder yourself, then run again")


def make_venv(venv: Path) -> Path:
    """Create ``venv`` with this Python's ``-m venv`` (pip included), then write its marker last;
    return its python. Exits with one line when venv fails; a Ctrl-C raises KeyboardInterrupt."""
    step(f"creating {venv.name} with {Path(sys.executable).name} -m venv (Python {sys.version.split()[0]})")
    code = run([sys.executable, "-m", "venv", str(venv)], stop_on_ctrl_c=True)
    python = venv_python(venv)
    if code or not python.exists():
        sys.exit(f"[run.py] could not create {venv} (exit {code}). On Debian/Ubuntu: apt install python3-venv.")
    marker = {"made_by": "run.py", "python": sys.version.split()[0], "from": sys.executable}
    (venv / MARKER_NAME).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    return python


def ensure_venv(venv: Path, need_pip: bool) -> bool:
    """Make ``venv`` usable: keep it when :func:`venv_problem` finds nothing, else remove it (one
    line says why) and make it again. True when it was made (any set-up stamp is gone then)."""
    if venv.exists() or venv.is_symlink():
        problem = venv_problem(venv, need_pip)
        if problem is None:
            return False
        if os.path.normcase(Path(sys.prefix).resolve()) == os.path.normcase(venv.resolve()):
            fail(f"{problem}, and run.py runs on that venv's own Python: deactivate it (or open a new "
                 "terminal) and run the same command with the system's Python")
        step(f"{problem}: removing {venv.name} and creating it again")
        remove_venv(venv)
    make_venv(venv)
    return True


def setup(extra: str, root: Path = ROOT) -> Path:
    """Make ``root/.venv`` hold the project with ``extra``; return the venv's python. Exits on failure."""
    venv = root / ".venv"
    python, digest, stamp_path = venv_python(venv), pyproject_hash(root), venv / STAMP_NAME
    stamp = read_stamp(stamp_path)
    if setup_is_current(stamp, extra, digest) and venv_problem(venv, need_pip=False) is None:
        step(f"set-up is current (.venv has the '{extra}' extra, pyproject.toml unchanged): skipping install")
        return python

    started = time.monotonic()
    uv = shutil.which("uv")
    if ensure_venv(venv, need_pip=not uv):
        stamp = {}
    cmd = install_command(python, extra, uv)
    step(f"installing ctxlab (editable) with the '{extra}' extra using {'uv' if uv else 'pip'} "
         f"(about {'10 s' if uv else '30 s'} here; longer on a first download over slow wifi): "
         f"{' '.join(cmd[1:] if uv else cmd[2:])}")
    code = run(cmd, cwd=str(root), stop_on_ctrl_c=True)
    if code:
        sys.exit(f"[run.py] install failed (exit {code}); see the messages above. Offline? See README, 'For facilitators'.")

    overrides = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    step(f"writing JupyterLab settings (no news or update checks) to {overrides.relative_to(root)}")
    overrides.parent.mkdir(parents=True, exist_ok=True)
    overrides.write_text(json.dumps(LAB_OVERRIDES, indent=2) + "\n", encoding="utf-8")

    step("checking the install: python -m ctxlab doctor")
    code = run([str(python), "-m", "ctxlab", "doctor"], cwd=str(root), stop_on_ctrl_c=True)
    if code:
        sys.exit("[run.py] ctxlab doctor found a problem (FAIL lines above); set-up is not complete.")

    provides = set(EXTRAS[extra])
    if stamp.get("pyproject_sha256") == digest:
        provides |= set(stamp.get("provides", ()))
    stamp_path.write_text(json.dumps({"pyproject_sha256": digest, "provides": sorted(provides),
                                      "python": sys.version.split()[0]}, indent=2) + "\n", encoding="utf-8")
    step(f"set-up done in {time.monotonic() - started:.0f} s")
    return python


def port_problem(port: int) -> str | None:
    """Why JupyterLab could not listen on 127.0.0.1:``port`` (a clause: ``"is in use ..."``), or None.
    Binds a socket there and closes it; off Windows with SO_REUSEADDR, as JupyterLab's server does,
    so a port a JupyterLab just stopped left in TIME_WAIT counts as free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if os.name != "nt":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as err:
            if err.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)):
                return "is in use (another JupyterLab or server?)"
            if err.errno in (errno.EACCES, getattr(errno, "WSAEACCES", -1)):
                return "is not allowed here (below 1024 needs root; Windows may reserve it)"
            return f"cannot be used ({err.strerror or err})"
    return None


def free_port(preferred: int = DEFAULT_PORT, tries: int = 50) -> int:
    """The first port from ``preferred`` on that JupyterLab can listen on at 127.0.0.1."""
    for port in range(preferred, min(preferred + tries, 65536)):
        if port_problem(port) is None:
            return port
    sys.exit(f"[run.py] no free port in {preferred}..{preferred + tries - 1}; pass --port N.")


def choose_port(requested: int | None, default: int = DEFAULT_PORT) -> int:
    """``requested`` when JupyterLab can listen on it, else one line on stderr and exit 2; with no
    ``requested``, ``default`` or the next free port (one line says so when it is not ``default``)."""
    if requested is not None:
        problem = port_problem(requested)
        if problem:
            fail(f"port {requested} {problem}: stop what uses it, pass another --port, or leave --port "
                 "out to take the next free one", 2)
        return requested
    port = free_port(default)
    if port != default:
        step(f"port {default} is not free: using {port}")
    return port


def port_number(text: str) -> int:
    """argparse's type for ``--port``: a number from 1 to 65535."""
    port = int(text) if text.strip().isdecimal() else 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give a number from 1 to 65535")
    return port


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
    if args.port is not None:
        choose_port(args.port)  # a port in use stops here, before a set-up that may take a minute
    python = setup("lab")
    port = choose_port(args.port)  # again: set-up takes time, and the default port is picked now
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
    keep_bytecode(env)
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-ctxlab-no-network.py").write_text(KERNEL_NETWORK_GUARD, encoding="utf-8")
    return env


# Where a test run keeps its bytecode when the environment forbids writing it beside the sources (below).
PYCACHE = VENV / "pycache"


def keep_bytecode(env: dict[str, str]) -> None:
    """``PYTHONDONTWRITEBYTECODE`` set (to keep ``__pycache__`` out of the source tree): the test run's
    bytecode goes to ``.venv/pycache`` instead (``PYTHONPYCACHEPREFIX``), kept from one run to the next and
    removed with the venv. Without it every worker and every notebook kernel compiles every module again,
    and pytest rewrites the asserts of every test module again: measured 16 s of collection per run instead
    of 2.5 s. Python reads only the prefix once it is set, so the first such run compiles the venv's
    packages there (a one-off). Nothing changes when bytecode may be written or a prefix is already chosen."""
    if env.get("PYTHONDONTWRITEBYTECODE") and not env.get("PYTHONPYCACHEPREFIX"):
        del env["PYTHONDONTWRITEBYTECODE"]
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)


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
    return [str(python), "-m", "pytest", "-m", "browser", "-rs", "tests/test_browser.py", "tests/test_browser_ch06.py",
            "tests/test_browser_ch08.py", *extra_args]


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
    parser = argparse.ArgumentParser(prog="run.py", allow_abbrev=False,
                                     description="The two quick-start commands of ctxlab (see README.md).")
    sub = parser.add_subparsers(dest="command", required=True)
    lab = sub.add_parser("lab", allow_abbrev=False, help="set up .venv, then start JupyterLab on notebooks/")
    lab.add_argument("--headless", action="store_true", help="do not open a browser; print the URL")
    lab.add_argument("--port", type=port_number, default=None, help="port (default: 8888 or the next free one)")
    test = sub.add_parser("test", allow_abbrev=False, help="set up .venv, then run the tests and every notebook (extra args go to pytest)")
    test.add_argument("--setup-only", action="store_true", help="set up .venv and stop")
    sub.add_parser("browser", allow_abbrev=False, help="set up .venv (and Chromium on Linux as root), then run the "
                   "real-browser tests (extra args go to pytest)")
    args, rest = parser.parse_known_args(argv)
    try:
        if args.command == "lab":
            if rest:
                parser.error(f"unrecognized arguments: {' '.join(rest)}")
            return cmd_lab(args)
        if args.command == "browser":
            return cmd_browser(rest)
        return cmd_test(args, rest)
    except KeyboardInterrupt:
        print("[run.py] stopped by Ctrl-C; the next run finishes the set-up (an unfinished .venv is made again)",
              file=sys.stderr, flush=True)
        return 130
