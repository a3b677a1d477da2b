"""Value transforms shared by many records, and whole-call transforms that drop a call."""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import libcst as cst

from msmigrate.engine import Unconvertible, atom, literal_value
from msmigrate.rules import generated as generated_package


def generated(site, *functions) -> cst.Name:
    """Copy `functions` (of rules/generated/, in order: helpers first) into the converted file;
    a reference to the last one."""
    for function in functions:
        site.rw.imports.define(function.__name__, textwrap.dedent(inspect.getsource(function)))
    return site.rw.imports.define(functions[-1].__name__, "")


def with_file_names(plan, source: str, names: dict[str, str]) -> str:
    """Generated code written with MindSpore's usual short names (`names`: short -> module, e.g.
    ms -> mindspore) rewritten to the file's references to those modules (`plan`: the file's
    ImportPlan, which requests their imports): the file may bind `ms` or `ops` to something else."""
    refs = {short: plan.ref(module) for short, module in names.items()
            if re.search(rf"(?<![\w.]){short}\.(?=[A-Za-z_])", source)}
    if not refs:
        return source
    code = {short: cst.Module([]).code_for_node(ref) for short, ref in refs.items()}
    return re.sub(r"(?<![\w.])(%s)\.(?=[A-Za-z_])" % "|".join(map(re.escape, code)),
                  lambda m: code[m.group(1)] + ".", source)


def generated_text(plan, module: str, *names: str) -> cst.Name:
    """Copy the top-level definitions `names` (helpers first) of rules/generated/`module`.py, a
    file read as text because it imports MindSpore, into the converted file (`plan`: its
    ImportPlan), the names that file imports rewritten to the converted file's; a reference to
    the last one."""
    source = (Path(generated_package.__file__).parent / f"{module}.py").read_text()
    tree = ast.parse(source)
    imported = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                qualname = alias.name if isinstance(stmt, ast.Import) else f"{stmt.module}.{alias.name}"
                imported[alias.asname or alias.name] = qualname
    segments = {stmt.name: ast.get_source_segment(source, stmt) for stmt in tree.body
                if isinstance(stmt, (ast.FunctionDef, ast.ClassDef))}
    for name in names:
        plan.define(name, with_file_names(plan, segments[name], imported))
    return plan.define(names[-1], "")


def repeatable(expr) -> bool:
    """A name, attribute or literal subscript: cheap and the same value when written twice."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Attribute):
        return repeatable(expr.value)
    if isinstance(expr, cst.Subscript):
        return repeatable(expr.value) and all(
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.Integer, cst.Name))
            for e in expr.slice)
    return False


def one_minus(value: cst.BaseExpression, site):
    """BatchNorm momentum: MindSpore weighs the running stat by m where torch weighs the new one."""
    try:
        m = literal_value(value)
    except ValueError:
        return site.expr("1 - ({v})", v=value) if not isinstance(value, cst.Name) else site.expr("1 - {v}", v=value)
    if m is None:
        raise Unconvertible("momentum=None (cumulative moving average) has no MindSpore equivalent")
    return cst.parse_expression(repr(round(1 - float(m), 12)))


def to_tuple(value: cst.BaseExpression, site):
    """An int or a sequence -> a tuple (MindSpore takes no int): a literal one where the value is
    a literal or visibly a Python int, else torch's own test of it, at run time."""
    try:
        v = literal_value(value)
    except ValueError:
        from msmigrate.rules.transforms.dtypes import kind
        if kind(site.rw, value) == "pyint":
            return site.expr("({v},)", v=value)
        return site.expr("tuple({v}) if isinstance({v}, (list, tuple)) else ({v},)", v=value)
    if isinstance(v, int):
        return cst.parse_expression(f"({v},)")
    return value


def as_int(value: cst.BaseExpression, site):
    """A count MindSpore checks is an int (StepLR's step_size; torch takes 1.0): a float literal
    becomes its int, anything not visibly an int goes through int()."""
    try:
        v = literal_value(value)
    except ValueError:
        from msmigrate.rules.transforms.dtypes import kind
        return value if kind(site.rw, value) == "pyint" else site.expr("int({v})", v=value)
    if isinstance(v, float) and v.is_integer():
        return cst.Integer(str(int(v)))
    return value


def number_list(value: cst.BaseExpression, site):
    """Weights MindSpore wants as a list of Python numbers (a sampler's; torch takes a tensor)."""
    if isinstance(value, (cst.List, cst.Tuple)):
        return value
    return site.expr("{a}({v}, dtype={f}).tolist()", a="@numpy.asarray", v=value, f="@numpy.float64")


def approximate_flag(value: cst.BaseExpression, site):
    """GELU approximate='none'|'tanh' -> approximate=False|True."""
    try:
        v = literal_value(value)
    except ValueError:
        return site.expr("{v} == 'tanh'", v=value)
    return cst.Name("True" if v == "tanh" else "False")


def fixed_answer(site, answer: str, why: str | None) -> cst.BaseExpression:
    """`answer` (Python source; `{r}`: the receiver, or the `input` argument) in place of a query
    MindSpore answers one way only (a setting it lacks, a tensor property it has no notion of);
    marked with `why` where torch may answer otherwise."""
    if why:
        site.flag("review", f"{site.qualname} -> {answer}: {why}")
    if "{r}" not in answer:
        return cst.parse_expression(answer)
    return site.expr(answer, r=site.receiver if site.receiver is not None else site.arg("input"))


def remove_call(site):
    """A call with no MindSpore counterpart and no effect on results (cudnn flags, synchronize)."""
    return site.REMOVED


def statement_slot(stmt, node) -> bool:
    """Is `node` a whole `with` item, decorator or expression statement of `stmt`? The engine
    removes REMOVED only from those places."""
    if isinstance(stmt, cst.With):
        return any(item.item.deep_equals(node) for item in stmt.items)
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return any(d.decorator.deep_equals(node) for d in stmt.decorators)
    if isinstance(stmt, cst.SimpleStatementLine):
        return any(isinstance(s, cst.Expr) and s.value.deep_equals(node) for s in stmt.body)
    return False


def no_effect_context(site):
    """A context manager or decorator that changes no value (a profiler label, an attention
    kernel choice, where saved activations live): gone as a `with` item, decorator or statement;
    kept as a value, contextlib.nullcontext()."""
    if site.statement is not None and statement_slot(site.statement, site.node):
        return site.REMOVED
    return site.expr("{n}()", n="@contextlib.nullcontext")


def direct_call(site):
    """fn(*args, **kw) in place of torch.jit.fork(fn, ...) (asynchronous in torch, the same result)
    or torch.utils.checkpoint.checkpoint(fn, ...) (recomputed in the backward pass to save memory,
    the same values): the call itself; the record's `drop` arguments (checkpointing options) go."""
    callee = site.arg(site.record.args[0])
    if callee is None:
        raise Unconvertible(f"{site.qualname} without the function to call")
    rest = [a for a in site.node.args if a.value is not callee
            and not (a.keyword is not None and a.keyword.value in site.record.drop)]
    return cst.Call(func=callee, args=rest)


def receiver(site):
    """`x.cuda()`, `model.to(device)`: placement is global in MindSpore, the object stays."""
    return site.receiver


def same_value(site):
    """`torch.device('cuda')` -> the string itself, so `use_cuda` style logic keeps running."""
    if site.is_call:
        args = [a.value for a in site.node.args if a.keyword is None]
        return args[0] if args else cst.SimpleString("'cpu'")
    return site.node


def tensor_equal(site):
    """torch.equal(a, b) / a.equal(b): ONE bool, True when shapes and values agree. MindSpore's
    Tensor.equal (and ops.equal) compare element-wise and return a tensor."""
    x = site.receiver if site.receiver is not None else site.arg("input")
    y = site.arg("other")
    if x is None or y is None:
        raise Unconvertible("equal needs both tensors")
    x, y = atom(x), atom(y)
    return site.expr("({x}.shape == {y}.shape and bool({eq}({x}, {y}).all()))",
                     x=x, y=y, eq="@mindspore.ops.equal")


def signbit(site):
    """ops.signbit(-0.0) is False in MindSpore 2.10 (torch: True): the sign of a zero is read
    from 1 / x (-inf for -0.0); integers have no negative zero."""
    x = site.receiver if site.receiver is not None else site.arg("input")
    if x is None:
        raise Unconvertible("signbit needs its tensor")
    x = atom(x)
    return site.expr("(({x} < 0) | (({x} == 0) & (1 / {x} < 0)))", x=x)


def implicit_softmax_dim(site):
    """nn.Softmax()/LogSoftmax() without dim: torch picks the dim from the input's rank at call
    time (0 for 0-, 1- and 3-D inputs, else 1, with a deprecation warning); MindSpore's axis is -1."""
    if not site.has("dim"):
        site.flag("review", f"{site.qualname}() without dim: torch picks dim 0 for 0/1/3-D inputs and 1 "
                            "otherwise, MindSpore's axis is -1: pass dim= explicitly")
    return site.call(site.record.target)
