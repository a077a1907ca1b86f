"""The package's shape (issue 15): the book at the top of ``ctxlab/``, the plumbing in wings around it.

Read from the source, not from a list the code keeps: every ``import`` statement of every module
(function-local and ``TYPE_CHECKING`` ones included: a circle dodged inside a function is still a
circle to a reader) is parsed with :mod:`ast`, and the rules of ``ctxlab/README.md`` are checked:

* imports point down the layers: cli → the public API (``ctxlab/__init__.py``) → widgets → lab →
  (io, fast) → the book → tables → base;
  io and fast sit beside each other and never import each other; exercises sit beside widgets;
* inside the book, a module imports only modules of earlier chapters (the list below is the
  reading order, and ``ctxlab/README.md`` lists the same modules in the same order);
* no circle anywhere, no function-local import of ctxlab (but the doctor's), no private name
  (``_x``) imported from another module;
* a module holds at most 300 lines (a widget module 350; the readers in io/formats are exempt), and
  no line of the book is longer than the line length ``pyproject.toml`` sets.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "ctxlab"

# The book, in reading order (chapter order). A module may import only modules before it.
BOOK = ("messages", "tokens", "estimators", "interactions", "context", "views", "strategies", "sendable", "bodies",
        "render", "checks", "cache", "cache_anthropic", "cache_openai", "cache_openai_breakpoints", "ledger", "pruning",
        "pruning_strategy", "paging", "summary", "summary_chunks", "summary_strategy", "facts", "compaction", "pipeline",
        "replay", "loop")

# Layer ranks: an import must go to a lower rank, or stay inside its own layer. io and fast share a
# rank but are different layers, so neither may import the other.
RANKS = {"base": 0, "tables": 1, "wire": 2, "book": 3, "io": 4, "fast": 4, "lab": 5, "widgets": 6,
         "diagrams": 6, "exercises": 6, "front": 7, "cli": 8, "main": 9}
# front: ctxlab/__init__.py, the public API; main: python -m ctxlab
WIRE_MAY_IMPORT = {"base", "tables", "wire"}  # the oracle is independent of what it checks


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")
    if module == "ctxlab":
        return "front"  # the package's front door re-exports the public API from the layers below the CLI
    if module == "ctxlab.__main__":
        return "main"
    if len(parts) == 2 and parts[1] not in RANKS:
        assert parts[1] in BOOK, f"{module} sits at the top of ctxlab/ but is not a book module: add it to BOOK " \
                                 "(in chapter order) or move it into a wing"
        return "book"
    assert parts[1] in RANKS, f"{module}: unknown wing {parts[1]!r}"
    return parts[1]


def imports(module: str) -> list[tuple[int, str, tuple[str, ...], bool]]:
    """(line, imported module, names, function-local?) for every ctxlab import in ``module``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("ctxlab"):
                continue
            names = tuple(a.name for a in node.names)
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            for t in submodules or [target]:
                found.append((node.lineno, t, () if submodules else names, id(node) not in top))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ctxlab"):
                    found.append((node.lineno, alias.name, (), id(node) not in top))
    return found


def resolve(target: str) -> str:
    while target not in MODULES and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m in MODULES:
        for _, target, _, _ in imports(m):
            t = resolve(target)
            if t != m:
                graph[m].add(t)
    return graph


def test_every_module_has_a_layer():
    for m in MODULES:
        layer(m)


def test_imports_point_down_the_layers():
    wrong = []
    for m in MODULES:
        here = layer(m)
        for line, target, _, _ in imports(m):
            there = layer(resolve(target))
            if there == here:
                continue
            if here == "wire" and there not in WIRE_MAY_IMPORT:
                wrong.append(f"{m}:{line} -> {target} (the oracle may use only base and tables)")
            elif RANKS[there] >= RANKS[here]:
                wrong.append(f"{m}:{line} ({here}) -> {target} ({there})")
    assert not wrong, "imports that run up or sideways:\n" + "\n".join(wrong)


def test_the_book_imports_only_earlier_chapters():
    wrong = []
    for m in MODULES:
        if layer(m) != "book":
            continue
        here = BOOK.index(m.split(".")[1])
        for line, target, _, _ in imports(m):
            t = resolve(target)
            if layer(t) == "book" and BOOK.index(t.split(".")[1]) >= here:
                wrong.append(f"{m}:{line} -> {t}")
    assert not wrong, "book modules reaching ahead of their chapter:\n" + "\n".join(wrong)


def test_no_import_circle():
    graph, index, low, stack, on, circles, counter = edges(), {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_no_lazy_import_in_the_book():
    lazy = [f"{m}:{line} -> {target}" for m in MODULES if layer(m) == "book"
            for line, target, _, local in imports(m) if local]
    assert not lazy, "function-local ctxlab imports in the book (import at the top; break the circle instead):\n" \
        + "\n".join(lazy)


def test_no_lazy_import_but_the_doctors():
    """A function-local import of ctxlab is a circle being dodged, with one exception: ``doctor`` imports
    ctxlab inside a ``try`` on purpose, to report a broken install instead of crashing on it. (The CLI's
    other commands import at the top: measured, ``python -m ctxlab --help`` takes 0.27 s either way.)"""
    lazy = [f"{m}:{line} -> {target}" for m in MODULES if m != "ctxlab.cli.doctor"
            for line, target, _, local in imports(m) if local]
    assert not lazy, "function-local ctxlab imports:\n" + "\n".join(lazy)


def test_no_private_name_is_imported_across_modules():
    private = [f"{m}:{line} imports {n} from {target}" for m in MODULES
               for line, target, names, _ in imports(m) for n in names if n.startswith("_") and n != "__version__"]
    assert not private, "\n".join(private)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_book_modules_stay_within_300_lines():
    long = {m: len(_lines(p)) for m, p in MODULES.items() if layer(m) == "book" and len(_lines(p)) > 300}
    assert not long, f"book modules over 300 lines: {long}"


def test_every_wing_module_stays_within_300_lines():
    """The same size outside the book (the readers of io/formats excepted: one file format a module, however
    long its format is); widgets have their own limit below."""
    long = {m: len(_lines(p)) for m, p in MODULES.items() if layer(m) not in ("book", "widgets")
            and not m.startswith("ctxlab.io.formats") and len(_lines(p)) > 300}
    assert not long, f"modules over 300 lines: {long}"


def test_widget_modules_stay_within_350_lines():
    long = {m: len(_lines(p)) for m, p in MODULES.items() if layer(m) == "widgets" and len(_lines(p)) > 350}
    assert not long, f"widget modules over 350 lines: {long}"


def line_length() -> int:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r"^\[tool\.ruff\][^\[]*?^line-length\s*=\s*(\d+)", text, re.M | re.S)
    assert found, "pyproject.toml sets no [tool.ruff] line-length"
    return int(found.group(1))


def test_book_lines_keep_the_line_length():
    limit = line_length()
    long = [f"{m}:{k}" for m, p in MODULES.items() if layer(m) == "book"
            for k, line in enumerate(_lines(p), 1) if len(line) > limit]
    assert not long, f"lines over {limit} characters: {long}"


def test_the_readme_lists_the_book_in_reading_order():
    text = (PACKAGE / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\|\s*`(\w+)\.py`", text, re.M)
    assert tuple(listed) == BOOK


@pytest.mark.parametrize("module", BOOK)
def test_every_book_module_exists_and_opens_with_its_chapter(module):
    path = PACKAGE / f"{module}.py"
    assert path.is_file(), f"ctxlab/{module}.py is missing"
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert re.search(r"[Cc]hapters? \d\d", doc), f"ctxlab/{module}.py's docstring names no chapter"


def test_the_layer_rules_catch_what_they_should(tmp_path, monkeypatch):
    """The checker itself: a planted upward import and a planted circle are found."""
    a, b = tmp_path / "ctxlab" / "messages.py", tmp_path / "ctxlab" / "tokens.py"
    a.parent.mkdir()
    (tmp_path / "ctxlab" / "widgets").mkdir()
    (tmp_path / "ctxlab" / "widgets" / "w.py").write_text("")
    a.write_text("from ctxlab.tokens import x\nfrom ctxlab.widgets.w import y\n")
    b.write_text("from ctxlab.messages import z\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {module_name(p): p for p in (a, b,
                        tmp_path / "ctxlab" / "widgets" / "w.py")})
    with pytest.raises(AssertionError, match="ctxlab.messages:2"):
        test_imports_point_down_the_layers()
    with pytest.raises(AssertionError, match="import circles"):
        test_no_import_circle()
    with pytest.raises(AssertionError, match="ctxlab.messages:1 -> ctxlab.tokens"):
        test_the_book_imports_only_earlier_chapters()


def _wing_modules(wing: str) -> list[str]:
    return [m for m in MODULES if layer(m) == wing and not m.rsplit(".", 1)[-1].startswith("_") and m != f"ctxlab.{wing}"]


@pytest.mark.parametrize("module", _wing_modules("lab"))
def test_lab_imports_no_ui_library(module):
    """lab/ returns rows; drawing them is widgets/'s job."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {"ipywidgets", "plotly", "IPython"}


@pytest.mark.parametrize("module", _wing_modules("lab") + _wing_modules("widgets"))
def test_every_public_name_of_lab_and_widgets_names_its_chapter(module):
    """d2l's rule, for the wings the chapters call: the module and each public function and class it
    defines name the chapter that uses them."""
    import importlib
    import inspect

    mod = importlib.import_module(module)
    chapter = re.compile(r"[Cc]hapters? \d\d")
    assert chapter.search(mod.__doc__ or ""), f"{module}'s docstring names no chapter"
    missing = [n for n, o in vars(mod).items() if not n.startswith("_") and (inspect.isclass(o) or inspect.isfunction(o))
               and o.__module__ == module and not chapter.search(inspect.getdoc(o) or "")]
    assert not missing, f"{module}: {missing}"
