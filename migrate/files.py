"""Reading user files safely and writing them atomically."""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from msmigrate.diagnostics import InputError

BOM = "\ufeff"
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", "node_modules", "build", "dist", ".eggs"}


def read_source(path: Path) -> str:
    """The file's text. Raises InputError with the position of the problem for unreadable,
    binary or non-UTF-8 files (PEP 263 cookies other than utf-8 are honoured)."""
    return read_text(path)[0]


def read_text(path: Path) -> tuple[str, str]:
    """(text, encoding) of a source file, the encoding to write it back with; InputError as
    read_source."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc} ({_read_hint(exc)})") from None
    if b"\x00" in data:
        raise InputError(str(path), "binary file (contains NUL bytes), not Python source "
                                    "(rename it if it is not Python, or restore its text)")
    encoding = _declared_encoding(data) or "utf-8"
    try:
        return data.decode(encoding), encoding
    except (UnicodeDecodeError, LookupError) as exc:
        if isinstance(exc, LookupError):
            raise InputError(str(path), f"unknown encoding {encoding!r} declared "
                                        f"(declare a known encoding or save the file as UTF-8)") from None
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(str(path), f"not valid {encoding}: byte 0x{data[exc.start]:02x} "
                                    f"(save the file as UTF-8 or declare its encoding)", line, col) from None


def _read_hint(exc: OSError) -> str:
    import errno

    return {errno.EACCES: "check the file's permissions", errno.EPERM: "check the file's permissions",
            errno.ELOOP: "a symbolic link loop: fix or remove the link",
            errno.ENOENT: "a broken symbolic link: fix or remove it",
            errno.EISDIR: "a directory named like a source file: rename it"}.get(exc.errno, "check the file")


def _declared_encoding(data: bytes) -> str | None:
    import re

    for raw in data.split(b"\n", 2)[:2]:
        m = re.match(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", raw)
        if m:
            return m.group(1).decode("ascii")
    return None


@contextlib.contextmanager
def _replacing(path: Path):
    """A temporary file beside `path` that is renamed over it when the block succeeds and
    removed otherwise, so an interrupted run never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".msmigrate.tmp", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write `text` through a temporary file renamed over the target. Keeps the original
    file's mode."""
    path = Path(path)
    with _replacing(path) as tmp:
        with open(tmp, "w", encoding=encoding, newline="") as fh:
            fh.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)


def copy_atomic(src: Path, dest: Path) -> None:
    """Copy a file (data and metadata) through a temporary file renamed over `dest`."""
    with _replacing(Path(dest)) as tmp:
        shutil.copy2(src, tmp)


def iter_python_files(paths: list[Path]) -> list[tuple[Path, Path]]:
    """(file, root) pairs: every .py file under the given paths; root is the directory the
    file's relative output path is computed from. Symlink loops are not followed."""
    return [(f, root) for f, root, _ in walk_tree(paths, (".py",))]


def walk_tree(paths: list[Path], suffixes: tuple[str, ...] = (".py",), exclude: tuple[Path, ...] = (),
              others: bool = False) -> list[tuple[Path, Path, bool]]:
    """(file, root, is_source) triples in a stable order: every file under the given paths whose
    name ends with one of `suffixes` (and, with `others`, every other file and every empty
    directory too, is_source False).
    Files passed directly are always sources. SKIP_DIRS, hidden directories and the `exclude`
    directories (an output directory inside the input tree) are not entered; directory
    symlinks are not followed, so symlink loops end the walk."""
    excluded = {os.path.realpath(e) for e in exclude}
    out: list[tuple[Path, Path, bool]] = []
    for p in paths:
        if not p.is_dir():
            out.append((p, p.parent, True))
            continue
        seen = set()
        for dirpath, dirnames, filenames in os.walk(p, followlinks=False):
            real = os.path.realpath(dirpath)
            if real in seen or real in excluded:
                dirnames[:] = []
                continue
            seen.add(real)
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")
                                 and os.path.realpath(os.path.join(dirpath, d)) not in excluded)
            for name in sorted(filenames):
                is_source = name.endswith(suffixes)
                if is_source or (others and not name.endswith(".msmigrate.tmp")):
                    out.append((Path(dirpath) / name, p, is_source))
            if others and not filenames and not dirnames and dirpath != str(p):
                out.append((Path(dirpath), p, False))   # an empty directory (where a program saves)
    return out


def code_fingerprint(packages, suffixes: tuple[str, ...] = (".py",), recursive: bool = False) -> str:
    """A digest of the msmigrate version and the name, size and mtime of the packages' files:
    it changes whenever the code (or the tables) behind a cached result change."""
    from msmigrate import __version__

    h = hashlib.sha256(__version__.encode())
    for pkg in packages:
        for d in pkg.__path__:
            for f in sorted(Path(d).rglob("*") if recursive else Path(d).glob("*")):
                if f.suffix in suffixes:
                    st = f.stat()
                    h.update(f"{f.relative_to(d)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:20]
