"""`msmigrate convert` as a user runs it: exit codes, bad input, never touching inputs unless
asked, atomic writes, reports."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

TORCH_SRC = "import torch.nn as nn\nlayer = nn.Linear(2, 3)\n"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "msmigrate.cli", "convert", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(TORCH_SRC)
    (tmp_path / "src" / "plain.py").write_text("x = 1\n")
    return tmp_path


def test_diff_by_default_and_inputs_untouched(tree):
    proc = run(tree / "src")
    assert proc.returncode == 0, proc.stderr
    assert "+layer = nn.Dense(2, 3)" in proc.stdout
    assert (tree / "src" / "model.py").read_text() == TORCH_SRC
    assert "1 file converted, 0 places need attention" in proc.stderr


def test_output_dir_mirrors_tree(tree):
    proc = run(tree / "src", "-o", tree / "out")
    assert proc.returncode == 0, proc.stderr
    assert "nn.Dense(2, 3)" in (tree / "out" / "model.py").read_text()
    assert (tree / "out" / "plain.py").read_text() == "x = 1\n"
    assert (tree / "src" / "model.py").read_text() == TORCH_SRC


def test_output_dash_prints_one_file(tree):
    proc = run(tree / "src" / "model.py", "-o", "-", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    assert "layer = nn.Dense(2, 3)" in proc.stdout and not proc.stdout.startswith("---")
    assert not (tree / "-").exists()
    proc = run(tree / "src", "-o", "-", cwd=tree)
    assert proc.returncode == 2 and "one input file" in proc.stderr
    assert not (tree / "-").exists()


def test_write_in_place_is_atomic_and_keeps_mode(tree):
    target = tree / "src" / "model.py"
    os.chmod(target, 0o640)
    proc = run(target, "-w")
    assert proc.returncode == 0, proc.stderr
    assert "nn.Dense" in target.read_text()
    assert (target.stat().st_mode & 0o777) == 0o640
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".msmigrate.tmp")]


def test_check_exit_codes(tree):
    assert run(tree / "src" / "model.py", "--check").returncode == 1
    assert run(tree / "src" / "plain.py", "--check").returncode == 0


def test_bad_input_reports_position_and_continues(tree):
    bad = tree / "src" / "broken.py"
    bad.write_text("import torch\nx = (\n")
    latin = tree / "src" / "latin.py"
    latin.write_bytes(b"import torch\ns = '\xe9'\n")
    binary = tree / "src" / "blob.py"
    binary.write_bytes(b"\x00\x01torch")
    proc = run(tree / "src", "-o", tree / "out", tree / "missing.py")
    assert proc.returncode == 2
    assert f"{bad}:" in proc.stderr and "syntax error" in proc.stderr
    assert f"{latin}:2:6: error: not valid utf-8" in proc.stderr
    assert f"{binary}:1:1: error: binary file" in proc.stderr
    assert f"{tree / 'missing.py'}:1:1: error: no such file" in proc.stderr
    assert "nn.Dense" in (tree / "out" / "model.py").read_text()   # the good file still converted
    assert not (tree / "out" / "broken.py").exists()


def test_output_equal_to_input_dir_is_refused(tree):
    proc = run(tree / "src", "-o", tree / "src")
    assert proc.returncode == 2
    assert (tree / "src" / "model.py").read_text() == TORCH_SRC


def test_report_json(tree):
    src = tree / "src" / "model.py"
    src.write_text(TORCH_SRC + "c = nn.Conv2d(1, 1, 3, padding_mode='circular')\n")
    proc = run(src, "--report", tree / "r.json")
    assert proc.returncode == 0
    report = json.loads((tree / "r.json").read_text())
    (entry,) = report["files"]
    assert {c["api"] for c in entry["conversions"]} >= {"torch.nn.Linear", "torch.nn.Conv2d"}
    (diag,) = entry["diagnostics"]
    assert (diag["code"], diag["line"], diag["col"]) == ("MSC105", 3, 5)


def test_bom_file_keeps_bom(tree):
    src = tree / "src" / "bom.py"
    src.write_bytes(b"\xef\xbb\xbf" + TORCH_SRC.encode())
    assert run(src, "-w").returncode == 0
    data = src.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"nn.Dense" in data


def test_converted_code_is_linted(tree):
    src = tree / "src" / "net.py"
    src.write_text("import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
                   "    def forward(self, x):\n        return torch.frobnicate(x)\n")
    proc = run(src, "-o", tree / "out", "--report", tree / "r.json")
    assert proc.returncode == 0, proc.stderr
    out_file = tree / "out" / "net.py"
    assert "MSC104" in proc.stderr                      # the converter's own diagnostic
    assert f"{out_file}:" in proc.stderr and "MSG801" in proc.stderr and "(in the converted code)" in proc.stderr
    assert "lint finding" in proc.stderr.splitlines()[-1]
    report = json.loads((tree / "r.json").read_text())
    assert [f["code"] for f in report["files"][0]["lint"]] == ["MSG801"]
    assert "MSG801" not in run(src, "-o", tree / "out2", "--no-lint").stderr


def test_a_file_still_using_torch_stops_at_its_top(tmp_path):
    """Never mix frameworks: a program with torch uses left (a pruning function, a distribution)
    runs no line past its docstring; the stop names what is left, at the converted file's lines."""
    src = tmp_path / "train.py"
    src.write_text('"""A program."""\nfrom __future__ import annotations\nimport torch\n'
                   "from torch.nn.utils.prune import l1_unstructured\n\n"
                   "print('started')\nlayer = l1_unstructured(torch.nn.Linear(2, 2), 'weight', 0.5)\n"
                   "d = torch.distributions.Wishart(torch.tensor(3.0), torch.eye(3))\n")
    out = tmp_path / "out"
    r = run(src, "-o", out, "--no-cache", "--strict", cwd=tmp_path)
    assert r.returncode == 1, r.stderr                      # --strict: a file still needs torch
    assert r.stderr.splitlines()[-2].startswith("1 file still needs torch (")
    code = (out / "train.py").read_text()
    lines = code.splitlines()
    assert lines[:2] == ['"""A program."""', "from __future__ import annotations"]
    assert "import torch.nn.utils.prune" in lines         # the submodule the name came from
    for api in ("torch.nn.utils.prune.l1_unstructured", "torch.distributions.Wishart"):
        entry = next(ln for ln in lines if ln.startswith("#   line") and f": {api}: " in ln)
        at = int(entry.split()[2].rstrip(":"))
        assert api in lines[at - 1]                         # the line it names, in the converted file
    ran = subprocess.run([sys.executable, str(out / "train.py")], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ""})
    assert ran.returncode == 1 and "started" not in ran.stdout
    assert ran.stderr.rstrip().endswith("msmigrate: this converted file needs work by hand first; see the comment above")
    again = run(out / "train.py", "--no-cache", cwd=tmp_path)
    assert again.stdout == ""                                # converting the output again changes nothing
