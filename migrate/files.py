"""Reading user files safely and writing them atomically."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from msmigrate.diagnostics import InputError

BOM = "\ufeff"
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", "node_modules", "build", "dist", ".eggs"}


def read_source(path: Path) -> str:
    """The file's text. Raises InputError with the position of the problem for unreadable,
    binary or non-UTF-8 files (PEP 263 cookies other than utf-8 are honoured)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise InputError(str(path), "binary file (contains NUL bytes), not Python source")
    encoding = _declared_encoding(data) or "utf-8"
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        if isinstance(exc, LookupError):
            raise InputError(str(path), f"unknown encoding {encoding!r} declared") from None
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(str(path), f"not valid {encoding}: byte 0x{data[exc.start]:02x} "
                                    f"(save the file as UTF-8 or declare its encoding)", line, col) from None


def _declared_encoding(data: bytes) -> str | None:
    import re

    for raw in data.split(b"\n", 2)[:2]:
        m = re.match(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", raw)
        if m:
            return m.group(1).decode("ascii")
    return None


def write_atomic(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write through a temporary file in the same directory and rename it over the target,
    so an interrupted run never leaves half a file. Keeps the original file's mode."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".msmigrate.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as fh:
            fh.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def iter_python_files(paths: list[Path]) -> list[tuple[Path, Path]]:
    """(file, root) pairs: every .py file under the given paths; root is the directory the
    file's relative output path is computed from. Symlink loops are not followed."""
    out: list[tuple[Path, Path]] = []
    for p in paths:
        if p.is_dir():
            seen = set()
            for dirpath, dirnames, filenames in os.walk(p, followlinks=False):
                real = os.path.realpath(dirpath)
                if real in seen:
                    dirnames[:] = []
                    continue
                seen.add(real)
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
                for name in sorted(filenames):
                    if name.endswith(".py"):
                        out.append((Path(dirpath) / name, p))
        else:
            out.append((p, p.parent))
    return out
