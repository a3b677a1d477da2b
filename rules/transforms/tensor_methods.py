"""torch.Tensor methods with irregular MindSpore 2.10 (CPU) equivalents.

Generated code must stay idempotent: converting it again must change nothing, so results are
written with `ops.*` functions or with methods that have no record (`tile`, `astype`, `shape`).
"""
from __future__ import annotations

import ast
import functools
import re

import libcst as cst
import libcst.matchers as m

from msmigrate.engine import Unconvertible, creates_cell
from msmigrate.rules.bare_tensors import requires_grad_call
from msmigrate.rules.generated import cells
from msmigrate.rules.transforms.common import fixed_answer, repeatable
from msmigrate.rules.transforms.torch_functions import generated_function

DTYPE_NAMES = {
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8", "int16",
    "short", "int32", "int", "int64", "long", "uint8", "bool", "bool_", "complex64", "complex128",
    "cfloat", "cdouble", "uint16", "uint32", "uint64",
}
# dtypes MindSpore lacks, by their spelling (float8_e4m3fn, uint1, qint8, complex32, bits16)
_DTYPE_SPELLING = re.compile(r"(?:b?float|u?int|q?u?int|complex|bits)\d+(?:_\w+)?")
# `x.type('torch.FloatTensor')` spellings -> MindSpore dtypes
TENSOR_TYPE_DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32",
    "ShortTensor": "int16", "CharTensor": "int8", "ByteTensor": "uint8", "BoolTensor": "bool_",
}
TUPLE_RESULT_FIELDS = ("values", "indices")


def torch_method(transform):
    """Leave calls alone that torch's Tensor method cannot be: a keyword it does not take or too
    many positional arguments (`line.split(maxsplit=1)`, `names.sort(key=len)`)."""
    @functools.wraps(transform)
    def guarded(site):
        known = {a.lstrip("*") for a in site.record.args if a != "*"}
        varargs = any(a.startswith("*") and a != "*" for a in site.record.args)
        if any(name not in known for name in site.bound) or (
                site.unbound and not varargs and any(not a.star for a in site.unbound)):
            return site.node
        return transform(site)
    return guarded


# ---- where the call stands (reads the rewriter's statement frames) ---------------------------
def _is_statement(site) -> bool:
    """True when the call is a whole expression statement of its own: `x.add_(1)`."""
    stmt = site.statement
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)):
        return False
    call = stmt.body[0].value
    return (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == site.record.method_name
            and site.rw._pos(call) == site.rw.pos_stack[-1])


def _result_fields_used(site) -> list[str]:
    """`.values` / `.indices` read directly off this call (torch's named tuple)."""
    stmt = site.statement
    if stmt is None:
        return []
    method = site.record.method_name
    found = m.findall(stmt, m.Attribute(value=m.Call(func=m.Attribute(attr=m.Name(method))),
                                        attr=m.OneOf(*[m.Name(f) for f in TUPLE_RESULT_FIELDS])))
    here = site.rw.pos_stack[-1]
    return [a.attr.value for a in found if site.rw._pos(a.value) == here]


def _replace_statement(site, stmt: cst.BaseStatement):
    """Put `stmt` in place of the expression statement the call is (keeps its end-of-line comment)."""
    original = site.statement
    if isinstance(original, cst.SimpleStatementLine) and isinstance(stmt, cst.SimpleStatementLine):
        stmt = stmt.with_changes(trailing_whitespace=original.trailing_whitespace)
    site.before(stmt)
    return site.REMOVED


def _convert_as(site, method: str, args=None) -> cst.BaseExpression:
    """`receiver.method(args)` converted through the record of torch.Tensor.<method>, if any."""
    call = site.node.with_changes(func=site.node.func.with_changes(attr=cst.Name(method)),
                                  args=site.node.args if args is None else args)
    rec = site.rw.table.lookup(f"torch.Tensor.{method}")
    if rec is None:
        return call
    return site.rw._apply(rec, rec.torch, call, site.receiver)


def _literal(site, name, default=None):
    try:
        return site.literal(name, default)
    except ValueError:
        return _NOT_LITERAL


_NOT_LITERAL = object()


def _value(node: cst.BaseExpression):
    """The Python value of a literal node (ValueError otherwise)."""
    return ast.literal_eval(cst.Module([]).code_for_node(node))


def _int_node(v: int) -> cst.BaseExpression:
    return cst.parse_expression(repr(v))


def _as_tuple(site, value: cst.BaseExpression, what: str) -> cst.BaseExpression:
    """An int or a sequence of ints as a tuple (MindSpore's tile/flip reject ints and lists)."""
    if isinstance(value, cst.Tuple):
        return value
    if isinstance(value, cst.List):
        return cst.Tuple([e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in value.elements]
                         if len(value.elements) == 1 else list(value.elements))
    try:
        lit = _value(value)
    except (ValueError, TypeError, SyntaxError):
        lit = None
    if isinstance(lit, int) and not isinstance(lit, bool):
        return cst.parse_expression(f"({lit},)")
    site.flag("review", f"{site.qualname}: {site.code(value)} is passed as the {what} tuple "
                        f"(MindSpore needs a tuple, not an int or a list)")
    return value


# ---- shape ---------------------------------------------------------------------------------------
@torch_method
def size(site):
    """`x.size()` -> `x.shape`; `x.size(d)` -> `x.shape[d]`."""
    if site.unbound:
        raise Unconvertible("size() with unpacked arguments")
    dim = site.arg("dim")
    if dim is None:
        return site.expr("{r}.shape", r=site.receiver)
    return site.expr("{r}.shape[{d}]", r=site.receiver, d=dim)


@torch_method
def element_size(site):
    return site.expr("{r}.itemsize", r=site.receiver)


@torch_method
def storage(site):
    """`x.storage()` -> `x.reshape(-1)` (`v.data.storage().tolist()`, devnag's GAN reading a loss)."""
    site.flag("review", f"{site.qualname}: {site.code(site.receiver)}.reshape(-1) holds the tensor's own "
                        f"elements; torch's storage of a view holds all of its base tensor's")
    return site.expr("{r}.reshape(-1)", r=site.receiver)


@torch_method
def repeat(site):
    """`x.repeat(a, b)` / `x.repeat((a, b))` -> `x.tile((a, b))`."""
    reps = site.arg("repeats")
    if reps is None or any(a.star for a in site.unbound):
        raise Unconvertible("repeat() without literal repeat counts")
    return site.expr("{r}.tile({t})", r=site.receiver, t=_as_tuple(site, reps, "repeats"))


@torch_method
def flip(site):
    dims = site.arg("dims")
    if dims is None or any(a.star for a in site.unbound):
        raise Unconvertible("flip() without literal dims")
    return site.expr("{f}({r}, {t})", f="@mindspore.ops.flip", r=site.receiver,
                     t=_as_tuple(site, dims, "dims"))


# ---- new tensors like this one ----------------------------------------------------------------------
def _dtype_of(site) -> cst.BaseExpression:
    return site.arg("dtype") or site.expr("{r}.dtype", r=site.receiver)


@torch_method
def new_filled(site):
    """new_zeros/new_ones/new_empty/new_full(size, ...) keep the receiver's dtype."""
    method = site.record.method_name
    size_ = site.arg("size")
    if size_ is None or any(a.star for a in site.unbound):
        raise Unconvertible(f"{method}() without a size")
    if site.has("requires_grad"):
        site.flag("review", f"{site.qualname}: requires_grad= dropped (MindSpore differentiates "
                            f"what grad/value_and_grad are given)")
    dtype = _dtype_of(site)
    if method == "new_full":
        if not site.has("fill_value"):
            raise Unconvertible("new_full() without a fill value")
        return site.expr("{f}({s}, {v}, dtype={d})", f="@mindspore.ops.full", s=size_,
                         v=site.arg("fill_value"), d=dtype)
    fn = {"new_zeros": "zeros", "new_empty": "zeros", "new_empty_strided": "zeros", "new_ones": "ones"}[method]
    return site.expr("{f}({s}, {d})", f=f"@mindspore.ops.{fn}", s=size_, d=dtype)


@torch_method
def new_tensor(site):
    data = site.arg("data")
    if data is None:
        raise Unconvertible("new_tensor() without data")
    return site.expr("{T}({v}, dtype={d})", T="@mindspore.Tensor", v=data, d=_dtype_of(site))


# ---- reductions ------------------------------------------------------------------------------------
@torch_method
def median(site):
    """Without dim torch reduces everything and returns a tensor; MindSpore reduces the last axis
    and returns (values, indices). With dim both return (values, indices)."""
    fn = f"@mindspore.ops.{site.record.method_name}"
    if not site.has("dim"):
        return site.expr("{f}({r}.reshape(-1))[0]", f=fn, r=site.receiver)
    keep = site.arg("keepdim", cst.Name("False"))
    _flag_result_fields(site)
    return site.expr("{f}({r}, {d}, {k})", f=fn, r=site.receiver, d=site.arg("dim"), k=keep)


@torch_method
def std_var(site):
    """torch: unbiased (correction=1) unless `unbiased=False` / `correction=`; MindSpore: ddof=0.
    Old torch signature `x.std(False)` passes `unbiased` first."""
    if _visibly_function(site):   # x.std(dim=0) of a visibly 0-d x
        return _as_function(site, "torch." + site.record.method_name)
    dim = site.arg("dim")
    unbiased = site.arg("unbiased")
    if dim is not None and site.bound["dim"].keyword is None:
        try:
            first = site.literal("dim")
        except ValueError:
            first = None
        if isinstance(first, bool):         # x.std(False): the old (unbiased) overload
            dim, unbiased = None, dim
    if site.has("correction"):
        ddof = site.arg("correction")
    elif unbiased is not None:
        u = _literal(site, "unbiased") if site.has("unbiased") else _literal(site, "dim")
        if isinstance(u, bool):
            ddof = _int_node(int(u))
        else:
            ddof = site.expr("int({u})", u=unbiased)
    else:
        ddof = _int_node(1)
    parts = ["{r}"]
    nodes = dict(r=site.receiver, ddof=ddof)
    if dim is not None:
        parts.append("axis={d}")
        nodes["d"] = dim
    parts.append("ddof={ddof}")
    if site.has("keepdim"):
        parts.append("keepdims={k}")
        nodes["k"] = site.arg("keepdim")
    fn = f"@mindspore.ops.{site.record.method_name}"
    return site.expr("{f}(" + ", ".join(parts) + ")", f=fn, **nodes)


@torch_method
def norm(site):
    """torch Tensor.norm(p) with a numeric p (or 'fro') is a vector norm over `dim` (all elements
    when absent); MindSpore's Tensor.norm is linalg.norm (a matrix norm on 2-D input)."""
    if _visibly_function(site):   # x.norm(dim=0) of a visibly 0-d x
        return _as_function(site, "torch.norm")
    p = _literal(site, "p", 2)
    if p == "fro":
        p = 2
    if p is _NOT_LITERAL or not isinstance(p, (int, float)):
        raise Unconvertible(f"norm(p={site.code(site.arg('p'))}): only numeric p and 'fro' "
                            f"map to ops.vector_norm")
    if site.has("dtype"):
        raise Unconvertible("norm(dtype=) is not converted")
    parts, nodes = ["{r}"], dict(r=site.receiver)
    if p != 2:
        parts.append("{p}")
        nodes["p"] = site.arg("p") if site.arg("p") is not None else _int_node(p)
    if site.has("dim"):
        parts.append("axis={d}")
        nodes["d"] = site.arg("dim")
    if site.has("keepdim"):
        parts.append("keepdims={k}")
        nodes["k"] = site.arg("keepdim")
    return site.expr("{f}(" + ", ".join(parts) + ")", f="@mindspore.ops.vector_norm", **nodes)


@torch_method
def round_(site):
    """Round's CPU kernel only supports decimals=0: scale, round, unscale (what torch does)."""
    if not site.has("decimals"):
        return site.expr("{f}({r})", f="@mindspore.ops.round", r=site.receiver)
    d = _literal(site, "decimals")
    if d == 0:
        return site.expr("{f}({r})", f="@mindspore.ops.round", r=site.receiver)
    scale = cst.parse_expression(repr(10.0 ** d)) if isinstance(d, int) else \
        site.expr("10.0 ** {d}", d=site.arg("decimals"))
    return site.expr("{f}({r} * {s}) / {s}", f="@mindspore.ops.round", r=site.receiver, s=scale)


def _flag_result_fields(site) -> None:
    used = _result_fields_used(site)
    if used and not site.record.fields:   # with `fields` the engine reads them by position
        raise Unconvertible(f".{used[0]} of the result: MindSpore returns a plain tuple "
                            f"(values, indices); use [0] / [1]")


@torch_method
def tuple_result(site):
    """topk: same arguments, but a plain tuple (no .values/.indices) with int32 indices."""
    _flag_result_fields(site)
    return site.node.with_changes(args=site.standard_args())


@torch_method
def max_min(site):
    """`x.max()` / `x.max(dim=d, keepdim=k)` are the same in MindSpore (the dim as a keyword: a
    positional one means numpy's axis under @ms.jit, values only); `x.max(other=y)` (elementwise)
    is ops.maximum. A non-literal positional argument is kept as a dim (a tensor there fails
    loudly in MindSpore; a dim taken for a tensor would not) and flagged unless named like one."""
    from msmigrate.rules.transforms.dtypes import kind
    method = site.record.method_name
    other = site.arg("other")
    first = site.bound.get("dim")
    if kind(site.rw, site.original_receiver) != "bool" and _visibly_function(site):
        return _as_function(site, "torch." + method)   # x.max(1) of a visibly empty x
    if kind(site.rw, site.original_receiver) == "bool":
        if not site.bound:
            return _as_function(site, "torch." + method)   # its record reduces a bool tensor in int32
        if site.has("dim") and other is None:
            site.flag("review", f"{site.qualname}(dim) of a bool tensor: MindSpore has no bool kernel; "
                                f"reduce x.astype(ms.int32) and cast the values back to bool")
    if other is None and first is not None and first.keyword is None and not site.has("keepdim"):
        lit = _literal(site, "dim")
        if lit is _NOT_LITERAL:
            _check_dim_name(site, first.value)
        elif not isinstance(lit, int):
            other = first.value
    if other is not None:
        fn = "@mindspore.ops.maximum" if method == "max" else "@mindspore.ops.minimum"
        return site.expr("{f}({r}, {o})", f=fn, r=site.receiver, o=other)
    return site.node.with_changes(args=site.standard_args())   # `.values` off it: by position (fields)


def _check_dim_name(site, value) -> None:
    name = site.code(value).rsplit(".", 1)[-1].lower()
    if isinstance(value, (cst.Name, cst.Attribute)) and (
            name in ("d", "i", "j", "k", "n", "ax") or "dim" in name or "axis" in name):
        return
    fn = "maximum" if site.record.method_name == "max" else "minimum"
    site.flag("review", f"{site.qualname}: {site.code(value)} is taken as a dim; if it is a "
                        f"tensor (elementwise {site.record.method_name}) use ops.{fn}")


@torch_method
def bincount(site):
    """MindSpore counts in float32; torch returns int64 counts (weights' dtype with weights)."""
    args = [cst.Arg(site.receiver), *site.standard_args()]
    call = cst.Call(func=site.ref("mindspore.ops.bincount"), args=args)
    if site.has("weights"):
        return call
    return site.expr("{c}.astype({i})", c=call, i="@mindspore.int64")


def _int32(site, index):
    return site.expr("{i}.astype({t})", i=index, t="@mindspore.int32")


@torch_method
def index_add(site):
    index, source = site.arg("index"), site.arg("source")
    if index is None or source is None or not site.has("dim"):
        raise Unconvertible("index_add() needs dim, index and source")
    if site.has("alpha"):
        source = site.expr("{s} * {a}", s=source, a=site.arg("alpha"))
    return site.expr("{f}({r}, {i}, {s}, {d})", f="@mindspore.ops.index_add", r=site.receiver,
                     i=_int32(site, index), s=source, d=site.arg("dim"))


@torch_method
def index_fill(site):
    index = site.arg("index")
    if index is None or not site.has("dim") or not site.has("value"):
        raise Unconvertible("index_fill() needs dim, index and value")
    return site.expr("{f}({r}, {d}, {i}, {v})", f="@mindspore.ops.index_fill", r=site.receiver,
                     d=site.arg("dim"), i=_int32(site, index), v=site.arg("value"))


@torch_method
def scatter(site):
    """MindSpore's Tensor.scatter ignores `reduce`: reduce='add' -> ops.tensor_scatter_elements(...,
    'add'), 'multiply' -> msmigrate_scatter_reduce(..., 'prod')."""
    if not site.has("reduce"):
        value = site.arg("src")
        if value is not None and _is_number(value) and isinstance(_value(value), int):
            # the ScatterValue CPU kernel rejects an int value: scatter a tensor of the value in
            # the receiver's dtype (a float value where the receiver is an expression: float
            # receivers are the common case, an int one fails loudly)
            if repeatable(site.receiver):
                src = site.expr("{f}({i}, {v}, dtype={r}.dtype)", f="@mindspore.ops.full_like",
                                i=site.arg("index"), v=value, r=site.receiver)
            else:
                src = cst.parse_expression(repr(float(_value(value))))
            return site.expr("{r}.scatter({d}, {i}, {s})", r=site.receiver, d=site.arg("dim"),
                             i=site.arg("index"), s=src)
        if value is not None and not _is_number(value):
            site.bound["src"] = site.bound["src"].with_changes(value=leading_src(site, value, site.arg("index")))
        return site.node.with_changes(args=site.standard_args())
    reduce = _literal(site, "reduce")
    if reduce not in ("add", "multiply"):
        raise Unconvertible(f"scatter(reduce={site.code(site.arg('reduce'))}): torch takes 'add' or "
                            f"'multiply'")
    src = site.arg("src")
    if src is None:
        raise Unconvertible("scatter(reduce=) needs a src tensor")
    if _is_number(src):
        src = site.expr("{f}({i}, {v}, dtype={r}.dtype)", f="@mindspore.ops.full_like",
                        i=site.arg("index"), v=src, r=site.receiver)
    # every element sent to a position multiplies it: scatter_reduce's 'prod'
    return _scatter_added(site, src, cst.SimpleString("'prod'") if reduce == "multiply" else None)


def _is_number(node) -> bool:
    try:
        return isinstance(_value(node), (int, float)) and not isinstance(_value(node), bool)
    except (ValueError, TypeError, SyntaxError):
        return False


@torch_method
def scatter_add(site):
    if not (site.has("dim") and site.has("index") and site.has("src")):
        raise Unconvertible("scatter_add() needs dim, index and src")
    return _scatter_added(site, site.arg("src"))


def _scatter_added(site, src, reduce: cst.BaseExpression | None = None,
                   include_self: cst.BaseExpression | None = None) -> cst.BaseExpression:
    """The receiver with `src` scattered onto it along dim at index: added (no `reduce`, the
    receiver's values included) with ops.tensor_scatter_elements(..., 'add') where src and index
    can be written twice (leading_src); else, or reduced by `reduce`,
    msmigrate_scatter_reduce (which reads src's leading block itself)."""
    index = site.arg("index")
    if reduce is None and (_is_number(src) or (repeatable(src) and repeatable(index))):
        return site.expr("{f}({r}, {i}, {s}, {d}, 'add')", f="@mindspore.ops.tensor_scatter_elements",
                         r=site.receiver, i=index, s=leading_src(site, src, index), d=site.arg("dim"))
    parts = dict(f=generated_function(site, "msmigrate_scatter_reduce"), r=site.receiver, d=site.arg("dim"),
                 i=index, s=src, red=reduce if reduce is not None else cst.SimpleString("'sum'"))
    if include_self is not None:
        return site.expr("{f}({r}, {d}, {i}, {s}, {red}, include_self={x})", x=include_self, **parts)
    return site.expr("{f}({r}, {d}, {i}, {s}, {red})", **parts)


def leading_src(site, src, index):
    """torch's scatter reads the leading index.shape block of a larger src; MindSpore's kernels
    need src shaped like index: `src if src.shape == index.shape else ops.slice(src, (0,) *
    index.ndim, index.shape)` (a shape test at trace time: no kernel when they already agree).
    Only for named src and index (each is written several times)."""
    if src is None or index is None or not (repeatable(src) and repeatable(index)) or _is_number(src):
        return src
    return site.expr("({s} if {s}.shape == {i}.shape else {f}({s}, (0,) * {i}.ndim, {i}.shape))",
                     s=src, i=index, f="@mindspore.ops.slice")


@torch_method
def scatter_reduce(site):
    """reduce='sum' (including the receiver's own values, torch's default) is a scatter-add; the
    other reductions are msmigrate_scatter_reduce (rules/generated/functions.py)."""
    if not all(site.has(n) for n in ("dim", "index", "src", "reduce")):
        raise Unconvertible("scatter_reduce() needs dim, index, src and reduce")
    if _literal(site, "reduce") == "sum" and _literal(site, "include_self", True) is True:
        return _scatter_added(site, site.arg("src"))
    return _scatter_added(site, site.arg("src"), site.arg("reduce"), site.arg("include_self"))


@torch_method
def unique(site):
    """Sorted unique values of the flattened tensor (and counts): sort, then unique_consecutive."""
    if site.has("dim") or site.has("return_inverse") and _literal(site, "return_inverse") is not False:
        raise Unconvertible("unique(dim=/return_inverse=) is not converted")
    counts = site.arg("return_counts")
    base = site.expr("{s}({r}.reshape(-1))[0]", s="@mindspore.ops.sort", r=site.receiver)
    if counts is None or _literal(site, "return_counts") is False:
        return site.expr("{b}.unique_consecutive()", b=base)
    return site.expr("{b}.unique_consecutive(return_counts={c})", b=base, c=counts)


@torch_method
def xlogy(site):
    """torch: 0 where x == 0 (MindSpore: nan when y is 0 too)."""
    other = site.arg("other")
    if other is None:
        raise Unconvertible("xlogy() without other")
    return site.expr("{f}({r}, {w}({r} == 0, 1.0, {o}))", f="@mindspore.ops.xlogy", r=site.receiver,
                     w="@mindspore.ops.where", o=other)


# ---- dtypes and devices ------------------------------------------------------------------------------
def _is_module(site) -> bool:
    rec = site.instance_record(site.receiver)   # a torch.nn class, not what F.linear(...) returned
    return rec is not None and creates_cell(rec)


def _kind(site, value: cst.BaseExpression) -> str:
    """What a positional `.to(...)` argument is: 'dtype', 'device', or 'tensor' (a guess, flagged)."""
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return "device"
    code = site.code(value)
    last = code.rsplit(".", 1)[-1]
    if isinstance(value, cst.Attribute) and "." in code and (
            last in DTYPE_NAMES or _DTYPE_SPELLING.fullmatch(last)):   # also torch.float8_e4m3fn
        return "dtype"
    if last == "dtype" or last.endswith("_dtype") or last.endswith("dtype"):
        return "dtype"
    if isinstance(value, cst.Integer):
        return "device"
    lowered = last.lower()
    if last == "device" or "device" in lowered or lowered in ("dev", "gpu", "cuda", "cpu", "rank",
                                                              "local_rank"):
        return "device"
    return "tensor"


@torch_method
def to(site):
    """`.to(device)` / `.cuda()`: placement is global in MindSpore, the tensor stays;
    `.to(dtype)` -> `.astype(dtype)`; `.to(other)` -> `.astype(other.dtype)`."""
    if any(a.star for a in site.node.args):
        raise Unconvertible("to() with unpacked arguments")
    values = [a.value for a in site.node.args if a.keyword is None]   # device / dtype / tensor
    dtype = site.arg("dtype")
    for value in values:
        kind = _kind(site, value)
        if kind == "dtype":
            dtype = value
        elif kind == "tensor":
            site.flag("review", f"{site.qualname}: {site.code(value)} is taken as a tensor "
                                f"(x.to(other) casts to other's dtype); drop it if it is a device")
            dtype = site.expr("{v}.dtype", v=value)
    if site.has("copy") and _literal(site, "copy") is not False:
        site.flag("review", f"{site.qualname}: copy= dropped (astype already returns a new tensor)")
    if dtype is None:
        return site.receiver
    if _is_module(site):
        raise Unconvertible("Module.to(dtype): cast the Cell's parameters with "
                            "`for p in net.get_parameters(): p.set_dtype(...)` (Cell.to casts inputs)")
    return site.expr("{r}.astype({d})", r=site.receiver, d=dtype)


@torch_method
def type_(site):
    """`x.type(dtype)` -> `x.astype(dtype)`; `x.type()` returns 'Float32' instead of
    'torch.FloatTensor' in MindSpore."""
    dtype = site.arg("dtype")
    if dtype is None:
        raise Unconvertible("x.type() returns a MindSpore dtype name ('Float32'), not "
                            "'torch.FloatTensor': compare x.dtype instead", "review")
    lit = _literal(site, "dtype")
    name = lit if isinstance(lit, str) else site.code(dtype)   # 'torch.FloatTensor' / torch.cuda.FloatTensor
    name = name.rsplit(".", 1)[-1]
    if name.endswith("Tensor"):
        if name not in TENSOR_TYPE_DTYPES:
            raise Unconvertible(f"tensor type {name!r} is not known")
        dtype = site.ref(f"mindspore.{TENSOR_TYPE_DTYPES[name]}")
    if _is_module(site):
        raise Unconvertible("Module.type(dtype) casts parameters: no Cell equivalent")
    return site.expr("{r}.astype({d})", r=site.receiver, d=dtype)


@torch_method
def cast(site):
    """x.char() / x.cfloat() / x.cdouble(): a cast to the record's target dtype (MindSpore has
    no method of that name)."""
    return site.expr("{r}.astype({d})", r=site.receiver, d="@" + site.record.target)


def _made_by_torch(site, name: str) -> bool:
    """`name` is bound to a tensor visibly (`x = torch.ones(2)`, `x = torch.from_numpy(a)`), not a
    loop's parameter: as the training-loop rewrite sees it (bare_tensors.TrainableTensors), which
    then differentiates w.r.t. it, a Parameter."""
    from msmigrate.rules.transforms.dtypes import kind
    if kind(site.rw, cst.Name(name)) in ("float", "float64", "int", "bool"):
        return True
    made = getattr(site.rw, "_torch_made_names", None)
    if made is None:
        from msmigrate.rules.bare_tensors import TrainableTensors
        scan = TrainableTensors(dict(site.rw.ctx.names.imports))
        site.rw.ctx.module.visit(scan)
        made = site.rw._torch_made_names = scan.made
    return name in made


def _parameter_loop_variable(site, name: str) -> bool:
    """`for p in model.parameters():` (or named_parameters()'s second name): every binding of
    `name` in the file is such a loop's, so it holds a Parameter."""
    from msmigrate.names import TargetBindings, dotted, walk

    found: list[bool] = []

    class Bindings(TargetBindings):
        def visit_For(self, node: cst.For) -> None:
            pairs = [(node.target, node.iter)]
            if isinstance(node.iter, cst.Call) and dotted(node.iter.func) == "zip" and \
                    isinstance(node.target, cst.Tuple) and len(node.target.elements) == len(node.iter.args):
                # `for pe, p in zip(ema.parameters(), model.parameters())`
                pairs = [(e.value, a.value) for e, a in zip(node.target.elements, node.iter.args)]
            for target, call in pairs:
                method = call.func.attr.value if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) else ""
                if method == "named_parameters" and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                    target = target.elements[1].value
                if isinstance(target, cst.Name) and target.value == name:
                    found.append(method in ("parameters", "named_parameters"))
                else:
                    self._bind(target, None)

        def _bind(self, target, value) -> None:
            if any(isinstance(n, cst.Name) and n.value == name for n in walk(target)):
                found.append(False)

    site.rw.ctx.module.visit(Bindings())
    return bool(found) and all(found)


@torch_method
def requires_grad_(site):
    """Only Parameters carry requires_grad in MindSpore; gradients are taken w.r.t. what
    grad/value_and_grad are given."""
    flag = site.arg("requires_grad", cst.Name("True"))
    if _is_module(site):
        from msmigrate.rules.transforms.models import requires_grad_ as module_requires_grad_
        return module_requires_grad_(site)
    if _is_statement(site) and isinstance(site.receiver, cst.Name) and requires_grad_call(site.rw.original_call) \
            and _made_by_torch(site, site.receiver.value):
        # `w.requires_grad_()`: w is a trainable leaf from here on, a Parameter (the training-step
        # rewrite takes its gradients)
        name = site.receiver.value
        return _replace_statement(site, site.stmt("{w} = {P}({w}, name={n})\n", w=site.receiver,
                                                  P=site.ref("mindspore.Parameter"), n=cst.SimpleString(repr(name))))
    if _is_statement(site) and isinstance(site.receiver, (cst.Name, cst.Attribute)):
        if not (isinstance(site.receiver, cst.Name) and _parameter_loop_variable(site, site.receiver.value)):
            site.flag("review", f"{site.qualname}: only a Parameter's requires_grad matters in "
                                f"MindSpore; a plain tensor is differentiated when passed to grad")
        stmt = site.stmt("{r}.requires_grad = {f}\n", r=site.receiver, f=flag)
        return _replace_statement(site, stmt)
    name = site.assigned_name
    value = site.statement.body[0].value if name is not None else None
    if name is not None and "." not in name and requires_grad_call(value) and \
            site.rw._pos(value) == site.rw.pos_stack[-1]:
        # `w = x.clone().requires_grad_()`: a trainable leaf, a Parameter (as requires_grad=True
        # on a factory makes one); the training-step rewrite takes w's gradients
        return site.expr("{P}({e}, name={n})", P="@mindspore.Parameter", e=site.receiver,
                         n=cst.SimpleString(repr(name)))
    site.flag("review", f"{site.qualname}: dropped (MindSpore differentiates the inputs given to "
                        f"grad/value_and_grad)")
    return site.receiver


# ---- in-place methods ----------------------------------------------------------------------------
SHAPE_CHANGING = {"unsqueeze_", "squeeze_", "t_", "transpose_", "swapaxes_", "swapdims_", "resize_", "resize_as_"}


def _resized(site) -> cst.BaseExpression:
    """`t.resize_(2, 6)` / `t.resize_as_(u)`: t's first elements in the new shape
    (msmigrate_resize; the elements torch adds are uninitialised, zeros there). Not `t.resize()`:
    PIL's and NumPy's resize share the name."""
    size = site.expr("{u}.shape", u=site.arg("the_template")) if site.record.method_name == "resize_as_" \
        else site.arg("sizes")
    if size is None:
        raise Unconvertible(f"{site.record.method_name}() without a size")
    return site.expr("{f}({t}, {s})", f=generated_function(site, "msmigrate_resize"), t=_target(site.receiver), s=size)


def _random_fill(site, method: str, x: cst.BaseExpression) -> cst.BaseExpression:
    """uniform_/normal_/cauchy_/log_normal_: a fresh sample of the receiver's shape and dtype."""
    def num(name, default):
        return site.arg(name) if site.has(name) else cst.parse_expression(default)
    if method == "uniform_":
        lo, hi = num("from", "0.0"), num("to", "1.0")
        try:
            width = cst.parse_expression(repr(float(_value(hi)) - float(_value(lo))))
        except (ValueError, TypeError, SyntaxError):
            width = site.expr("({hi} - ({lo}))", hi=hi, lo=lo)
        return site.expr("{f}({x}) * {w} + ({lo})", f="@mindspore.ops.rand_like", x=x, w=width,
                         lo=lo)
    if method == "normal_":
        return site.expr("{f}({x}) * {s} + {mu}", f="@mindspore.ops.randn_like", x=x,
                         s=num("std", "1.0"), mu=num("mean", "0.0"))
    if method == "exponential_":
        return site.expr("-{log}(1 - {f}({x})) / {l}", log="@mindspore.ops.log",
                         f="@mindspore.ops.rand_like", x=x, l=num("lambd", "1.0"))
    if method == "cauchy_":
        return site.expr("{x}.cauchy({a}, {b})", x=x, a=num("median", "0.0"), b=num("sigma", "1.0"))
    # not Tensor.log_normal: MindSpore 2.10 keeps the first call's mean/std for every later call
    return site.expr("{exp}({f}({x}) * {s} + {mu})", exp="@mindspore.ops.exp", f="@mindspore.ops.randn_like",
                     x=x, s=num("std", "2.0"), mu=num("mean", "1.0"))


def _fill_diagonal(site, x: cst.BaseExpression) -> cst.BaseExpression:
    if site.has("wrap") and _literal(site, "wrap") is not False:
        raise Unconvertible("fill_diagonal_(wrap=True) is not converted")
    return site.expr("{x}.masked_fill({eye}({x}.shape[0], {x}.shape[1], {b}), {v})",
                     x=x, eye="@mindspore.ops.eye", b="@mindspore.bool_", v=site.arg("fill_value"))


def _out_of_place(site, x: cst.BaseExpression, scalar_ok: bool) -> cst.BaseExpression:
    """The value `x.method_(...)` leaves in x. `scalar_ok`: a scalar fill may stay a scalar
    (it is assigned with `x[...] = v`, which broadcasts)."""
    method = site.record.method_name
    if method in ("zero_", "fill_"):
        value = _int_node(0) if method == "zero_" else site.arg("value")
        if scalar_ok:
            return value
        return site.expr("{f}({x}, {v})", f="@mindspore.ops.full_like", x=x, v=value)
    if method in ("uniform_", "normal_", "cauchy_", "log_normal_", "exponential_"):
        return _random_fill(site, method, x)
    if method == "fill_diagonal_":
        return _fill_diagonal(site, x)
    if method == "bernoulli_":   # in place, p defaults to 0.5 (x.bernoulli() draws with x's values)
        return site.expr("({f}({x}) < {p}).astype({x}.dtype)", f="@mindspore.ops.rand_like", x=x,
                         p=site.arg("p", cst.Float("0.5")))
    if method == "relu_":
        return site.expr("{f}({x})", f="@mindspore.ops.relu", x=x)
    if method in ("clamp_min_", "clamp_max_"):
        kw = "min" if method == "clamp_min_" else "max"
        return site.expr("{x}.clamp(" + kw + "={v})", x=x, v=site.arg(kw))
    name = {"clip_": "clamp", "sub_": "sub"}.get(method, method[:-1])
    return _convert_as(site, name)


def _target(receiver: cst.BaseExpression) -> cst.BaseExpression:
    """`p.data.add_(...)` writes through `.data`; in MindSpore `p.data[...] = v` changes a copy,
    so the write goes to `p` itself."""
    if isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
        return receiver.value
    return receiver


def _writes_through_data(receiver) -> bool:
    return isinstance(receiver, cst.Attribute) and receiver.attr.value == "data"


def _parameter_loop_name(site, target) -> bool:
    """`for e, p in zip(ema.parameters(), model.parameters()): e.mul_(d).add_(p)` (also over a
    state dict's items) outside compiled code: `e` is a Parameter, which a compiled step that has used it no longer sees
    written by setitem (it keeps the old values); ops.assign writes it in place for both."""
    return isinstance(target, cst.Name) and target.value in _parameter_loop_names(site.rw.module) \
        and not _in_compiled_function(site) and not _in_cell_method(site)


_PARAMETER_ITERATORS = re.compile(r"\b(?:named_parameters|parameters|get_parameters|trainable_params|"
                                  r"parameters_and_names|state_dict|parameters_dict|named_buffers|buffers)\(")


@functools.lru_cache(maxsize=16)
def _parameter_loop_names(module: cst.Module) -> frozenset[str]:
    """Names a `for` loop of the file binds while iterating over a network's parameters."""
    code = cst.Module([]).code_for_node
    return frozenset(n.value for loop in m.findall(module, m.For()) if _PARAMETER_ITERATORS.search(code(loop.iter))
                     for n in m.findall(loop.target, m.Name()))


def _inplace_chain(site) -> tuple[list[cst.Call], cst.BaseExpression | None]:
    """The in-place calls of the current expression statement, outermost first, and the tensor
    they all write to: `ema.mul_(d).add_(x)` -> ([add_ call, mul_ call], ema)."""
    stmt = site.statement
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)):
        return [], None
    calls, node = [], stmt.body[0].value
    while (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
           and node.func.attr.value.endswith("_")
           and any(r.transform == site.record.transform for r in site.rw.table.methods(node.func.attr.value))):
        calls.append(node)
        node = node.func.value
    return calls, node


def _whole_value(site) -> bool:
    """The call is what an assignment or return statement evaluates first, unconditionally:
    `y = t.abs_()`, `return t.abs_()`, `n = t.abs_().sum()`: t may be written before the rest."""
    stmt = site.statement
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], (cst.Assign, cst.Return))):
        return False
    node, here = stmt.body[0].value, site.rw.pos_stack[-1]
    while node is not None:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == site.record.method_name and site.rw._pos(node) == here:
            return True
        if isinstance(node, cst.Call):
            node = node.func
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        elif isinstance(node, (cst.BinaryOperation, cst.Comparison, cst.BooleanOperation)):
            node = node.left
        else:
            node = None
    return False


def _chain_role(site, calls) -> str | None:
    """'outer' for the statement's outermost in-place call, 'inner' for one it is chained on."""
    here, name = site.rw.pos_stack[-1], site.record.method_name
    mine = [k for k, c in enumerate(calls)
            if c.func.attr.value == name and site.rw._pos(c) == here]
    if not mine:
        return None
    if 0 in mine and (len(calls) == 1 or not repeatable(site.receiver)):
        return "outer"
    return "inner"


@torch_method
def inplace(site):
    method = site.record.method_name
    receiver = site.receiver
    written = _target(receiver)
    if isinstance(written, cst.Attribute) and written.attr.value == "grad":
        raise Unconvertible(f"{method} on .grad: MindSpore has no .grad; gradients come from "
                            f"grad/value_and_grad")
    calls, base = _inplace_chain(site)
    role = _chain_role(site, calls)
    base = _target(base) if base is not None else None
    chained = (role is not None and len(calls) > 1
               and isinstance(base, (cst.Name, cst.Attribute, cst.Subscript))
               and not any(c.func.attr.value in SHAPE_CHANGING for c in calls))
    if chained:
        # ema.mul_(d).add_(x): the outer call writes the whole chain's value back to ema
        value = _out_of_place(site, receiver, scalar_ok=False)
        if role == "inner":
            return value
        return _assign_back(site, base, value, parameter=_writes_through_data(calls[-1].func.value))
    target = _target(receiver)
    statement = role == "outer"
    assignable = isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)) or attribute_choice(target)
    # `y = t.abs_()` / `return t.abs_()`: t is written first, then its value is the call's
    value_of_statement = not statement and _whole_value(site)
    if method in SHAPE_CHANGING:
        value = _resized(site) if method.startswith("resize") else _convert_as(site, method[:-1])
        if statement and isinstance(target, (cst.Name, cst.Attribute)):
            return _replace_statement(site, site.stmt("{t} = {v}\n", t=target, v=value))
        if value_of_statement and isinstance(target, cst.Name):
            _replace_statement(site, site.stmt("{t} = {v}\n", t=target, v=value))
            return target
        if assignable:
            site.flag("review", f"{site.qualname}: converted to the out-of-place "
                                f"{method[:-1]}(); {site.code(target)} itself keeps its shape")
        return value
    # the result is computed from the tensor itself (`p`, not `p.data`: same values)
    site = _rebased(site, target)
    if statement and assignable:
        scalar = site.record.method_name in ("zero_", "fill_")
        return _assign_back(site, target, _out_of_place(site, target, scalar_ok=True), scalar,
                            parameter=_writes_through_data(receiver))
    if value_of_statement and isinstance(target, (cst.Name, cst.Subscript)) and not _writes_through_data(receiver):
        scalar = site.record.method_name in ("zero_", "fill_")
        flagged = len(site.rw.frames[-1].diags) if site.rw.frames else 0
        value = _out_of_place(site, target, scalar_ok=True)
        if not site.rw.frames or len(site.rw.frames[-1].diags) == flagged:   # converted: written first
            _assign_back(site, target, value, scalar)
            return target
        return value   # not converted (marked): left where it stands
    if assignable:
        site.flag("review", f"{site.qualname}: the value is computed out of place; "
                            f"{site.code(target)} itself is not modified (write "
                            f"`{site.code(target)}[...] = ...` as a statement if it must be)")
    return _out_of_place(site, target, scalar_ok=False)


def _assign_back(site, target, value, scalar: bool = False, parameter: bool = False):
    """`x[...] = value` for a name or an element; `ops.assign(obj.attr, value)` for an attribute
    or a name written through `.data` (`p.data.clamp_(...)`: a Parameter or buffer). Under
    @ms.jit only ops.assign persists into a Parameter; outside, setitem / set_data on a Parameter
    a compiled step has used detach it from that step (its later updates go elsewhere)."""
    parameter = parameter or _parameter_loop_name(site, target)
    if isinstance(target, cst.Attribute) or attribute_choice(target) or (parameter and isinstance(target, cst.Name)):
        if scalar:
            value = site.expr("{f}({t}, {v})", f="@mindspore.ops.full_like", t=target, v=value)
        return site.expr("{f}({t}, {v})", f="@mindspore.ops.assign", t=target, v=value)
    lhs = target if isinstance(target, cst.Subscript) else site.expr(
        "{t}[:]" if _view_bound(site, target) else "{t}[...]", t=target)
    return _replace_statement(site, cst.SimpleStatementLine([cst.Assign(
        targets=[cst.AssignTarget(lhs)], value=value)]))


# methods giving a view of their tensor of at least one dimension
_VIEW_METHODS = frozenset({"view", "view_as", "reshape", "reshape_as", "t", "permute", "transpose", "flatten",
                           "unsqueeze", "narrow", "expand", "expand_as", "diagonal", "movedim", "swapaxes",
                           "swapdims", "unflatten"})


def _view_bound(site, target) -> bool:
    """`y` bound only to views of another tensor (`y = x.view(3, 2)`): MindSpore 2.10 writes
    `y[...] = v` into y alone (x keeps its values, silently), `y[:] = v` through the view into
    x, as torch's in-place method does (measured for every method of _VIEW_METHODS; `[:]`
    needs a dimension, which they all keep)."""
    from msmigrate.rules.transforms.dtypes import bound_values
    if not isinstance(target, cst.Name):
        return False
    values = bound_values(site.rw, target.value)
    return bool(values) and all(
        isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value in _VIEW_METHODS
        and not (v.func.attr.value in ("view", "reshape") and (not v.args or site.code(v.args[0].value) in ("()", "[]")))
        for v in values)


def attribute_choice(node) -> bool:
    """`(m.embedding_table if isinstance(m, nn.Embedding) else m.weight)`: a parameter chosen by
    the layer's class (rules/layer_attributes.py); ops.assign writes whichever it is."""
    if not isinstance(node, cst.IfExp):
        return False
    return isinstance(node.body, cst.Attribute) and (
        isinstance(node.orelse, cst.Attribute) or attribute_choice(node.orelse))


def _rebased(site, target):
    """The same Site with `target` as receiver (the call node's receiver replaced too)."""
    if target is site.receiver:
        return site
    site.node = site.node.with_changes(func=site.node.func.with_changes(value=target))
    site.receiver = target
    return site


@torch_method
def clone(site):
    """`x.clone()` -> `ops.deepcopy(x)` (differentiable: a Parameter's own `copy()` makes a new
    Parameter, which cuts the gradient). Calls with other arguments are not torch's
    Tensor.clone (MindSpore's ParameterTuple.clone(prefix=, init=) in generated code): left alone."""
    if site.unbound or any(name != "memory_format" for name in site.bound):
        return site.node
    return site.expr("{f}({r})", f="@mindspore.ops.deepcopy", r=site.receiver)


@torch_method
def rot90(site):
    k = site.arg("k", _int_node(1))
    dims = site.arg("dims", cst.parse_expression("[0, 1]"))
    return site.expr("{f}({r}, {k}, {d})", f="@mindspore.ops.rot90", r=site.receiver, k=k, d=dims)


@torch_method
def bernoulli(site):
    """0/1 draws with probability p (default: the receiver's own values), in its dtype."""
    if site.has("generator"):
        site.flag("review", f"{site.qualname}: generator= dropped (MindSpore seeds globally)")
    p = site.arg("p", site.receiver)
    return site.expr("({f}({r}) < {p}).astype({r}.dtype)", f="@mindspore.ops.rand_like",
                     r=site.receiver, p=p)


@torch_method
def nonzero(site):
    """as_tuple=True needs the NonZeroExt kernel (not on CPU): the index columns of nonzero()."""
    if not site.has("as_tuple"):
        return site.node
    as_tuple = _literal(site, "as_tuple")
    if as_tuple is False:
        return site.expr("{r}.nonzero()", r=site.receiver)
    if as_tuple is not True:
        raise Unconvertible("nonzero(as_tuple=) is not a literal")
    return site.expr("{r}.nonzero().unbind(1)", r=site.receiver)


@torch_method
def unflatten(site):
    dim, sizes = _literal(site, "dim"), site.arg("sizes")
    if not isinstance(dim, int) or sizes is None:
        raise Unconvertible("unflatten() needs a literal dim")
    sizes = site.expr("tuple({s})", s=sizes) if not isinstance(sizes, cst.Tuple) else sizes
    before = f"{{r}}.shape[:{dim}]"
    after = "" if dim == -1 else f" + {{r}}.shape[{dim + 1}:]"
    return site.expr("{r}.reshape(" + before + " + {s}" + after + ")", r=site.receiver, s=sizes)


@torch_method
def clamp_bound(site):
    bound = "min" if site.record.method_name == "clamp_min" else "max"
    if not site.has(bound):
        raise Unconvertible(f"{site.record.method_name}() without a bound")
    return site.expr("{r}.clamp(" + bound + "={v})", r=site.receiver, v=site.arg(bound))


# torch defaults of the leading arguments, to fill a gap when a later one is given
POSITIONAL_DEFAULTS = {
    "sort": {"dim": "-1", "descending": "False"},
    "argsort": {"dim": "-1", "descending": "False"},
    "chunk": {"dim": "0"},
    "split": {"dim": "0"},
}


@torch_method
def positional(site):
    """The torch arguments written positionally, in torch's order: MindSpore's keywords for
    these differ between PyNative (dim) and @ms.jit (axis), positions agree."""
    if any(a.star for a in site.unbound):
        return site.node
    if _visibly_function(site):   # `k.cumsum(0)` of an int32 k: torch.cumsum's casts
        return _as_function(site, "torch." + site.record.method_name)
    method = site.record.method_name
    names = [a for a in site.record.args if a != "*"]
    keyword_only = site.record.args[site.record.args.index("*") + 1:] if "*" in site.record.args else []
    leading = [n for n in names if n not in keyword_only]
    given = [n for n in leading if site.has(n)]
    last = max((leading.index(n) for n in given), default=-1)
    args = []
    for name in leading[: last + 1]:
        if site.has(name):
            args.append(cst.Arg(site.arg(name)))
        elif name in POSITIONAL_DEFAULTS.get(method, {}):
            args.append(cst.Arg(cst.parse_expression(POSITIONAL_DEFAULTS[method][name])))
        else:
            raise Unconvertible(f"{method}(): {name} is needed before the later arguments")
    for name in keyword_only:
        if site.has(name):
            args.append(cst.Arg(site.arg(name), keyword=cst.Name(name),
                                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
    if method == "sort":
        _flag_result_fields(site)
    node = site.node
    if site.record.target.startswith("."):   # another name in MindSpore (x.split_with_sizes -> x.split)
        node = node.with_changes(func=node.func.with_changes(attr=cst.Name(site.record.target[1:])))
    return node.with_changes(args=_commas(args))


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    return [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            for a in args[:-1]] + args[-1:]


@torch_method
def expand(site):
    sizes = site.arg("sizes")
    if sizes is None or any(a.star for a in site.unbound):
        raise Unconvertible("expand() without sizes")
    if isinstance(sizes, (cst.Tuple, cst.List)) or not isinstance(sizes, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        shape = _as_tuple(site, sizes, "sizes")
    else:
        shape = site.expr("tuple({s})", s=sizes)   # a torch.Size / list variable
    return site.expr("{r}.broadcast_to({s})", r=site.receiver, s=shape)


def _as_function(site, name: str) -> cst.BaseExpression:
    """`x.f(args)` converted as the torch function `name(x, args)` (its record: the function's
    MindSpore form, results cast like torch's)."""
    rec = site.rw.table.lookup(name)
    receiver = cst.Arg(site.receiver, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args = [receiver, *site.node.args] if site.node.args else [receiver.with_changes(comma=cst.MaybeSentinel.DEFAULT)]
    call = site.node.with_changes(func=cst.Name(name.rsplit(".", 1)[1]), args=args)
    return site.rw._apply(rec, name, call, None)


@torch_method
def sliding_windows(site):
    """x.unfold(dim, size, step): torch's sliding windows, which MindSpore's Tensor.unfold
    (im2col) is not: converted as torch.unfold_copy(x, dim, size, step)."""
    return _as_function(site, "torch.unfold_copy")


@torch_method
def receiver_as_input(site):
    """Methods whose torch function takes the tensor after other arguments (x.polygamma(n) is
    torch.polygamma(n, x)): converted as that function with the tensor as `input=`."""
    name = "torch." + site.record.method_name
    receiver = cst.Arg(site.receiver, keyword=cst.Name("input"),
                       equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    call = site.node.with_changes(func=cst.Name(site.record.method_name), args=_commas([*site.node.args, receiver]))
    return site.rw._apply(site.rw.table.lookup(name), name, call, None)


def keep(site):
    """A method kept as it is (its record only marks it: rules/tensor_passthrough.toml)."""
    return site.node


@torch_method
def promoted(site):
    """A method the suite verified by name whose torch function is float-only in MindSpore
    (record field `promote`, or `compute_as` for the kinds it names; `empty_value` on a tensor
    that may be empty, reduced whole: `x[mask].sum()`): on a visibly integer/bool
    tensor (`torch.arange(5).exp()`, `k.sin()` after `k = torch.tensor([1, 2])`) it converts as
    that function, whose record casts the tensor (to float32 as torch promotes it); on any
    other receiver it stays as it is."""
    if site.unbound or not _visibly_function(site):
        return site.node   # (arguments beyond torch's signature: `logger.log(level, msg)`)
    return _as_function(site, "torch." + site.record.method_name)


def _visibly_function(site) -> bool:
    """The torch function of this method's name converts a call of this receiver and these
    arguments otherwise than for any tensor, for what the source shows of them (dtypes.changes:
    an integer tensor to a float-only kernel, a complex or empty one, a 0-d one)."""
    from msmigrate.rules.transforms.dtypes import changes
    original = site.rw.original_call
    if original is None or not isinstance(original.func, cst.Attribute):
        return False
    func = site.rw.table.lookup("torch." + site.record.method_name)
    values = [original.func.value, *(a.value for a in original.args)]
    return changes(site.rw, func, values, whole=not original.args)


@torch_method
def as_function(site):
    """Methods whose MindSpore method differs (int32 indices, another default) while the ops.*
    function of the torch function's record computes torch's result: x.sort(1) ->
    torch.sort(x, 1)'s conversion."""
    if site.record.method_name == "sort" and _is_statement(site) and not site.node.args:
        return site.node   # `names.sort()`: a list sorted in place (a tensor's sort returns its result)
    return _as_function(site, "torch." + site.record.method_name)   # fields read by position


@torch_method
def arg_reduce(site):
    """argmax()/argmin() over all elements: ops.argmax(x) (the method reduces the last axis
    under @ms.jit). argmin's indices are int32 in MindSpore: converted as torch.argmin (cast)."""
    if site.record.method_name == "argmin" or _visibly_function(site):
        return _as_function(site, "torch." + site.record.method_name)
    if not site.has("dim") or _literal(site, "dim") is None:
        if site.has("keepdim") and _literal(site, "keepdim") is not False:
            raise Unconvertible(f"{site.record.method_name}(keepdim=True) without dim")
        return site.expr("{f}({r})", f=f"@mindspore.ops.{site.record.method_name}", r=site.receiver)
    return positional(site)


@torch_method
def transpose(site):
    """`x.transpose(a, b)` -> `x.swapaxes(a, b)`; other arities are numpy's transpose: left alone."""
    if not (site.has("dim0") and site.has("dim1")):
        return site.node
    return site.expr("{r}.swapaxes({a}, {b})", r=site.receiver, a=site.arg("dim0"), b=site.arg("dim1"))


# a statement that writes through `.data`: `p.data.add_(...)`, `p.data[0] = v`, `p.data = v`, `p.data *= 2`
_WRITES_DATA = re.compile(r"\.data\s*(\.\w+_\s*\(|\[[^\]]*\]\s*[-+*/]?=(?!=)|[-+*/]?=(?!=))")


def data_read(site):
    """`x.data` read in a method of an nn.Module subclass: its construct (and what it calls) is
    compiled, where MindSpore 2.10 rejects Tensor.data ("'Parameter' object has no attribute
    'numpy'" for `attn.data.numpy()`); torch's `.data` is the value cut from the graph, which is
    `ops.stop_gradient(x)`. Elsewhere (PyNative code: `__init__` and what it calls, where
    Tensor.data is the tensor itself) and in a statement that writes through `.data` (in-place
    updates, converted elsewhere) it is kept."""
    if not (_in_cell_method(site) or _in_compiled_function(site)):
        return site.node.func
    if _WRITES_DATA.search(cst.Module([]).code_for_node(site.statement)):
        return site.node.func
    return site.expr("{f}({x})", f="@mindspore.ops.stop_gradient", x=site.receiver)


def copy_into(site):
    """`x.copy_(src)`: MindSpore's Tensor.copy_ writes x as torch's does (kept), except in compiled
    code (construct, forward_fn), where a write into a Parameter becomes SetData: rejected on CPU,
    or its value lost (a masked weight trained unmasked). There a statement of its own becomes
    ops.assign of src broadcast to x's shape and cast to its dtype, as copy_ does."""
    from msmigrate.rules.transforms.functional import _whole_statement
    if site.receiver is None or not (_in_cell_method(site) or _in_compiled_function(site)):
        return site.node
    target = _target(site.receiver)
    if not _whole_statement(site) or not isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)):
        return site.node
    # `.data` reads in src were kept for this statement's write (data_read): torch's value cut
    # from the graph, which in compiled code is ops.stop_gradient (Parameter.data is not)
    stop = site.ref("mindspore.ops.stop_gradient")
    src = m.replace(site.arg("src"), m.Attribute(attr=m.Name("data")),
                    lambda node, _: cst.Call(stop, [cst.Arg(node.value)]))
    value = site.expr("{b}({s}, {t}.shape).astype({t}.dtype)", b="@mindspore.ops.broadcast_to", s=src, t=target)
    return _assign_back(site, target, value, parameter=_writes_through_data(site.receiver))


def _in_compiled_function(site) -> bool:
    """In a function given to value_and_grad / grad (the training-loop conversion's forward_fn,
    run inside its @ms.jit train_step, or uncompiled through msmigrate_value_and_grad_host_aux:
    differentiated all the same) or decorated with jit: compiled code too, where
    `x.data` in a step with BatchNorm and a branch fails to compile (PyTorch-GAN's EBGAN:
    `if (margin - d_loss_fake.data).item() > 0:`)."""
    return any(name in _compiled_names(site.rw.module) for name in site.rw.functions)


@functools.lru_cache(maxsize=16)
def _compiled_names(module: cst.Module) -> frozenset[str]:
    given = {call.args[0].value.value for call in m.findall(module, m.Call(
        func=m.Name("value_and_grad") | m.Name("grad") | m.Name("msmigrate_value_and_grad_host_aux")
        | m.Attribute(attr=m.Name("value_and_grad") | m.Name("grad")),
        args=[m.Arg(value=m.Name()), m.ZeroOrMore()]))}
    jitted = {f.name.value for f in m.findall(module, m.FunctionDef())
              if any("jit" in cst.Module([]).code_for_node(d.decorator) for d in f.decorators)}
    return frozenset(given | jitted)


def _in_cell_method(site) -> bool:
    """In a method of an nn.Module subclass that MindSpore compiles: construct and its helpers.
    `__init__` (and the other dunders, and the methods only they call: `reset_parameters`) run
    in Python, never compiled; there `p.data` is the parameter's storage that initialisers write
    (`nn.init.xavier_uniform_(self.W.data)`), which ops.stop_gradient(p), a new tensor, is not."""
    rw = site.rw
    if not (rw.cell_classes and rw.cell_classes[-1] and rw.functions and rw.class_nodes):
        return False
    cls, depth = rw.class_nodes[-1]
    return len(rw.functions) > depth and rw.functions[depth] not in _uncompiled_methods(cls)


_DUNDER = re.compile(r"__\w+__")


@functools.lru_cache(maxsize=64)
def _uncompiled_methods(cls: cst.ClassDef) -> frozenset[str]:
    """The methods of a Module class that are never compiled: dunders other than __call__ and
    the methods reachable from them (`self.name` references) but not from forward/construct. A
    method neither reaches (`get_attention`) counts as compiled: another Cell's construct may
    call it."""
    methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}

    def referenced(fn: cst.FunctionDef) -> set[str]:
        params = fn.params.params
        if not params:
            return set()
        me = params[0].name.value
        found: set[str] = set()

        class _Refs(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> None:
                if isinstance(node.value, cst.Name) and node.value.value == me and node.attr.value in methods:
                    found.add(node.attr.value)

        fn.body.visit(_Refs())
        return found

    def reach(roots: set[str]) -> set[str]:
        seen, todo = set(), list(roots)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(referenced(methods[name]) - seen)
        return seen

    compiled = reach({n for n in ("forward", "construct", "__call__") if n in methods})
    python = reach({n for n in methods if _DUNDER.fullmatch(n) and n != "__call__"})
    return frozenset(python - compiled)


@torch_method
def numpy_in_cell(site):
    """`attn.data.numpy()` in a Cell's method (attention weights kept for a plot): a NumPy array
    made in compiled code is a Python object the graph cannot type, and the values computed with
    it come out untyped (the BiLSTM-attention tutorial's logits reach CrossEntropyLoss as
    'Tensor(shape=[-2], dtype=Float64)'). The value stays a Tensor cut from the graph
    (`ops.stop_gradient(attn)`), marked: NumPy reads it as an array (np.asarray, matplotlib), but it
    is a Tensor. Elsewhere (PyNative) `.numpy()` is kept."""
    if not _in_cell_method(site) or site.bound:
        return site.node
    site.flag("review", "Tensor.numpy() in a Cell's method -> ops.stop_gradient(x), a Tensor: compiled "
                        "code cannot hand a NumPy array on (np.asarray(x) reads this one as one)")
    receiver = site.receiver
    if isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
        receiver = receiver.value
    else:
        call = site.rw.original_call
        inner = call.func.value if call is not None and isinstance(call.func, cst.Attribute) else None
        if (isinstance(inner, cst.Attribute) and inner.attr.value == "data") or (
                isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value == "detach" and not inner.args):
            return receiver     # `x.data` / `x.detach()` is ops.stop_gradient(x) already
    return site.expr("{f}({x})", f="@mindspore.ops.stop_gradient", x=receiver)


# what a dense MindSpore tensor answers to torch's questions about storage and kind: torch's
# answer for a CPU tensor that is not a view (marked where torch's may differ: `why`)
_DENSE_ANSWERS = {
    "get_device": ("-1", "torch: the GPU index for a CUDA tensor (MindSpore places every tensor on its one device target)"),
    "is_inference": ("False", "torch: True for a tensor made under torch.inference_mode()"),
    "is_shared": ("False", "torch: True after share_memory_() (MindSpore shares no tensor between processes)"),
    "storage_offset": ("0", "torch: a view's offset into its base's storage (MindSpore's views are copies)"),
    "dim_order": ("tuple(range({r}.ndim))", None),   # MindSpore tensors are contiguous, row-major
    "sparse_dim": ("0", None),
    "dense_dim": ("{r}.ndim", None),
}


def dense_answer(site):
    answer, why = _DENSE_ANSWERS[site.record.method_name]
    return fixed_answer(site, answer, why and f"the answer for a CPU tensor that is not a view; {why}")


def is_sparse(site):
    """x.is_sparse: whether x is one of MindSpore's sparse tensor classes; marked, since torch's
    sparse tensors convert to dense ones (rules/api/sparse.toml): False where torch says True."""
    site.flag("review", f"{site.qualname}: torch's sparse tensors convert to dense MindSpore tensors, "
                        f"for which this reads False")
    return site.expr("isinstance({r}, ({c}, {s}))", r=site.receiver, c="@mindspore.COOTensor",
                     s="@mindspore.CSRTensor")


def layout(site):
    raise Unconvertible("MindSpore has no tensor layouts (a Tensor is dense and strided, sparse ones "
                        "are COOTensor/CSRTensor): drop the layout", "review")


# what MindSpore's answer is (it records no operations) and what torch says otherwise
_AUTOGRAD_ANSWERS = {
    "is_leaf": ("True", "False for the result of an operation on a tensor requiring grad"),
    "grad_fn": ("None", "a grad_fn for the result of an operation on a tensor requiring grad"),
    "retains_grad": ("False", "True after x.retain_grad()"),
}


def autograd_attribute(site):
    """x.is_leaf / x.grad_fn / x.retains_grad: MindSpore records no operations on tensors (it
    differentiates functions), so every tensor reads as torch's leaf without a grad_fn; marked,
    since torch says otherwise where autograd recorded something."""
    answer, torch_says = _AUTOGRAD_ANSWERS[site.record.method_name]
    return fixed_answer(site, answer, f"MindSpore records no operations (torch: {torch_says})")


def requires_grad_read(site):
    """`x.requires_grad` read: MindSpore Tensors carry no such flag (gradients come from ms.grad
    over a function's inputs and Parameters); a Parameter's is kept, and torch tensors made with
    requires_grad=True become Parameters: getattr(x, 'requires_grad', False). The result of an
    operation is marked: torch says True when an input requires grad, MindSpore has no flag."""
    receiver = site.receiver
    if isinstance(receiver, cst.Name) and _iterates_parameters(site, receiver.value):
        return site.node.func   # `for p in model.parameters(): if p.requires_grad`: a Parameter's
    if not isinstance(receiver, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)):
        receiver = receiver.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) \
            if not receiver.lpar else receiver
        site.flag("review", "torch.Tensor.requires_grad: the result of an operation reads False here "
                            "(MindSpore tensors carry no requires_grad; torch says True when an input "
                            "requires grad)")
    return site.expr("getattr({r}, 'requires_grad', False)", r=receiver)


def invert(site):
    """`~x`: MindSpore's ~ is logical_not on every dtype (a bool result); torch's is bitwise NOT
    on integer tensors. Visibly integer (rules/transforms/dtypes.py) -> ops.invert(x); visibly
    bool -> kept; otherwise kept and marked."""
    from msmigrate.rules.transforms.dtypes import kind
    found = kind(site.rw, site.original_receiver)
    if found == "int":
        return site.expr("{f}({x})", f="@mindspore.ops.invert", x=site.receiver)
    if found in ("bool", "pybool", "pyint"):
        return site.node
    site.flag("review", f"~{site.code(site.receiver)}: MindSpore's ~ is logical_not on every dtype; "
                        f"for an integer tensor (torch: bitwise NOT) write ops.invert(x)")
    return site.node


PARAMETER_ITERATORS = {"parameters", "named_parameters", "parameters_and_names", "get_parameters",
                       "trainable_params", "untrainable_params"}


def _iterates_parameters(site, name: str) -> bool:
    """`name` is bound, in an enclosing statement, by a loop or comprehension over a module's
    parameters (`for p in model.parameters()`, `[p for n, p in m.named_parameters() if ...]`)
    or is the parameter of `filter(lambda p: ..., model.parameters())`: a Parameter."""
    def over_parameters(it) -> bool:
        return isinstance(it, cst.Call) and (
            (isinstance(it.func, cst.Attribute) and it.func.attr.value in PARAMETER_ITERATORS)
            or (isinstance(it.func, cst.Name) and it.func.value in cells.NAMES))

    def binds(target) -> bool:
        if isinstance(target, cst.Name):
            return target.value == name
        if isinstance(target, (cst.Tuple, cst.List)):
            return any(binds(e.value) for e in target.elements)
        return False

    found = []

    class Finder(cst.CSTVisitor):
        def visit_For(self, node):
            if binds(node.target) and over_parameters(node.iter):
                found.append(node)

        def visit_CompFor(self, node):
            if binds(node.target) and (over_parameters(node.iter) or isinstance(node.iter, cst.GeneratorExp)):
                found.append(node)

        def visit_Call(self, node):
            if (isinstance(node.func, cst.Name) and node.func.value == "filter" and len(node.args) == 2
                    and isinstance(node.args[0].value, cst.Lambda) and over_parameters(node.args[1].value)
                    and any(p.name.value == name for p in node.args[0].value.params.params)):
                found.append(node)

    for frame in site.rw.frames:
        node = frame.node
        if isinstance(node, cst.For):
            Finder().visit_For(node)
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            node.visit(Finder())
        if found:
            return True
    return False


def legacy_new(site):
    """`x.new(2, 3)` / `x.new(size)` / `x.new()` -> ops.zeros(sizes, x.dtype) (torch's memory is
    uninitialised: zeros are one valid content); `x.new([1, 2])` -> ms.Tensor(data, x.dtype). The
    receiver is read twice, so it must be a name or an attribute path."""
    from msmigrate.engine import literal_value
    from msmigrate.names import dotted
    if dotted(site.original_receiver) is None or any(a.keyword or a.star for a in site.node.args):
        raise Unconvertible("x.new(...) of an expression or with keywords: use ops.zeros(size, x.dtype) "
                            "or ms.Tensor(data, dtype=x.dtype)", "manual")
    args = [a.value for a in site.node.args]
    dtype = site.expr("{r}.dtype", r=site.receiver)

    def is_size(node):
        try:
            value = literal_value(node)
        except ValueError:   # `x.size()`, `x.shape`, `x.size(0)`: sizes
            text = site.code(node)
            return bool(re.search(r"(\.size\(\d*\)|\.shape(\[\d+\])?)$", text))
        return isinstance(value, int) and not isinstance(value, bool)

    if not args:
        return site.call("mindspore.ops.zeros", [cst.Arg(cst.Tuple([cst.Element(cst.Integer("0"))])), cst.Arg(dtype)])
    if len(args) > 1:   # several arguments are sizes (data is one sequence)
        shape = cst.Tuple([cst.Element(a) for a in args])
        return site.call("mindspore.ops.zeros", [cst.Arg(shape), cst.Arg(dtype)])
    if len(args) == 1 and is_size(args[0]):
        shape = args[0] if not isinstance(args[0], cst.Integer) else cst.Tuple([cst.Element(args[0])])
        return site.call("mindspore.ops.zeros", [cst.Arg(shape), cst.Arg(dtype)])
    if len(args) == 1 and isinstance(args[0], (cst.List, cst.Tuple)):
        return site.call("mindspore.Tensor", [cst.Arg(args[0]), cst.Arg(dtype)])
    raise Unconvertible("x.new(arg): sizes or data? use ops.zeros(size, x.dtype) or "
                        "ms.Tensor(data, dtype=x.dtype)", "manual")
