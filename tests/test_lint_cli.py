"""`msmigrate lint` / `rule` / `rules`: exit codes, formats, selection, noqa, config, fixes, cache."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest
from click.testing import CliRunner

from msmigrate.cli import cli
from msmigrate.lint import LintConfig, lint_source

BAD = textwrap.dedent("""\
    import mindspore as ms
    from mindspore import nn

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.1)

        def construct(self, x):
            for k in range(2):
                x = x + k
            else:
                x = x * 2
            try:
                y = x + 1
            except ValueError:
                y = x
            return self.drop(y) * float(x.sum().asnumpy())
    """)
CLEAN = textwrap.dedent("""\
    import mindspore as ms

    @ms.jit
    def f(x):
        if x.sum() > 0:
            return x * float(x.sum())
        return x.item() + len(x.shape)
    """)


def run(args, cwd):
    import os

    runner = CliRunner()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(cli, ["lint", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


PORTED = LintConfig(ported=True)


@pytest.fixture
def project(tmp_path):
    # bad.py stands for code ported from torch by hand (the migration traps, MSG7xx, apply)
    (tmp_path / "pyproject.toml").write_text('[tool.msmigrate.lint]\nported = ["bad.py"]\n')
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "plain.py").write_text("print('no graph code here')\n")
    return tmp_path


def test_exit_codes_and_text_format(project):
    r = run(["--no-cache", "clean.py", "plain.py"], project)
    assert r.exit_code == 0, r.output
    assert "All checks passed!" in r.output
    r = run(["--no-cache", "bad.py"], project)
    assert r.exit_code == 1
    lines = [ln for ln in r.output.splitlines() if ln.startswith("bad.py:")]
    assert "bad.py:7:21: MSG701 [*] nn.Dropout(0.1) is keep_prob=0.1" in lines[0]
    assert [ln.split()[1] for ln in lines] == ["MSG701", "MSG111", "MSG101", "MSG401"]
    assert "Found 4 findings" in r.output
    (project / "broken.py").write_text("def construct(:\n")
    r = run(["--no-cache", "broken.py", "clean.py"], project)
    assert r.exit_code == 2 and "broken.py:1:" in r.output and "syntax error" in r.output
    r = run(["--no-cache", "missing.py"], project)
    assert r.exit_code == 2
    r = run(["--no-cache", "--exit-zero", "bad.py"], project)
    assert r.exit_code == 0


def test_select_ignore_and_noqa(project):
    r = run(["--no-cache", "--select", "MSG1", "bad.py"], project)
    assert {ln.split()[1] for ln in r.output.splitlines() if ln.startswith("bad.py")} == {"MSG101", "MSG111"}
    r = run(["--no-cache", "--ignore", "MSG1,MSG701", "bad.py"], project)
    assert {ln.split()[1] for ln in r.output.splitlines() if ln.startswith("bad.py")} == {"MSG401"}
    r = run(["--no-cache", "--select", "MSG9"], project)
    assert r.exit_code == 2
    code = BAD.replace("nn.Dropout(0.1)", "nn.Dropout(0.1)  # noqa: MSG701").replace(
        "try:", "try:  # noqa")
    found = {d.code for d in lint_source(code, "x.py", PORTED)}
    assert found == {"MSG111", "MSG401"}
    assert {d.code for d in lint_source(BAD.replace("(0.1)", "(0.1)  # noqa: MSG1"), "x.py", PORTED)} >= {"MSG701"}


def test_info_rules_are_opt_in():
    assert not lint_source(CLEAN, "c.py")
    found = {d.code for d in lint_source(CLEAN, "c.py", LintConfig(extend_select=("MSG6",)))}
    assert found == {"MSG602"}


def test_pyproject_config(project):
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.msmigrate.lint]
        ignore = ["MSG401"]
        [tool.msmigrate.lint.per-file-ignores]
        "bad.py" = ["MSG7"]
        """))
    r = run(["--no-cache", "bad.py"], project)
    assert {ln.split()[1] for ln in r.output.splitlines() if ln.startswith("bad.py")} == {"MSG101", "MSG111"}
    (project / "pyproject.toml").write_text("[tool.msmigrate.lint]\nselcet = ['MSG1']\n")
    r = run(["--no-cache", "bad.py"], project)
    assert r.exit_code == 2 and "unknown" in r.output


def test_strict_mode_from_config(tmp_path):
    code = textwrap.dedent("""\
        import mindspore as ms

        @ms.jit
        def f(x):
            print(f"sum = {x.sum()}")
            return x
        """)
    assert not lint_source(code, "s.py")
    assert [d.code for d in lint_source(code, "s.py", LintConfig(strict=True))] == ["MSG206"]
    strict_fn = code.replace("@ms.jit", "@ms.jit(fullgraph=True)")
    assert [d.code for d in lint_source(strict_fn, "s.py")] == ["MSG206"]
    (tmp_path / "s.py").write_text(code)
    (tmp_path / "pyproject.toml").write_text("[tool.msmigrate.lint]\nstrict = true\n")
    r = run(["--no-cache", "s.py"], tmp_path)
    assert "MSG206" in r.output and r.exit_code == 1
    r = run(["--no-cache", "--no-strict", "s.py"], tmp_path)
    assert r.exit_code == 0


def test_json_sarif_github(project):
    r = run(["--no-cache", "--format", "json", "bad.py"], project)
    data = json.loads(r.stdout)
    assert [d["code"] for d in data["diagnostics"]] == ["MSG701", "MSG111", "MSG101", "MSG401"]
    assert data["diagnostics"][1]["fix"]["applicability"] == "safe"
    r = run(["--no-cache", "--format", "sarif", "bad.py"], project)
    sarif = json.loads(r.stdout)
    run0 = sarif["runs"][0]
    assert sarif["version"] == "2.1.0"
    assert {x["id"] for x in run0["tool"]["driver"]["rules"]} == {"MSG701", "MSG111", "MSG101", "MSG401"}
    assert run0["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    assert run0["results"][2]["level"] == "error"
    r = run(["--no-cache", "--format", "github", "bad.py"], project)
    assert r.stdout.splitlines()[0].startswith("::error title=msmigrate (MSG701),file=bad.py,line=7,col=21")


def test_fix_diff_and_unsafe(project):
    r = run(["--no-cache", "--diff", "bad.py"], project)
    assert r.exit_code == 1
    assert "-        else:" in r.stdout and "+        x = x * 2" in r.stdout
    assert "float(x.sum())" in r.stdout and "p=0.1" not in r.stdout
    assert (project / "bad.py").read_text() == BAD
    r = run(["--no-cache", "--fix", "bad.py"], project)
    fixed = (project / "bad.py").read_text()
    assert "else:" not in fixed and "asnumpy" not in fixed and "nn.Dropout(0.1)" in fixed
    compile(fixed, "bad.py", "exec")
    assert r.exit_code == 1  # try and Dropout remain
    r = run(["--no-cache", "--fix", "--unsafe-fixes", "bad.py"], project)
    assert "nn.Dropout(p=0.1)" in (project / "bad.py").read_text()
    r = run(["--no-cache", "--statistics", "bad.py"], project)
    assert "MSG101" in r.output and "try-in-graph" in r.output


def test_cache_and_jobs(project):
    for i in range(6):
        (project / f"m{i}.py").write_text(BAD)
    r1 = run(["-j", "2", "."], project)
    assert (project / ".msmigrate_cache" / "lint.json").is_file()
    t = time.perf_counter()
    r2 = run(["."], project)
    warm = time.perf_counter() - t
    assert r1.output == r2.output and r1.exit_code == r2.exit_code == 1
    assert warm < 5
    # a changed file is re-linted, not served from the cache
    (project / "m0.py").write_text(CLEAN)
    r3 = run(["."], project)
    assert "m0.py:" not in r3.output and "m1.py:" in r3.output


def test_rule_and_rules_commands():
    runner = CliRunner()
    r = runner.invoke(cli, ["rule", "MSG301"])
    assert r.exit_code == 0
    for section in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"):
        assert f"## {section}" in r.output
    assert runner.invoke(cli, ["rule", "loop-else"]).output.startswith("MSG111 loop-else")
    assert runner.invoke(cli, ["rule", "MSG000"]).exit_code == 2
    r = runner.invoke(cli, ["rules"])
    assert "MSG101" in r.output and "MSG801" in r.output
    data = json.loads(runner.invoke(cli, ["rules", "--format", "json"]).output)
    assert {d["code"] for d in data} >= {"MSG101", "MSG201", "MSG301", "MSG401", "MSG501", "MSG601", "MSG701"}


def test_lint_path_imports_no_framework(tmp_path):
    (tmp_path / "m.py").write_text(BAD)
    code = ("import sys; from msmigrate.cli import cli; "
            "sys.argv=['msmigrate','lint','--no-cache',sys.argv[1]]\n"
            "try:\n    cli()\nexcept SystemExit:\n    pass\n"
            "assert 'torch' not in sys.modules and 'mindspore' not in sys.modules, 'framework imported'\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.py")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "MSG101" in proc.stdout


def test_cross_file_analysis(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(textwrap.dedent("""\
        from mindspore import nn

        def scale(x):
            try:
                return x * 2
            except ValueError:
                return x

        def unused(x):
            del x

        class Base(nn.Cell):
            pass
        """))
    (pkg / "model.py").write_text(textwrap.dedent("""\
        from .helpers import scale, Base

        class Net(Base):
            def construct(self, x):
                for k in range(2):
                    x = x + k
                else:
                    x = x * 2
                return scale(x)
        """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import mindspore as ms
        import pkg.helpers

        @ms.jit
        def step(x):
            return pkg.helpers.scale(x)
        """))
    # alone, neither file shows the problem: Net's base and scale's caller live elsewhere
    assert not lint_source((pkg / "helpers.py").read_text(), "helpers.py")
    assert not lint_source((pkg / "model.py").read_text(), "model.py")
    r = run(["--no-cache", "pkg"], tmp_path)
    found = sorted(ln.split()[0:2] for ln in r.output.splitlines() if ln.startswith("pkg"))
    assert found == [["pkg/helpers.py:4:5:", "MSG101"], ["pkg/model.py:5:9:", "MSG111"]], r.output
    r = run(["--no-cache", "pkg/helpers.py", "train.py"], tmp_path)
    assert "pkg/helpers.py:4:5: MSG101" in r.output and "MSG104" not in r.output
    # cached runs give the same answer, and a change in the caller invalidates the callee's entry
    assert run(["pkg"], tmp_path).output == run(["pkg"], tmp_path).output
    (pkg / "model.py").write_text("from .helpers import Base\n\nclass Net(Base):\n    def construct(self, x):\n"
                                  "        return x\n")
    assert "MSG101" not in run(["pkg"], tmp_path).output


def test_cross_file_re_exports(tmp_path):
    """Names imported from a package resolve through its `__init__.py` re-exports (relative,
    absolute, star with `__all__`, chains, cycles) to the file that defines them."""
    files = {
        "mypkg/__init__.py": "from .models import *\nfrom .sub import double\nfrom .a import ping\n",
        "mypkg/models.py": textwrap.dedent("""\
            from mindspore import nn

            __all__ = ["Net"]


            class Net(nn.Cell):
                def construct(self, x):
                    return x * 2


            def hidden(x):
                del x
            """),
        "mypkg/sub/__init__.py": "from mypkg.sub.impl import double\n",
        "mypkg/sub/impl.py": textwrap.dedent("""\
            from mindspore import ops


            def double(x):
                try:
                    return x * 2
                except ValueError:
                    return x
            """),
        # a re-export cycle: resolving `ping` must terminate (and find nothing)
        "mypkg/a.py": "import mindspore\nfrom .b import ping\n",
        "mypkg/b.py": "import mindspore\nfrom .a import ping\n",
        "train.py": textwrap.dedent("""\
            import numpy as np
            import mindspore as ms
            import mypkg
            from mypkg import Net, hidden, ping


            class Big(Net):
                def construct(self, x):
                    for k in range(2):
                        x = x + k
                    else:
                        x = x * 2
                    return hidden(ping(x))


            @ms.jit
            def step(x):
                return mypkg.double(x)


            net = Net()
            x = ms.Tensor(np.ones(8, np.float32))
            for n in range(1, 5):
                net(x[:n])
            """),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    def findings(*args):
        r = run(["--no-cache", *args, "train.py", "mypkg"], tmp_path)
        return sorted(" ".join(ln.split()[0:2]) for ln in r.output.splitlines() if ln[:1] in "tm")

    # Big is a Cell through mypkg/__init__ -> models (star, in __all__); step's callee is found
    # through two re-exporting __init__ files; `net` is an instance of the re-exported Cell
    expected = sorted(["mypkg/sub/impl.py:5:5: MSG101", "train.py:9:9: MSG111", "train.py:24:9: MSG504"])
    assert findings() == expected
    assert findings("-j", "2") == expected
    # `hidden` is not in models.__all__, so the star import does not export it; without __all__ it does
    (tmp_path / "mypkg/models.py").write_text(files["mypkg/models.py"].replace('__all__ = ["Net"]\n', ""))
    assert findings() == sorted(["mypkg/models.py:11:5: MSG104", *expected])


NESTED_ELSE = textwrap.dedent("""\
    import mindspore as ms


    @ms.jit
    def f(x):
        for i in range(2):
            x = x + i
        else:
            for j in range(2):
                x = x + j
            else:
                x = x * 2
        return x
    """)


def test_fix_loop_applies_fixes_exposed_by_other_fixes(tmp_path):
    """The outer loop-else fix covers the inner one, so one round can apply only the outer;
    the re-lint finds the (dedented) inner loop-else and the next round fixes it."""
    from msmigrate.lint.runner import apply_fixes

    once, applied = apply_fixes(NESTED_ELSE, lint_source(NESTED_ELSE, "n.py"), unsafe=False)
    assert len(applied) == 1 and [d.code for d in lint_source(once, "n.py")] == ["MSG111"]
    (tmp_path / "n.py").write_text(NESTED_ELSE)
    r = run(["--no-cache", "--diff", "n.py"], tmp_path)
    assert "+    x = x * 2\n" in r.stdout and "-        else:\n" in r.stdout and "Would fix 2 findings" in r.output
    assert (tmp_path / "n.py").read_text() == NESTED_ELSE
    r = run(["--no-cache", "--fix", "n.py"], tmp_path)
    fixed = (tmp_path / "n.py").read_text()
    assert r.exit_code == 0 and "Fixed 2 findings" in r.output and "else" not in fixed
    assert fixed.splitlines()[-4:] == ["    for j in range(2):", "        x = x + j", "    x = x * 2", "    return x"]
    compile(fixed, "n.py", "exec")


def _fake_rule(monkeypatch, make_fix):
    """Replace the linter with one reporting a single MSG999 finding whose fix is `make_fix(text)`."""
    import msmigrate.lint.runner as runner
    from msmigrate.diagnostics import Diagnostic

    def fake_lint(text, path="<string>", config=None, external=None):
        compile(text, path, "exec")  # raises SyntaxError as the real linter does
        return [Diagnostic(path, 1, 1, "MSG999", "fake", fixable=True, fix=(make_fix(text),), fix_safe=True)]
    monkeypatch.setattr(runner, "lint_source", fake_lint)
    return runner


def test_fix_loop_bound_names_the_rule_that_keeps_reapplying(monkeypatch, tmp_path):
    runner = _fake_rule(monkeypatch, lambda text: (0, 0, "x = 1\n"))  # inserts a line, forever
    out = runner.fix_until_stable("pass\n", runner.lint_source("pass\n"), "f.py", LintConfig())
    assert out.rounds == runner.MAX_FIX_ROUNDS == 10 and out.unstable == ("MSG999",)
    assert out.text.count("x = 1\n") == 10 and out.fixed == 10
    (tmp_path / "f.py").write_text("import mindspore\n")
    r = run(["--no-cache", "--fix", "f.py"], tmp_path)
    assert "warning: f.py: fixes kept reapplying after 10 rounds: MSG999" in r.output
    # a fix that changes nothing would reapply forever too: stopped at once
    runner = _fake_rule(monkeypatch, lambda text: (0, 4, text[:4]))
    out = runner.fix_until_stable("pass\n", runner.lint_source("pass\n"), "f.py", LintConfig())
    assert out.rounds == 0 and out.unstable == ("MSG999",) and out.text == "pass\n"


def test_fix_loop_rejects_a_fix_that_breaks_syntax(monkeypatch):
    runner = _fake_rule(monkeypatch, lambda text: (0, 0, "def (:\n"))
    out = runner.fix_until_stable("pass\n", runner.lint_source("pass\n"), "f.py", LintConfig())
    assert out.text == "pass\n" and out.broken == ("MSG999",) and out.fixed == 0


NATIVE_CELL = textwrap.dedent("""\
    import mindspore as ms
    from mindspore import nn

    class Block(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.act = nn.GELU()

        def construct(self, x):
            for k in range(2):
                x = x + k
            else:
                x = x * 2
            return self.act(self.conv(x))
    """)


def _codes_of(code, path="m.py", config=None):
    return sorted({d.code for d in lint_source(code, path, config)})


def test_migration_traps_only_in_ported_code():
    # native MindSpore code: pad_mode='same' and the tanh GELU are deliberate; MSG1xx still reported
    assert _codes_of(NATIVE_CELL) == ["MSG111"]
    assert _codes_of(NATIVE_CELL, config=LintConfig(select=("ALL",))) == ["MSG111"]
    # signs of a port: a torch import next to the MindSpore code, msmigrate's notes and names
    for sign in ("import torch\n", "from torchvision import transforms\n", "    import torch.nn as tnn\n"[4:],
                 "# msmigrate: MSC101 torch.nn.Embedding: padding_idx= ...\n",
                 "def msmigrate_train_step_0(x):\n    return x\n"):
        assert _codes_of(sign + NATIVE_CELL) == ["MSG111", "MSG702", "MSG704"], sign
    # not signs: a package merely named like torch, or torch in a comment or string
    for text in ("import torch_npu\n", "# same as torch.nn.Conv2d\n", "DOC = 'import torch'\n"):
        assert _codes_of(text + NATIVE_CELL) == ["MSG111"], text
    # settings override the detection both ways; selecting the band or a code runs them anyway
    assert _codes_of(NATIVE_CELL, config=LintConfig(ported=True)) == ["MSG111", "MSG702", "MSG704"]
    assert _codes_of("import torch\n" + NATIVE_CELL, config=LintConfig(ported=False)) == ["MSG111"]
    assert _codes_of(NATIVE_CELL, config=LintConfig(extend_select=("MSG7",))) == ["MSG111", "MSG702", "MSG704"]
    assert _codes_of(NATIVE_CELL, config=LintConfig(select=("MSG704",))) == ["MSG704"]
    assert _codes_of(NATIVE_CELL, "legacy/block.py", LintConfig(ported=("legacy/*",))) == \
        ["MSG111", "MSG702", "MSG704"]
    assert _codes_of(NATIVE_CELL, "models/block.py", LintConfig(ported=("legacy/*",))) == ["MSG111"]


def test_ported_setting_and_flags(tmp_path):
    (tmp_path / "native.py").write_text(NATIVE_CELL)
    (tmp_path / "ported.py").write_text("import torch\n" + NATIVE_CELL)

    def codes(*args):
        r = run(["--no-cache", *args, "native.py", "ported.py"], tmp_path)
        return sorted({(ln.split(":")[0], ln.split()[1]) for ln in r.output.splitlines() if ".py:" in ln})

    both = [("native.py", "MSG111"), ("ported.py", "MSG111"), ("ported.py", "MSG702"),
            ("ported.py", "MSG704")]
    assert codes() == both
    assert codes("--native") == [("native.py", "MSG111"), ("ported.py", "MSG111")]
    assert ("native.py", "MSG702") in codes("--ported")
    (tmp_path / "pyproject.toml").write_text("[tool.msmigrate.lint]\nported = true\n")
    assert ("native.py", "MSG704") in codes()
    assert codes("--native") == [("native.py", "MSG111"), ("ported.py", "MSG111")]
    (tmp_path / "pyproject.toml").write_text("[tool.msmigrate.lint]\nported = [\"nat*.py\"]\n")
    assert ("native.py", "MSG704") in codes() and ("ported.py", "MSG704") in codes()
    (tmp_path / "pyproject.toml").write_text("[tool.msmigrate.lint]\nported = false\n")
    assert codes() == [("native.py", "MSG111"), ("ported.py", "MSG111")]
    (tmp_path / "pyproject.toml").write_text("[tool.msmigrate.lint]\nported = 3\n")
    r = run(["--no-cache", "native.py"], tmp_path)
    assert r.exit_code == 2 and "ported must be" in r.output
    # the result cache is keyed by the setting: switching it re-lints
    (tmp_path / "pyproject.toml").write_text("[tool.msmigrate.lint]\n")
    run(["native.py"], tmp_path)
    r = run(["--ported", "native.py"], tmp_path)
    assert "MSG702" in r.output
    r = runner_rules = CliRunner().invoke(cli, ["rules"])
    assert "(ported code)" in [ln for ln in r.output.splitlines() if ln.startswith("MSG702")][0]
    assert "(ported code)" not in [ln for ln in runner_rules.output.splitlines() if ln.startswith("MSG101")][0]


def test_cross_file_callee_arguments(tmp_path):
    """A function called from compiled code in another file: only the arguments its callers
    pass as tensors are tensors (a config int compared with a shape is a constant), also in the
    functions it calls in its own file."""
    (tmp_path / "helpers.py").write_text(textwrap.dedent("""\
        import mindspore as ms

        def check(x, n):
            m = n + 1
            assert m == x.shape[0] + 1
            return inner(x, n)

        def inner(x, n):
            k = n * 2
            assert k == x.shape[0] * 2
            return x * n
        """))
    (tmp_path / "model.py").write_text(textwrap.dedent("""\
        import mindspore as ms
        from mindspore import nn
        from helpers import check

        N = 3

        class Net(nn.Cell):
            def construct(self, x):
                return check(x, N)
        """))
    r = run(["--no-cache", "helpers.py", "model.py"], tmp_path)
    assert r.exit_code == 0, r.output
    (tmp_path / "model.py").write_text((tmp_path / "model.py").read_text().replace("check(x, N)", "check(x, x.sum())"))
    r = run(["--no-cache", "helpers.py", "model.py"], tmp_path)
    assert [ln.split()[:2] for ln in r.output.splitlines() if ln.startswith("helpers.py")] == \
        [["helpers.py:5:5:", "MSG301"], ["helpers.py:10:5:", "MSG301"]], r.output
