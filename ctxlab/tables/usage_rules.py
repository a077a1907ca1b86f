"""How a provider's or a gateway's OpenAI-shaped usage splits a prompt: dated rules with their sources.

One function, :func:`uncached_part`, shared by the transcript readers (``io/formats/chat_messages.py``) and the
agent loop (``loop.py``), so a recorded file and a live response are read by one rule:

* OpenAI (openai-python ``src/openai/types/completion_usage.py`` @ e43b422, 2026-08-21; prompt-caching guide,
  developers.openai.com/api/docs/guides/prompt-caching, read 2026-12-02): ``prompt_tokens`` holds the cached
  tokens and, from GPT-5.6 on, the ``cache_write_tokens`` too: "Cache-write pricing is not an additive fee:
  input tokens use the uncached-input, cached-input, or cache-write rate." So uncached = prompt - read - write.
* LiteLLM relaying Anthropic (docs.litellm.ai/docs/completion/prompt_caching, last updated 2026-10-07):
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` beside ``prompt_tokens``. Releases with
  ``prompt_tokens_details.cache_creation_tokens`` (v1.80.11, BerriAI/litellm#11364) put both in the prompt;
  older ones (v1.74.9, BerriAI/litellm#13207) only the read. When read + write exceed the prompt, a LiteLLM
  usage without ``cache_creation_tokens`` is read as leaving the write out.

Simplified on purpose: an old-release LiteLLM usage whose uncached part is at least its write cannot be told
from a new one; it reads ``write`` tokens short. Used in chapters 04 and 08.
"""

from __future__ import annotations


def uncached_part(prompt: int, read: int, write: int, *, write_may_be_outside: bool = False) -> int | None:
    """The uncached tokens of an OpenAI-shaped prompt of ``prompt`` tokens with ``read`` cache-read and ``write``
    cache-write tokens, or None when the parts cannot fit (the caller raises, naming its field).

    Example: ``uncached_part(2600, 2000, 400)`` -> 200 (OpenAI, GPT-5.6 on);
    ``uncached_part(120_357, 120_269, 21_002, write_may_be_outside=True)`` -> 88 (LiteLLM v1.74.9 in
    BerriAI/litellm#13207: the write is outside ``prompt_tokens``); ``uncached_part(10, 9, 9)`` -> None.
    """
    if read + write <= prompt:
        return prompt - read - write
    if write_may_be_outside and read <= prompt:
        return prompt - read
    return None
