"""What a torch expression's dtype visibly is at conversion time, and the casts that follow.

torch promotes integer and bool tensors to float32 in its floating-point functions (sin, exp,
sqrt, sigmoid...); MindSpore 2.10's kernels raise on them (or, for a few, compute wrong values).
The dtype is known only at run time, so a cast on every call would cost float code an extra
kernel; instead an argument gets one only where its dtype is VISIBLE in the source:

    torch.arange(<int literals>), torch.tensor(<int/bool literals>), torch.randint(...),
    torch.zeros/ones/full/empty/tensor(..., dtype=torch.long|int|bool...), .long()/.int()/
    .bool()/.to(torch.long)/.type(torch.int32), comparisons, ~/&/|/^ of bools, +,-,*,//,% of
    integers, their reshapes/views/indexing (x.reshape(2, 3), x[0]: the same dtype), and
    names whose last binding before the call in straight-line code (no enclosing loop or try
    rebinding them), or every binding of which in their scope, is one of these.

Anything else (function parameters, names bound in several ways, loop variables) is unknown
and left as it is. Which arguments are float-only is data: the `promote` field of a record;
`compute_as` names the kinds (bool, int, float64) a MindSpore kernel lacks and the dtype to
compute them in (the result cast back). The same visibility decides whether a tensor may be
empty (`x[mask]`, `torch.tensor([])`): a whole reduction of one pads the record's
`empty_value` on first (MindSpore skips a reduce kernel on an empty tensor).
"""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import atom, creates_cell
from msmigrate.names import TargetBindings, dotted

INT_DTYPES = {"long", "int64", "int", "int32", "int16", "short", "int8", "uint8", "byte", "char",
              "uint16", "uint32", "uint64"}
FLOAT_DTYPES = {"float", "float32", "double", "float64", "half", "float16", "bfloat16"}
INT_METHODS = {"long": "int", "int": "int", "short": "int", "byte": "int", "char": "int",
               "bool": "bool", "float": "float", "double": "float64", "half": "float"}
# Tensor methods whose result has the receiver's dtype (x.reshape(2, 3) of an int tensor: int)
SAME_DTYPE_METHODS = {"reshape", "view", "flatten", "t", "transpose", "permute", "squeeze", "unsqueeze",
                      "clone", "detach", "contiguous", "expand", "repeat", "flip", "cpu", "cuda", "abs",
                      "absolute", "neg", "negative", "roll", "tril", "triu", "tile", "fliplr", "flipud",
                      "masked_fill", "narrow", "select", "diagonal", "movedim", "moveaxis", "swapaxes",
                      "swapdims", "expand_as", "view_as", "reshape_as", "unflatten", "index_select",
                      "repeat_interleave", "rot90", "take", "index_fill", "index_copy", "scatter", "put"}
# ... and these when called without arguments (with a dim, max/min return (values, indices))
WHOLE_SAME_DTYPE_METHODS = {"max", "min", "amax", "amin", "median"}
# Tensor methods of an integer result, of a bool result; reductions accumulating in int64 for
# integer and bool tensors (torch.tensor([True]).sum() is int)
INT_RESULT_METHODS = {"argmax", "argmin", "argsort", "nonzero", "argwhere", "multinomial", "count_nonzero"}
BOOL_RESULT_METHODS = {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_not", "logical_and",
                       "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge", "signbit", "isclose",
                       "greater", "less", "greater_equal", "less_equal", "not_equal"}
SUM_METHODS = {"sum", "cumsum", "prod", "cumprod", "nansum"}
# torch functions whose result is an integer tensor whatever their arguments' dtype
INT_RESULTS = {"torch.randint", "torch.randperm", "torch.argmax", "torch.argmin", "torch.argsort",
               "torch.nonzero", "torch.bucketize", "torch.searchsorted", "torch.count_nonzero",
               "torch.multinomial", "torch.argwhere", "torch.tril_indices", "torch.triu_indices"}
# torch functions joining tensors: their kind when every tensor joined is of one kind
JOINS = {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack",
         "torch.dstack", "torch.column_stack", "torch.row_stack"}
# numpy arrays a tensor is made from (torch.from_numpy(np.arange(4)) is int64, of np.zeros float64)
NUMPY_FLOAT64 = {"numpy.zeros", "numpy.ones", "numpy.empty", "numpy.linspace", "numpy.random.rand",
                 "numpy.random.randn", "numpy.random.random", "numpy.random.normal", "numpy.random.uniform",
                 "numpy.eye", "numpy.identity"}
BOOL_RESULTS = {"torch.isnan", "torch.isinf", "torch.isfinite", "torch.isposinf", "torch.isneginf",
                "torch.logical_not", "torch.logical_and", "torch.logical_or", "torch.logical_xor",
                "torch.eq", "torch.ne", "torch.lt", "torch.le", "torch.gt", "torch.ge", "torch.signbit",
                "torch.isclose"}
# torch functions whose result has their first argument's dtype when no dtype= is given
LIKE = {"torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like", "torch.randint_like",
        "torch.clone", "torch.flatten", "torch.reshape", "torch.squeeze", "torch.unsqueeze", "torch.t",
        "torch.transpose", "torch.permute", "torch.flip", "torch.abs", "torch.neg", "torch.roll", "torch.tril",
        "torch.triu", "torch.tile"}
# creation functions: the kind of their data / fill value when no dtype= is given
FROM_DATA = {"torch.tensor": "data", "torch.as_tensor": "data", "torch.full": "fill_value"}
FLOAT_CREATION = {"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn",
                  "torch.linspace", "torch.logspace", "torch.eye"}
TYPED = {"torch.LongTensor": "int", "torch.IntTensor": "int", "torch.BoolTensor": "bool",
         "torch.ByteTensor": "int", "torch.ShortTensor": "int", "torch.CharTensor": "int",
         "torch.FloatTensor": "float", "torch.DoubleTensor": "float64", "torch.HalfTensor": "float",
         "torch.Tensor": "float"}
# what a name may be known to hold: a tensor of a kind, or a Python number (`n = 5`,
# `n = x.size(1)`, `n = len(xs)`: torch.arange(n) is an int tensor)
_TENSOR_KINDS = ("int", "bool", "float", "float64")
_NAME_KINDS = (*_TENSOR_KINDS, "pyint", "pyfloat", "pybool")
_BOOL_OPS = (cst.BitAnd, cst.BitOr, cst.BitXor)
_INT_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)


# Python floats torch and math name (torch.inf is math.inf)
_FLOAT_CONSTANTS = frozenset(f"{m}.{c}" for m in ("torch", "math") for c in ("inf", "nan", "pi", "e", "tau"))


def kind(rw, expr: cst.BaseExpression, _seen: frozenset = frozenset()) -> str | None:
    """"int", "bool", "float" ("float64" where visibly double precision) when the original torch
    expression `expr` is visibly a tensor (or a Python literal: "pyint", "pybool", "pyfloat") of
    that kind, else None."""
    if isinstance(expr, cst.Integer):
        return "pyint"
    if isinstance(expr, cst.Float):
        return "pyfloat"
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False"):
            return "pybool"
        return _name_kind(rw, expr.value, _seen)
    if isinstance(expr, cst.UnaryOperation):
        inner = kind(rw, expr.expression, _seen)
        if isinstance(expr.operator, cst.Minus) and inner in ("pyint", "pyfloat", "int", "float", "float64"):
            return inner
        if isinstance(expr.operator, cst.BitInvert) and inner == "bool":
            return "bool"
        return None
    if isinstance(expr, cst.Comparison):
        if any(isinstance(c.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)) for c in expr.comparisons):
            return None
        # a tensor compared gives a bool tensor; Python numbers compared, a Python bool (the
        # same under both frameworks): bool either way, unless every side is a literal
        sides = [kind(rw, expr.left, _seen)] + [kind(rw, c.comparator, _seen) for c in expr.comparisons]
        return None if all(k in ("pyint", "pyfloat", "pybool") for k in sides) else "bool"
    if isinstance(expr, cst.BinaryOperation):
        left, right = kind(rw, expr.left, _seen), kind(rw, expr.right, _seen)
        if isinstance(expr.operator, _BOOL_OPS) and {left, right} <= {"bool", "pybool"} and "bool" in (left, right):
            return "bool"
        if isinstance(expr.operator, (*_INT_OPS, cst.Divide)):
            return _arithmetic_kind(left, right, isinstance(expr.operator, cst.Divide))
        return None
    if isinstance(expr, cst.Call):
        return _call_kind(rw, expr, _seen)
    if isinstance(expr, cst.Attribute) and rw.scopes.resolve(expr) in _FLOAT_CONSTANTS:
        return "pyfloat"
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT", "data") \
            and rw.scopes.resolve(expr) is None:   # x.T, x.data: x's dtype
        inner = kind(rw, expr.value, _seen)
        return inner if inner in _TENSOR_KINDS else None
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)) and _over_range(rw, expr):
        return "pyint" if kind(rw, expr.elt, _seen) == "pyint" or _is_target(expr) else None
    if isinstance(expr, cst.Subscript):   # indexing keeps a tensor's dtype
        if isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape" and \
                len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            return "pyint"   # x.shape[1]
        inner = kind(rw, expr.value, _seen)
        return inner if inner in _TENSOR_KINDS else None
    return None


# torch's type promotion over kinds: a category (bool < int < float) decides between tensors,
# a Python number only lifts a tensor to its own category (int tensor * 2.5: float32)
_RANK = {"bool": 0, "pybool": 0, "int": 1, "pyint": 1, "float": 2, "pyfloat": 2, "float64": 2}


def _arithmetic_kind(left, right, divide: bool) -> str | None:
    """The kind of `left <op> right` for + - * // % (and / with `divide`), where at least one
    side is a tensor; None when unknown (float32 with float64: a 0-d tensor would not decide)."""
    if left is None or right is None or not ({left, right} & set(_TENSOR_KINDS)):
        return None
    tensors = [k for k in (left, right) if k in _TENSOR_KINDS]
    if len(tensors) == 2 and left != right and _RANK[left] == _RANK[right]:
        return None
    top = max((left, right), key=lambda k: (_RANK[k], k in _TENSOR_KINDS))
    found = top if top in _TENSOR_KINDS else {0: "bool", 1: "int", 2: "float"}[_RANK[top]]
    if found == "bool" and not divide:
        return None   # bool + bool is bool in torch, bool - bool an error: not worth guessing
    return "float" if divide and found in ("bool", "int") else found


def _over_range(rw, comp) -> bool:
    """`[... for v in range(n)]`: one loop over a range."""
    loop = comp.for_in
    return loop.inner_for_in is None and not loop.ifs and isinstance(loop.iter, cst.Call) \
        and rw.scopes.resolve(loop.iter.func) is None and isinstance(loop.iter.func, cst.Name) \
        and loop.iter.func.value == "range"


def _is_target(comp) -> bool:
    """`[v for v in range(n)]`: the loop variable itself."""
    return isinstance(comp.elt, cst.Name) and isinstance(comp.for_in.target, cst.Name) \
        and comp.elt.value == comp.for_in.target.value


def _numpy_kind(rw, call: cst.Call, q: str, seen) -> str | None:
    """The kind of the tensor made from a numpy array built visibly (np.arange(4): int64,
    np.zeros(3): float64, np.array([1, 2]): int64)."""
    dtype = _keyword(call, "dtype")
    if dtype is not None:
        return _dtype_kind(rw, dtype)
    if q in NUMPY_FLOAT64:
        return "float64"
    if q == "numpy.random.randint":
        return "int"
    positional = [a.value for a in call.args if a.keyword is None]
    if q == "numpy.arange" and positional:
        kinds = {kind(rw, v, seen) for v in positional}
        return "int" if kinds <= {"pyint"} else "float64" if "pyfloat" in kinds else None
    if q in ("numpy.array", "numpy.asarray") and positional:
        kinds = _literal_kinds(positional[0], rw, seen)
        return None if not kinds else "bool" if kinds == {"pybool"} else \
            "int" if kinds <= {"pyint"} else "float64" if kinds <= {"pyint", "pyfloat"} else None
    return None


def _dtype_kind(rw, expr) -> str | None:
    q = rw.scopes.resolve(expr) or ""
    if q.startswith("numpy.") and q.count(".") == 1:   # np.int64, np.float32 (dtype= of a numpy array)
        q = "torch." + q.removeprefix("numpy.").replace("float_", "float64").replace("bool_", "bool")
    name = q.removeprefix("torch.") if q.startswith("torch.") and q.count(".") == 1 else ""
    return "int" if name in INT_DTYPES else "bool" if name == "bool" else \
        "float64" if name in ("float64", "double") else "float" if name in FLOAT_DTYPES else None


def _keyword(call: cst.Call, name: str):
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _call_kind(rw, call: cst.Call, seen) -> str | None:
    dtype = _keyword(call, "dtype")
    func = call.func
    if isinstance(func, cst.Name) and func.value == "len" and rw.scopes.resolve(func) is None \
            and len(call.args) == 1:
        return "pyint"
    if isinstance(func, cst.Attribute) and rw.scopes.resolve(func) is None:   # a method: x.long()
        method = func.attr.value
        if method == "size" and len(call.args) == 1 and call.args[0].keyword is None:
            return "pyint"   # x.size(1)
        if method in INT_METHODS and not call.args:
            return INT_METHODS[method]
        if method in INT_RESULT_METHODS:
            return "int"
        if method in BOOL_RESULT_METHODS:
            return "bool"
        if method in SUM_METHODS and dtype is None:
            inner = kind(rw, func.value, seen)
            return "int" if inner in ("int", "bool") else inner if inner in _TENSOR_KINDS else None
        if method in WHOLE_SAME_DTYPE_METHODS and not call.args:
            inner = kind(rw, func.value, seen)
            return inner if inner in _TENSOR_KINDS else None
        if method in ("to", "type") and call.args:
            first = call.args[0]
            return _dtype_kind(rw, first.value if first.keyword is None else (dtype or first.value))
        if method in SAME_DTYPE_METHODS:
            if method == "view" and len(call.args) == 1 and _dtype_kind(rw, call.args[0].value) is not None:
                return _dtype_kind(rw, call.args[0].value)   # x.view(torch.int32) reinterprets
            inner = kind(rw, func.value, seen)
            return inner if inner in _TENSOR_KINDS else None
        return None
    q = rw.scopes.resolve(func) or ""
    made_by = rw.instances.get(dotted(func) or "")
    if made_by is not None and made_by.torch.startswith("torch.nn.") and creates_cell(made_by):
        return "float"   # what a layer or model object returns (`pred = model(x)`)
    if dtype is not None:
        return _dtype_kind(rw, dtype) if q.startswith("torch.") else None
    if q in TYPED:
        return TYPED[q]
    if q in INT_RESULTS or (q == "torch.bincount" and len(call.args) == 1):   # bincount's weights: their dtype
        return "int"
    if q.startswith("numpy."):
        return _numpy_kind(rw, call, q, seen)
    if q == "torch.from_numpy" and call.args:
        inner = kind(rw, call.args[0].value, seen)
        return inner if inner in _TENSOR_KINDS else None
    if q in JOINS and call.args and isinstance(call.args[0].value, (cst.List, cst.Tuple)):
        kinds = {kind(rw, e.value, seen) for e in call.args[0].value.elements}
        return kinds.pop() if len(kinds) == 1 and kinds <= set(_TENSOR_KINDS) else None
    if q == "torch.where" and len(call.args) == 3:
        kinds = {kind(rw, a.value, seen) for a in call.args[1:]}
        return kinds.pop() if len(kinds) == 1 and kinds <= set(_TENSOR_KINDS) else None
    if q in BOOL_RESULTS:
        return "bool"
    if q in FLOAT_CREATION:
        return "float"
    if q in LIKE and call.args and (call.args[0].keyword is None or call.args[0].keyword.value == "input"):
        inner = kind(rw, call.args[0].value, seen)
        return inner if inner in _TENSOR_KINDS else None
    if q in ("torch.arange", "torch.range"):
        values = [a.value for a in call.args if a.keyword is None or a.keyword.value in ("start", "end", "step")]
        kinds = {kind(rw, v, seen) for v in values}
        return "int" if values and kinds <= {"pyint"} else "float" if "pyfloat" in kinds else None
    if q in FROM_DATA:
        pos = 0 if FROM_DATA[q] == "data" else 1
        data = _keyword(call, FROM_DATA[q])
        if data is None:
            positional = [a.value for a in call.args if a.keyword is None]
            data = positional[pos] if len(positional) > pos else None
        if isinstance(data, cst.Call) and (rw.scopes.resolve(data.func) or "").startswith("numpy.") \
                and FROM_DATA[q] == "data":
            return _numpy_kind(rw, data, rw.scopes.resolve(data.func), seen)
        if isinstance(data, cst.Call) and isinstance(data.func, cst.Name) and data.func.value == "list" \
                and rw.scopes.resolve(data.func) is None and len(data.args) == 1:
            data = data.args[0].value   # list(range(n))
        if isinstance(data, cst.Call) and isinstance(data.func, cst.Name) and data.func.value == "range" \
                and rw.scopes.resolve(data.func) is None:
            return "int"
        kinds = _literal_kinds(data, rw, seen)
        return None if not kinds else "bool" if kinds == {"pybool"} else \
            "int" if kinds <= {"pyint"} else "float" if kinds <= {"pyint", "pyfloat"} else None
    return None


def _literal_kinds(expr, rw=None, seen: frozenset = frozenset()) -> set[str] | None:
    """Kinds of the Python numbers of a (nested) list/tuple (literals, or names visibly holding
    one: `n = 5`); None when not all are."""
    if rw is not None and isinstance(expr, (cst.Name, cst.Call, cst.Subscript, cst.ListComp)):
        found = kind(rw, expr, seen)
        return {found} if found in ("pyint", "pyfloat", "pybool") else None
    if isinstance(expr, (cst.List, cst.Tuple)):
        out: set[str] = set()
        for e in expr.elements:
            inner = _literal_kinds(e.value, rw, seen)
            if inner is None:
                return None
            out |= inner
        return out or None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _literal_kinds(expr.expression, rw, seen)
    if isinstance(expr, cst.Integer):
        return {"pyint"}
    if isinstance(expr, cst.Float):
        return {"pyfloat"}
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return {"pybool"}
    return None


# ---- names: every binding of the name in its scope must be of one kind --------------------

class _Bindings(TargetBindings):
    """The values bound to `name` in one scope (None for a binding whose value is not a plain
    `name = value`); nested functions and classes are other scopes (only their names bind)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.values: list = []
        self.depth = 0

    def _bind(self, target, value) -> None:
        if isinstance(target, cst.Name):
            if target.value == self.name:
                self.values.append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for e in target.elements:
                self._bind(e.value, None)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, None)


    def visit_Global(self, node) -> None:
        if any(n.name.value == self.name for n in node.names):
            self.values.append(None)

    visit_Nonlocal = visit_Global

    def visit_ImportAlias(self, node) -> None:
        bound = node.asname.name if node.asname is not None else cst.Name(dotted(node.name).split(".")[0])
        self._bind(bound, None)

    def visit_Param(self, node) -> None:
        self._bind(node.name, None)

    def visit_FunctionDef(self, node) -> bool:
        self._bind(node.name, None)
        return False

    def visit_ClassDef(self, node) -> bool:
        self._bind(node.name, None)
        return False

    def visit_Lambda(self, node) -> bool:
        return False


def _scope_values(scope, name: str) -> list | None:
    """The values bound to `name` in `scope` (a FunctionDef or the Module); None if none."""
    finder = _Bindings(name)
    if isinstance(scope, cst.FunctionDef):
        scope.params.visit(finder)
        scope.body.visit(finder)
    else:
        scope.visit(finder)
    return finder.values or None


_UNKNOWN, _NOT_FOUND = object(), object()


def _binds(node, name: str) -> list | None:
    """The values `node` binds to `name` (None items: not a plain assignment), None if none."""
    finder = _Bindings(name)
    node.visit(finder)
    return finder.values or None


def _blocks(node) -> list[list]:
    """The statement sequences directly under a compound statement (an `elif` is one of its own)."""
    out = []
    for child in node.children:
        if isinstance(child, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            out.append(list(child.body))
        elif isinstance(child, cst.BaseStatement):
            out.append([child])
        elif isinstance(child, (cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally, cst.MatchCase)):
            out.extend(_blocks(child))
    return out


def _straight_line_value(rw, name: str):
    """The value of the last `name = value` before the statement being converted, reached
    through straight-line code only: the preceding statements of its block, then of the blocks
    around it through `if`/`with` (an enclosing loop, try, match... must not bind the name
    at all: a later binding would reach the call again). _UNKNOWN when a binding on the way is
    not a plain assignment; _NOT_FOUND at the function's or module's top without one."""
    frames = [f.node for f in rw.frames]
    if not frames:
        return _NOT_FOUND
    here = frames[-1]
    if isinstance(here, cst.SimpleStatementLine) and len(here.body) == 1:
        if any(isinstance(n, cst.NamedExpr) for n in _walrus(here)) and _binds(here, name):
            return _UNKNOWN
    elif _binds(here, name):
        return _UNKNOWN   # bound in the statement itself, before the call maybe (`a = 1; f(a)`)
    for k in range(len(frames) - 1, -1, -1):
        stmt = frames[k]
        parent = frames[k - 1] if k > 0 else rw.module
        block = list(parent.body) if parent is rw.module else \
            next((b for b in _blocks(parent) if any(s is stmt for s in b)), None)
        if block is None:
            return _UNKNOWN
        index = next(i for i, s in enumerate(block) if s is stmt)
        for sibling in reversed(block[:index]):
            values = _binds(sibling, name)
            if values is None:
                continue
            if isinstance(sibling, cst.SimpleStatementLine) and values[-1] is not None:
                return values[-1]
            return _UNKNOWN
        if parent is rw.module or isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            return _NOT_FOUND
        if isinstance(parent, cst.If):
            if _binds(parent.test, name):
                return _UNKNOWN
        elif isinstance(parent, cst.With):
            if any(_binds(item, name) for item in parent.items):
                return _UNKNOWN
        elif _binds(parent, name):
            return _UNKNOWN
    return _NOT_FOUND


def _walrus(node) -> list:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_NamedExpr(self, n) -> None:
            found.append(n)
    node.visit(_Find())
    return found


def _declared_global(rw, name: str) -> bool:
    """`global name` / `nonlocal name` anywhere in the file: a function may rebind it."""
    cache = rw.__dict__.setdefault("_dtypes_declared", {})
    if "names" not in cache:
        names = set()

        class _Find(cst.CSTVisitor):
            def visit_Global(self, n) -> None:
                names.update(a.name.value for a in n.names)
            visit_Nonlocal = visit_Global
        rw.module.visit(_Find())
        cache["names"] = names
    return name in cache["names"]


def _name_kind(rw, name: str, seen: frozenset) -> str | None:
    if name in seen or _declared_global(rw, name):
        return None
    if not seen:
        # a name at the call itself: its last binding in straight-line code before the call
        # decides (`x = torch.arange(5)` ... `torch.exp(x)` even if x is rebound later); else
        # every binding of the name in its scope must agree (below)
        value = _straight_line_value(rw, name)
        if value is not _UNKNOWN and value is not _NOT_FOUND:
            found = kind(rw, value, seen | {name})
            return found if found in _NAME_KINDS else None
    scopes = [f.node for f in rw.frames if isinstance(f.node, cst.FunctionDef)][::-1] + [rw.module]
    for scope in scopes:
        values = _scope_values(scope, name)
        if values is None:
            continue
        kinds = {kind(rw, v, seen | {name}) if v is not None else None for v in values}
        found = kinds.pop() if len(kinds) == 1 else None
        return found if found in _NAME_KINDS else None
    return None


# ---- the casts ---------------------------------------------------------------------------

def promote(site, original: dict) -> None:
    """Before a float-only record's conversion (its `promote` arguments): an argument visibly an
    integer or bool tensor becomes `<arg>.astype(mindspore.float32)` (torch's promotion to its
    default dtype). Its `dtype_review` arguments (MindSpore silently differs on some dtypes):
    marked where the argument's dtype is not visible."""
    for name, why in site.record.dtype_review.items():
        before = original.get(name)
        if before is not None and kind(site.rw, before.value) is None:
            site.flag("review", f"{site.qualname}: {why}")
    for name in site.record.promote:
        arg, before = site.bound.get(name), original.get(name)
        if arg is None or before is None or kind(site.rw, before.value) not in ("int", "bool"):
            continue
        site.uncast.setdefault(name, arg.value)
        site.bound[name] = arg.with_changes(
            value=site.expr("{v}.astype({f32})", v=atom(arg.value, attribute=True), f32="@mindspore.float32"))
    if site.record.compute_as:
        _compute_as(site, original)
    if site.record.empty_value:
        _never_empty(site, original)


def _never_empty(site, original: dict) -> None:
    """A reduction of every element (no dim) of a tensor that may visibly be empty (`x[mask]`,
    `torch.tensor([])`): MindSpore 2.10 skips a reduce kernel on an empty tensor and returns its
    uninitialised output (sum -4e-34, any True); the reduction's value over no elements (record
    field `empty_value`: 0 for sum, True for all) is padded onto the flattened tensor first, which
    changes no result and leaves the kernel something to reduce."""
    first = site.record.args[0]
    arg, before = site.bound.get(first), original.get(first)
    if arg is None or before is None or any(k in site.bound for k in ("dim", "keepdim")):
        return
    if not may_be_empty(site.rw, before.value):
        return
    site.bound[first] = arg.with_changes(value=site.expr(
        "{pad}({x}.reshape(-1), (0, 1), value=" + site.record.empty_value + ")",
        pad="@mindspore.ops.pad", x=atom(arg.value, attribute=True)))


def may_be_empty(rw, expr, depth: int = 0) -> bool:
    """`expr` (torch code) may visibly be an empty tensor: a boolean-mask selection (`x[x > 0]`,
    masked_select), a literal empty tensor or a shape with a literal 0, their reshapes, or a name
    last bound to one of these in straight-line code."""
    if depth > 8:
        return False
    if isinstance(expr, cst.Subscript):
        return len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) and \
            kind(rw, expr.slice[0].slice.value) == "bool"
    if isinstance(expr, cst.Name):
        value = _straight_line_value(rw, expr.value)
        return value is not _UNKNOWN and value is not _NOT_FOUND and may_be_empty(rw, value, depth + 1)
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and rw.scopes.resolve(func) is None:   # a method
        return func.attr.value == "masked_select" or (
            func.attr.value in SAME_DTYPE_METHODS and may_be_empty(rw, func.value, depth + 1))
    q = rw.scopes.resolve(func) or ""
    if q == "torch.masked_select":
        return True
    if q in ("torch.tensor", "torch.as_tensor") and expr.args and expr.args[0].keyword is None:
        return _no_numbers(expr.args[0].value)
    if q in FLOAT_CREATION or q in _SIZE_ARGUMENT:
        return any(_literal_zero(a.value) for a in _size_arguments(q, expr.args))
    return False


# creation functions whose size is one argument among others: its position, its keyword
# (torch.linspace(0, 1, 5) is not empty; torch.linspace(0, 1, 0) is); the others' positionals
# are all sizes (torch.zeros(0, 4))
_SIZE_ARGUMENT = {"torch.linspace": (2, "steps"), "torch.logspace": (2, "steps"), "torch.full": (0, "size"),
                  "torch.randint": (-1, "size")}


def _size_arguments(qualname: str, args) -> list:
    positional = [a for a in args if a.keyword is None and not a.star]
    if qualname not in _SIZE_ARGUMENT:
        return positional
    position, keyword = _SIZE_ARGUMENT[qualname]
    named = [a for a in args if a.keyword is not None and a.keyword.value == keyword]
    if named:
        return named
    if position == -1:   # randint(high, size) / randint(low, high, size): the size comes last
        return positional[-1:] if len(positional) >= 2 else []
    return positional[position:position + 1]


def _no_numbers(seq) -> bool:
    """A (nested) list literal holding no numbers: `[]`, `[[], []]`."""
    if not isinstance(seq, (cst.List, cst.Tuple)):
        return False
    return all(_no_numbers(e.value) for e in seq.elements)


def _literal_zero(expr) -> bool:
    """A size argument with a literal 0 in it (`0`, `(0, 4)`)."""
    if isinstance(expr, cst.Integer):
        return expr.value == "0"
    return isinstance(expr, (cst.Tuple, cst.List)) and any(_literal_zero(e.value) for e in expr.elements)


# the dtype a result computed through `compute_as` is cast back to, where the first argument
# is not a plain name (whose own `.dtype` is read at run time: int32 stays int32)
_KIND_DTYPES = {"bool": "mindspore.bool_", "int": "mindspore.int64", "float64": "mindspore.float64"}


def _compute_as(site, original: dict) -> None:
    """Tensor arguments visibly of a kind MindSpore's kernel lacks (record field `compute_as`:
    `{ bool = "int32" }`) are cast to the dtype given, and the result back to the first
    argument's dtype (torch's result dtype for these functions)."""
    first = site.record.args[0] if site.record.args else None
    for name, before in original.items():
        arg = site.bound.get(name)
        found = kind(site.rw, before.value) if arg is not None else None
        target = site.record.compute_as.get(found or "")
        if target is None:
            continue
        if name == first:
            site.result_dtype = site.expr("{v}.dtype", v=arg.value) if isinstance(arg.value, cst.Name) \
                else site.ref(_KIND_DTYPES[found])
        site.uncast.setdefault(name, arg.value)
        site.bound[name] = arg.with_changes(
            value=site.expr("{v}.astype({t})", v=atom(arg.value, attribute=True), t="@mindspore." + target))
