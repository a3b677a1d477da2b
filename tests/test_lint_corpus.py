"""Lint real code without crashing: the installed mindspore package's own sources and the
converter's outputs. MindSpore's model layers are compiled by MindSpore every day, so any
default-rule finding there is a false positive (the reviewed ones are listed below)."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from msmigrate.lint import LintConfig, lint_source
from msmigrate.lint.analysis import FileModel
from msmigrate.lint.runner import iter_files

ROOT = Path(__file__).resolve().parent.parent


def _mindspore_dir() -> Path | None:
    spec = importlib.util.find_spec("mindspore")  # locates the package without importing it
    return Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None


MS = _mindspore_dir()
needs_ms = pytest.mark.skipif(MS is None, reason="mindspore is not installed")


def _lint_all(files, config=None):
    findings, graph_functions = [], 0
    for f in files:
        text = f.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        graph_functions += len(FileModel(tree).graph)
        findings += lint_source(text, str(f.relative_to(f.parents[len(f.parents) - 1])), config)
    return findings, graph_functions


@needs_ms
def test_mindspore_model_code_has_no_false_positives():
    files = [f for sub in ("nn/layer", "nn/loss", "nn/optim", "nn/wrap") for f in iter_files([MS / sub])]
    findings, graph_functions = _lint_all(files)
    assert len(files) > 30 and graph_functions > 300, (len(files), graph_functions)
    assert findings == [], "\n".join(d.to_text() for d in findings)


@needs_ms
def test_mindspore_tree_sample_no_crash():
    files = iter_files([MS])
    sample = files[::4]  # every 4th file of the whole installed package, all rules on
    findings, graph_functions = _lint_all(sample, LintConfig(select=("ALL",)))
    assert len(sample) > 300 and graph_functions > 100
    assert all(d.code.startswith("MSG") and d.line >= 1 for d in findings)


def test_converter_outputs_no_crash():
    files = sorted((ROOT / "fixtures" / "convert").glob("*.out.py")) + sorted((ROOT / "fixtures" / "programs").rglob("*.py"))
    assert files
    for f in files:
        for d in lint_source(f.read_text(encoding="utf-8"), str(f), LintConfig(select=("ALL",))):
            assert d.code.startswith("MSG")


def test_planted_migration_bugs_are_found():
    """The parity fixtures' hand-written MindSpore programs with planted bugs are caught."""
    expected = {"train_cnn_bug_bn_momentum_ms.py": "MSG703", "train_mlp_bug_gelu_ms.py": "MSG704",
                "train_mlp_bug_keep_prob_ms.py": "MSG701", "train_cnn_bug_adam_eps_ms.py": "MSG706"}
    base = ROOT / "fixtures" / "programs" / "handwritten"
    ported = LintConfig(ported=True)  # ports by hand of the torch programs
    for name, code in expected.items():
        codes = {d.code for d in lint_source((base / name).read_text(), name, ported)}
        assert code in codes, (name, codes)
        # read as native MindSpore code, the same files get no migration-trap finding
        assert not [d for d in lint_source((base / name).read_text(), name, LintConfig(ported=False))
                    if d.code.startswith("MSG7")], name
    # the correct hand-written programs get no default-rule finding
    for f in sorted(base.glob("*_ms.py")):
        if "_bug_" not in f.name:
            assert lint_source(f.read_text(), f.name, ported) == [], f.name
