"""torch.* functions whose MindSpore counterpart takes its arguments differently: overloads decided
by the arguments (torch.max(x) / (x, dim) / (x, y)), defaults MindSpore infers differently
(torch.full's dtype), results MindSpore returns in another form (ops.unique's tuple, int32
indices), and random functions with another signature."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible, _bind, atom, kwarg, literal_value
from msmigrate.names import dotted
from msmigrate.rules.transforms.common import no_effect_context, with_file_names


def _is_none(node) -> bool:
    return node is None or (isinstance(node, cst.Name) and node.value == "None")


def _set(site, name: str, value: cst.BaseExpression) -> None:
    """Replace (or add, as a keyword) the value of a bound torch argument before standard_args."""
    if name in site.bound:
        site.bound[name] = site.bound[name].with_changes(value=value)
    else:
        site.bound[name] = kwarg(name, value)


def _no_out(site) -> None:
    """For transforms that build their own argument list: torch's `out=` has no counterpart."""
    if not _is_none(site.arg("out")):
        raise Unconvertible("out= has no MindSpore equivalent", "review")


def _is_literal(expr) -> bool:
    try:
        literal_value(expr)
    except ValueError:
        return False
    return True


def _astype(site, expr: cst.BaseExpression, dtype: cst.BaseExpression) -> cst.BaseExpression:
    return site.expr("{e}.astype({t})", e=atom(expr, attribute=True), t=dtype)


def _calls(*required: str, splats: bool = False):
    """Guard for whole-call transforms: a bare reference (`f = torch.argmin`) becomes the target
    with a review note, or stays torch; calls missing a required argument, or passing `*a` /
    `**k` the transform cannot see into, stay torch and are flagged."""
    def wrap(fn):
        def transform(site):
            if not site.is_call:
                if not site.record.target:
                    raise Unconvertible("used as a value: only calls are converted", "review")
                site.flag("review", f"{site.qualname} used as a value: its argument differences are not applied")
                return site.ref(site.record.target)
            if site.unbound and not splats:
                raise Unconvertible("arguments passed through * / ** or beyond the torch signature: "
                                    "convert by hand", "review")
            missing = [n for n in required if n not in site.bound]
            if missing:
                raise Unconvertible(f"missing {', '.join(missing)}", "review")
            return fn(site)
        transform.__name__, transform.__doc__ = fn.__name__, fn.__doc__
        return transform
    return wrap



# ---- arithmetic ----------------------------------------------------------------------

@_calls("input", "other")
def scaled_other(site):
    """torch.add(x, y, alpha=a) = x + a*y; ops.add has no alpha."""
    alpha = site.arg("alpha")
    if alpha is not None:
        del site.bound["alpha"]
        _set(site, "other", site.expr("{y} * {a}", y=atom(site.arg("other")), a=atom(alpha)))
    return site.call(site.record.target)


@_calls("input", "other")
def xlogy(site):
    """torch.xlogy(x, y) is 0 where x == 0 (MindSpore: nan when y is 0 too, bool False/False
    included): the zero-safe form of Tensor.xlogy, ops.xlogy(x, ops.where(x == 0, 1.0, y)) (x
    computed once: msmigrate.engine binds a value a template places twice)."""
    if not _is_none(site.arg("out")):
        site.flag("MSC105", f"{site.qualname}: out={site.code(site.arg('out'))} has no MindSpore "
                            f"equivalent (only None); argument dropped")
    x, y = site.arg("input"), site.arg("other")
    try:
        number = literal_value(x)
    except ValueError:
        number = None
    if isinstance(number, (int, float)):   # a number: no tensor to compare with 0
        if number == 0:
            site.flag("review", f"{site.qualname}(0, y): MindSpore's is nan where y is 0 (torch: 0)")
        return site.expr("{f}({x}, {y})", f="@mindspore.ops.xlogy", x=x, y=y)
    return site.expr("{f}({x}, {w}({x} == 0, 1.0, {y}))", f="@mindspore.ops.xlogy", x=x,
                     w="@mindspore.ops.where", y=y)


# ---- results MindSpore gives in another dtype or form ----------------------------------

@_calls()
def int64_result(site):
    """Indices: MindSpore's kernel returns int32 where torch returns int64."""
    return _astype(site, site.call(site.record.target), site.ref("mindspore.int64"))


@_calls()
def int64_indices(site):
    """(values, indices) results (sort, topk, cummin): MindSpore's indices are int32 where
    torch's are int64; the pair is unpacked into a generated function that casts the indices."""
    return site.expr("{f}(*{c})", f=generated_function(site, "msmigrate_int64_indices"), c=site.call(site.record.target))


@_calls("input")
def aminmax(site):
    """torch.aminmax(x) reduces every element to one (min, max) pair; ops.aminmax reduces axis 0
    when no axis is given: the input is flattened first."""
    _no_out(site)
    if site.arg("dim") is None or _is_none(site.arg("dim")):
        if site.has("keepdim") and site.code(site.arg("keepdim")) != "False":
            raise Unconvertible("aminmax(keepdim=True) without dim")
        call = site.call(site.record.target, [cst.Arg(site.expr("{x}.reshape(-1)", x=site.arg("input")))])
    else:
        call = site.call(site.record.target)
    if site.result_dtype is None:
        return call
    # computed in another dtype (record field compute_as: a bool tensor): both values cast back
    dtype, site.result_dtype = site.result_dtype, None
    return site.expr("{f}(*{c}, {t})", f=generated_function(site, "msmigrate_cast_pair"), t=dtype, c=call)


@_calls()
def cast_result(site):
    """A torch `dtype=` MindSpore's function lacks: cast the result."""
    dtype = site.arg("dtype")
    if dtype is not None:
        del site.bound["dtype"]
    call = site.call(site.record.target)
    return _trainable(site, call if _is_none(dtype) else _astype(site, call, dtype))


@_calls("input")
def cast_input(site):
    """torch.mean(x, dtype=t) casts the input before reducing; ops.mean has no dtype."""
    dtype = site.arg("dtype")
    if dtype is not None:
        del site.bound["dtype"]
        if not _is_none(dtype):
            _set(site, "input", _astype(site, site.arg("input"), dtype))
    return site.call(site.record.target)


@_calls("input")
def max_min(site):
    """torch.max(x) -> a tensor; torch.max(x, dim) -> (values, indices); torch.max(x, y) ->
    element-wise. MindSpore: ops.amax / ops.max (always a tuple) / ops.maximum."""
    _no_out(site)
    name = site.qualname.rsplit(".", 1)[1]
    dim = site.arg("dim")
    other = site.arg("other")
    if other is None and dim is not None and site.bound["dim"].keyword is None:
        try:
            v = literal_value(dim)
        except ValueError:
            v = None
        if not isinstance(v, (int, tuple, list)) or isinstance(v, bool):
            other = dim   # torch.max(a, b): the second positional argument is a tensor
            last = site.code(dim).rsplit(".", 1)[-1].lower()
            if v is None and (last.endswith(("dim", "axis")) or last in ("d", "k")):
                site.flag("review", f"{site.qualname}: {site.code(dim)} is taken for a tensor (element-wise "
                                    f"{name}imum); if it is a dim, use ops.{name}")
    if other is not None:
        site.bound.pop("dim", None)
        site.bound.pop("other", None)
        if site.has("keepdim"):
            raise Unconvertible("keepdim= with a tensor second argument")
        args = [cst.Arg(site.arg("input")), cst.Arg(other)]
        return site.call("mindspore.ops." + ("maximum" if name == "max" else "minimum"), args)
    if dim is None:
        return site.call("mindspore.ops." + ("amax" if name == "max" else "amin"),
                         site.standard_args(skip=("keepdim",)))
    if not _read_by_position(site):
        site.flag("review", f"{site.qualname}(x, dim): MindSpore returns a plain (values, indices) tuple, "
                            f"not a namedtuple: `.values` / `.indices` must become [0] / [1]")
    if site.result_dtype is not None:
        site.flag("review", f"{site.qualname}(x, dim) of a bool tensor: its values are computed as int32 "
                            f"(MindSpore has no bool kernel); cast them back with .astype(ms.bool_)")
        site.result_dtype = None   # a tuple: not cast as a whole
    return site.call("mindspore.ops." + name, [
        cst.Arg(site.arg("input")), cst.Arg(dim),
        *([kwarg("keepdims", site.arg("keepdim"))] if site.has("keepdim") else [])])


@_calls("input")
def median(site):
    """torch.median(x) is the lower median of all elements; ops.median reduces one axis and
    returns (values, indices)."""
    _no_out(site)
    if site.arg("dim") is None:
        flat = site.expr("{r}({x}, (-1,))", r="@mindspore.ops.reshape", x=site.arg("input"))
        return site.expr("{m}({f})[0]", m="@mindspore.ops.median", f=flat)
    if not _read_by_position(site):
        site.flag("review", f"{site.qualname}(x, dim): MindSpore returns a plain (values, indices) tuple, "
                            f"not a namedtuple")
    return site.call(site.record.target)


def _read_by_position(site) -> bool:
    """The call's named-tuple result is only read where it is converted: unpacked (`v, i = ...`),
    indexed, a field read off the call itself (`.values` -> [0], record field `fields`), or bound
    to a name whose every use reads a field or indexes (elsewhere a field read stays marked)."""
    import libcst.matchers as m
    stmt, here = site.statement, site.rw.pos_stack[-1]
    if stmt is None:
        return False
    for node in m.findall(stmt, m.Subscript(value=m.Call()) | m.Attribute(value=m.Call())):
        if site.rw._pos(node.value) == here:
            return isinstance(node, cst.Subscript) or node.attr.value in site.record.fields
    unpacked = m.Assign(targets=[m.AssignTarget(target=m.Tuple() | m.List())], value=m.Call())
    if any(site.rw._pos(node.value) == here for node in m.findall(stmt, unpacked)):
        return True
    named = m.Assign(targets=[m.AssignTarget(target=m.Name())], value=m.Call())
    bound = [node.targets[0].target.value for node in m.findall(stmt, named) if site.rw._pos(node.value) == here]
    return bool(bound) and _fields_read_only(site, bound[0])


def _fields_read_only(site, name: str) -> bool:
    """Every use of `name` in the enclosing function (or module) reads a field of it
    (`m.values`, which the engine makes `m[0]` while `m` holds the result) or indexes it, and no
    nested function reads it."""
    scope = site.rw.function_nodes[-1] if site.rw.function_nodes else site.rw.module
    stack = [(scope, None, False)]
    while stack:
        node, parent, nested = stack.pop()
        if isinstance(node, cst.Name) and node.value == name:
            read = (isinstance(parent, cst.Attribute) and parent.value is node and
                    parent.attr.value in site.record.fields) or \
                (isinstance(parent, cst.Subscript) and parent.value is node)
            target = isinstance(parent, cst.AssignTarget) and parent.target is node
            if nested or not (read or target):
                return False
        inner = nested or (node is not scope and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)))
        stack.extend((child, node, inner) for child in node.children)
    return True


@_calls("input")
def unique(site):
    """torch.unique returns the sorted unique values (and counts); ops.unique returns
    (values in order of appearance, inverse indices)."""
    try:
        inverse = site.literal("return_inverse", False)
        counts = site.literal("return_counts", False)
        dim = site.literal("dim", None)
    except ValueError:
        raise Unconvertible("return_inverse / return_counts / dim are not literals") from None
    if inverse or dim is not None:
        raise Unconvertible("return_inverse / dim: the inverse indices of ops.unique refer to unsorted "
                            "values", "manual")
    x = site.arg("input")
    if counts:
        flat = site.expr("{s}({r}({x}, (-1,)))[0]", s="@mindspore.ops.sort", r="@mindspore.ops.reshape", x=x)
        return site.expr("{u}({f}, return_counts=True)", u="@mindspore.ops.unique_consecutive", f=flat)
    return site.expr("{s}({u}({x})[0])[0]", s="@mindspore.ops.sort", u="@mindspore.ops.unique", x=x)


@_calls("input")
def ddof(site):
    """torch std/var: `correction` (default 1) or the older `unbiased` -> MindSpore `ddof`
    (default 0, the biased estimate)."""
    unbiased = site.arg("unbiased")
    dim = site.arg("dim")
    if dim is not None and site.bound["dim"].keyword is None:
        try:
            if isinstance(literal_value(dim), bool):  # torch.std(x, False): the unbiased overload
                unbiased, dim = dim, None
                del site.bound["dim"]
        except ValueError:
            pass
    correction = site.arg("correction")
    site.bound.pop("unbiased", None)
    site.bound.pop("correction", None)
    if correction is not None and not _is_none(correction):
        value = correction
    elif unbiased is not None:
        try:
            value = cst.Integer("1" if literal_value(unbiased) else "0")
        except ValueError:
            value = site.expr("int({u})", u=unbiased)
    else:
        value = cst.Integer("1")
    return site.call(site.record.target, [*site.standard_args(), kwarg("ddof", value)])


@_calls("input", "dim", "index", "src")
def scatter_add(site):
    """torch.scatter_add(x, dim, index, src) -> ops.tensor_scatter_elements(x, index, src, dim,
    reduction='add')."""
    from msmigrate.rules.transforms.tensor_methods import leading_src
    _no_out(site)
    src = leading_src(site, site.arg("src"), site.arg("index"))
    args = [cst.Arg(site.arg("input")), cst.Arg(site.arg("index")), cst.Arg(src),
            kwarg("axis", site.arg("dim")), kwarg("reduction", cst.SimpleString("'add'"))]
    return site.call(site.record.target, args)


# ---- creation ------------------------------------------------------------------------

def _trainable(site, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`requires_grad=True` on a factory makes a trainable leaf: in MindSpore that is a Parameter
    (ms.grad / value_and_grad and the optimizers work on Parameters)."""
    try:
        trainable = site.literal("requires_grad", False)
    except ValueError:
        site.flag("review", f"{site.qualname}: requires_grad={site.code(site.arg('requires_grad'))} is not a "
                            f"literal: a trainable tensor must become an ms.Parameter")
        return expr
    if not trainable:
        return expr
    name = _leaf_name(site)
    if name is not None:   # a Parameter is known by its name (checkpoints, parameter lists)
        return site.expr("{P}({e}, name={n})", P="@mindspore.Parameter", e=expr, n=cst.SimpleString(repr(name)))
    return site.expr("{P}({e})", P="@mindspore.Parameter", e=expr)


def _leaf_name(site) -> str | None:
    """`w` of `w = torch.zeros(3, requires_grad=True)`: the factory is the whole value bound to a
    plain name (a Cell names the Parameters of its attributes itself)."""
    stmt = site.statement
    name = site.assigned_name
    if name is None or "." in name:
        return None
    value = stmt.body[0].value
    if not (isinstance(value, cst.Call) and isinstance(site.node, cst.Call) and len(value.args) == len(site.node.args)
            and dotted(value.func) is not None and dotted(value.func).rsplit(".", 1)[-1] == site.qualname.rsplit(".", 1)[-1]):
        return None
    return name


@_calls()
def factory(site):
    """A tensor factory whose arguments map one to one: requires_grad=True -> Parameter. Literal
    complex data without dtype is complex64 in torch (the default float32's complex), complex128
    in MindSpore: the dtype is written."""
    if "data" in site.bound and _is_range(site, site.arg("data")):
        site.bound["data"] = site.bound["data"].with_changes(value=site.expr("list({r})", r=site.arg("data")))
    if "data" in site.bound and _is_none(site.arg("dtype")) and _has_complex(site.arg("data")):
        site.bound.pop("dtype", None)
        return _trainable(site, site.call(site.record.target, [*site.standard_args(),
                                                               kwarg("dtype", site.ref("mindspore.complex64"))]))
    if site.qualname == "torch.randn_like" and _is_none(site.arg("dtype")) and _plain_name(site.arg("input")):
        # ops.randn_like draws float32 whatever its input (torch: the input's dtype)
        site.bound.pop("dtype", None)
        return _trainable(site, site.call(site.record.target, [*site.standard_args(), kwarg(
            "dtype", site.expr("{x}.dtype", x=site.arg("input")))]))
    return _trainable(site, site.call(site.record.target))


def _plain_name(node) -> bool:
    """A name or attribute path: reading it twice reads the same value, at no cost."""
    return dotted(node) is not None


def _has_complex(node) -> bool:
    try:
        value = literal_value(node)
    except ValueError:
        return False
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, complex):
            return True
        if isinstance(v, (list, tuple)):
            stack.extend(v)
    return False


def _original_kind(site, name: str) -> str | None:
    """dtypes.kind of the torch call's argument `name` as written (before its conversion)."""
    from msmigrate.rules.transforms.dtypes import kind
    call = site.rw.original_call
    arg = _bind(site.record, call.args)[0].get(name) if call is not None else None
    return None if arg is None else kind(site.rw, arg.value)


@_calls("size", "fill_value")
def full(site):
    """torch.full infers the dtype from fill_value (float -> float32, int -> int64, bool ->
    bool); ops.full without dtype truncates a float fill value to int64."""
    if site.arg("dtype") is None or _is_none(site.arg("dtype")):
        try:
            v = site.literal("fill_value")
        except ValueError:
            # a visible Python number (torch.inf, n * 0.5): its type's example value
            v = {"pyfloat": 0.0, "pyint": 0, "pybool": False}.get(_original_kind(site, "fill_value"))
            fill = site.arg("fill_value")
            if v is None and isinstance(fill, (cst.Name, cst.Attribute)):
                # a name (`args.smooth`): torch's dtype for what it holds when the call runs
                site.bound.pop("dtype", None)
                dtype = site.expr("{f32} if isinstance({v}, float) else {b} if isinstance({v}, bool) else None",
                                  f32=site.ref("mindspore.float32"), b=site.ref("mindspore.bool_"), v=fill)
                return _trainable(site, site.call(site.record.target, [*site.standard_args(), kwarg("dtype", dtype)]))
            if v is None:
                site.flag("review", f"{site.qualname}: fill_value is not a literal: pass dtype= (ops.full "
                                    f"turns a float fill value into int64 when dtype is None)")
        site.bound.pop("dtype", None)
        dtype = {bool: "mindspore.bool_", int: "mindspore.int64", float: "mindspore.float32"}.get(type(v))
        if dtype:
            call = site.call(site.record.target, [*site.standard_args(), kwarg("dtype", site.ref(dtype))])
            return _trainable(site, call)
    return _trainable(site, site.call(site.record.target))


@_calls("start", "end")
def inclusive_range(site):
    """torch.range(start, end, step=1) includes `end` and returns float32 by default."""
    start, end = site.arg("start"), site.arg("end")
    if end is None:
        raise Unconvertible("torch.range needs start and end")
    step = site.arg("step", cst.Integer("1"))
    dtype = site.arg("dtype")
    dtype = site.ref("mindspore.float32") if _is_none(dtype) else dtype
    return _trainable(site, site.expr("{f}({s}, {e} + {st}, {st}, dtype={t})", f="@mindspore.ops.arange",
                                      s=start, e=atom(end), st=atom(step), t=dtype))


# ---- random ----------------------------------------------------------------------------

@_calls("input")
def bernoulli(site):
    """torch.bernoulli(probs) draws with the probabilities in `probs`; ops.bernoulli(x, p) draws
    with probability `p` in the shape of `x`."""
    x = site.arg("input")
    p = site.arg("p")
    site.bound.pop("p", None)
    return site.call(site.record.target, [*site.standard_args(), kwarg("p", p if p is not None else x)])


@_calls()
def randint(site):
    """torch.randint(high, size) / (low, high, size) and randint_like(x, high) / (x, low, high):
    ops.randint / ops.randint_like always take low and high."""
    like = site.qualname.endswith("_like")
    first, low, high = (("input",) if like else ()), site.arg("low"), site.arg("high")
    last = () if like else ("size",)
    size = site.arg("size")
    if like and high is None:                         # randint_like(x, high)
        low, high = cst.Integer("0"), low
    elif not like and (size is None or high is None):  # randint(high, size)
        low, high, size = cst.Integer("0"), low, high if size is None else size
    if low is None:                                    # randint(high=n, size=s)
        low = cst.Integer("0")
    if high is None or (not like and size is None):
        raise Unconvertible("arguments do not match torch's randint signature")
    leading = [site.arg(n) for n in first] + [low, high] + ([size] if not like else [])
    x = site.arg("input")
    for name in (*first, "low", "high", *last):
        site.bound.pop(name, None)
    if like and _is_none(site.arg("dtype")) and _original_kind(site, "input") != "int":
        # ops.randint_like draws in its input's dtype, integers only (ValueError on a float
        # tensor); torch's has the input's dtype, whichever it is
        if not _plain_name(x):
            raise Unconvertible("randint_like of a tensor whose dtype is not visibly an integer one: "
                                "MindSpore's takes integer tensors only; use ops.randint(low, high, x.shape, "
                                "dtype=ms.int64).astype(x.dtype)")
        site.bound.pop("dtype", None)
        call = site.call(site.record.target, [*(cst.Arg(v) for v in leading), *site.standard_args(),
                                              kwarg("dtype", site.ref("mindspore.int64"))])
        return _trainable(site, site.expr("{c}.astype({x}.dtype)", c=call, x=x))
    return _trainable(site, site.call(site.record.target, [*(cst.Arg(v) for v in leading), *site.standard_args()]))


@_calls("mean")
def normal(site):
    """torch.normal(mean, std[, size]) -> ops.normal(shape, mean, stddev): the shape is `size`,
    or the shape of whichever of mean/std is a tensor."""
    _no_out(site)
    mean, std, size = site.arg("mean"), site.arg("std"), site.arg("size")
    if std is None and mean is not None and not _is_literal(mean):
        std = cst.Float("1.0")   # normal(mean: Tensor, std=1.0), torch's one-argument overload
    if mean is None or std is None:
        raise Unconvertible("torch.normal without mean and std")
    if size is None:
        try:
            literal_value(mean)
            shape_of = std
        except ValueError:
            shape_of = mean
        size = site.expr("{t}.shape", t=atom(shape_of, attribute=True))
    args = [cst.Arg(size), cst.Arg(mean), cst.Arg(std)]
    call = site.call(site.record.target, args)
    dtype = site.arg("dtype")
    return _trainable(site, call if _is_none(dtype) else _astype(site, call, dtype))


@_calls("data")
def variable(site):
    """torch.autograd.Variable(t) is `t` since torch 0.4 (`volatile` is ignored there too); one
    that asks for gradients is a tensor to differentiate: MindSpore differentiates functions."""
    if site.has("requires_grad") and site.code(site.arg("requires_grad")) != "False":
        if site.code(site.arg("requires_grad")) == "True" and _leaf_name(site) is not None:
            # `v = Variable(t, requires_grad=True)`: a trainable leaf, as a factory's requires_grad=True
            return site.expr("{P}({e}, name={n})", P="@mindspore.Parameter", e=site.arg("data"),
                             n=cst.SimpleString(repr(_leaf_name(site))))
        raise Unconvertible("Variable(..., requires_grad=True): differentiate a function of it with "
                            "mindspore.grad / value_and_grad instead of reading .grad")
    return site.arg("data")


@_calls("input")
def poisson(site):
    """torch.poisson(rates) -> ops.random_poisson(shape=[], rates): no leading sample axes."""
    empty = site.expr("{T}([], {i})", T="@mindspore.Tensor", i="@mindspore.int32")
    return site.call(site.record.target, [cst.Arg(empty), cst.Arg(site.arg("input"))])


def tensor_class(site):
    """`torch.Tensor` as a type stays `ms.Tensor`; torch.Tensor(data) / torch.FloatTensor(data)
    build float32 (or the class's dtype) tensors; torch.Tensor(2, 3) an uninitialised one."""
    dtype = site.record.target if site.record.target != "mindspore.Tensor" else "mindspore.float32"
    if not site.is_call:
        if site.record.target == "mindspore.Tensor":
            return site.ref("mindspore.Tensor")
        raise Unconvertible(f"{site.qualname} as a type has no MindSpore equivalent: use ms.Tensor "
                            f"and check .dtype", "manual")
    data = site.arg("data")
    if data is None:
        return site.call("mindspore.Tensor", [cst.Arg(cst.List([])), kwarg("dtype", site.ref(dtype))])
    if len(site.node.args) == 1 and _is_range(site, data):
        return site.call("mindspore.Tensor", [cst.Arg(site.expr("list({r})", r=data)), kwarg("dtype", site.ref(dtype))])
    items = data.elements if isinstance(data, cst.Tuple) and len(site.node.args) > 1 else [data]
    values = []
    for item in items:
        node = item.value if isinstance(item, cst.Element) else item
        try:
            values.append(literal_value(node))
        except ValueError:
            values.append(None)
    if len(items) > 1 or (isinstance(values[0], int) and not isinstance(values[0], bool)):
        if len(items) == 1 and isinstance(site.node.args[0].value, (cst.Integer,)):
            shape = cst.Tuple([cst.Element(items[0])])
        else:
            shape = data
        site.flag("review", f"{site.qualname}(sizes): torch leaves the memory uninitialised; zeros are one "
                            f"valid content")
        return site.call("mindspore.ops.zeros", [cst.Arg(shape), cst.Arg(site.ref(dtype))])
    if values[0] is None and len(items) == 1 and isinstance(data, cst.Call) and dotted(data.func) == "len":
        # torch.LongTensor(len(words)): a size
        site.flag("review", f"{site.qualname}(sizes): torch leaves the memory uninitialised; zeros are one "
                            f"valid content")
        return site.call("mindspore.ops.zeros", [cst.Arg(cst.Tuple([cst.Element(data)])), cst.Arg(site.ref(dtype))])
    if values[0] is None and len(items) == 1 and _never_int(data):   # `[y]`, `series[i:j]`: data
        return site.call("mindspore.Tensor", [cst.Arg(data), kwarg("dtype", site.ref(dtype))])
    if values[0] is None and len(items) == 1 and (_is_plain_reference(data) or _is_arithmetic(data)):
        # torch.LongTensor(n) / torch.Tensor(3 * K - 1): a size when n is an int, data otherwise;
        # which one is read at run time (unmarked: an int's uninitialised memory has zeros among
        # its valid contents, and data is data)
        return cst.IfExp(
            test=site.expr("isinstance({x}, int)", x=data),
            body=site.call("mindspore.ops.zeros", [cst.Arg(cst.Tuple([cst.Element(data)])), cst.Arg(site.ref(dtype))]),
            orelse=site.call("mindspore.Tensor", [cst.Arg(data), kwarg("dtype", site.ref(dtype))]),
            lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    if values[0] is None:
        site.flag("review", f"{site.qualname}({site.code(data)}): taken for data; an int here would be a size "
                            f"(an uninitialised tensor)")
    return site.call("mindspore.Tensor", [cst.Arg(data), kwarg("dtype", site.ref(dtype))])


def _never_int(data) -> bool:
    """An expression that is visibly no int (a list, tuple or comprehension, a slice of
    something): a legacy tensor class reads it as data, never as a size."""
    if isinstance(data, (cst.List, cst.ListComp, cst.Tuple, cst.GeneratorExp, cst.Dict, cst.Set)):
        return True
    return isinstance(data, cst.Subscript) and any(isinstance(e.slice, cst.Slice) for e in data.slice)


def _is_range(site, data) -> bool:
    """`range(...)` or `collections.deque(...)`, or a name bound to one in straight-line code
    before: torch reads them as sequences; ms.Tensor rejects them (a list of their values is the
    same data; REINFORCE's `returns = deque()` ... `torch.tensor(returns)`)."""
    from msmigrate.rules.transforms.dtypes import _straight_line_value
    if isinstance(data, cst.Name):
        data = _straight_line_value(site.rw, data.value)
    if not isinstance(data, cst.Call):
        return False
    if site.rw.scopes.resolve(data.func) == "collections.deque":
        return True
    return isinstance(data.func, cst.Name) and data.func.value == "range" \
        and not any("range" in scope.bindings for scope in site.rw.scopes.stack)


def _is_plain_reference(node) -> bool:
    """A name or attribute chain (`n`, `args.size`): reading it twice reads the same value."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.Power)


def _is_arithmetic(node) -> bool:
    """Integer-style arithmetic over names, attribute chains and int literals (`3 * K - 1`,
    `n + 1`, `dim // 2`): reading it twice reads the same value."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _ARITHMETIC):
        return all(isinstance(side, cst.Integer) or _is_plain_reference(side) or _is_arithmetic(side)
                   for side in (node.left, node.right))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return isinstance(node.expression, cst.Integer) or _is_plain_reference(node.expression) \
            or _is_arithmetic(node.expression)
    return False


@_calls("input")
def clone(site):
    """torch.clone(x) -> ops.deepcopy(x) (a new tensor with the same data; as Tensor.clone)."""
    return site.expr("{f}({x})", f="@mindspore.ops.deepcopy", x=site.arg("input"))


@_calls()
def default_dtype(site):
    """torch.get_default_dtype() -> ms.float32 (what MindSpore makes of Python floats)."""
    return site.ref("mindspore.float32")


def as_float(value, site):
    """ops.logspace needs float start/end: `0` -> `0.0`."""
    try:
        v = literal_value(value)
    except ValueError:
        return site.expr("float({v})", v=value)
    if isinstance(v, int) and not isinstance(v, bool):
        # a negative literal is a unary minus over a number: cst.Float holds digits only
        return cst.parse_expression(repr(float(v)))
    return value


def as_tensor(value, site):
    """An int argument MindSpore's primitive only takes as a Tensor (window lengths,
    polygamma's order)."""
    return site.expr("{T}({v})", T="@mindspore.Tensor", v=value)


@_calls("input")
def bincount(site):
    """ops.bincount counts in float32; torch counts in int64 (with weights both use the weights'
    dtype)."""
    call = site.call(site.record.target)
    if site.arg("weights") is None or _is_none(site.arg("weights")):
        return _astype(site, call, site.ref("mindspore.int64"))
    return call


@_calls("input", "boundaries")
def bucketize(site):
    """torch.bucketize(x, boundaries, right=r) == searchsorted(boundaries, x, right=r).
    ops.bucketize runs the SearchSorted kernel with int32 output, and MindSpore 2.10's CPU kernel
    keeps the output dtype of its first call: ops.bucketize then ops.searchsorted (int64) in one
    process fails. ops.searchsorted also returns torch's int64."""
    _no_out(site)
    number = isinstance(site.arg("input"), (cst.Integer, cst.Float, cst.UnaryOperation))
    if number or (site.has("out_int32") and not _is_false(site.arg("out_int32"))):
        # a number input, or int32 output, which the sticky kernel dtype would break: generated
        return site.call(generated_function(site, "msmigrate_bucketize"))
    args = [cst.Arg(site.arg("boundaries")), cst.Arg(site.arg("input"))]
    for name in ("right", "out_int32"):
        if site.has(name):
            args.append(kwarg(name, site.arg(name)))
    return site.call("mindspore.ops.searchsorted", args)


# ---- einsum ----------------------------------------------------------------------------

def _einsum_operand(code: str, labels: str, order: list[str]) -> str:
    """`code` (axes `labels`) laid out along `order`: permuted, with None for absent labels."""
    present = [c for c in order if c in labels]
    perm = tuple(labels.index(c) for c in present)
    if perm != tuple(range(len(labels))):
        code = f"{{permute}}({code}, {perm!r})"
    if len(present) != len(order):
        code += "[" + ", ".join(":" if c in labels else "None" for c in order) + "]"
    return code


def einsum(site):
    """ops.einsum has no CPU kernel in MindSpore 2.10. A literal equation without `...` or
    repeated labels in one operand becomes ops.matmul (a single contraction laid out as a matrix
    product) or, otherwise, a broadcast product summed over the contracted labels."""
    args = list(site.node.args)
    if not args or any(a.keyword is not None or a.star for a in args):
        raise Unconvertible("einsum arguments are not `equation, *operands`")
    try:
        equation = literal_value(args[0].value)
    except ValueError:
        raise Unconvertible("the equation is not a literal") from None
    operands = [a.value for a in args[1:]]
    if len(operands) == 1 and isinstance(operands[0], (cst.List, cst.Tuple)):
        operands = [e.value for e in operands[0].elements]
    equation = equation.replace(" ", "")
    inputs, _, out = equation.partition("->")
    terms = inputs.split(",")
    if "..." in equation or len(terms) != len(operands) or any(len(set(t)) != len(t) for t in terms):
        raise Unconvertible("equations with `...` or repeated labels in one operand: write the "
                            "ops composition by hand")
    if "->" not in equation:
        out = "".join(sorted(c for c in set(inputs) - {","} if inputs.count(c) == 1))
    nodes = {f"op{i}": atom(node) for i, node in enumerate(operands)}
    refs = {"permute": "@mindspore.ops.permute", "matmul": "@mindspore.ops.matmul",
            "swap": "@mindspore.ops.swapaxes", "sum": "@mindspore.ops.sum"}
    if len(terms) == 2:
        code = _einsum_matmul(terms[0], terms[1], out)
        if code is not None:
            return site.expr(code, **nodes, **{k: v for k, v in refs.items() if "{" + k + "}" in code})
    summed = [c for c in dict.fromkeys(inputs.replace(",", "")) if c not in out]
    order = list(out) + summed
    code = " * ".join(_einsum_operand(f"{{op{i}}}", t, order) for i, t in enumerate(terms))
    if summed:
        axes = tuple(range(len(out), len(order)))
        code = f"{{sum}}({code}, dim={axes if len(axes) > 1 else axes[0]!r})"
    if "None" in code:
        site.flag("review", f"{site.qualname}: {equation!r} as a broadcast product: it materialises "
                            f"every combination of labels (memory)")
    return site.expr(code, **nodes, **{k: v for k, v in refs.items() if "{" + k + "}" in code})


def _einsum_matmul(a: str, b: str, out: str) -> str | None:
    """`{matmul}(...)` code when `a,b->out` is a batched matrix product with one contracted
    label, else None."""
    contracted = [c for c in a if c in b and c not in out]
    batch = [c for c in a if c in b and c in out]
    if len(contracted) != 1 or set(a) | set(b) != set(out) | set(contracted):
        return None
    m = [c for c in a if c not in b]
    p = [c for c in b if c not in a]
    k = contracted[0]
    if len(m) != 1 or len(p) != 1 or a[:len(batch)] != "".join(batch) or b[:len(batch)] != "".join(batch):
        return None
    lhs = "{op0}" if a[len(batch):] == m[0] + k else "{swap}({op0}, -1, -2)"
    rhs = "{op1}" if b[len(batch):] == k + p[0] else "{swap}({op1}, -1, -2)"
    prefix = "".join(batch)
    if out == prefix + m[0] + p[0]:
        return f"{{matmul}}({lhs}, {rhs})"
    if out == prefix + p[0] + m[0]:
        return f"{{swap}}({{matmul}}({lhs}, {rhs}), -1, -2)"
    return None


@_calls("input")
def round_decimals(site):
    """ops.round only rounds to integers; torch.round(x, decimals=d) scales by 10**d, rounds
    half to even and scales back, which the same composition does."""
    _no_out(site)
    decimals = site.arg("decimals")
    site.bound.pop("decimals", None)
    call = site.call(site.record.target)
    try:
        if decimals is None or literal_value(decimals) == 0:
            return call
    except ValueError:
        pass
    scale = site.expr("10.0 ** {d}", d=atom(decimals))
    x = atom(site.arg("input"))
    return site.expr("{r}({x} * {s}) / {s}", r="@mindspore.ops.round", x=x, s=atom(scale))


@_calls()
def where(site):
    """torch.where(cond, x, y) is ops.where; torch.where(cond) (and torch.nonzero(x,
    as_tuple=True)) is one index tensor per dimension: ops.nonzero(as_tuple=True) has no CPU
    kernel, argwhere's columns are the same indices."""
    name = site.qualname.rsplit(".", 1)[1]
    if name == "nonzero":
        try:
            as_tuple = site.literal("as_tuple", False)
        except ValueError:
            raise Unconvertible("as_tuple is not a literal") from None
        if not as_tuple:
            site.bound.pop("as_tuple", None)
            return site.call(site.record.target)
        _no_out(site)
        cond = site.arg("input")
    else:
        if site.has("input") or site.has("other"):
            return site.call(site.record.target)
        cond = site.arg("condition")
    return site.expr("{u}({a}({c}), 1)", u="@mindspore.ops.unbind", a="@mindspore.ops.argwhere", c=cond)


# spellings of an infinite p (`float('inf')`, `math.inf`, `-torch.inf`) as a number
_INFINITY = {f"{sign}{spelling}": float(f"{sign}inf") for sign in ("", "-")
             for spelling in ("float('inf')", "math.inf", "torch.inf", "np.inf", "numpy.inf", "ms.numpy.inf")}


@_calls("input")
def norm(site):
    """torch.norm(x, p) with a numeric p is a vector p-norm over `dim` (all elements when None);
    ops.norm(x, ord) of a 2-D x is a matrix norm. p='fro' (torch's default) is ops.norm's ord=None."""
    _no_out(site)
    p, dim = site.arg("p"), site.arg("dim")
    site.bound.pop("p", None)
    try:
        p_value = None if p is None else literal_value(p)
    except ValueError:
        p_value = _INFINITY.get(site.code(p).replace(" ", "").replace('"', "'"), ...)
    try:
        one_dim = isinstance(literal_value(dim), int) if dim is not None else False
    except ValueError:
        one_dim = False
    if p_value is ... and not one_dim:   # (over one given dim both take a vector norm)
        site.flag("review", f"{site.qualname}: p={site.code(p)} is not a literal: torch takes a vector norm "
                            f"of all elements when dim is None, ops.norm a matrix norm of a 2-D input")
    numeric = isinstance(p_value, (int, float)) and not isinstance(p_value, bool)
    if numeric:
        # a vector norm over `dim` (every element when None, several dims too): ops.vector_norm,
        # which takes float64 and every p (ops.norm is a matrix norm over two dims, and its LpNorm
        # kernel is float16/32 only)
        args = [cst.Arg(site.arg("input")), cst.Arg(p)]
        args += [kwarg("axis", dim)] if dim is not None else []
        args += [kwarg("keepdims", site.arg("keepdim"))] if site.has("keepdim") else []
        if site.has("dtype"):
            args.append(kwarg("dtype", site.arg("dtype")))
        return site.call("mindspore.ops.vector_norm", args)
    if p_value == "nuc":   # ops.norm's is float32 whatever the input's dtype
        args = [cst.Arg(site.arg("input"))] + [kwarg(k, site.arg(k)) for k in ("dim", "keepdim") if site.has(k)]
        return site.call(generated_function(site, "msmigrate_nuclear_norm"), args)
    args = site.standard_args()
    if p_value not in (None, "fro"):
        args.insert(1, kwarg("ord", p) if args[1:] and args[1].keyword is not None or len(args) == 1 else cst.Arg(p))
    return site.call(site.record.target, args)


@_calls("input", "other")
def allclose(site):
    """torch.allclose returns a Python bool; MindSpore has isclose only."""
    call = site.call("mindspore.ops.isclose")
    return site.expr("bool({c}.all())", c=call)


def size_class(site):
    """torch.Size is a tuple subclass."""
    if not site.is_call:
        return cst.Name("tuple")
    return site.node.with_changes(func=cst.Name("tuple"))


def int32_index(value, site):
    """Index tensors some MindSpore CPU kernels accept only as int32 (IndexFill)."""
    return _astype(site, value, site.ref("mindspore.int32"))


@_calls(splats=True)
def sizes(site):
    """torch.zeros(2, 3) / zeros((2, 3)) / zeros(*shape) / zeros(2, *rest): MindSpore takes one
    shape argument. Starred arguments become a tuple display `(2, *rest)`."""
    stars = [a for a in site.unbound if a.star == "*"]
    if stars:
        elements = [cst.StarredElement(a.value) if a.star == "*" else cst.Element(a.value)
                    for a in site.node.args if a.keyword is None]
        site.unbound = [a for a in site.unbound if a.star != "*"]
        rest = {k: v for k, v in site.bound.items() if k != "size"}
        if len(elements) == 1:
            elements = [elements[0].with_changes(comma=cst.Comma())]
        site.bound = {"size": cst.Arg(cst.Tuple(elements)), **rest}
    size = site.bound.get("size")
    if "dtype" not in site.bound and size is not None and _may_be_empty(size.value):
        # MindSpore infers no dtype for an empty shape (ops.zeros(()) raises "Unsupported data
        # type"): torch's default, float32, is given where the shape may be () at run time
        site.bound["dtype"] = cst.Arg(site.ref("mindspore.float32"), keyword=cst.Name("dtype"),
                                      equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    return _trainable(site, _complex_normal(site) or site.call(site.record.target))


# the real dtype of each complex one: torch.randn draws both parts from N(0, 1/2)
_COMPLEX_PARTS = {"complex64": "float32", "cfloat": "float32", "complex128": "float64", "cdouble": "float64"}


def _complex_normal(site):
    """torch.randn(..., dtype=torch.complex64): MindSpore's randn draws real numbers only; the
    real and imaginary parts are two draws scaled to variance 1/2 each, as torch's are."""
    dtype = site.arg("dtype")
    part = _COMPLEX_PARTS.get(site.code(dtype).rsplit(".", 1)[-1]) if dtype is not None else None
    if site.record.torch != "torch.randn" or part is None:
        return None
    site.bound["dtype"] = site.bound["dtype"].with_changes(value=site.ref(f"mindspore.{part}"))
    return site.expr("{c}()({re} * 0.7071067811865476, {im} * 0.7071067811865476)", c="@mindspore.ops.Complex",
                     re=site.call(site.record.target), im=site.call(site.record.target))


def _may_be_empty(shape) -> bool:
    """Is this shape argument `()`, or another tensor's shape that may be (`x.shape`, `x.size()`,
    `x.shape[1:]`, `(*x.shape,)`)? A plain name is taken for an int (`torch.ones(dim)`)."""
    if isinstance(shape, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.StarredElement) and _may_be_empty(e.value) for e in shape.elements)
    if isinstance(shape, cst.Attribute):
        return shape.attr.value == "shape"
    if isinstance(shape, cst.Call) and isinstance(shape.func, cst.Attribute):
        return shape.func.attr.value == "size" and not shape.args
    if isinstance(shape, cst.Subscript):
        return _may_be_empty(shape.value) and any(isinstance(e.slice, cst.Slice) for e in shape.slice)
    return False


def type_info(site):
    """torch.finfo(d) / torch.iinfo(d) -> numpy's, which has the same attributes (eps, max, min,
    tiny, bits, resolution). torch.finfo() describes the default dtype, float32."""
    kind = site.qualname.rsplit(".", 1)[1]
    if not site.is_call:
        raise Unconvertible(f"{site.qualname} as a type: use numpy.{kind}", "manual")
    dtype = site.arg("type", site.ref("mindspore.float32"))
    return site.expr("{f}({c}({d}))", f="@numpy." + kind, c="@mindspore.dtype_to_nptype", d=dtype)



# ---- gradient modes ----------------------------------------------------------------------

def grad_mode(site):
    """no_grad / enable_grad / inference_mode / set_grad_enabled: MindSpore computes gradients only
    inside ms.grad / value_and_grad, so as a `with` item, decorator or statement they go away;
    kept as a value (`ctx = torch.no_grad()`) they become contextlib.nullcontext()."""
    out = no_effect_context(site)
    if out is not site.REMOVED:
        site.flag("review", f"{site.qualname} used as a value became contextlib.nullcontext(): MindSpore only "
                            f"computes gradients inside ms.grad / ms.value_and_grad")
    return out


# ---- svd -------------------------------------------------------------------------------

@_calls()
def svd(site):
    """ops.svd returns (S, U, V); torch.svd returns (U, S, V) and torch.linalg.svd (U, S, Vh).
    Converted where the result is unpacked into three names (`U, S, V = torch.svd(x)`): the
    names are swapped back by a statement after it."""
    _no_out(site)
    names = _unpacked_names(site.statement, site.node)
    if names is None:
        raise Unconvertible("ops.svd returns (S, U, V): convert by hand where the result is not "
                            "unpacked as `U, S, V = ...`", "manual")
    u, s, v = names
    x = site.arg("input" if site.has("input") else "A")
    linalg = site.qualname == "torch.linalg.svd"
    try:
        full = site.literal("full_matrices", True) if linalg else not site.literal("some", True)
        if not site.literal("compute_uv", True):
            raise Unconvertible("compute_uv=False: torch returns zero-filled U and V", "manual")
    except ValueError:
        raise Unconvertible("some / full_matrices / compute_uv are not literals", "manual") from None
    call = site.call("mindspore.ops.svd", [cst.Arg(x), kwarg("full_matrices", cst.Name(str(full)))])
    site.after(site.stmt(f"{u}, {s} = {s}, {u}"))
    if linalg:   # Vh = V transposed (conjugated for complex input)
        site.after(site.stmt(f"{v} = {{t}}({v}, -1, -2).conj()", t=site.ref("mindspore.ops.swapaxes")))
    return call


def _unpacked_names(stmt, node):
    """The three target names of `a, b, c = <node>`, else None."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    assign = stmt.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not assign.value.deep_equals(node):
        return None
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != 3:
        return None
    names = [e.value for e in target.elements]
    if not all(isinstance(n, cst.Name) for n in names):
        return None
    return [n.value for n in names]


def meshgrid(site):
    """torch.meshgrid([x, y]) / torch.meshgrid((x, y)): one list or tuple literal of tensors ->
    ops.meshgrid(x, y) (MindSpore's takes them as separate arguments; a list fails)."""
    args = list(site.node.args)
    positional = [a for a in args if a.keyword is None and not a.star]
    if len(positional) == 1 and isinstance(positional[0].value, (cst.List, cst.Tuple)) \
            and positional[0].value.elements \
            and not any(isinstance(e, cst.StarredElement) for e in positional[0].value.elements):
        first = positional[0]
        spread = [cst.Arg(e.value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                  for e in first.value.elements]
        spread[-1] = spread[-1].with_changes(comma=first.comma)
        k = args.index(first)
        site.node = site.node.with_changes(args=args[:k] + spread + args[k + 1:])
        site.unbound = [a for a in site.node.args if a.keyword is None]
    return site.call(site.record.target)


# ---- torch.special functions MindSpore composes from others -------------------------------

def _out_dropped(site) -> None:
    """out= is dropped and marked, as a record's reject = { out = ["None"] } does."""
    if not _is_none(site.arg("out")):
        site.flag("MSC105", f"{site.qualname}: out={site.code(site.arg('out'))} has no MindSpore "
                            f"equivalent (only None); argument dropped")


@_calls("input")
def ndtr(site):
    """torch.special.ndtr(x), the standard normal CDF: (1 + erf(x / sqrt(2))) / 2."""
    _out_dropped(site)
    return site.expr("(1 + {erf}({x} * 0.7071067811865476)) / 2", erf="@mindspore.ops.erf",
                     x=atom(site.arg("input")))


@_calls("input")
def ndtri(site):
    """torch.special.ndtri(p), the inverse of the standard normal CDF: sqrt(2) * erfinv(2p - 1)."""
    _out_dropped(site)
    return site.expr("1.4142135623730951 * {erfinv}(2 * {p} - 1)", erfinv="@mindspore.ops.erfinv",
                     p=atom(site.arg("input")))


@_calls("x")
def linalg_vander(site):
    """torch.linalg.vander(x, N=n): columns x**0, x**1, ... (increasing), over x's last axis (a batch
    of vectors too): x[..., None] ** arange(n), n defaulting to x.shape[-1]. An x that is not a
    plain name without N: ops.vander (decreasing powers, 1-D only) flipped."""
    from msmigrate.rules.transforms.common import repeatable
    x, n = site.arg("x"), site.arg("N")
    if n is None and repeatable(x):
        n = site.expr("{x}.shape[-1]", x=x)
    if n is None:
        return site.expr("{flip}({v}({x}), (-1,))", flip="@mindspore.ops.flip", v="@mindspore.ops.vander", x=x)
    return site.expr("{pow}({expand}({x}, -1), {arange}({n}))", pow="@mindspore.ops.pow",
                     expand="@mindspore.ops.unsqueeze", x=x, arange="@mindspore.ops.arange", n=n)


# ---- torch.f(x, ...) as the Tensor method x.f(...) --------------------------------------------

@_calls("input")
def as_method(site):
    """torch functions that are a Tensor method applied to their first argument (torch.abs_(x) is
    x.abs_(), torch.index_add(x, ...) is x.index_add(...)): converted through the method's record,
    so an in-place form writes back as `x.abs_()` does (`x[...] = ...` as a statement; marked
    where the call's value is used)."""
    name = site.record.torch.rsplit(".", 1)[1]
    copy = name.endswith("_copy") and not _method_known(site, name)
    if copy:
        # torch.expand_copy(x, ...) is x.expand(...) as a new tensor: MindSpore's results are
        # never views, so the copy form is the view method X of torch.X_copy (torch.index_copy,
        # a method of its own name, is not one)
        name = name.removesuffix("_copy")
    rec = site.rw.table.lookup(f"torch.Tensor.{name}")
    kept = rec is None and name in site.rw.table.verified_methods   # MindSpore's method of that name computes it
    if not kept and (rec is None or rec.status != "auto" or rec.transform == "tensor_methods.keep"):
        raise Unconvertible(f"torch.Tensor.{name} has no verified conversion", "review")
    _no_out(site)
    first = site.bound["input"]
    if copy:
        rest = _method_args(site)
    else:
        rest = [a for a in site.node.args if a is not first and not (a.keyword and a.keyword.value == "out")]
    if rest:
        rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    receiver = atom(first.value, attribute=True)
    call = cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(name)), args=rest)
    return call if kept else site.rw._apply(rec, rec.torch, call, receiver)


def _method_known(site, name: str) -> bool:
    return site.rw.table.lookup(f"torch.Tensor.{name}") is not None or name in site.rw.table.verified_methods


def _method_args(site) -> list[cst.Arg]:
    """The arguments after `input` of a *_copy function as its view method takes them: the
    method's `*sizes` / `*shape` take no keyword (x.view(size=...)), so the function's positional
    parameters are passed by position; its `drop`ped ones (expand_copy's implicit=) go."""
    params = site.record.args[:site.record.args.index("*")] if "*" in site.record.args else site.record.args
    kept = {name: a for name, a in site.bound.items() if name not in ("input", "out", *site.record.drop)}
    args = []
    for name in params[1:]:
        if name not in kept:
            break   # the ones after a parameter not given keep their keywords
        args.append(cst.Arg(kept.pop(name).value))
    return args + [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in kept.values()]


# ---- functions MindSpore spells as an expression --------------------------------------------

_OPPOSITE_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


@_calls("input")
def hermitian_fft(site):
    """torch.fft.ihfft(x) is conj(rfft(x)) and hfft(x) is irfft(conj(x)), each with the opposite
    normalization (so are their 2-D and n-D forms): computed so, because MindSpore 2.10's hfft/ihfft
    kernels return other values on every call after the first with the same input (measured on
    CPU), and it has no hfft2/hfftn."""
    name = site.qualname.rsplit(".", 1)[1]
    norm = site.arg("norm")
    try:
        value = "backward" if _is_none(norm) else literal_value(norm)
    except ValueError:
        value = None
    if value not in _OPPOSITE_NORM:
        raise Unconvertible(f"norm={site.code(norm)} is not a literal: write ops.conj(ops.rfft(...)) "
                            f"with the opposite norm", "review")
    _set(site, "norm", cst.SimpleString(repr(_OPPOSITE_NORM[value])))
    conj = site.ref("mindspore.ops.conj")
    real = "mindspore.ops." + _HERMITIAN[name]   # the same arguments (n or s, dim, norm)
    if name.startswith("i"):
        return cst.Call(func=conj, args=[cst.Arg(site.call(real))])
    _set(site, "input", cst.Call(func=conj, args=[cst.Arg(site.arg("input"))]))
    return site.call(real)


# torch.fft's Hermitian transforms and the real ones computing them (hfftn(x) = irfftn(conj(x)))
_HERMITIAN = {"hfft": "irfft", "ihfft": "rfft", "hfft2": "irfft2", "ihfft2": "rfft2", "hfftn": "irfftn",
              "ihfftn": "rfftn"}


@_calls("input")
def bitwise_not(site):
    """ops.invert is integer-only; torch's bitwise_not of a bool tensor is logical not."""
    from msmigrate.rules.transforms.dtypes import kind
    _no_out(site)
    x = site.arg("input")
    seen = kind(site.rw, site.rw.original_call.args[0].value) if site.rw.original_call is not None \
        and site.rw.original_call.args else None
    if seen == "bool":
        return site.expr("{f}({x})", f="@mindspore.ops.logical_not", x=x)
    if seen == "int" or not isinstance(x, (cst.Name, cst.Attribute)):
        return site.expr("{f}({x})", f="@mindspore.ops.invert", x=x)
    return site.expr("{n}({x}) if {x}.dtype == {b} else {i}({x})", n="@mindspore.ops.logical_not",
                     i="@mindspore.ops.invert", x=x, b="@mindspore.bool_")


def as_written(site):
    """The record's target called with the torch call's arguments exactly as written (`*shapes`
    stays a variadic call: torch.broadcast_shapes(a, b) -> np.broadcast_shapes(a, b))."""
    return site.node.with_changes(func=site.ref(site.record.target)) if site.is_call else site.ref(site.record.target)


@_calls("input")
def same_tensor(site):
    """torch.resolve_conj(x) / resolve_neg(x): MindSpore has no lazy conjugate or negative bit,
    its tensors already hold their values: x itself."""
    return site.arg("input")


@_calls("input")
def view_as_complex(site):
    """torch.view_as_complex(x) of a (..., 2) float tensor: ops.Complex of its two last-axis
    slices (a new tensor, not a view of x)."""
    x = atom(site.arg("input"), attribute=True)
    return site.expr("{f}()({x}[..., 0], {x}[..., 1])", f="@mindspore.ops.Complex", x=x)


@_calls("real", "imag")
def complex_(site):
    _no_out(site)
    return site.expr("{f}()({r}, {i})", f="@mindspore.ops.Complex", r=site.arg("real"), i=site.arg("imag"))


@_calls("input", "index")
def take(site):
    """torch.take indexes the flattened input (negative indices count from the end)."""
    _no_out(site)
    return site.expr("{x}.reshape(-1)[{i}]", x=atom(site.arg("input"), attribute=True), i=site.arg("index"))


@_calls("input", "indices")
def take_along_dim(site):
    _no_out(site)
    x, idx = site.arg("input"), site.arg("indices")
    if _is_none(site.arg("dim")):
        return site.expr("{x}.reshape(-1)[{i}.reshape(-1)]", x=atom(x, True), i=atom(idx, True))
    return site.expr("{f}({x}, {d}, {i})", f="@mindspore.ops.gather_elements", x=x, d=site.arg("dim"), i=idx)


@_calls("input", "dim", "index")
def select(site):
    """x.select(dim, i) is x[..., i, ...] at axis dim: a subscript for a literal dim."""
    try:
        dim = literal_value(site.arg("dim"))
    except ValueError:
        raise Unconvertible("select() with a dim that is not a literal", "review") from None
    if not isinstance(dim, int):
        raise Unconvertible("select() with a dim that is not an int", "review")
    lead = ":, " * dim if dim >= 0 else "..., "
    tail = "" if dim >= 0 else ", :" * (-dim - 1)
    return site.expr("{x}[" + lead + "{i}" + tail + "]", x=atom(site.arg("input"), True), i=site.arg("index"))


@_calls("input", "other")
def rsub(site):
    """torch.rsub(x, y, alpha=a) is y - a * x."""
    x = site.arg("input")
    if site.has("alpha"):
        x = site.expr("{x} * {a}", x=atom(x), a=atom(site.arg("alpha")))
    return site.expr("{f}({y}, {x})", f="@mindspore.ops.sub", y=site.arg("other"), x=x)


@_calls("s")
def scalar_tensor(site):
    """A 0-d tensor of torch's default dtype (float32) unless dtype= says otherwise."""
    dtype = site.arg("dtype")
    if _is_none(dtype):
        dtype = site.ref("mindspore.float32")
    return site.expr("{t}({s}, {d})", t="@mindspore.Tensor", s=site.arg("s"), d=dtype)


@_calls(splats=True)
def broadcast_tensors(site):
    return site.call("mindspore.numpy.broadcast_arrays", list(site.node.args))


@_calls("weight", "indices")
def embedding(site):
    """torch.embedding(weight, indices, ...): rows of weight (padding_idx / scale_grad_by_freq
    only change the gradient)."""
    return site.expr("{f}({w}, {i}, 0)", f="@mindspore.ops.gather", w=site.arg("weight"), i=site.arg("indices"))


def float64_kept(site):
    """MindSpore computes these in float32 whatever the input (ops.trapz, mindspore.numpy.corrcoef):
    a float64 input's result is cast back to float64, as torch keeps it."""
    first = site.record.args[0]
    x = site.arg(first)
    call = site.call(site.record.target)
    if x is None:
        return call
    if not isinstance(x, (cst.Name, cst.Attribute, cst.Subscript)):
        site.flag("review", f"{site.qualname}: MindSpore's result is float32 for a float64 input "
                            f"(torch: float64): cast it with .astype(ms.float64) there")
        return call
    return site.expr("{c}.astype({f}) if {x}.dtype == {f} else {c}", c=atom(call, True), x=x,
                     f="@mindspore.float64")


@_calls("input", "groups")
def channel_shuffle(site):
    """ops.channel_shuffle takes 4-D and more; torch 3-D and more: a trailing axis is added."""
    return site.expr("{f}({x}.expand_dims(-1), {g}).squeeze(-1)", f="@mindspore.ops.channel_shuffle",
                     x=atom(site.arg("input"), True), g=site.arg("groups"))


# ---- torch.linalg through mindspore.scipy.linalg (CPU kernels in 2.10) -------------------------

def _lower(site) -> cst.BaseExpression:
    """torch's UPLO ('L' default) as scipy's lower=."""
    uplo = site.arg("UPLO")
    if uplo is None:
        return cst.Name("True")
    try:
        value = literal_value(uplo)
    except ValueError:
        return site.expr("{u} == 'L'", u=uplo)
    return cst.Name("True" if value == "L" else "False")


def _fields_by_position(site, fields: tuple[str, ...]) -> None:
    """torch returns a named tuple, the converted call a plain tuple in the same order: a field
    read off the call (`torch.linalg.lu_factor(A).LU`) is read by position (as for a record's
    `fields`)."""
    if site.rw.original_call is not None:
        site.rw.result_fields[id(site.rw.original_call)] = tuple(fields)


@_calls("input")
def eigh(site):
    _no_out(site)
    _fields_by_position(site, ("eigenvalues", "eigenvectors"))
    return site.expr("{f}({a}, lower={l})", f="@mindspore.scipy.linalg.eigh", a=site.arg("input"), l=_lower(site))


@_calls("input")
def eigvalsh(site):
    _no_out(site)
    return site.expr("{f}({a}, lower={l}, eigvals_only=True)", f="@mindspore.scipy.linalg.eigh",
                     a=site.arg("input"), l=_lower(site))


@_calls("LU", "pivots", "B")
def lu_solve(site):
    """scipy's lu_solve takes 0-based pivots (torch's are 1-based)."""
    for name in ("left", "adjoint"):
        if site.has(name) and site.code(site.arg(name)) != ("True" if name == "left" else "False"):
            raise Unconvertible(f"lu_solve({name}=...) is not converted", "review")
    return site.expr("{f}(({lu}, {p} - 1), {b})", f="@mindspore.scipy.linalg.lu_solve", lu=site.arg("LU"),
                     p=atom(site.arg("pivots")), b=site.arg("B"))


@_calls("input", "B", "upper")
def solve_triangular(site):
    _no_out(site)
    left = site.arg("left")
    if left is not None and site.code(left) != "True":
        raise Unconvertible("solve_triangular(left=False): solve X A = B as (A^T X^T = B^T) by hand", "review")
    upper = site.arg("upper")
    try:
        lower = cst.Name("False" if literal_value(upper) else "True")
    except ValueError:
        lower = site.expr("not {u}", u=upper)
    unit = site.arg("unitriangular", cst.Name("False"))
    return site.expr("{f}({a}, {b}, lower={l}, unit_diagonal={u})", f="@mindspore.scipy.linalg.solve_triangular",
                     a=site.arg("input"), b=site.arg("B"), l=lower, u=unit)


@_calls("A")
def lu_factor(site):
    """torch.lu's conversion (msmigrate_lu): scipy's lu_factor per matrix, its 0-based pivots made
    torch's (LAPACK's) 1-based; both int32."""
    _no_out(site)
    _fields_by_position(site, ("LU", "pivots"))
    if site.has("pivot") and site.code(site.arg("pivot")) != "True":
        raise Unconvertible("lu_factor(pivot=False) is not converted", "review")
    # torch.lu's generated function: scipy's lu_factor one matrix of a batch at a time (2-D only)
    return site.expr("{f}({a})", f=generated_function(site, "msmigrate_lu"), a=site.arg("A"))


@_calls("A")
def lu(site):
    """(P, L, U) with A = P L U in both; scipy's P is int32, torch's has A's dtype."""
    _no_out(site)
    _fields_by_position(site, ("P", "L", "U"))
    if site.has("pivot") and site.code(site.arg("pivot")) != "True":
        raise Unconvertible("lu(pivot=False) is not converted", "review")
    return site.expr("(lambda P, L, U: (P.astype(L.dtype), L, U))(*{f}({a}))", f="@mindspore.scipy.linalg.lu",
                     a=site.arg("A"))


@_calls()
def with_info(site):
    """torch.linalg.*_ex: the result and an int32 `info` of zeros (MindSpore raises instead of
    reporting a failed factorisation)."""
    _no_out(site)
    first = site.record.args[0]
    if first not in site.bound:
        raise Unconvertible(f"missing {first}", "review")
    _fields_by_position(site, {"torch.linalg.inv_ex": ("inverse", "info"), "torch.linalg.cholesky_ex": ("L", "info"),
                        "torch.linalg.solve_ex": ("result", "info")}.get(site.record.torch, ("info",)))
    base = site.record.torch.removesuffix("_ex")   # the plain function's record converts the call
    rec = site.rw.table.lookup(base)
    args = [a for a in site.node.args if not (a.keyword and a.keyword.value == "check_errors")]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    value = site.rw._apply(rec, base, site.node.with_changes(args=args), None)
    return site.expr("{f}({a}, {v})", f=generated_function(site, "msmigrate_with_info"), a=site.arg(first), v=value)


@_calls("input", "k")
def kthvalue(site):
    """The k-th smallest along dim (default -1) and its index: ops.sort, then the (k-1)-th slice
    (int64 indices as torch's)."""
    _no_out(site)
    _fields_by_position(site, ("values", "indices"))
    keep = site.arg("keepdim")
    if keep is not None and site.code(keep) not in ("True", "False"):
        raise Unconvertible("kthvalue(keepdim=) is not a literal", "review")
    return site.expr("{f}({x}, {k}, {d}, {keep})", f=generated_function(site, "msmigrate_kthvalue"), x=site.arg("input"),
                     k=site.arg("k"), d=site.arg("dim", cst.parse_expression("-1")), keep=keep or cst.Name("False"))


@_calls("input")
def matrix_rank(site):
    """Singular values above max(m, n) * eps * the largest (torch's default tolerance)."""
    _no_out(site)
    if any(site.has(n) for n in ("atol", "rtol", "tol", "hermitian")):
        raise Unconvertible("matrix_rank with atol/rtol/tol/hermitian is not converted", "review")
    return site.expr("{f}({a})", f=generated_function(site, "msmigrate_matrix_rank"), a=site.arg("input"))


def stack(site):
    """`torch.stack([data[i:i + n] for i in ix])` (a GPT's get_batch): one slice per row is one
    PyNative op each (10-50 ms on CPU: an evaluation loop of such batches timed out), so rows of
    a fixed length become one gather, `data[ix.reshape(-1, 1) + ops.arange(0, n)]`: the same rows
    while every slice is within `data` (torch would shorten one that is not, then fail to stack)."""
    gather = _rows_gather(site)
    return gather if gather is not None else site.call(site.record.target)


def _terms(expr) -> list:
    """The operands of a chain of `+`."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) and not expr.lpar:
        return _terms(expr.left) + _terms(expr.right)
    return [expr]


def _offset(bound, index: str, site) -> str | None:
    """`i + a + b` -> "a + b" ("0" for `i`); None unless `i` is one term of a sum."""
    terms = _terms(bound)
    at = [k for k, t in enumerate(terms) if isinstance(t, cst.Name) and t.value == index]
    rest = [t for k, t in enumerate(terms) if k not in at]
    if len(at) != 1 or any(_names(t, index) for t in rest):
        return None
    return " + ".join(site.code(t) for t in rest) or "0"


def _names(node, name: str) -> bool:
    if isinstance(node, cst.Name):
        return node.value == name
    return any(_names(child, name) for child in node.children)


def _rows_gather(site) -> cst.BaseExpression | None:
    rows = site.arg("tensors")
    if not isinstance(rows, (cst.ListComp, cst.GeneratorExp)) or not _is_none(site.arg("out")):
        return None
    try:
        if site.literal("dim", 0) != 0:
            return None
    except ValueError:
        return None
    loop, elt = rows.for_in, rows.elt
    if loop.ifs or loop.inner_for_in is not None or loop.asynchronous is not None \
            or not isinstance(loop.target, cst.Name):
        return None
    index = loop.target.value
    if not (isinstance(elt, cst.Subscript) and len(elt.slice) == 1 and isinstance(elt.slice[0].slice, cst.Slice)):
        return None
    part = elt.slice[0].slice
    if part.step is not None or part.lower is None or part.upper is None or _names(elt.value, index) \
            or _names(loop.iter, index):
        return None
    start, stop = _offset(part.lower, index, site), _offset(part.upper, index, site)
    if start is None or stop is None:
        return None
    ix = loop.iter
    if isinstance(ix, cst.Call) and dotted(ix.func) == "range":
        ix = site.expr("list({r})", r=ix)
    return site.expr("{data}[{T}({ix}, {i64}).reshape(-1, 1) + {arange}(" + start + ", " + stop + ")]",
                     data=elt.value, T="@mindspore.Tensor", ix=ix, i64="@mindspore.int64",
                     arange="@mindspore.ops.arange")


# ---- functions MindSpore 2.10 lacks on CPU: generated (rules/generated/functions.py) ----------

def generated_function(site, name: str) -> cst.Name:
    """rules/generated/functions.py's function `name`, with the functions it calls, copied into
    the converted file: a reference to it."""
    import inspect
    import textwrap

    from msmigrate.rules.generated import functions
    for function in _generated_needs(functions, name):
        func = site.rw.imports.define(function.__name__,
                                      _module_imports(site, textwrap.dedent(inspect.getsource(function))))
    return func


def generated(site):
    """rules/generated/functions.py's msmigrate_<torch name>, copied into the file (with the
    functions it calls) and called with torch's arguments under torch's names; a bare reference
    (`f = torch.fmin`) is that function too."""
    return call_generated(site, "msmigrate_" + site.record.torch.rsplit(".", 1)[1])


def call_generated(site, name: str):
    """rules/generated/functions.py's function `name`, copied into the file and called with
    torch's arguments under torch's names (a bare reference: the function)."""
    func = generated_function(site, name)
    if not site.is_call:
        return func
    if site.unbound:
        raise Unconvertible("arguments passed through * / ** or beyond the torch signature: "
                            "convert by hand", "review")
    return site.call(func)


def call_kl_div(site):
    """F.kl_div -> msmigrate_kl_div (the generated torch.kl_div's function, under F's name too)."""
    return call_generated(site, "msmigrate_kl_div")


_CELL_NAMES = {"ms": "mindspore", "ops": "mindspore.ops", "nn": "mindspore.nn"}   # in CELLS, the file's aliases


def generated_cell(site):
    """A torch layer MindSpore 2.10 lacks: rules/generated/functions.py's CELLS class of its name
    (an nn.Cell under the file's alias), with the functions it calls, built with torch's
    arguments."""
    import re

    from msmigrate.rules.generated import functions
    name = "msmigrate_" + site.record.torch.rsplit(".", 1)[1]
    source = functions.CELLS[name].strip("\n") + "\n"
    for called in dict.fromkeys(re.findall(r"\b(msmigrate_\w+)\(", source)):
        if hasattr(functions, called):
            generated_function(site, called)
    cls = site.rw.imports.define(name, with_file_names(site.rw.imports, source, _CELL_NAMES))
    if not site.is_call:
        return cls
    if site.unbound:
        raise Unconvertible("arguments passed through * / ** or beyond the torch signature: "
                            "convert by hand", "review")
    return site.call(cls)


def embedding_layer(site):
    """nn.Embedding given padding_idx: msmigrate_Embedding (rules/generated/functions.py), whose
    padding row gets no gradient as torch's (MindSpore's own trains it); without, MindSpore's."""
    if site.is_call and not site.unbound and "padding_idx" in site.bound \
            and not _is_none(site.bound["padding_idx"].value):
        return generated_cell(site)
    if not site.is_call:
        return site.ref(site.record.target)
    return site.call(site.record.target)


_GENERATED_IMPORTS = {"ms": ("import mindspore as ms", "mindspore"), "ops": ("from mindspore import ops", "mindspore.ops"),
                      "linalg": ("from mindspore.scipy import linalg", "mindspore.scipy.linalg")}


def _module_imports(site, source: str) -> str:
    """A generated function's own MindSpore imports, made the file's (MindSpore's graph mode
    compiles no import statement): the lines go, the names become the file's references."""
    import re
    names = {}
    for short, (line, module) in _GENERATED_IMPORTS.items():
        found = re.compile(rf"^[ \t]*{re.escape(line)}[ \t]*\n", re.M)
        if found.search(source):
            source = found.sub("", source)
            names[short] = module
    return with_file_names(site.rw.imports, source, names)


def _generated_needs(module, name: str, seen=None) -> list:
    """The function `name` of `module` after the module's msmigrate_* functions it calls."""
    import inspect
    import re
    seen = [] if seen is None else seen
    function = getattr(module, name)
    for called in re.findall(r"\b(msmigrate_\w+)\(", inspect.getsource(function)):
        if called != name and hasattr(module, called) and getattr(module, called) not in seen:
            _generated_needs(module, called, seen)
    if function not in seen:
        seen.append(function)
    return seen


# ---- small argument fixes (the per-API suite's functions_docs family) --------------------

def list_to_tuple(value, site):
    """A list literal -> a tuple literal: MindSpore's tile / axis / AffineGrid / MaxUnpool
    arguments take tuples and reject lists, which torch takes alike."""
    if isinstance(value, cst.List):
        elements = [e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in value.elements]
        if len(elements) == 1:   # (x,) needs its comma
            elements[0] = elements[0].with_changes(comma=cst.Comma())
        return cst.Tuple(elements)
    return value


def cartesian_prod(site):
    """torch.cartesian_prod of ONE tensor is that 1-D tensor; ops.cartesian_prod gives (n, 1)."""
    args = list(site.node.args)
    if len(args) == 1 and not args[0].star:
        return site.expr("{x}.copy()", x=atom(args[0].value, attribute=True))
    return site.call(site.record.target)


def window(site):
    """A window function: MindSpore 2.10 returns a float64 window of length 1 whatever the dtype
    asked (hann, hamming, kaiser); where the length is not visibly above 1 the result is cast."""
    call = factory(site)
    try:
        n = site.literal("window_length")
        if isinstance(n, int) and not isinstance(n, bool) and n > 1:
            return call
    except ValueError:
        pass
    dtype = site.arg("dtype")
    if dtype is None or _is_none(dtype):
        dtype = site.ref("mindspore.float32")
    return site.expr("{c}.astype({d})", c=call, d=dtype)


def svd_any(site):
    """torch.svd / torch.linalg.svd: unpacked into three names, ops.svd with the names swapped
    back (svd); any other use (`torch.linalg.svd(x).S`, `[1]`) calls a generated function that
    returns torch's order."""
    if _unpacked_names(site.statement, site.node) is not None:
        try:
            return svd(site)
        except Unconvertible:
            pass
    if site.unbound:
        raise Unconvertible("arguments passed through * / **: convert by hand", "review")
    name = "msmigrate_linalg_svd" if site.qualname == "torch.linalg.svd" else "msmigrate_svd"
    return site.call(generated_function(site, name))


def _is_false(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


# ---- torch.as_strided / torch.asarray (tests/api_suite/cases/spectral_strided.toml) ------------

# torch methods and functions whose result views its input's storage with other strides than a
# fresh contiguous tensor's (t, transpose...), or at an offset into it (x[1:], x[0], narrow along 0)
_STRIDED_VIEWS = {"t", "transpose", "permute", "swapaxes", "swapdims", "movedim", "moveaxis", "diagonal", "expand",
                  "expand_as", "unfold", "as_strided", "view_as_real", "view_as_complex", "adjoint", "conj",
                  "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "T", "mT", "H", "mH",
                  "real", "imag", "narrow", "select"}
_SAME_VIEWS = {"view", "view_as", "reshape", "flatten", "squeeze", "unsqueeze", "detach", "requires_grad_",
               "ravel", "type_as", "to", "float", "double", "long", "int", "half", "bool"}


def _storage_view(site, expr, depth: int = 0) -> str | None:
    """How the original (torch) expression `expr` views another tensor's storage: "strided" (a
    transposed, expanded, column-sliced... view), "offset" (contiguous, from an offset: x[1:],
    x[0]), or None (a fresh tensor, or not visible: a parameter, a name bound elsewhere)."""
    from msmigrate.rules.transforms.dtypes import _NOT_FOUND, _UNKNOWN, _straight_line_value
    if depth > 8:
        return None
    if isinstance(expr, cst.Name):
        value = _straight_line_value(site.rw, expr.value)
        return None if value is _UNKNOWN or value is _NOT_FOUND else _storage_view(site, value, depth + 1)
    if isinstance(expr, cst.Attribute):
        return "strided" if expr.attr.value in _STRIDED_VIEWS else None
    if isinstance(expr, cst.Subscript):
        if _storage_view(site, expr.value, depth + 1) == "strided":
            return "strided"   # a piece of a view, or of x.chunk(2) / torch.split(...)
        elements = list(expr.slice)
        while len(elements) > 1 and isinstance(elements[-1].slice, cst.Slice) and \
                all(getattr(elements[-1].slice, p) is None for p in ("lower", "upper", "step")):
            elements.pop()   # x[1:, :] is x[1:]
        first = elements[0].slice
        if len(elements) == 1 and isinstance(first, cst.Slice) and first.step is None:
            return "offset"
        if len(elements) == 1 and isinstance(first, cst.Index) and not isinstance(first.value, cst.Ellipsis) \
                and not (isinstance(first.value, cst.Name) and first.value.value == "None"):
            return "offset"   # x[0] (a tensor index makes a copy: taken for an offset view alike)
        return "strided"
    if isinstance(expr, cst.Call):
        name = expr.func.attr.value if isinstance(expr.func, cst.Attribute) else None
        q = site.rw.scopes.resolve(expr.func)
        if q and q.startswith("torch.") and "." not in q[len("torch."):]:
            name = q[len("torch."):]
            inner = expr.args[0].value if expr.args else None
        elif isinstance(expr.func, cst.Attribute):
            inner = expr.func.value
        else:
            return None
        if name in ("narrow", "select"):
            args = expr.args[1:] if q and q.startswith("torch.") else expr.args
            dim = args[0].value if args else None
            zero = isinstance(dim, cst.Integer) and dim.value == "0"
            return "offset" if zero and _storage_view(site, inner, depth + 1) != "strided" else "strided"
        if name in _STRIDED_VIEWS:
            return "strided"
        if name in _SAME_VIEWS and inner is not None:
            return _storage_view(site, inner, depth + 1)
    return None


def as_strided(site):
    """torch.as_strided / Tensor.as_strided: msmigrate_as_strided gathers from the flattened
    input, which is torch's storage for a contiguous tensor of its own. Where the input is visibly
    a view of another tensor (transposed, expanded, column-sliced: other strides; or sliced along
    dim 0 with an explicit storage_offset, which torch counts from the storage's start), torch
    reads memory the conversion does not see: marked."""
    from msmigrate.engine import _bind
    from msmigrate.names import is_source
    original = site.rw.original_call
    if original is not None:
        args = list(original.args)
        if isinstance(original.func, cst.Attribute) and not is_source(site.rw.scopes.resolve(original.func)):
            args.insert(0, cst.Arg(original.func.value))   # x.as_strided(...) converted as torch.as_strided(x, ...)
        bound = _bind(site.record, args)[0]
        view = _storage_view(site, bound["input"].value) if "input" in bound else None
        explicit = "storage_offset" in bound and not _is_none(bound["storage_offset"].value)
        if view == "strided" or (view == "offset" and explicit):
            site.flag("review", f"{site.qualname}: the input is a view of another tensor's storage ("
                                f"{'other strides' if view == 'strided' else 'at an offset'}): torch reads that "
                                f"storage, the conversion the input's own elements in order; check the result")
    return call_generated(site, "msmigrate_as_strided")   # torch.as_strided_copy too (rules/aliases.toml)


def asarray(site):
    """torch.asarray(obj, dtype=...) as torch.as_tensor (factory): a range becomes a list, literal
    complex data without dtype is complex64 (torch's default complex)."""
    obj = site.arg("obj")
    if obj is not None and _is_range(site, obj):
        _set(site, "obj", site.expr("list({r})", r=obj))
    if obj is not None and _is_none(site.arg("dtype")) and _has_complex(obj):
        site.bound.pop("dtype", None)
        return _trainable(site, site.call(site.record.target, [*site.standard_args(),
                                                               kwarg("dtype", site.ref("mindspore.complex64"))]))
    return _trainable(site, site.call(site.record.target))


def host_generated(site):
    """A generated function computed on the host (NumPy: torch.frombuffer): in a Cell's compiled
    method (construct and its helpers), marked: it runs in PyNative mode only, graph mode
    compiles no asnumpy."""
    from msmigrate.rules.transforms.tensor_methods import _in_cell_method
    if _in_cell_method(site):
        site.flag("review", f"{site.qualname}: computed on the host (NumPy): it runs in PyNative mode, "
                            f"not in a compiled construct (graph mode, ms.jit)")
    return generated(site)
