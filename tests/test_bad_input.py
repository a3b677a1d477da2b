"""`msmigrate convert` on bad input: every case gets `path:line:col: error: what (what to do)`,
exit 2, the other files are still converted, and no input file changes (bytes and mtime)
without --write. Runs in-process through click's CliRunner (-j 1: no worker processes)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from msmigrate.cli import cli

TORCH_SRC = "import torch.nn as nn\nlayer = nn.Linear(2, 3)\n"
ERROR = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<what>.+) \((?P<todo>[^()]+)\)$")


def convert(*args):
    result = CliRunner().invoke(cli, ["convert", "-j", "1", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def snapshot(root: Path) -> dict:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p)] = ("link", os.readlink(p))
        elif p.is_file():
            st = p.stat()
            with open(p, "rb") as fh:   # not Path.read_bytes: one test makes that fail
                out[str(p)] = (fh.read(), st.st_mtime_ns, st.st_mode)
    return out


def errors_of(stderr: str) -> dict[str, re.Match]:
    found = {}
    for line in stderr.splitlines():
        m = ERROR.match(line)
        if m:
            found[m.group("path")] = m
    return found


@pytest.fixture
def src(tmp_path):
    d = tmp_path / "src"
    d.mkdir()
    (d / "good.py").write_text(TORCH_SRC)
    return d


def check_bad(src: Path, out: Path, bad: Path, what: str, line: int = 1, col: int | None = None,
              extra_args=()):
    """Convert src into out: the bad file gets a located error, the good one is converted."""
    before = snapshot(src)
    result = convert(src, "-o", out, *extra_args)
    assert result.exit_code == 2, result.output + result.stderr
    errs = errors_of(result.stderr)
    assert str(bad) in errs, result.stderr
    m = errs[str(bad)]
    assert what in m.group("what"), m.group(0)
    assert int(m.group("line")) == line
    if col is not None:
        assert int(m.group("col")) == col
    assert "nn.Dense(2, 3)" in (out / "good.py").read_text()
    assert snapshot(src) == before
    return result


def test_syntax_error(src, tmp_path):
    bad = src / "broken.py"
    bad.write_text("import torch\nx = (1,\ny = 2\n")
    result = check_bad(src, tmp_path / "out", bad, "syntax error: '(' was never closed", line=2, col=5)
    assert "fix the syntax error" in errors_of(result.stderr)[str(bad)].group("todo")
    assert not (tmp_path / "out" / "broken.py").exists()


def test_python2_file(src, tmp_path):
    bad = src / "py2.py"
    bad.write_text('import torch\nprint "loss", 1\n')
    result = check_bad(src, tmp_path / "out", bad, "Missing parentheses in call to 'print'", line=2)
    assert "Python 2" in errors_of(result.stderr)[str(bad)].group("todo")


def test_non_utf8(src, tmp_path):
    bad = src / "latin.py"
    bad.write_bytes(b"import torch\ns = '\xe9'\n")
    result = check_bad(src, tmp_path / "out", bad, "not valid utf-8", line=2, col=6)
    assert "save the file as UTF-8" in result.stderr


def test_declared_latin1_is_converted_and_written_back_in_latin1(src, tmp_path):
    f = src / "latin.py"
    f.write_bytes(b"# -*- coding: latin-1 -*-\nimport torch.nn as nn\ns = '\xe9'\nlayer = nn.Linear(2, 3)\n")
    result = convert(src, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    data = (tmp_path / "out" / "latin.py").read_bytes()
    assert b"s = '\xe9'" in data and b"nn.Dense(2, 3)" in data


def test_bom_file_converted_and_keeps_bom(src, tmp_path):
    f = src / "bom.py"
    f.write_bytes(b"\xef\xbb\xbf" + TORCH_SRC.encode())
    before = snapshot(src)
    result = convert(src, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    data = (tmp_path / "out" / "bom.py").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"nn.Dense(2, 3)" in data
    assert snapshot(src) == before


def test_empty_file_is_valid_and_copied(src, tmp_path):
    (src / "empty.py").write_bytes(b"")
    (src / "pkg").mkdir()
    (src / "pkg" / "__init__.py").write_bytes(b"")
    before = snapshot(src)
    result = convert(src, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "out" / "empty.py").read_bytes() == b""
    assert (tmp_path / "out" / "pkg" / "__init__.py").read_bytes() == b""
    assert snapshot(src) == before


def test_binary_file_named_py(src, tmp_path):
    bad = src / "blob.py"
    bad.write_bytes(bytes(range(256)) * 4)
    check_bad(src, tmp_path / "out", bad, "binary file")


def test_huge_file(src, tmp_path):
    bad = src / "huge.py"
    row = "    [" + ", ".join(["0.125"] * 64) + "],\n"
    bad.write_text("import torch\nWEIGHTS = torch.tensor([\n" + row * (10_000_000 // len(row)) + "])\n")
    assert bad.stat().st_size > 9_900_000
    big_plain = src / "table.py"        # large but no torch: left as is, not an error
    big_plain.write_text("DATA = [\n" + row * (3_000_000 // len(row)) + "]\n")
    result = check_bad(src, tmp_path / "out", bad, "file too large")
    assert "--max-size" in result.stderr
    assert (tmp_path / "out" / "table.py").read_bytes() == big_plain.read_bytes()


def test_symlink_loops(src, tmp_path):
    (src / "loop").symlink_to(src, target_is_directory=True)     # a directory loop
    (src / "a.py").symlink_to(src / "b.py")                       # a file loop
    (src / "b.py").symlink_to(src / "a.py")
    result = check_bad(src, tmp_path / "out", src / "a.py", "cannot read")
    errs = errors_of(result.stderr)
    assert "symbolic link loop" in errs[str(src / "a.py")].group("todo")
    assert str(src / "b.py") in errs
    assert not (tmp_path / "out" / "loop").exists()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root reads files whatever their mode: a chmod 000 file is readable")
def test_unreadable_file(src, tmp_path):
    bad = src / "secret.py"
    bad.write_text(TORCH_SRC)
    bad.chmod(0)
    try:
        result = check_bad(src, tmp_path / "out", bad, "cannot read")
        assert "permissions" in errors_of(result.stderr)[str(bad)].group("todo")
    finally:
        bad.chmod(0o644)


def test_unreadable_file_reported(src, tmp_path, monkeypatch):
    """The same path as chmod 000, for runs as root: the read itself fails with EACCES."""
    bad = src / "secret.py"
    bad.write_text(TORCH_SRC)
    real = Path.read_bytes

    def read_bytes(self):
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = check_bad(src, tmp_path / "out", bad, "cannot read: Permission denied")
    assert "check the file's permissions" in result.stderr


def test_output_inside_input_tree_is_left_out_of_the_walk(src, tmp_path):
    (src / "sub").mkdir()
    (src / "sub" / "net.py").write_text(TORCH_SRC)
    out = src / "migrated"
    first = convert(src, "-o", out)
    assert first.exit_code == 0, first.stderr
    before = snapshot(src)
    again = convert(src, "-o", out)            # the previous output is not input now
    assert again.exit_code == 0, again.stderr
    assert "2 files converted" in again.stderr.splitlines()[-1]
    assert not (out / "migrated").exists()
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.py")) == ["good.py", "sub/net.py"]
    after = snapshot(src)
    assert {k: v for k, v in after.items() if "/migrated/" not in k} == \
        {k: v for k, v in before.items() if "/migrated/" not in k}


def test_output_equal_to_input_is_a_usage_error(src):
    before = snapshot(src)
    result = convert(src, "-o", src)
    assert result.exit_code == 2
    assert "is the input directory" in result.stderr
    assert snapshot(src) == before


def test_output_that_would_overwrite_an_input(src, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.py").write_text("y = 1\n")
    before = snapshot(src)
    # src/good.py goes to src/good.py: the input itself
    result = convert(src / "good.py", other, "-o", src)
    assert result.exit_code == 2
    m = errors_of(result.stderr)[str(src / "good.py")]
    assert "would overwrite an input file" in m.group("what") and "--write" in m.group("todo")
    assert {k: v for k, v in snapshot(src).items() if k in before} == before
    assert (src / "x.py").read_text() == "y = 1\n"      # the other input still written


def test_output_is_an_existing_file(src, tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("keep")
    result = convert(src, "-o", target)
    assert result.exit_code == 2 and "is a file" in result.stderr
    assert target.read_text() == "keep"


def test_one_file_to_a_named_file(src, tmp_path):
    """`-o out.py` with one input file writes that file (not a directory named out.py); naming
    the input itself is refused (--write converts in place)."""
    target = tmp_path / "converted.py"
    result = convert(src / "good.py", "-o", target)
    assert result.exit_code == 0, result.stderr
    assert target.is_file() and "nn.Dense" in target.read_text()
    before = snapshot(src)
    result = convert(src / "good.py", "-o", src / "good.py")
    assert result.exit_code == 2 and "is the input file" in result.stderr and "--write" in result.stderr
    assert snapshot(src) == before


def test_missing_path(src, tmp_path):
    before = snapshot(src)
    missing = tmp_path / "nope.py"
    result = convert(src, missing, "-o", tmp_path / "out")
    assert result.exit_code == 2
    m = errors_of(result.stderr)[str(missing)]
    assert "no such file" in m.group("what") and "check the path" in m.group("todo")
    assert "nn.Dense" in (tmp_path / "out" / "good.py").read_text()
    assert snapshot(src) == before


def test_every_bad_input_in_one_tree_diff_mode(src, tmp_path):
    """All of them at once, default diff mode: one error each, the good file's diff printed."""
    (src / "broken.py").write_text("import torch\ndef f(:\n")
    (src / "py2.py").write_text('import torch\nprint "x"\n')
    (src / "latin.py").write_bytes(b"x = '\xff'\n")
    (src / "blob.py").write_bytes(b"\x00\x01\x02")
    (src / "a.py").symlink_to(src / "a.py")
    before = snapshot(src)
    result = convert(src)
    assert result.exit_code == 2
    errs = errors_of(result.stderr)
    assert set(errs) == {str(src / n) for n in ("broken.py", "py2.py", "latin.py", "blob.py", "a.py")}
    assert "+layer = nn.Dense(2, 3)" in result.stdout
    assert "5 errors" in result.stderr.splitlines()[-1]
    assert snapshot(src) == before


def test_copy_other_needs_output(src):
    for args in ([], ["-w"], ["--check"]):
        result = convert(src, "--copy-other", *args)
        assert result.exit_code == 2 and "--copy-other" in result.stderr
    assert (src / "good.py").read_text() == TORCH_SRC


def test_write_atomic_failure_leaves_original_and_no_temp_file(tmp_path, monkeypatch):
    from msmigrate import files

    target = tmp_path / "model.py"
    target.write_text(TORCH_SRC)
    with pytest.raises(UnicodeEncodeError):      # fails while writing the temp file
        files.write_atomic(target, "x = '\u20ac'\n", encoding="latin-1")
    assert target.read_text() == TORCH_SRC

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", boom)   # fails at the rename
    with pytest.raises(OSError):
        files.write_atomic(target, "new\n")
    assert target.read_text() == TORCH_SRC
    assert [p.name for p in tmp_path.iterdir()] == ["model.py"]


def test_write_failure_is_reported_and_others_continue(src, tmp_path, monkeypatch):
    from msmigrate import files

    (src / "second.py").write_text(TORCH_SRC)
    real = files.os.replace

    def replace(a, b):
        if str(b).endswith("good.py"):
            raise OSError(28, "No space left on device")
        return real(a, b)

    monkeypatch.setattr(files.os, "replace", replace)
    before = snapshot(src)
    result = convert(src, "-w")
    assert result.exit_code == 2
    m = errors_of(result.stderr)[str(src / "good.py")]
    assert "No space left" in m.group("what")
    assert (src / "good.py").read_bytes() == before[str(src / "good.py")][0]
    assert "nn.Dense" in (src / "second.py").read_text()
    assert not list(src.glob("*.msmigrate.tmp")) and not list(src.glob(".*.msmigrate.tmp"))
