"""Secrets: API keys are masked where ctxlab prints, and only there.

The fake keys are put together at run time ("ghp_" + ...), so this file holds no string shaped
like a key: secret scanners (GitHub push protection, gitleaks) have nothing to flag, and the scan
test at the bottom could run on tests/ too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ctxlab
from ctxlab.cli.main import main
from ctxlab.io.formats import load
from ctxlab.tables.profiles import profile_for
from ctxlab.base.redact import MASK, find_keys, redact
from ctxlab.bodies import to_anthropic_body
from ctxlab.estimators import get_counter
from ctxlab.tokens import MessageMeter
from ctxlab.lab.workbook import text_table

REPO = Path(__file__).resolve().parents[1]
BODY = "Zq7" + "x9Lm2Pw4" * 6 + "Kc1B"  # 55 letters and digits, ends in "Kc1B"

# family -> (a fake key of that shape, the prefix kept when masked)
FAKE_KEYS = {
    "openai": ("sk-" + BODY[:48], "sk-"),
    "openai project": ("sk-proj-" + BODY + "_-" + BODY, "sk-proj-"),
    "openai service account": ("sk-svcacct-" + BODY, "sk-svcacct-"),
    "anthropic": ("sk-ant-api03-" + BODY + BODY[:38] + "AA", "sk-ant-"),
    "github classic": ("ghp_" + BODY[:36], "ghp_"),
    "github oauth": ("gho_" + BODY[:36], "gho_"),
    "github fine-grained": ("github_pat_" + BODY[:22] + "_" + BODY, "github_pat_"),
    "aws access key id": ("AKIA" + "QX7Z2M4N8B3V5C6L", "AKIA"),
    "aws temporary key id": ("ASIA" + "QX7Z2M4N8B3V5C6L", "ASIA"),
    "slack bot": ("xoxb-" + "1234567890-9876543210-" + BODY[:24], "xoxb-"),
    "slack user": ("xoxp-" + "1234567890-" + BODY[:30], "xoxp-"),
    "google api key": ("AIza" + "Sy" + BODY[:33], "AIza"),
}


@pytest.mark.parametrize("family", FAKE_KEYS)
def test_each_pattern_is_masked_keeping_prefix_and_at_most_four_characters(family: str) -> None:
    key, prefix = FAKE_KEYS[family]
    for context in ("{}", "export API_KEY={}", 'curl -H "Authorization: Bearer {}" ...', '{{"key": "{}"}}',
                    "key:\n{}\nend"):
        text = context.format(key)
        masked = redact(text)
        assert key not in masked
        assert masked == text.replace(key, prefix + MASK + key[-4:])  # recognisable, not usable
        assert redact(masked) == masked  # masking twice changes nothing
    assert [(at, shown) for at, _, shown in find_keys(f"see {key}.")] == [(4, prefix + MASK + key[-4:])]


@pytest.mark.parametrize("text", [
    "task-list", "sk-learn", "skill", "use sk-learn (scikit-learn) for the task-list skill",
    "sk-learn-is-a-python-library-for-machine-learning",  # long, but no digit: a word, not a key
    "risk-1234567890abcdefghij", "desk_ghp_" + "a1" * 18, "ask-proj-" + "a1" * 20,  # glued to a word
    "sk-1234", "ghp_short", "xoxb-123", "AIza", "AKIA" + "ABC",  # too short
    "AKIA" + "QX7Z2M4N8B3V5C6L7",  # 17 characters after AKIA: not an access key id
    "0f3a9c2e" * 8, "3f2504e0-4f89-11d3-9a0c-0305e82c3301",  # a sha256, a UUID
    "toolu_01A09q90qw90lq917835lq9", "call_aBcD1234eFgH5678", "msg_01XFDUDYJgAACzvnptvVoYEL",  # tool-call ids
    "上下文窗口 sk- 中文",
])
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text and find_keys(text) == []


def cc_line(uuid: str, parent: str | None, kind: str, content: object, **extra: object) -> str:
    return json.dumps({"parentUuid": parent, "isSidechain": False, "sessionId": "sess-1", "type": kind,
                       "message": {"role": kind, "content": content, **extra}, "uuid": uuid,
                       "timestamp": "2025-03-01T08:00:00.000Z"})


@pytest.fixture
def leaky(tmp_path: Path) -> tuple[Path, str]:
    """A Claude Code transcript where a key was pasted: into the title and into a message."""
    key = FAKE_KEYS["anthropic"][0]
    path = tmp_path / "leaky.jsonl"
    path.write_text("\n".join([
        json.dumps({"type": "summary", "summary": f"Rotate {key} before Friday", "leafUuid": "a1"}),
        cc_line("u1", None, "user", f"my key is {key}, please set it in .env"),
        cc_line("a1", "u1", "assistant", [{"type": "text", "text": "Done."}], id="msg_1",
                model="claude-sonnet-4-5", usage={"input_tokens": 50, "output_tokens": 3}),
    ]) + "\n", encoding="utf-8")
    return path, key


def test_inspect_prints_the_key_masked(leaky: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, key = leaky
    masked = "sk-ant-" + MASK + key[-4:]
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert key not in out and f"'Rotate {masked} before Friday'" in out
    assert main(["inspect", str(path), "--json"]) == 0
    raw = capsys.readouterr().out
    report = json.loads(raw)  # still valid JSON
    assert key not in raw and report["conversations"][0]["title"] == f"Rotate {masked} before Friday"


def test_counting_and_sending_use_the_text_as_recorded(leaky: tuple[Path, str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path, key = leaky
    conv = load(path).conversation()
    assert key in conv.messages[0].text  # loading never redacts
    meter = MessageMeter(profile_for(conv.model, conv.provider), get_counter("o200k_base"))
    exact = meter.messages(conv.messages)
    assert main(["inspect", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["tokens"]["o200k_base"] == exact  # counted from the key, not from its mask
    masked_msg = ctxlab.user(redact(conv.messages[0].text), "u1")
    assert meter.messages([masked_msg, *conv.messages[1:]]) != exact  # so masking would have changed it
    context = ctxlab.build_context(conv, ctxlab.BudgetPolicy(budget_tokens=10_000))
    assert key in json.dumps(to_anthropic_body(context), ensure_ascii=False)  # what is sent is as recorded


def test_errors_and_notes_quoting_a_key_print_it_masked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = FAKE_KEYS["openai project"][0]
    bad = tmp_path / "bad.jsonl"  # the model field holds an object with a key in it: strict error quotes it
    bad.write_text("\n".join([cc_line("u1", None, "user", "hi"),
                              cc_line("a1", "u1", "assistant", [], model={"api_key": key})]) + "\n", encoding="utf-8")
    with pytest.raises(ctxlab.TranscriptError) as info:
        load(bad)
    assert key[:40] in str(info.value)  # the library's own error is not redacted: the caller may need it
    for argv in (["inspect", str(bad)], ["replay", str(bad)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "field 'message.model'" in err
        assert key[:40] not in err and "sk-proj-" + MASK in err
    assert main(["inspect", str(bad), "--lenient"]) == 0  # the skip note quotes it too
    out = capsys.readouterr().out
    assert "skipped line 2: field 'message.model'" in out and key[:40] not in out and "sk-proj-" + MASK in out


def test_replay_prints_the_key_masked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = FAKE_KEYS["github classic"][0]
    path = tmp_path / f"{key}.json"  # an OpenAI chat list's conversation id is its file name
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]),
                    encoding="utf-8")
    for argv in (["replay", str(path)], ["replay", str(path), "--json"], ["replay", str(path), "--recorded"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert key not in out and "ghp_" + MASK + key[-4:] in out, argv


def test_workbook_tables_mask_keys_and_leave_numbers_alone() -> None:
    key = FAKE_KEYS["aws access key id"][0]
    table = text_table([("note", f"found {key} in .env"), ("tokens", 1_234_567)], ["what", "value"])
    assert key not in table and f"found AKIA{MASK}{key[-4:]} in .env" in table and "1,234,567" in table


def test_widget_previews_mask_keys() -> None:
    from ctxlab.messages import tool_result, user
    from ctxlab.lab.ch02_session import item_label
    from ctxlab.widgets.ch05_pruning import PruneWidget

    key = FAKE_KEYS["github classic"][0]
    assert key not in item_label(user(f"token {key}", "m1"), width=200)
    log = "\n".join([f"export GITHUB_TOKEN={key}"] + [f"line {i}" for i in range(400)] + [f"done {key}"])
    w = PruneWidget(tool_result("c1", log, "t1", name="bash"), head=50, tail=50)
    shown = w.pruned_view.value + w.paged_view.value + w.line_view.value
    assert key not in shown and f"ghp_{MASK}" in shown
    assert key in w.state.view.head  # what is counted and kept is the text as recorded


# ---- nothing committed holds a key ------------------------------------------------------------

def committed_files() -> list[Path]:
    """Every chapter notebook (outputs included) and every file under data/."""
    files = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted(p for p in (REPO / "data").rglob("*") if p.is_file())
    return [p for p in files if "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts]


def test_no_committed_notebook_or_data_file_holds_a_key() -> None:
    files = committed_files()
    assert any(p.suffix == ".ipynb" for p in files) and any(p.parent.name == "data" for p in files)
    found = []
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")  # figures too: a key is ASCII
        for offset, family, shown in find_keys(text):
            line = text.count("\n", 0, offset) + 1
            column = offset - (text.rfind("\n", 0, offset) + 1) + 1
            found.append(f"{path.relative_to(REPO).as_posix()}:{line}:{column}: {family} key {shown}")
    assert not found, "key-shaped strings in committed files (remove them, or use a fake built at run time):\n" + \
        "\n".join(found)


def test_the_scan_would_name_file_and_position(tmp_path: Path) -> None:
    key = FAKE_KEYS["slack bot"][0]
    text = json.dumps({"cells": [{"outputs": [{"text": ["ok\n", f"token={key}\n"]}]}]}, indent=1)
    (offset, family, shown), = find_keys(text)
    line = text.count("\n", 0, offset) + 1
    assert (family, shown) == ("slack", "xoxb-" + MASK + key[-4:])
    assert text.splitlines()[line - 1].strip().startswith('"token=xoxb-')
