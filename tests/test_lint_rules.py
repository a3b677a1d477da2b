"""Every rule's VALID/INVALID examples: checked by the linter, and by the real MindSpore compiler.

The compiler check runs all examples in two subprocesses (one per half of the rules, so that
`pytest -n 2` runs them side by side) and compares the observed behaviour with the rule's claim
(see msmigrate.lint.rule.CLAIMS).
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from msmigrate.lint.config import LintConfig
from msmigrate.lint.linter import all_rules, lint_source
from msmigrate.lint.rule import CLAIMS

from isolated import ENV

RULES = all_rules()
# the examples are checked as ported code: the migration traps (MSG7xx) only run there
ALL = LintConfig(select=("ALL",), ported=True)


def _examples(rule, kind):
    return [textwrap.dedent(e).lstrip("\n") for e in getattr(rule, kind)]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_metadata(rule):
    sections = rule.doc_sections()
    for title in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"):
        assert sections.get(title), f"{rule.code}: docstring lacks '## {title}'"
    assert rule.code.startswith("MSG") and len(rule.code) == 6
    assert rule.name and rule.name == rule.name.lower() and " " not in rule.name
    assert rule.severity in ("error", "warning", "info")
    assert rule.claim in CLAIMS, rule.claim
    assert rule.VALID and rule.INVALID
    if rule.code[3] in "12":
        assert rule.severity == "error", "will-not-compile and silently-wrong rules are errors"
    if rule.claim == "differs-from-torch":
        assert len(rule.TORCH_REFERENCE) == len(rule.VALID)
    # migration traps are for code ported from torch; every other band is about MindSpore itself
    assert rule.origin == ("ported" if rule.code[3] == "7" else "any")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_examples_lint(rule):
    for code in _examples(rule, "VALID"):
        found = [d for d in lint_source(code, "valid.py", ALL) if d.code == rule.code]
        assert not found, f"{rule.code} flags a VALID example:\n{code}\n{found}"
    for code in _examples(rule, "INVALID"):
        found = [d for d in lint_source(code, "invalid.py", ALL) if d.code == rule.code]
        assert found, f"{rule.code} misses an INVALID example:\n{code}"


def _modes(rule):
    if rule.claim == "fallback":
        return ["pynative", "graph", "strict"]
    if rule.claim == "differs-from-torch":
        return ["pynative"]
    return ["pynative", "strict" if rule.mode == "strict" else "graph"]


def _run_examples(rules):
    cases, index = [], []
    for rule in rules:
        for kind in ("VALID", "INVALID"):
            for i, code in enumerate(_examples(rule, kind)):
                cases.append({"code": code, "modes": _modes(rule)})
                index.append((rule.code, kind, i))
        for i, code in enumerate(rule.TORCH_REFERENCE):
            cases.append({"torch": textwrap.dedent(code)})
            index.append((rule.code, "TORCH", i))
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp, "cases.json")
        spec.write_text(json.dumps(cases))
        proc = subprocess.run([sys.executable, "-m", "msmigrate.lint.verify", str(spec)],
                              capture_output=True, text=True, timeout=900, env=ENV)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    out = {}
    for key, res in zip(index, results):
        out[key] = res
    return out


def _is_error(v):
    return isinstance(v, dict) and "error" in v


def _close(a, b, tol):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    if _is_error(a) and _is_error(b):
        return True
    return a == b


def check_claim(rule, kind, res, torch_res=None):
    """Returns a problem description, or '' if the observed behaviour matches the claim."""
    pyn = res.get("pynative", {}).get("outputs")
    mode = "strict" if rule.mode == "strict" else "graph"
    got = res.get(mode, {}).get("outputs")
    compiles = res.get(mode, {}).get("compiles")
    claim = rule.claim
    if claim == "differs-from-torch":
        same = _close(pyn, torch_res, getattr(rule, "TOLERANCE", 1e-5))
        if kind == "VALID" and not same:
            return f"VALID differs from torch: {pyn} vs {torch_res}"
        if kind == "INVALID" and same:
            return f"INVALID matches torch: {pyn} vs {torch_res}"
        return ""
    if claim == "fails":
        if kind == "VALID":
            return "" if not any(map(_is_error, pyn + got)) and _close(got, pyn, 1e-5) else f"VALID: {pyn} / {got}"
        return "" if _is_error(pyn[0]) and _is_error(got[0]) else f"INVALID did not fail: {pyn} / {got}"
    if claim == "fallback":
        strict = res["strict"]["outputs"]
        lax = res["graph"]["outputs"]
        if kind == "VALID":
            ok = _close(strict, pyn, 1e-5) and not any(map(_is_error, strict))
            return "" if ok else f"VALID under fullgraph: {strict} vs PyNative {pyn}"
        ok = _close(lax, pyn, 1e-5) and not any(map(_is_error, lax)) and _is_error(strict[0])
        return "" if ok else f"INVALID: lax {lax} strict {strict} PyNative {pyn}"
    if kind == "VALID" or claim == "works":
        problems = []
        if any(map(_is_error, got)) or not _close(got, pyn, 1e-5):
            problems.append(f"compiled {got} != PyNative {pyn}")
        if claim in ("recompile", "works") and compiles != 1:
            problems.append(f"{compiles} compiles, expected 1")
        return "; ".join(problems)
    if claim == "compile-error":
        return "" if _is_error(got[0]) and not _is_error(pyn[0]) else f"expected compile error: {got} / PyNative {pyn}"
    if claim == "wrong-result":
        ok = not any(map(_is_error, got)) and not _close(got, pyn, 1e-5)
        return "" if ok else f"expected silently different results: {got} / PyNative {pyn}"
    if claim == "breaks-after-trigger":
        for i, v in enumerate(pyn):
            if _is_error(v) and _is_error(got[i]):
                later = [j for j in range(i + 1, len(pyn)) if not _is_error(pyn[j])]
                if later and all(_is_error(got[j]) for j in later):
                    return ""
        return f"expected a broken graph after the first raise: {got} / PyNative {pyn}"
    if claim == "recompile":
        ok = _close(got, pyn, 1e-5) and compiles is not None and compiles > 1
        return "" if ok else f"expected recompiles: {compiles} compiles, {got} / {pyn}"
    return f"unknown claim {claim}"


HALVES = [RULES[0::2], RULES[1::2]]


@pytest.mark.framework
@pytest.mark.parametrize("half", [0, 1])
def test_rule_claims_against_compiler(half):
    rules = HALVES[half]
    results = _run_examples(rules)
    problems = []
    for rule in rules:
        for kind in ("VALID", "INVALID"):
            for i, _ in enumerate(rule.VALID if kind == "VALID" else rule.INVALID):
                torch_res = None
                if rule.claim == "differs-from-torch":
                    ref = rule.TORCH_REFERENCE[i if kind == "VALID" else min(i, len(rule.TORCH_REFERENCE) - 1)]
                    torch_res = results[(rule.code, "TORCH", rule.TORCH_REFERENCE.index(ref))]["torch"]["outputs"]
                problem = check_claim(rule, kind, results[(rule.code, kind, i)], torch_res)
                if problem:
                    problems.append(f"{rule.code} {kind}[{i}]: {problem}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("rule", [r for r in RULES if r.fix_safety], ids=lambda r: r.code)
def test_rule_fixes_apply_cleanly(rule):
    from msmigrate.lint.runner import apply_fixes

    fixed_any = False
    for code in _examples(rule, "INVALID"):
        diags = [d for d in lint_source(code, "invalid.py", ALL) if d.code == rule.code]
        assert all(d.fix_safe == (rule.fix_safety == "safe") for d in diags)
        new, applied = apply_fixes(code, diags, unsafe=True)
        if not applied:
            continue
        fixed_any = True
        compile(new, "fixed.py", "exec")
        remaining = [d for d in lint_source(new, "fixed.py", ALL) if d.code == rule.code]
        assert len(remaining) == len(diags) - len(applied), new
    assert fixed_any, f"{rule.code} declares fixes but none applies to its INVALID examples"


MSG504_LOOP = """
import mindspore as ms

{decorator}
def f(x):
    return x * 2

def drive(x, lengths):
{setup}    for i, n in enumerate(lengths):
        {body}
"""


@pytest.mark.parametrize("decorator, setup, body, flagged", [
    ("@ms.jit", "", "f(x[:n])", True),
    ("@ms.jit", "", "f(x[:, n:])", True),
    ("@ms.jit", "", "y = x[:, :n + 1]\n        f(y)", True),
    ("@ms.jit", "", "f(x=x[:n])", True),
    ("@ms.jit", "", "f(x[i:i + 4])", False),         # fixed width
    ("@ms.jit", "", "f(x[n])", False),               # an index, not a slice
    ("@ms.jit", "", "f(x[:4])", False),              # constant bound
    ("@ms.jit", "    m = len(lengths)\n", "f(x[:m])", False),  # bound fixed before the loop
    ("@ms.jit(dynamic=1)", "", "f(x[:n])", False),
    ("@ms.jit", "    os.environ['MS_AUTO_DYNAMIC_SHAPE_ENABLE'] = '1'\n", "f(x[:n])", False),
    ("", "", "f(x[:n])", False),                     # not compiled
])
def test_msg504_scope(decorator, setup, body, flagged):
    code = MSG504_LOOP.format(decorator=decorator, setup=setup, body=body)
    found = [d for d in lint_source(code, "m.py", ALL) if d.code == "MSG504"]
    assert bool(found) == flagged, code


MSG114_FN = """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x, ys, out_inds):
{body}
"""


@pytest.mark.parametrize("body, flagged", [
    # measured in MindSpore 2.10 (see MSG114's docs): empty list grown under a tensor `if`
    ("    out = []\n    if x.sum() > 0:\n        out.append(x)\n    return ops.stack(out)", True),
    ("    out = []\n    if x.sum() > 0:\n        out.append(x)\n    return x * 2", False),    # unused: compiles
    ("    out = []\n    for i in range(3):\n        if x[i] > 0:\n            out.append(x[i])\n"
     "    return tuple(out)", True),
    ("    out = []\n    for i in range(3):\n        if x[i] > 0:\n            out.append(x[i])\n"
     "    s = x * 0\n    for i in range(3):\n        s = s + len(out)\n    return s", True),
    ("    out = []\n    for i in range(3):\n        if x[i] > 0:\n            out.append(x[i])\n"
     "        x = x + len(out)\n    return x", True),                                     # read in the loop
    ("    out = [x]\n    if x.sum() > 0:\n        out.append(x)\n    return out[0] * len(out)", False),
    ("    out = [x]\n    if x.sum() > 0:\n        out.append(x)\n    return ops.addn(out)", True),  # wrong sum
    ("    out = [x]\n    if x.sum() > 0:\n        out.append(x)\n    return sum(out)", True),
    ("    out = [x]\n    if x.sum() > 0:\n        out.append(x)\n    return out", True),
    ("    out = []\n    n = x.sum()\n    while n > 0:\n        out.append(x)\n        n = n - 5\n"
     "    return len(out)", False),                                                      # while: len works
    ("    out = []\n    if x.sum() > 0:\n        out.append(x)\n    else:\n        out.append(-x)\n"
     "    return ops.stack(out)", False),                                                # balanced
    ("    out = []\n    if x.sum() > 0:\n        out.append(x)\n        out.append(x)\n    else:\n"
     "        out.append(-x)\n    return ops.stack(out)", True),                         # unbalanced
    ("    out = []\n    for i in range(3):\n        if i in out_inds:\n            out.append(x)\n"
     "    return ops.stack(out)", False),                                                # tuple argument
    ("    out = [x]\n    if ys:\n        out.append(ys[0])\n    return ops.stack(out)", False),
    ("    out = []\n    if x.sum() > 0:\n        out.append(x)\n    out = [x]\n    return ops.stack(out)", False),
    ("    out = []\n    for i in range(3):\n        if i > 0:\n            out.append(x)\n"
     "    return ops.stack(out)", False),                                                # Python condition
])
def test_msg114_scope(body, flagged):
    code = MSG114_FN.format(body=body)
    found = [d for d in lint_source(code, "m.py", ALL) if d.code == "MSG114"]
    assert bool(found) == flagged, code


MSG503_LOOP = """
import mindspore as ms
from mindspore import nn


class Block(nn.Cell):
    def __init__(self, scale=1):
        super().__init__()
        self.scale = scale

    def construct(self, x):
        return x * self.scale


def drive(x, scales, table):
{body}
"""


@pytest.mark.parametrize("body, flagged", [
    ("    for s in scales:\n        net = Block()\n        net(x)", True),            # hoistable
    ("    for s in scales:\n        net = Block(2)\n        net(x)", True),
    ("    for s in scales:\n        base = Block\n        net = Block(scale=3)\n        net(x)", True),
    ("    for s in scales:\n        net = Block(s)\n        net(x)", False),           # a different Cell each time
    ("    for k in table:\n        v = table[k] * 2\n        net = Block(v)\n        net(x)", False),
    ("    for s in scales:\n        Block(s)(x)", False),
    ("    for s in scales:\n        Block()(x)", True),
])
def test_msg503_scope(body, flagged):
    code = MSG503_LOOP.format(body=body)
    found = [d for d in lint_source(code, "m.py", ALL) if d.code == "MSG503"]
    assert bool(found) == flagged, code


MSG209_PROGRAM = '''
import mindspore as ms
from mindspore import nn, ops
from mindspore.experimental import optim

net = nn.Dense(3, 1)
opt = optim.SGD(net.trainable_params(), lr=0.1)
grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, opt.parameters)


@ms.jit
def train_step(x):
    loss, grads = grad_fn(x)
    opt(grads)
    return loss


def train_epoch(x):
    for _ in range(2):
        train_step(x)


{body}
'''


@pytest.mark.parametrize("body, flagged", [
    # between two steps: lost
    ("train_step(x)\nms.load_param_into_net(net, ckpt)\ntrain_step(x)", True),
    ("for e in range(3):\n    train_step(x)\n    if e == 1:\n        ms.load_param_into_net(net, best)", True),
    ("for e in range(3):\n    if e == 1:\n        net.weight.set_data(w)\n    train_step(x)", True),
    ("for e in range(3):\n    train_epoch(x)\n    ms.load_param_into_net(net, best)", True),   # a function of the file
    ("for e in range(3):\n    loss, grads = grad_fn(x)\n    opt(grads)\n    net.bias.set_data(b)", True),
    # before the first step or after the last: nothing is lost
    ("net.weight.set_data(w)\nms.load_param_into_net(net, ckpt)\ntrain_step(x)", False),
    ("for e in range(3):\n    train_step(x)\nms.load_param_into_net(net, best)", False),
    ("train_step(x)\nfor p in net.get_parameters():\n    ops.assign(p, ckpt[p.name])\ntrain_step(x)", False),
    ("train_step(x)\nms.load_param_into_net(net, ckpt)  # noqa: MSG209\ntrain_step(x)", False),
    # a function that steps, called again and again: its start follows the previous call's step
    ("def learn(x):\n    ms.load_param_into_net(net, best)\n    train_step(x)\n\n"
     "for e in range(3):\n    learn(x)", True),
    ("class Agent:\n    def learn(self, x):\n        net.weight.set_data(w)\n        train_step(x)\n\n"
     "agent = Agent()\nfor e in range(3):\n    agent.learn(x)", True),
    ("def main(x):\n    ms.load_param_into_net(net, ckpt)\n    for e in range(3):\n        train_step(x)\n\n"
     "main(x)", False),   # resuming before the first step
])
def test_msg209_scope(body, flagged):
    code = MSG209_PROGRAM.format(body=body)
    found = [d for d in lint_source(code, "m.py", ALL) if d.code == "MSG209"]
    assert bool(found) == flagged, code
