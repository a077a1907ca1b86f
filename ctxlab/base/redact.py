"""Secrets in what ctxlab prints: API keys pasted into a transcript are masked before display.

Transcripts often hold API keys: a user pastes one, a tool prints an environment. ctxlab never
changes what it *counts* or *sends* (token counts stay exact, request bodies stay as recorded);
:func:`redact` is applied only where text is printed — ``python -m ctxlab inspect`` and
``replay`` output and their error lines, and the workbook's text tables
(:func:`ctxlab.lab.workbook.text_table`).

A key keeps its prefix and at most its last four characters, so you can still tell which key it
was, but it cannot be used: ``sk-ant-api03-…`` (108 characters) → ``sk-ant-…[redacted]…x9Qw``.

The patterns and their sources (each family's documented prefix and alphabet):

* OpenAI ``sk-``, ``sk-proj-``, ``sk-svcacct-``, ``sk-admin-`` — OpenAI API reference,
  "Authentication" (https://platform.openai.com/docs/api-reference/authentication), and the
  ``openai-api-key`` rule of gitleaks (https://github.com/gitleaks/gitleaks, config/gitleaks.toml);
* Anthropic ``sk-ant-`` (``sk-ant-api03-…``, ``sk-ant-admin01-…``) — the ``anthropic-api-key``
  rule of gitleaks;
* GitHub ``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_`` (36 characters after the prefix) and
  ``github_pat_`` — GitHub Docs, "About authentication to GitHub: GitHub's token formats", and
  https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/;
* AWS access key ids ``AKIA`` / ``ASIA`` + 16 upper-case letters or digits — AWS IAM User Guide,
  "IAM identifiers: unique ID prefixes";
* Slack ``xoxb-``, ``xoxp-`` (and ``xoxa-``, ``xoxo-``, ``xoxr-``, ``xoxs-``) — Slack API docs,
  "Token types";
* Google API keys ``AIza`` + 35 characters — Google Cloud docs, "Manage API keys", and the
  ``gcp-api-key`` rule of gitleaks.

Simplified on purpose: prefixes and lengths only, no checksums (GitHub's tokens carry one) and no
entropy test. To keep ordinary words alone (``task-list``, ``sk-learn``, ``skill``), a key must
not follow a letter, digit, ``-`` or ``_``, and an ``sk-`` key needs 20 or more characters after
its prefix, at least one of them a digit. Plumbing, not a chapter.
"""

from __future__ import annotations

import re

__all__ = ["KEY_PATTERNS", "find_keys", "redact"]

_START = r"(?<![A-Za-z0-9_\-])"  # not in the middle of a word or of another token

# family -> a regex with groups ``prefix`` (kept) and ``body`` (masked but for its last 4 characters).
# The more specific sk-ant-/sk-proj- prefixes come before plain sk-, so they are kept whole.
KEY_PATTERNS: dict[str, re.Pattern[str]] = {
    "openai or anthropic": re.compile(_START + r"(?P<prefix>sk-(?:ant-|proj-|svcacct-|admin-)?)"
                                      r"(?P<body>(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,})"),
    "github": re.compile(_START + r"(?P<prefix>gh[pousr]_)(?P<body>[A-Za-z0-9]{36,255})"),
    "github fine-grained": re.compile(_START + r"(?P<prefix>github_pat_)(?P<body>[A-Za-z0-9_]{22,255})"),
    "aws access key id": re.compile(_START + r"(?P<prefix>AKIA|ASIA)(?P<body>[A-Z0-9]{16})(?![A-Za-z0-9])"),
    "slack": re.compile(_START + r"(?P<prefix>xox[bpaors]-)(?P<body>[A-Za-z0-9\-]{10,250})"),
    "google api key": re.compile(_START + r"(?P<prefix>AIza)(?P<body>[A-Za-z0-9_\-]{35})(?![A-Za-z0-9_\-])"),
}

MASK = "…[redacted]…"


def _mask(match: re.Match[str]) -> str:
    return match["prefix"] + MASK + match["body"][-4:]


def redact(text: str) -> str:
    """``text`` with every key-shaped string masked: prefix kept, at most the last 4 characters shown.

    ``redact("KEY=sk-proj-" + "a1" * 16)`` → ``"KEY=sk-proj-…[redacted]…a1a1"``;
    ``redact("use sk-learn for the task-list")`` is unchanged.
    Redacting twice changes nothing more. Only for display: never for what is counted or sent.
    """
    for pattern in KEY_PATTERNS.values():
        text = pattern.sub(_mask, text)
    return text


def find_keys(text: str) -> list[tuple[int, str, str]]:
    """Every key-shaped string in ``text`` as ``(offset, family, masked form)``, in order of offset.

    ``find_keys("a ghp_" + "x1" * 18)`` → ``[(2, "github", "ghp_…[redacted]…x1x1")]``. The masked form
    lets a report say where a key is without printing it.
    """
    found = [(m.start(), family, _mask(m)) for family, pattern in KEY_PATTERNS.items() for m in pattern.finditer(text)]
    return sorted(found)
