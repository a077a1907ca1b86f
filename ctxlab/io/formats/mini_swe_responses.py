"""mini-swe-agent trajectories of a Responses-API run: their ``messages`` hold input items and whole
response objects (``{"object": "response", "output": [...], "usage": ...}``) instead of chat messages.

Unlike the chat form (read by :mod:`.openai_chat`), each response object's ``output`` items are read
with the Responses item reader and its usage kept per call. Source: SWE-agent/mini-swe-agent @ a83fcae8
(``models/litellm_response_model.py``), read 2026-12-01. Plumbing for chapter 02.
"""

from __future__ import annotations

from typing import Any

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Message, SourceRef, TextPart
from ctxlab.io.formats import bad, skip_note
from ctxlab.io.formats.chat_messages import iso_time
from ctxlab.io.formats.responses_items import ItemReader, response_stop_reason, usage


def mini_swe_conversation(conv_id: str, raw: list[Any], *, file: str, line_of: Any, strict: bool, notes: list[str],
                          model: str | None) -> Conversation:
    """mini-swe-agent ``messages`` of a Responses-API run (input items and response objects) → a Conversation."""
    reader = ItemReader(conv_id, file, model=model)
    exits = 0
    for index, obj in enumerate(raw):
        line, at = line_of(obj), f"messages[{index}]"
        extra = obj.get("extra") if isinstance(obj, dict) and isinstance(obj.get("extra"), dict) else {}
        stamp = iso_time(extra.get("timestamp"))
        try:
            if isinstance(obj, dict) and obj.get("object") == "response":
                if not isinstance(obj.get("output"), list):
                    raise bad(file, line, "a response object needs an 'output' list", field=f"{at}.output")
                reader.model = obj["model"] if isinstance(obj.get("model"), str) else model
                for k, item in enumerate(obj["output"]):
                    reader.add(item, index=index, line=line_of(item) or line, at=f"{at}.output[{k}]", timestamp=stamp)
                recorded = usage(obj["usage"], file=file, line=line, at=f"{at}.usage") if obj.get("usage") else None
                calls = any(isinstance(i, dict) and str(i.get("type", "")).endswith("_call") for i in obj["output"])
                if recorded is not None:
                    reader.set_usage(recorded, response_id=obj.get("id"), stop_reason=response_stop_reason(obj, calls))
                reader.close()
            elif isinstance(obj, dict) and obj.get("role") == "exit":
                reader.close()
                exits += 1
                reader.items.append(Message(role="user", parts=(TextPart(str(obj.get("content") or "")),),
                                            id=f"{conv_id}:{index}", origin="meta", timestamp=stamp,
                                            source=SourceRef(file, line or 0)))
            else:
                item = {k: v for k, v in obj.items() if k != "extra"} if isinstance(obj, dict) else obj
                reader.add(item, index=index, line=line, at=at, timestamp=stamp)
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
    extra_notes = [f"{exits} exit marker(s) kept as meta messages, never sent"] if exits else []
    return reader.conversation(extra_notes=list(notes) + extra_notes)
