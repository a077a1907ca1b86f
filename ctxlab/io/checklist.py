"""The fact checklist file: a JSON list of facts, read into :class:`ctxlab.facts.Fact` (chapter 06).

A checklist names short facts — a constraint, a path with a line number, an error code — and the
message that first said each (``data/sample_facts.json``, ``data/pi_facts.json``); ``facts.py``
scores a replay against it. Reading the file is plumbing, so it lives here, beside the other readers:
the book holds no file I/O. A file that cannot be read, is not JSON or is not a checklist raises
CtxlabError naming the file (and the line, for bad JSON).
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxlab.base.errors import CtxlabError
from ctxlab.facts import Fact


def load_facts(path: str | Path) -> list[Fact]:
    """A checklist file: a JSON list of ``{"id", "kind", "text", "message_id"}``, or an object with
    that list under ``"facts"`` (and its ``"source"`` beside it). Raises CtxlabError naming the file.
    ``load_facts("data/sample_facts.json")[0].kind`` → ``"constraint"``. Chapter 06."""
    hint = ('A checklist is a JSON list of {"id", "kind", "text", "message_id"} objects '
            '(see data/sample_facts.json).')
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        items = data["facts"] if isinstance(data, dict) else data
        return [Fact(str(f["id"]), str(f["kind"]), str(f["text"]), str(f["message_id"])) for f in items]
    except (OSError, UnicodeDecodeError) as err:
        raise CtxlabError(f"{path}: cannot read the fact checklist ({err}).") from None
    except json.JSONDecodeError as err:
        raise CtxlabError(f"{path}:{err.lineno}: the fact checklist is not valid JSON ({err.msg}). {hint}") from None
    except (KeyError, TypeError) as err:
        raise CtxlabError(f"{path}: not a fact checklist (missing or wrong {err}). {hint}") from None
