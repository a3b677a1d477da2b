"""Run framework code in a fresh subprocess (a failed MindSpore kernel can poison later ops in
the same process, and `@ms.jit` needs code that lives in a .py file).

    result = run_script(code)      # code prints one JSON document as its last stdout line
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ENV = {**os.environ, "GLOG_v": "3", "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}


class ScriptFailed(AssertionError):
    pass


def run_script(code: str, timeout: float = 300, files: dict[str, str] | None = None,
               cwd: str | None = None) -> object:
    """Write `code` (and `files`, name -> text) to a temp dir, run it, return the JSON printed
    on the last line of stdout. Raises ScriptFailed with stderr on a non-zero exit."""
    with tempfile.TemporaryDirectory(prefix="msmigrate-") as tmp:
        for name, text in (files or {}).items():
            Path(tmp, name).write_text(textwrap.dedent(text))
        script = Path(tmp, "main_script.py")
        script.write_text(textwrap.dedent(code))
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd or tmp, env=ENV)
    if proc.returncode != 0:
        raise ScriptFailed(f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n"
                           f"--- stderr\n{proc.stderr[-5000:]}")
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if not lines:
        raise ScriptFailed(f"no output\n--- stderr\n{proc.stderr[-5000:]}")
    return json.loads(lines[-1])
