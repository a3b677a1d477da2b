"""The pre-commit hooks work in a scratch git repository, installed the way users get them:
pre-commit clones this repository at HEAD and pip-installs it into its own environment."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pre_commit")  # the `test` extra installs it

ROOT = Path(__file__).resolve().parent.parent

BAD = textwrap.dedent("""\
    import mindspore as ms

    @ms.jit
    def f(x):
        for k in range(2):
            x = x + k
        else:
            x = x * 2
        return x
    """)
CLEAN = textwrap.dedent("""\
    import mindspore as ms

    @ms.jit
    def f(x):
        return x * float(x.sum())
    """)


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.slow
def test_pre_commit_hooks_in_scratch_repo(tmp_path):
    head = git("rev-parse", "HEAD", cwd=ROOT)
    hooks_repo = tmp_path / "msmigrate"
    git("clone", "-q", str(ROOT), str(hooks_repo), cwd=tmp_path)
    git("checkout", "-q", head, cwd=hooks_repo)
    project = tmp_path / "project"
    project.mkdir()
    git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(textwrap.dedent(f"""\
        repos:
        -   repo: {hooks_repo}
            rev: {head}
            hooks:
            -   id: msmigrate-lint
            -   id: msmigrate-lint-fix
                stages: [manual]
        """))
    (project / "bad.py").write_text(BAD)
    (project / "clean.py").write_text(CLEAN)
    git("add", ".", cwd=project)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "SKIP": ""}

    def pre_commit(*args):
        return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=project, env=env,
                              capture_output=True, text=True, timeout=600)

    r = pre_commit("run", "msmigrate-lint", "--files", "clean.py")
    assert r.returncode == 0, r.stdout + r.stderr
    r = pre_commit("run", "msmigrate-lint", "--all-files")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "bad.py:5:5: MSG111 [*]" in r.stdout
    r = pre_commit("run", "msmigrate-lint-fix", "--hook-stage", "manual", "--files", "bad.py")
    assert r.returncode == 1  # files were modified
    fixed = (project / "bad.py").read_text()
    assert "else:" not in fixed and "        x = x + k\n    x = x * 2\n" in fixed
    git("add", ".", cwd=project)
    r = pre_commit("run", "msmigrate-lint", "--all-files")
    assert r.returncode == 0, r.stdout + r.stderr
