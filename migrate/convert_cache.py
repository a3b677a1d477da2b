"""Content-hash cache for `msmigrate convert`: re-running on an unchanged tree skips the work.

An entry is keyed by sha256 of everything its result depends on: the tool's fingerprint (version
and every module and table of the converter and rules), the job's options and cross-file facts,
the code of the project classes it imports, and the file's text. Entries are small JSON files in
`.msmigrate_cache/convert/` (one per key, written atomically by whichever worker computed it),
so workers never contend for one file and a warm run reads only what it needs. Nothing is ever
invalidated in place: a changed input is a new key. Delete the directory to reclaim space.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from msmigrate.files import code_fingerprint, write_atomic

CACHE_DIR = ".msmigrate_cache"


def fingerprint() -> str:
    """Changes whenever the converter, its rules or their tables change (editable installs too)."""
    import msmigrate
    import msmigrate.rules

    return code_fingerprint((msmigrate, msmigrate.rules), (".py", ".toml"), recursive=True)


def key(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p if isinstance(p, bytes) else json.dumps(p, sort_keys=True, default=str).encode()
        h.update(len(data).to_bytes(8, "little"))   # length-prefixed: parts cannot run together
        h.update(data)
    return h.hexdigest()


def get(directory: str, k: str) -> dict | None:
    try:
        return json.loads((Path(directory) / k[:2] / f"{k}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def put(directory: str, k: str, value: dict) -> None:
    try:
        write_atomic(Path(directory) / k[:2] / f"{k}.json", json.dumps(value, separators=(",", ":")))
    except OSError:
        pass   # a read-only tree or a full disk only costs the next run its speed
