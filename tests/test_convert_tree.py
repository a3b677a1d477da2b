"""`msmigrate convert DIR -o OUT`: whole projects. Names defined in one file and used in another
convert as in one file; -j gives the same result in the same order; progress only on a
terminal; --copy-other; the summary and its JSON report."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from msmigrate.cli import cli
from msmigrate.project import Project, summarize

from conftest import FIXTURES

PROJECT = FIXTURES / "projects" / "classifier"


def convert(*args):
    result = CliRunner().invoke(cli, ["convert", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---- facts across files ------------------------------------------------------------------

def facts(files: dict[str, str], module: str) -> dict[str, str]:
    summaries = {name: summarize(text, name.endswith("__init__") or text.startswith("#pkg"))
                 for name, text in files.items()}
    project = Project({n.removesuffix(".__init__"): s for n, s in summaries.items()})
    name = module.removesuffix(".__init__")
    return project.names_for(name)


def test_import_styles_resolve_to_the_torch_api_their_call_creates():
    files = {
        "models": "import torch.nn as nn\nclass Net(nn.Module): pass\nclass Deep(Net): pass\n",
        "pkg.__init__": "from .layers import Block\nfrom .factories import *\n",
        "pkg.layers": "from torch import nn\nfrom models import Net\nclass Block(Net): pass\n",
        "pkg.factories": ("import torch\nfrom . import layers\n__all__ = ['make_opt']\n"
                          "def make_opt(m):\n    return torch.optim.Adam(m.parameters())\n"
                          "def make_block():\n    b = layers.Block()\n    return b\n"
                          "def maybe(x):\n    if x:\n        return torch.nn.MSELoss()\n    return None\n"),
        "train": ("import models\nimport models as mm\nimport pkg.layers\nfrom pkg import Block, make_opt\n"
                  "from pkg.factories import make_block as mk\nimport torch\n"
                  "def build():\n    return models.Deep()\n"
                  "def loss():\n    return torch.nn.CrossEntropyLoss()\n"),
        "a": "from b import f\ndef g():\n    return f()\n",     # an import cycle: no fact, no hang
        "b": "from a import g\ndef f():\n    return g()\n",
    }
    got = facts(files, "train")
    assert got["models.Net"] == got["mm.Deep"] == got["Block"] == "torch.nn.Module"
    assert got["pkg.layers.Block"] == "torch.nn.Module"
    assert got["make_opt"] == "torch.optim.Adam"
    assert got["mk"] == "torch.nn.Module"               # returns a project class, through a local
    assert got["build"] == "torch.nn.Module"            # the file's own factory
    assert got["loss"] == "torch.nn.CrossEntropyLoss"
    assert "pkg.factories.maybe" not in got             # returns None on one path: not a factory
    assert facts(files, "a") == {} and facts(files, "b") == {}


def test_src_layout_and_script_sibling_imports():
    files = {"src.app.models": "import torch.nn as nn\nclass Net(nn.Module): pass\n",
             "src.app.train": "from models import Net\nfrom app.models import Net as N2\n"}
    assert facts(files, "src.app.train") == {"Net": "torch.nn.Module", "N2": "torch.nn.Module"}


# ---- the sample project ----------------------------------------------------------------------

def _one_file_version() -> str:
    """The sample project pasted into one file, local imports removed."""
    order = ["models.py", "nets/blocks.py", "nets/residual.py", "helpers.py", "train.py"]
    lines = []
    for name in order:
        for line in (PROJECT / name).read_text().splitlines():
            if re.match(r"^(from (models|helpers|nets|\.\w*) import|import (models|helpers)$)", line):
                continue
            lines.append(line.replace("helpers.", "").replace("models.", ""))
    return "\n".join(lines) + "\n"


def test_sample_project_converts_as_one_file(tmp_path):
    result = convert(PROJECT, "-o", tmp_path / "out", "-j", "1", "--no-lint")
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "out"
    residual = (out / "nets" / "residual.py").read_text()
    # a subclass of a model defined in another file is a Cell too
    assert "class ScaledMLP(MLP):" in residual and "def construct(self, x):" in residual
    assert "def forward" not in residual
    train = (out / "train.py").read_text()
    assert "model.set_train(True)" in train and "baseline.set_train(True)" in train
    assert "grad_fn = ms.value_and_grad(forward_fn, None, solver.parameters)" in train
    assert "criterion(logits, yb.astype(ms.int32))" in train
    assert "MSC102" not in result.stderr
    (tmp_path / "single").mkdir()
    (tmp_path / "single" / "single.py").write_text(_one_file_version())
    assert convert(tmp_path / "single" / "single.py", "-o", tmp_path / "single_out", "-j", "1").exit_code == 0
    single = (tmp_path / "single_out" / "single.py").read_text()
    loop = train[train.index("losses = []"):]
    assert loop in single, "the training loop converts differently in one file"
    assert "summary: 6 files (5 converted, 1 unchanged, 0 failed)" in result.stderr
    again = convert(out, "--check", "-j", "1")      # converting the output again changes nothing
    assert again.exit_code == 0, again.stderr


@pytest.mark.framework
def test_converted_project_trains_like_torch(tmp_path):
    """The converted project runs under MindSpore (imports between its files included) and
    matches the torch project step by step (msmigrate parity, initial weights copied)."""
    out = tmp_path / "out"
    assert convert(PROJECT, "-o", out, "-j", "1", "--no-lint").exit_code == 0
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "msmigrate.cli", "parity", str(PROJECT / "train.py"),
                           "--against", str(out / "train.py"), "--steps", "3", "--json"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["passed"] and len(report["steps"]) == 3


def test_parity_converts_the_whole_project(tmp_path):
    """`msmigrate parity train.py` without --against converts the script's directory like
    `convert DIR -o OUT` (the program imports converted models), not the script alone."""
    from msmigrate.parity.check import _convert

    out = tmp_path / "cli"
    assert convert(PROJECT, "-o", out, "-j", "1", "--no-lint").exit_code == 0
    converted = _convert(PROJECT / "train.py", tmp_path / "parity")
    for f in out.rglob("*.py"):
        assert (converted.parent / f.relative_to(out)).read_text() == f.read_text(), f


# ---- -j, progress, copy-other, summary --------------------------------------------------------

@pytest.fixture
def big_tree(tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(PROJECT, root)
    for k in range(6):
        (root / f"extra_{k}.py").write_text(
            f"import torch\nimport torch.nn as nn\nfrom models import MLP\n\nnet = MLP({k + 1}, 2)\n"
            f"layer = nn.Conv2d(1, 1, 3, padding_mode='circular')\n\n\nclass Head(nn.Module):\n"
            f"    def forward(self, x):\n        return torch.frobnicate(x)\n")
    (root / "broken.py").write_text("import torch\nx = (\n")
    (root / "data.csv").write_text("a,b\n1,2\n")
    (root / "nets" / "config.yaml").write_text("depth: 2\n")
    for skipped in (".git", "__pycache__"):
        (root / skipped).mkdir()
        (root / skipped / "junk.txt").write_text("x")
    return root


def test_jobs_give_identical_results_in_file_order(big_tree, tmp_path, monkeypatch):
    monkeypatch.chdir(big_tree.parent)
    runs = {}
    for jobs in ("1", "2"):
        diff_mode = convert("proj", "-j", jobs)
        written = convert("proj", "-o", f"out{jobs}", "-j", jobs, "--no-lint")
        runs[jobs] = (diff_mode.exit_code, diff_mode.stdout, diff_mode.stderr, written.exit_code,
                      tree_bytes(Path(f"out{jobs}")))
    assert runs["1"] == runs["2"]
    code, stdout, stderr, _, _ = runs["1"]
    assert code == 2                       # broken.py
    paths = [m.group(1) for m in re.finditer(r"^(\S+?):\d+:\d+: ", stderr, re.M)]
    files_in_order = [p for i, p in enumerate(paths) if p not in paths[:i]]
    assert files_in_order == sorted(files_in_order, key=lambda p: (Path(p).parent.as_posix(), p))
    assert stdout.index("a/proj/extra_0.py") < stdout.index("a/proj/extra_5.py") < stdout.index("a/proj/train.py")


def _run_with_stderr(args, tty: bool):
    cmd = [sys.executable, "-m", "msmigrate.cli", "convert", *map(str, args)]
    if not tty:
        proc = subprocess.run(cmd, capture_output=True, timeout=120)
        return proc.returncode, proc.stderr.decode()
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:      # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=120), b"".join(chunks).decode()


def test_progress_bar_only_on_a_terminal(big_tree, tmp_path):
    args = [big_tree, "-o", tmp_path / "out", "-j", "2", "-q", "--no-lint"]
    code, tty_err = _run_with_stderr(args, tty=True)
    assert code == 2
    assert re.search(r"\r\x1b\[K\[#+ *\] \d+/13 files", tty_err)
    assert "13/13 files" in tty_err
    code, piped_err = _run_with_stderr(args, tty=False)
    assert code == 2
    assert "\r" not in piped_err and "files\n" not in piped_err.split("summary:")[0]
    assert piped_err.splitlines()[-1] == tty_err.replace("\r\n", "\n").splitlines()[-1]


def test_copy_other(big_tree, tmp_path):
    (big_tree / "checkpoints" / "best").mkdir(parents=True)   # empty: where the program saves
    before = tree_bytes(big_tree)
    out = tmp_path / "out"
    result = convert(big_tree, "-o", out, "--copy-other", "-j", "1", "--no-lint")
    assert result.exit_code == 2   # broken.py
    assert (out / "checkpoints" / "best").is_dir()
    got = tree_bytes(out)
    assert got["data.csv"] == b"a,b\n1,2\n" and got["nets/config.yaml"] == b"depth: 2\n"
    assert not any(k.startswith((".git/", "__pycache__/")) for k in got)
    assert "broken.py" not in got
    assert "nn.Dense" in got["models.py"].decode()
    assert tree_bytes(big_tree) == before
    convert(big_tree, "-o", tmp_path / "plain", "-j", "1", "--no-lint")   # without --copy-other
    assert "data.csv" not in tree_bytes(tmp_path / "plain")
    assert not (tmp_path / "plain" / "checkpoints").exists()


def test_summary_and_report(big_tree, tmp_path):
    report_path = tmp_path / "report.json"
    result = convert(big_tree, "-o", tmp_path / "out", "--report", report_path, "-j", "1")
    assert result.exit_code == 2
    summary = json.loads(report_path.read_text())["summary"]
    assert summary["files"] == {"total": 13, "converted": 11, "unchanged": 1, "failed": 1}
    expected_lines = sum(p.read_text().count("\n") for p in big_tree.rglob("*.py"))
    assert summary["lines"] == expected_lines
    # the files left calling torch.frobnicate stop at their top instead of mixing frameworks
    assert summary["diagnostics"] == {"MSC104": 6, "MSC105": 6, "MSC108": 6}
    assert len(summary["need_torch"]) == 6
    assert summary["conversions"]["auto"] > 20
    assert summary["lint"] == {"MSG801": 6}     # torch left in construct: flagged in the converted code
    top = summary["by_hand"][0]
    assert top == {"api": "torch.frobnicate", "count": 6, "first": f"{big_tree / 'extra_0.py'}:11:16"}
    assert [e["path"] for e in summary["errors"]] == [str(big_tree / "broken.py")]
    text = result.stderr
    assert "\n6 files still need torch (" in text   # the summary's first line
    assert text.index("6 files still need torch") < text.index("summary: 13 files")
    assert "summary: 13 files (11 converted, 1 unchanged, 1 failed)" in text
    assert re.search(r"^ +6  torch\.frobnicate +first at .*extra_0\.py:11:16$", text, re.M)
    assert "diagnostics: MSC104 6, MSC105 6" in text


def test_single_file_sees_its_neighbours_and_needs_no_torch_import(tmp_path):
    """`convert run.py`: factories in factory.py beside it (read, not converted) make the
    training loop of a file that never imports torch convert."""
    (tmp_path / "factory.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\ndef make(n):\n    return nn.Linear(n, 2)\n\n\n"
        "def make_opt(m):\n    return torch.optim.Adam(m.parameters())\n\n\n"
        "def make_loss():\n    return nn.CrossEntropyLoss()\n")
    run_py = tmp_path / "run.py"
    run_py.write_text("from factory import make, make_opt, make_loss\n\n\ndef fit(batches):\n"
                      "    net = make(4)\n    upd = make_opt(net)\n    crit = make_loss()\n"
                      "    for x, y in batches:\n        upd.zero_grad()\n        loss = crit(net(x), y)\n"
                      "        loss.backward()\n        upd.step()\n    return net\n")
    result = convert(run_py, "-o", tmp_path / "out", "-j", "1")
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run.py"]
    code = (tmp_path / "out" / "run.py").read_text()
    assert "net.set_train(True)" in code
    assert "grad_fn = ms.value_and_grad(forward_fn, None, upd.parameters)" in code
    assert "loss = crit(net(x), y.astype(ms.int32))" in code and ".backward()" not in code


def test_the_tree_root_as_a_package():
    files = {"__init__": "#pkg\nfrom .models import Net\n",
             "models": "import torch.nn as nn\nclass Net(nn.Module): pass\n",
             "train": "from . import models\nfrom . import Net as N\n"}
    summaries = {n: summarize(t, n == "__init__") for n, t in files.items()}
    project = Project({("" if n == "__init__" else n): s for n, s in summaries.items()})
    assert project.names_for("train") == {"models.Net": "torch.nn.Module", "N": "torch.nn.Module"}


def test_dataset_defined_in_another_file(tmp_path):
    """DataLoader(Triples(...)) reads the sample layout from the class in data.py, as it does
    when the class is in the same file (no 'assumed 2 columns' guess)."""
    (tmp_path / "data.py").write_text(
        "import torch\nfrom torch.utils.data import Dataset\n\n\n@staticmethod\n"   # a decorator
        "def _unused():\n    pass\n\n\nclass Triples(Dataset):\n    def __len__(self):\n        return 4\n\n"
        "    def __getitem__(self, i):\n        return torch.ones(2), torch.zeros(2), i\n")
    (tmp_path / "train.py").write_text("from torch.utils.data import DataLoader\n\nfrom data import Triples\n\n"
                                       "loader = DataLoader(Triples(), batch_size=2)\n")
    result = convert(tmp_path, "-o", tmp_path / "out", "-j", "1", "--no-lint")
    assert result.exit_code == 0, result.stderr
    assert "MSC101" not in result.stderr
    assert "column_names=['column_0', 'column_1', 'column_2']" in (tmp_path / "out" / "train.py").read_text()


# ---- the result cache ---------------------------------------------------------------------

def test_warm_cache_gives_the_same_results_without_converting(tmp_path, monkeypatch):
    """A re-run on an unchanged tree takes every result from .msmigrate_cache/convert (the
    converter is not called), with identical outputs, messages and lint findings naming the
    new output directory; editing a model file re-converts the file importing that class."""
    import msmigrate.engine

    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    monkeypatch.chdir(tmp_path)
    first = convert(project, "-o", tmp_path / "a", "-j", "1")
    assert (tmp_path / ".msmigrate_cache" / "convert").is_dir()

    converted = []
    real = msmigrate.engine.convert_source

    def counting(source, path="<string>", **kw):
        converted.append(Path(path).name)
        return real(source, path, **kw)

    monkeypatch.setattr(msmigrate.engine, "convert_source", counting)
    second = convert(project, "-o", tmp_path / "b", "-j", "1")
    assert converted == []
    assert second.exit_code == first.exit_code == 0
    assert tree_bytes(tmp_path / "b") == tree_bytes(tmp_path / "a")
    assert second.output.replace(str(tmp_path / "b"), "OUT") == first.output.replace(str(tmp_path / "a"), "OUT")

    # a comment after the class train.py uses: only that file is converted again
    residual = project / "nets" / "residual.py"
    residual.write_text(residual.read_text() + "\n# edited\n")
    assert convert(project, "-o", tmp_path / "c", "-j", "1").exit_code == 0
    assert converted == ["residual.py"]
    # the class itself changes: train.py (which builds its model from it) is converted again
    converted.clear()
    residual.write_text(residual.read_text().replace("width=32", "width=16"))
    assert convert(project, "-o", tmp_path / "d", "-j", "1").exit_code == 0
    assert {"residual.py", "train.py"} <= set(converted)   # (and nets/__init__.py, which re-exports it)
    assert not {"models.py", "helpers.py", "blocks.py"} & set(converted)


def test_no_cache_writes_no_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert convert(PROJECT, "-o", tmp_path / "a", "-j", "1", "--no-cache").exit_code == 0
    assert not (tmp_path / ".msmigrate_cache").exists()


def test_a_file_sees_the_siblings_it_imports_through_each_other(tmp_path, monkeypatch):
    """`convert train.py` reads the files beside it that it imports, and what those import
    (models.Net derives from layers.Base, an nn.Module), not every file in the directory."""
    import msmigrate.convert_run as convert_run

    (tmp_path / "layers.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    (tmp_path / "models.py").write_text("from layers import Base\n\n\nclass Net(Base):\n    pass\n")
    (tmp_path / "unrelated.py").write_text("import torch\n")
    (tmp_path / "train.py").write_text("import torch\nfrom models import Net\n\nmodel = Net()\n")
    read = []
    real = convert_run.summarize_job
    monkeypatch.setattr(convert_run, "summarize_job", lambda job: read.append(job.path.name) or real(job))
    monkeypatch.chdir(tmp_path)
    result = convert(tmp_path / "train.py", "-j", "1", "--no-cache")
    assert "+model.set_train(True)" in result.output
    assert sorted(read) == ["layers.py", "models.py", "train.py"]
