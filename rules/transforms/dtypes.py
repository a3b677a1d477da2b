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

Anything else (function parameters, names bound in several ways, loop variables) is unknown.
Top-level code (no function, lambda or class around it: data of any dtype, never compiled)
checks an unknown float-only argument when it runs (`ops.exp(msmigrate_float(x))`; a
`compute_as` one through msmigrate_kernel_input/_output; both generated); a function or class
body keeps the plain call. Calls of the file's networks and of torch losses give float
tensors. Which arguments are float-only is data: the `promote` field of a record;
`compute_as` names the kinds (bool, int, float64) a MindSpore kernel lacks and the dtype to
compute them in (the result cast back), `promote_as` the kinds torch itself computes in another
dtype (square of bool: int64). The same visibility decides whether a tensor may be empty
(`x[mask]`, `torch.tensor([])`): a whole reduction of one pads the record's `empty_value` on
first (MindSpore skips a reduce kernel on an empty tensor), and kernels raising on an empty
tensor get one element more, dropped from the result (`empty_pad`, `empty_reduce`,
`empty_sizes`). Complex tensors (`complex`: isnan of the real and imaginary parts), shapes
written in the source (`shape`: torch.zeros(0, 4), torch.tensor(1.5), x[0]; records'
`scalar_dim` for dim 0 of a 0-d tensor, `unbatched` for a convolution's input without its batch
dim) and joins of different kinds (`joined`: torch.cat of float32 and float64 is float64) follow
the same rule: changed only where the source shows it, every other call converts as before.
"""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import atom, creates_cell
from msmigrate.names import TargetBindings, dotted, taken_names
from msmigrate.rules.transforms.common import repeatable
from msmigrate.rules.transforms.torch_functions import generated_function

INT_DTYPES = {"long", "int64", "int", "int32", "int16", "short", "int8", "uint8", "byte", "char",
              "uint16", "uint32", "uint64"}
FLOAT_DTYPES = {"float", "float32", "double", "float64", "half", "float16", "bfloat16"}
COMPLEX_DTYPES = {"complex64", "complex128", "cfloat", "cdouble", "complex32", "chalf"}
INT_METHODS = {"long": "int", "int": "int", "short": "int", "byte": "int", "char": "int",
               "bool": "bool", "float": "float", "double": "float64", "half": "float",
               "cfloat": "complex", "cdouble": "complex"}
# Tensor methods whose result has the receiver's dtype (x.reshape(2, 3) of an int tensor: int)
SAME_DTYPE_METHODS = {"reshape", "view", "flatten", "t", "transpose", "permute", "squeeze", "unsqueeze",
                      "clone", "detach", "contiguous", "expand", "repeat", "flip", "cpu", "cuda", "abs",
                      "absolute", "neg", "negative", "roll", "tril", "triu", "tile", "fliplr", "flipud",
                      "masked_fill", "narrow", "select", "diagonal", "movedim", "moveaxis", "swapaxes",
                      "swapdims", "expand_as", "view_as", "reshape_as", "unflatten", "index_select",
                      "repeat_interleave", "rot90", "take", "index_fill", "index_copy", "scatter", "put",
                      "mean", "nanmean", "clamp", "clip", "round", "floor", "ceil", "trunc", "sign"}
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
# torch functions of a complex result (torch.complex(re, im), torch.polar(abs, angle), the FFTs
# of a complex spectrum)
COMPLEX_RESULTS = {"torch.complex", "torch.polar", "torch.view_as_complex", "torch.fft.fft", "torch.fft.ifft",
                   "torch.fft.fft2", "torch.fft.ifft2", "torch.fft.fftn", "torch.fft.ifftn", "torch.fft.rfft",
                   "torch.fft.rfft2", "torch.fft.rfftn", "torch.fft.ihfft", "torch.fft.ihfft2",
                   "torch.fft.ihfftn"}
# ... and these of a real result from a complex tensor (abs of complex64 is float32)
REAL_OF_COMPLEX = {"abs", "absolute", "angle", "real", "imag"}
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
_TENSOR_KINDS = ("int", "bool", "float", "float64", "complex")
_NAME_KINDS = (*_TENSOR_KINDS, "pyint", "pyfloat", "pybool", "pycomplex")
_BOOL_OPS = (cst.BitAnd, cst.BitOr, cst.BitXor)
_INT_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)


# Python floats torch and math name (torch.inf is math.inf)
_FLOAT_CONSTANTS = frozenset(f"{m}.{c}" for m in ("torch", "math") for c in ("inf", "nan", "pi", "e", "tau"))


def kind(rw, expr: cst.BaseExpression, _seen: frozenset = frozenset()) -> str | None:
    """"int", "bool", "float" ("float64" where visibly double precision), "complex" when the
    original torch expression `expr` is visibly a tensor (or a Python literal: "pyint", "pybool",
    "pyfloat", "pycomplex") of that kind, else None."""
    if isinstance(expr, cst.Integer):
        return "pyint"
    if isinstance(expr, cst.Float):
        return "pyfloat"
    if isinstance(expr, cst.Imaginary):
        return "pycomplex"
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False"):
            return "pybool"
        return _name_kind(rw, expr.value, _seen)
    if isinstance(expr, cst.UnaryOperation):
        inner = kind(rw, expr.expression, _seen)
        if isinstance(expr.operator, cst.Minus) and inner in ("pyint", "pyfloat", "pycomplex", "int", "float",
                                                              "float64", "complex"):
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
_RANK = {"bool": 0, "pybool": 0, "int": 1, "pyint": 1, "float": 2, "pyfloat": 2, "float64": 2, "complex": 3,
         "pycomplex": 3}


def _arithmetic_kind(left, right, divide: bool) -> str | None:
    """The kind of `left <op> right` for + - * // % (and / with `divide`), where at least one
    side is a tensor; None when unknown (float32 with float64: a 0-d tensor would not decide).
    Two Python numbers give a Python number (`1 - lam`: a float)."""
    if left is None or right is None:
        return None
    if not ({left, right} & set(_TENSOR_KINDS)):
        if "pycomplex" in (left, right):
            return "pycomplex"
        return "pyfloat" if divide or "pyfloat" in (left, right) else "pyint"
    tensors = [k for k in (left, right) if k in _TENSOR_KINDS]
    if len(tensors) == 2 and left != right and _RANK[left] == _RANK[right]:
        return None
    top = max((left, right), key=lambda k: (_RANK[k], k in _TENSOR_KINDS))
    found = top if top in _TENSOR_KINDS else {0: "bool", 1: "int", 2: "float", 3: "complex"}[_RANK[top]]
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
        "float64" if name in ("float64", "double") else "float" if name in FLOAT_DTYPES else \
        "complex" if name in COMPLEX_DTYPES else None


def _keyword(call: cst.Call, name: str):
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


# the builtins making Python numbers (a builtin the file does not rebind)
_BUILTIN_NUMBERS = {"float": "pyfloat", "int": "pyint", "bool": "pybool"}


def _call_kind(rw, call: cst.Call, seen) -> str | None:
    dtype = _keyword(call, "dtype")
    func = call.func
    if isinstance(func, cst.Name) and _network(rw, func.value, seen):
        return "float"   # outputs = model(images); loss = criterion(outputs, labels)
    if isinstance(func, cst.Name) and func.value == "msmigrate_forward" and call.args \
            and isinstance(call.args[0].value, cst.Name) and _network(rw, call.args[0].value.value, seen):
        return "float"   # model(images) as the training-loop rewrite already wrote it
    if isinstance(func, cst.Name) and func.value == "len" and rw.scopes.resolve(func) is None \
            and len(call.args) == 1:
        return "pyint"
    if isinstance(func, cst.Name) and func.value in _BUILTIN_NUMBERS and rw.scopes.resolve(func) is None \
            and len(call.args) <= 1:
        return _BUILTIN_NUMBERS[func.value]   # float("-inf") of a causal mask, int(n)
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
            if inner == "complex" and method in REAL_OF_COMPLEX:
                return None   # float32 or float64: the precision is not visible
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
    if q in COMPLEX_RESULTS or (q == "torch.stft" and any(
            a.keyword is not None and a.keyword.value == "return_complex" and dotted(a.value) == "True"
            for a in call.args)):
        return "complex"
    if q in FLOAT_CREATION:
        return "float"
    if q in LIKE and call.args and (call.args[0].keyword is None or call.args[0].keyword.value == "input"):
        inner = kind(rw, call.args[0].value, seen)
        if inner == "complex" and q.rsplit(".", 1)[1] in REAL_OF_COMPLEX:
            return None
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
            "int" if kinds <= {"pyint"} else "float" if kinds <= {"pyint", "pyfloat"} else \
            "complex" if kinds <= {"pyint", "pyfloat", "pycomplex"} else None
    return None


# methods returning the network they are called on (`Net().to(device)`)
_SAME_NETWORK = frozenset({"to", "cuda", "cpu", "float", "train", "eval"})


def _network(rw, name: str, seen) -> bool:
    """`name` is bound, by every binding in its scope, to an instance of one of the file's
    torch.nn.Module subclasses or of a torch loss class: calling it gives a float tensor."""
    if name in seen or rw.scopes.resolve(cst.Name(name)) is not None:
        return False
    values = bound_values(rw, name)
    if not values:
        return False
    for value in values:
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value in _SAME_NETWORK:
            value = value.func.value
        if isinstance(value, cst.Name) and value.value == name:
            continue   # `model = model.cuda()`: its other bindings decide
        if not isinstance(value, cst.Call):
            return False
        base = rw.local_classes.get(value.func.value) if isinstance(value.func, cst.Name) else None
        q = rw.scopes.resolve(value.func) or ""
        if not ((base is not None and base.torch.startswith("torch.nn."))
                or (q.startswith("torch.nn.") and q.endswith("Loss"))):
            return False
    return True


def _literal_kinds(expr, rw=None, seen: frozenset = frozenset()) -> set[str] | None:
    """Kinds of the Python numbers of a (nested) list/tuple (literals, or names visibly holding
    one: `n = 5`); None when not all are."""
    if rw is not None and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) \
            and expr.func.value == "complex" and rw.scopes.resolve(expr.func) is None:
        return {"pycomplex"}   # complex(1.0, 2.0)
    if rw is not None and isinstance(expr, (cst.Name, cst.Call, cst.Subscript, cst.ListComp)):
        found = kind(rw, expr, seen)
        return {found} if found in ("pyint", "pyfloat", "pybool", "pycomplex") else None
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
    if isinstance(expr, cst.Imaginary):
        return {"pycomplex"}
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        left, right = _literal_kinds(expr.left, rw, seen), _literal_kinds(expr.right, rw, seen)
        return left | right if left and right and "pycomplex" in left | right else None   # 1 + 2j
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
            values = [None] * len(target.elements)
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements) and not any(
                    isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
                values = [e.value for e in value.elements]   # `best_loss, best = loss, model.state_dict()`
            for e, v in zip(target.elements, values):
                self._bind(e.value, v)
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


def bound_values(rw, name: str) -> list | None:
    """The values bound to `name` in the innermost scope around the statement being converted
    that binds it (None items: not a plain assignment); None where no scope does."""
    scopes = [f.node for f in rw.frames if isinstance(f.node, cst.FunctionDef)][::-1] + [rw.module]
    return next((values for scope in scopes if (values := _scope_values(scope, name)) is not None), None)


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
    values = bound_values(rw, name)
    if values is None:
        return None
    kinds = {kind(rw, v, seen | {name}) if v is not None else None for v in values}
    found = kinds.pop() if len(kinds) == 1 else None
    return found if found in _NAME_KINDS else None


# ---- the casts ---------------------------------------------------------------------------

def promote(site, original: dict) -> None:
    """Before a float-only record's conversion (its `promote` arguments): an argument visibly an
    integer or bool tensor becomes `<arg>.astype(mindspore.float32)` (torch's promotion to its
    default dtype). Its `dtype_review` arguments (MindSpore silently differs on some dtypes):
    marked where the argument's dtype is not visible."""
    for name, why in site.record.dtype_review.items():
        before = original.get(name)
        if before is None:
            continue
        found = kind(site.rw, before.value)
        # (in top-level code msmigrate_float below casts an integer/bool tensor when it runs)
        cast_when_run = name in site.record.promote and checked_at_run_time(site.rw)
        # a record converting a visibly complex argument (`complex`) reviews an argument of
        # unknown dtype only in a file that makes complex tensors (else abs() is marked everywhere)
        unseen = site.record.complex and not may_be_complex(site.rw, before.value)
        if (found == "complex" and not site.record.complex) or (found is None and not cast_when_run and not unseen):
            site.flag("review", f"{site.qualname}: {why}")
    for name in site.record.promote:
        arg, before = site.bound.get(name), original.get(name)
        if arg is None or before is None:
            continue
        found = kind(site.rw, before.value)
        if found is None and checked_at_run_time(site.rw):
            site.uncast.setdefault(name, arg.value)
            site.bound[name] = arg.with_changes(value=cst.Call(
                generated_function(site, "msmigrate_float"), [cst.Arg(arg.value)]))
            continue
        if found not in ("int", "bool"):
            continue
        site.uncast.setdefault(name, arg.value)
        site.bound[name] = arg.with_changes(
            value=site.expr("{v}.astype({f32})", v=atom(arg.value, attribute=True), f32="@mindspore.float32"))
    if site.record.compute_as or site.record.promote_as:
        _compute_as(site, original)
    if site.record.empty_value:
        _never_empty(site, original)
    if site.record.empty_result or (site.record.empty_value and "dim" in site.bound):
        _empty_result(site, original)
    if site.record.complex:
        _complex(site, original)
    if site.record.empty_pad:
        _empty_pad(site, original)
    if site.record.empty_sizes:
        _empty_sizes(site, original)
    if site.record.empty_reduce:
        _empty_reduce(site, original)
    if site.record.scalar_dim:
        _scalar_dim(site, original)
    if site.record.unbatched:
        _unbatched(site, original)
    if site.record.joined:
        _joined(site, original)


_COMPLEX_MAKERS = re.compile(r"complex|cfloat|cdouble|chalf|\bfft\b|stft|polar|\d[jJ]\b")


def may_be_complex(rw, expr) -> bool:
    """Whether a tensor of unknown dtype may be complex: the file visibly makes complex tensors
    (a complex dtype, an FFT, an imaginary literal), or the tensor is a name the file never binds
    (given by whoever runs the code)."""
    if getattr(rw, "_makes_complex", None) is None:
        rw._makes_complex = bool(_COMPLEX_MAKERS.search(rw.module.code))
        rw._bound_names = taken_names(rw.module)
    return rw._makes_complex or (isinstance(expr, cst.Name) and expr.value not in rw._bound_names)


def checked_at_run_time(rw) -> bool:
    """Whether a float-only argument of unknown dtype gets its dtype checked when the code runs
    (rules/generated/functions.py msmigrate_float): in top-level code, which holds data of any
    dtype (loaded arrays, labels, masks) and never runs in a graph. A function, lambda or class
    body (a model's layers, a train step: float activations) keeps MindSpore's plain call."""
    return len(rw.scopes.stack) == 1


def changes(rw, rec, values: list, whole: bool = False) -> bool:
    """Whether `promote` would change the conversion of `rec` (a torch function's record) for
    these torch arguments (the tensor first): a Tensor method converts as its function there
    (`k.exp()` of an integer k, `e.digamma()` of an empty e). `whole`: no argument but the tensor."""
    if rec is None or not values:
        return False
    kinds = {kind(rw, v) for v in values}
    if (rec.promote and kinds & {"int", "bool"}) or kinds & (set(rec.compute_as) | set(rec.promote_as)):
        return True
    if kind(rw, values[0]) is None and checked_at_run_time(rw) and (rec.promote or (
            rec.compute_as and rec.torch not in _PLAIN_AT_RUN_TIME and repeatable(values[0]))):
        return True
    if rec.complex and "complex" in kinds:
        return True
    if ((rec.empty_value and whole) or ((rec.empty_value or rec.empty_result) and checked_at_run_time(rw))
            or rec.empty_pad or rec.empty_sizes or rec.empty_reduce) and may_be_empty(rw, values[0]):
        return True
    return bool(rec.scalar_dim) and shape(rw, values[0]) == ()


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


# arguments of the compute_as records that are tensors (the first one is, always)
_TENSOR_ARGUMENTS = ("other", "vec1", "vec2", "values")
# compute_as records NOT checked at run time: called on float tensors on common lines
# (`_, pred = torch.max(out, 1)`, `labels.max()`, FGSM's `x + eps * grad.sign()`), where two
# helpers around each call would bury the line; a bool tensor still raises there, loudly
# (MindSpore has no bool kernel)
_PLAIN_AT_RUN_TIME = frozenset({"torch.max", "torch.min", "torch.amax", "torch.amin", "torch.aminmax",
                                "torch.maximum", "torch.minimum", "torch.add", "torch.sign", "torch.sgn"})


def _compute_as_at_run_time(site, original: dict) -> bool:
    """compute_as for a first argument of unknown dtype in top-level code: each tensor argument
    through msmigrate_kernel_input, the result through msmigrate_kernel_output
    (cast back where the first argument was cast; generated). False where the first argument's
    dtype is visible or it cannot be written twice (a call)."""
    first = site.record.args[0] if site.record.args else None
    arg, before = site.bound.get(first), original.get(first)
    if not site.record.compute_as or site.record.torch in _PLAIN_AT_RUN_TIME \
            or not checked_at_run_time(site.rw) or arg is None or before is None \
            or kind(site.rw, before.value) is not None or not repeatable(arg.value):
        return False
    kinds = {f"{k}_as": "@mindspore." + v for k, v in sorted(site.record.compute_as.items())}
    keywords = ", ".join(f"{k}={{{k}}}" for k in kinds)
    cast_in = generated_function(site, "msmigrate_kernel_input")
    for name, before in original.items():
        value = site.bound.get(name)
        if value is not None and (name == first or name in _TENSOR_ARGUMENTS) \
                and not (kind(site.rw, before.value) or "").startswith("py"):   # not a Python number
            site.uncast.setdefault(name, value.value)
            site.bound[name] = value.with_changes(value=site.expr(
                "{f}({v}, " + keywords + ")", f=cast_in, v=value.value, **kinds))
    cast_out = generated_function(site, "msmigrate_kernel_output")
    like = arg.value
    site.wraps.append(lambda out: site.expr("{f}({o}, {x}, " + keywords + ")", f=cast_out, o=out, x=like, **kinds))
    return True


def _empty_result(site, original: dict) -> None:
    """A reduction of a tensor that may visibly be empty whose value over no elements is no
    identity to pad with (record field `empty_result`: mean's nan), or one over `dim` (its
    `empty_value`: prod along the empty dim is 1): the result goes through
    msmigrate_empty_result (generated), which gives that value where the tensor is empty. In
    top-level code only: in a compiled function a mask selection has a dynamic shape, and its
    size would be tested in the graph."""
    first = site.record.args[0]
    arg, before = site.bound.get(first), original.get(first)
    if arg is None or before is None or not checked_at_run_time(site.rw) \
            or not may_be_empty(site.rw, before.value) or not _call_free(arg.value):
        return
    fill = generated_function(site, "msmigrate_empty_result")
    value = site.record.empty_result or site.record.empty_value
    tensor = arg.value
    site.wraps.append(lambda out: site.expr("{f}({o}, {x}, " + value + ")", f=fill, o=out, x=tensor))


def _call_free(expr) -> bool:
    """No call in it (`x[x > t]`): the same value when written twice (read twice, computed twice)."""
    return not any(isinstance(n, (cst.Call, cst.NamedExpr, cst.Yield, cst.Await, cst.Lambda))
                   for n in _nodes(expr))


def _nodes(node):
    yield node
    for child in node.children:
        yield from _nodes(child)


def may_be_empty(rw, expr, depth: int = 0) -> bool:
    """`expr` (torch code) may visibly be an empty tensor: a boolean-mask selection (`x[x > 0]`,
    masked_select), a literal empty tensor or a shape with a literal 0, their reshapes and
    arithmetic, or a name last bound to one of these in straight-line code."""
    if depth > 8:
        return False
    if isinstance(expr, cst.BinaryOperation):   # x[m] * 2: broadcast to empty
        return may_be_empty(rw, expr.left, depth + 1) or may_be_empty(rw, expr.right, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return may_be_empty(rw, expr.expression, depth + 1)
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


# ---- shapes: the sizes a tensor visibly has -------------------------------------------------

# Tensor methods whose result has their receiver's shape (casts, copies, elementwise)
SAME_SHAPE_METHODS = {"clone", "detach", "contiguous", "cpu", "cuda", "to", "type", "float", "double", "half",
                      "long", "int", "short", "byte", "char", "bool", "cfloat", "cdouble", "abs", "absolute", "neg",
                      "negative", "tril", "triu", "flip", "fliplr", "flipud", "roll", "masked_fill", "index_fill",
                      "requires_grad_", "zero_", "fill_", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu",
                      "sqrt", "square", "sign", "floor", "ceil", "round", "clamp", "clip"}
SAME_SHAPE_FUNCTIONS = {"torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like", "torch.rand_like",
                        "torch.randn_like", "torch.randint_like", "torch.clone", "torch.abs", "torch.neg", "torch.flip",
                        "torch.roll", "torch.tril", "torch.triu", "torch.exp", "torch.log", "torch.sin", "torch.cos",
                        "torch.tanh", "torch.sigmoid", "torch.relu", "torch.sqrt", "torch.square", "torch.sign",
                        "torch.floor", "torch.ceil", "torch.round", "torch.clamp", "torch.clip"}
_SIZED = {"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.full", "torch.randint"}


def shape(rw, expr, depth: int = 0) -> tuple | None:
    """The shape the torch tensor `expr` visibly has: one item per dim, its size where the source
    writes it as a literal (`torch.zeros(0, 4)`: (0, 4); `torch.tensor(1.5)`: ()), None where not
    (a boolean-mask selection's first dim); None when its rank is not visible."""
    if depth > 8:
        return None
    if isinstance(expr, cst.Name):
        value = _straight_line_value(rw, expr.value)
        return None if value is _UNKNOWN or value is _NOT_FOUND else shape(rw, value, depth + 1)
    if isinstance(expr, cst.Subscript):
        return _indexed_shape(rw, expr, depth)
    if isinstance(expr, (cst.Comparison, cst.BinaryOperation)):
        sides = [expr.left, expr.comparisons[0].comparator] if isinstance(expr, cst.Comparison) else \
            [expr.left, expr.right]
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) != 1:
            return None
        tensors = [e for e in sides if kind(rw, e) not in ("pyint", "pyfloat", "pybool", "pycomplex")]
        shapes = {shape(rw, e, depth + 1) for e in tensors}
        return shapes.pop() if len(tensors) >= 1 and len(shapes) == 1 else None   # no broadcasting guessed
    if isinstance(expr, cst.UnaryOperation):
        return shape(rw, expr.expression, depth + 1)
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    positional = [a.value for a in expr.args if a.keyword is None and not a.star]
    if isinstance(func, cst.Attribute) and rw.scopes.resolve(func) is None:   # a method
        method = func.attr.value
        inner = shape(rw, func.value, depth + 1)
        if inner is None:
            return None
        if method in SAME_SHAPE_METHODS:
            return inner
        if method in ("reshape", "view") and positional and len(positional) == len(expr.args):
            sizes = _literal_sizes(positional)
            return None if sizes is None or (method == "view" and len(sizes) == 0) else _reshaped(inner, sizes)
        if method == "unsqueeze" and len(positional) == 1 and _int_literal(positional[0]) is not None:
            d = _int_literal(positional[0])
            d = d if d >= 0 else len(inner) + 1 + d
            return inner[:d] + (1,) + inner[d:] if 0 <= d <= len(inner) else None
        if method == "t" and len(inner) <= 2:
            return inner[::-1]
        return None
    q = rw.scopes.resolve(func) or ""
    if q in ("torch.tensor", "torch.as_tensor") and expr.args and expr.args[0].keyword is None:
        return _literal_shape(rw, expr.args[0].value)
    if q in _SIZED:
        sizes = _size_arguments(q, expr.args) if q in _SIZE_ARGUMENT else \
            [a for a in expr.args if a.keyword is None and not a.star] or \
            [a for a in expr.args if a.keyword is not None and a.keyword.value == "size"]
        if len(sizes) == 1 and isinstance(sizes[0].value, (cst.Tuple, cst.List)):
            return tuple(_int_literal(e.value) for e in sizes[0].value.elements
                         if not isinstance(e, cst.StarredElement)) \
                if not any(isinstance(e, cst.StarredElement) for e in sizes[0].value.elements) else None
        if len(sizes) == 1 and _int_literal(sizes[0].value) is None and kind(rw, sizes[0].value) != "pyint":
            return None   # torch.zeros(shape): a tuple maybe
        return tuple(_int_literal(a.value) for a in sizes)
    if q in ("torch.linspace", "torch.logspace"):
        steps = _size_arguments(q, expr.args)
        return (_int_literal(steps[0].value),) if steps else None
    if q == "torch.arange":
        return (None,)
    if q in SAME_SHAPE_FUNCTIONS and positional:
        return shape(rw, positional[0], depth + 1)
    return None


def _int_literal(expr) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) \
            and isinstance(expr.expression, cst.Integer):
        return -int(expr.expression.value, 0)
    return None


def _literal_sizes(args) -> tuple | None:
    """x.reshape(2, -1) / x.reshape((2, -1)): the sizes (None where not a literal)."""
    if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
        args = [e.value for e in args[0].elements]
    if any(isinstance(a, cst.StarredElement) for a in args):
        return None
    if len(args) == 1 and _int_literal(args[0]) is None:
        return None   # x.reshape(shape): a tuple maybe
    return tuple(_int_literal(a) for a in args)


def _reshaped(before: tuple, sizes: tuple) -> tuple:
    """The shape of a reshape to `sizes` (-1: the size left over, where every other is known)."""
    if sizes.count(-1) == 1 and None not in sizes and None not in before:
        total = 1
        for n in before:
            total *= n
        known = 1
        for n in sizes:
            known *= n if n != -1 else 1
        return tuple(total // known if n == -1 and known else None if n == -1 else n for n in sizes)
    return tuple(None if n == -1 else n for n in sizes)


def _literal_shape(rw, data) -> tuple | None:
    """The shape of a (nested) list literal of numbers: torch.tensor([[1, 2], [3, 4]]) is (2, 2)."""
    if isinstance(data, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in data.elements):
            return None
        inner = {_literal_shape(rw, e.value) for e in data.elements}
        if not inner:
            return (0,)
        return (len(data.elements),) + inner.pop() if len(inner) == 1 and None not in inner else None
    return () if _literal_kinds(data, rw) else None


def _indexed_shape(rw, expr: cst.Subscript, depth: int) -> tuple | None:
    """x[0] drops a dim, x[:, 1:] keeps them (a full slice its size), x[None] adds one, x[mask]
    selects the masked dims into one of a size not visible."""
    base = shape(rw, expr.value, depth + 1)
    if base is None:
        return None
    items = expr.slice
    if len(items) == 1 and isinstance(items[0].slice, cst.Index) and kind(rw, items[0].slice.value) == "bool":
        mask = shape(rw, items[0].slice.value, depth + 1)
        if mask is None and len(base) != 1:
            return None
        return (None,) + base[len(mask or (None,)):]
    out, at = [], 0
    for item in items:
        index = item.slice
        if isinstance(index, cst.Slice):
            if at >= len(base):
                return None
            whole = index.lower is None and index.upper is None and index.step is None
            out.append(base[at] if whole else None)
            at += 1
        elif isinstance(index.value, cst.Name) and index.value.value == "None":
            out.append(1)
        elif _int_literal(index.value) is not None or kind(rw, index.value) == "pyint":
            at += 1
        else:
            return None   # Ellipsis, a tensor of indices
    return tuple(out) + base[at:] if at <= len(base) else None


def _maybe_zero(size) -> bool:
    """A dim of a visible shape that may have no elements: a literal 0 or a size not written."""
    return size is None or size == 0


# ---- what MindSpore's kernels reject that torch computes: complex, empty, 0-d, unbatched -----

def _first_tensor(site, original: dict):
    first = site.record.args[0] if site.record.args else None
    arg, before = site.bound.get(first), original.get(first)
    return (first, arg, before) if arg is not None and before is not None else (first, None, None)


def _complex(site, original: dict) -> None:
    """A visibly complex argument of a function MindSpore computes on real dtypes only (record
    field `complex`): "or" / "and" join the function of its real and imaginary parts (torch's
    isnan(z) = isnan(z.real) | isnan(z.imag), isfinite = both finite); "real" takes the real part
    of the result (MindSpore's abs of complex64 is complex64); "generated" converts the
    call as rules/generated/functions.py's msmigrate_<name>, written for complex tensors."""
    from dataclasses import replace

    complex_args = [n for n, before in original.items() if n in site.bound and kind(site.rw, before.value) == "complex"]
    if not complex_args:
        return
    how = site.record.complex
    if how == "real":
        site.wraps.append(lambda out: site.expr("{f}({x})", f="@mindspore.ops.real", x=out))
        return
    if how == "generated":
        site.record = replace(site.record, transform="torch_functions.generated")
        return
    name = complex_args[0]
    arg = site.bound[name]
    if len(complex_args) != 1 or not isinstance(arg.value, (cst.Name, cst.Attribute)):
        return   # a part of an expression would compute it twice
    real = site.expr("{f}({x})", f="@mindspore.ops.real", x=arg.value)
    imag = site.expr("{f}({x})", f="@mindspore.ops.imag", x=arg.value)
    site.bound[name] = arg.with_changes(value=real)
    join = {"or": "{a} | {b}", "and": "{a} & {b}"}[how]
    site.wraps.append(lambda out: site.expr(join, a=atom(out), b=atom(out.deep_replace(real, imag))))


def _empty_pad(site, original: dict) -> None:
    """An elementwise function whose MindSpore kernel raises on an empty tensor (torch: an empty
    result), of arguments that may visibly be empty (record field `empty_pad`: the arguments and a
    value in the function's domain): each gets one element of that value appended (to its dim
    that may be empty where the shape is visible, else to it flattened), which is dropped from
    the result (reshaped back to the first argument's shape)."""
    padded = {}
    for name, value in site.record.empty_pad.items():
        arg, before = site.bound.get(name), original.get(name)
        if arg is None or before is None:
            continue
        if not may_be_empty(site.rw, before.value):
            return   # another tensor (its shape would no longer match), a number (ops.zeta takes
                     # no number with a tensor of one element)
        padded[name] = (arg, before, value)
    if not padded:
        return
    shapes = {shape(site.rw, before.value) for _, before, _ in padded.values()}
    found = shapes.pop() if len(shapes) == 1 else None
    dims = [d for d, n in enumerate(found) if _maybe_zero(n)] if found is not None else []
    codes = {site.code(before.value) for _, before, _ in padded.values()}
    first = next(iter(padded.values()))[0].value
    if len(dims) != 1 and (len(codes) != 1 or not isinstance(first, (cst.Name, cst.Attribute, cst.Subscript))):
        return   # flattened: the shapes must be the same to reshape the result back, read once more
    for name, (arg, _, value) in padded.items():
        x = arg.value
        if len(dims) == 1:
            pad = _pad_widths(len(found), dims)
            template = "{pad}({x}, " + pad + (f", value={value})" if value not in ("0", "0.0") else ")")
        else:
            template = "{pad}({x}.reshape(-1), (0, 1)" + (f", value={value})" if value not in ("0", "0.0") else ")")
        site.bound[name] = arg.with_changes(value=site.expr(template, pad="@mindspore.ops.pad", x=x))
    if len(dims) == 1:
        index = ", ".join([":"] * dims[0] + [":-1"])
        site.wraps.append(lambda out: site.expr("{v}[" + index + "]", v=out))
    else:
        site.wraps.append(lambda out: site.expr("{v}[:-1].reshape({x}.shape)", v=out, x=first))


def _pad_widths(rank: int, dims) -> str:
    """ops.pad's widths (last dim first) adding one element at the end of each of `dims`."""
    widths = [0] * (2 * rank)
    for d in dims:
        widths[2 * (rank - 1 - d % rank) + 1] = 1
    while widths and widths[-2:] == [0, 0]:
        widths = widths[:-2]
    return "(" + ", ".join(map(str, widths)) + ")"


def _dims(site, name: str):
    """A dim argument's literal value: a tuple of ints, () when absent, None when not literal."""
    from msmigrate.engine import literal_value
    if name not in site.bound:
        return ()
    try:
        value = literal_value(site.bound[name].value)
    except ValueError:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def _empty_sizes(site, original: dict) -> None:
    """A transform padding or trimming `dim` to a size (torch.fft's n / s; record field
    `empty_sizes`) of a tensor that may visibly be empty: MindSpore's kernel raises on an empty
    tensor, torch pads it with zeros. A zero appended along each of those dims changes no result
    (padded with zeros anyway, or trimmed off) and leaves the kernel a non-empty tensor."""
    from msmigrate.engine import literal_value
    size = site.record.empty_sizes
    first, arg, before = _first_tensor(site, original)
    if arg is None or size not in site.bound or not may_be_empty(site.rw, before.value):
        return
    try:
        sizes = literal_value(site.bound[size].value)
    except ValueError:
        return
    count = 1 if isinstance(sizes, int) else len(sizes) if isinstance(sizes, (tuple, list)) else 0
    dims = _dims(site, "dim")
    if dims == ():
        dims = tuple(range(-count, 0))   # n: dim -1; s: the last len(s) dims
    if not dims or len(dims) != count:
        return
    found = shape(site.rw, before.value)
    if found is not None:
        dims = tuple(d for d in dims if -len(found) <= d < len(found) and _maybe_zero(found[d]))
        if not dims:
            return   # empty along another dim: MindSpore raises still
    elif any(d >= 0 for d in dims):
        return   # the rank is needed to place the zero
    rank = len(found) if found is not None else max(-d for d in dims)
    site.bound[first] = arg.with_changes(value=site.expr(
        "{pad}({x}, " + _pad_widths(rank, dims) + ")", pad="@mindspore.ops.pad", x=arg.value))


def _empty_reduce(site, original: dict) -> None:
    """A reduction over one dim (argmax, max(dim), aminmax...; record field `empty_reduce`: the dim
    argument) whose MindSpore kernel raises on an empty tensor, where torch gives an empty result
    (a dim other than the reduced one has no elements): a tensor whose visible shape has such dims
    gets one zero appended along each (ops.pad), dropped from the result after. Exact: each
    result element reduces its own slice along `dim`."""
    first, arg, before = _first_tensor(site, original)
    dims = _dims(site, site.record.empty_reduce)
    if arg is None or not dims or len(dims) != 1 or not may_be_empty(site.rw, before.value):
        return
    found = shape(site.rw, before.value)
    if found is None or not -len(found) <= dims[0] < len(found):
        return
    reduced = dims[0] % len(found)
    padded = [d for d, n in enumerate(found) if d != reduced and _maybe_zero(n)]
    if not padded:
        return
    from msmigrate.engine import literal_value
    keep = site.bound.get("keepdim")
    try:
        keepdim = bool(literal_value(keep.value)) if keep is not None else False
    except ValueError:
        return
    site.bound[first] = arg.with_changes(value=site.expr(
        "{pad}({x}, " + _pad_widths(len(found), padded) + ")", pad="@mindspore.ops.pad", x=arg.value))
    after = [d if keepdim or d < reduced else d - 1 for d in padded]
    index = ", ".join(":-1" if d in after else ":" for d in range(max(after) + 1))
    if site.record.fields:   # (values, indices): each trimmed
        dims_code = "(" + "".join(f"{d}, " for d in after) + ")"
        site.wraps.append(lambda out: site.expr("{f}(*{v}, " + dims_code + ")", v=out,
                                                f=generated_function(site, "msmigrate_drop_last_pair")))
    else:
        site.wraps.append(lambda out: site.expr("{v}[" + index + "]", v=out))


def _scalar_dim(site, original: dict) -> None:
    """torch reduces or normalises a 0-d tensor over dim 0 or -1 (std, softmax, norm: as over its
    one element); MindSpore raises ("axis must be in [0, 0)"): a visibly 0-d input (record field
    `scalar_dim`: the dim argument) is reshaped to (1,) and the result back to ()."""
    first, arg, before = _first_tensor(site, original)
    dims = _dims(site, site.record.scalar_dim)
    if arg is None or not dims or any(d not in (0, -1) for d in dims) or shape(site.rw, before.value) != ():
        return
    site.bound[first] = arg.with_changes(value=site.expr("{x}.reshape(1)", x=arg.value))
    site.wraps.append(lambda out: site.expr("{v}.reshape(())", v=out))


def _unbatched(site, original: dict) -> None:
    """torch's convolutions, pools, unfold and some losses take unbatched input (one dim less:
    (C, H, W) for conv2d); MindSpore's kernels need the batch dim (record field `unbatched`: the
    arguments and the ranks MindSpore needs). Where every one of them given is visibly one dim
    short, each gets a batch of one (`x[None]`) and the result loses it (`[0]`; a loss's only
    with reduction='none', its reduced value being the same)."""
    from msmigrate.engine import literal_value
    names = [n for n in site.record.unbatched if n in site.bound and n in original]
    shapes = [shape(site.rw, original[n].value) for n in names]
    if not names or any(found is None or len(found) != site.record.unbatched[n] - 1
                        for n, found in zip(names, shapes)):
        return
    batched = True
    if "reduction" in site.record.args:
        if any(k in site.bound for k in ("size_average", "reduce")):
            return
        try:
            batched = literal_value(site.bound["reduction"].value) == "none" if "reduction" in site.bound else False
        except ValueError:
            return
    indices = site.bound.get("return_indices")
    if indices is not None and site.code(indices.value) not in ("True", "False"):
        return
    for name in names:
        arg = site.bound[name]
        site.bound[name] = arg.with_changes(value=site.expr("{x}[None]", x=arg.value))
    if not batched:
        return
    if indices is not None and site.code(indices.value) == "True":
        site.wraps.append(lambda out: site.expr("{f}(*{v})", v=out, f=generated_function(site, "msmigrate_unbatch_pair")))
    else:
        site.wraps.append(lambda out: site.expr("{v}[0]", v=out))


# torch's promotion of tensors of different kinds joined (cat of float32 and float64: float64)
_JOIN_ORDER = ("bool", "int", "float", "float64", "complex")
_JOIN_DTYPES = {"bool": "mindspore.bool_", "int": "mindspore.int64", "float": "mindspore.float32",
                "float64": "mindspore.float64", "complex": "mindspore.complex64"}


def _joined(site, original: dict) -> None:
    """A join of tensors (cat, stack, block_diag; record field `joined`: the argument listing them,
    "*" for the call's positional arguments) visibly of different kinds: torch promotes them to
    one dtype (float32 with float64: float64; int with float: float32), MindSpore's Concat kernel
    raises on mixed dtypes. Each tensor of a lower kind is cast to the promoted kind's dtype."""
    spec = site.record.joined
    if spec == "*":
        call = site.rw.original_call
        if call is None or any(a.star or a.keyword is not None for a in call.args) or \
                len(site.unbound) != len(call.args) or site.bound:
            return
        before = [a.value for a in call.args]
        after = list(site.unbound)
    else:
        arg, given = site.bound.get(spec), original.get(spec)
        if arg is None or given is None or not isinstance(given.value, (cst.List, cst.Tuple)) \
                or not isinstance(arg.value, (cst.List, cst.Tuple)) \
                or len(arg.value.elements) != len(given.value.elements) \
                or any(isinstance(e, cst.StarredElement) for e in given.value.elements):
            return
        before = [e.value for e in given.value.elements]
        after = list(arg.value.elements)
    kinds = [kind(site.rw, v) for v in before]
    if len(set(kinds)) < 2 or not set(kinds) <= set(_JOIN_ORDER) or {"complex", "float64"} <= set(kinds):
        return   # one kind, a kind not visible, complex128
    target = max(kinds, key=_JOIN_ORDER.index)
    cast = [item.with_changes(value=site.expr("{v}.astype({t})", v=atom(item.value, attribute=True),
                                              t="@" + _JOIN_DTYPES[target]))
            if found != target else item for item, found in zip(after, kinds)]
    if spec == "*":
        site.unbound[:] = cast
    else:
        site.bound[spec] = arg.with_changes(value=arg.value.with_changes(elements=cast))


# the dtype a result computed through `compute_as` is cast back to, where the first argument
# is not a plain name (whose own `.dtype` is read at run time: int32 stays int32)
_KIND_DTYPES = {"bool": "mindspore.bool_", "int": "mindspore.int64", "float64": "mindspore.float64"}


def _compute_as(site, original: dict) -> None:
    """Tensor arguments visibly of a kind MindSpore's kernel lacks (record field `compute_as`:
    `{ bool = "int32" }`) are cast to the dtype given, and the result back to the first
    argument's dtype (torch's result dtype for these functions). In top-level code, arguments
    of unknown dtype get the same casts when the code runs (checked_at_run_time)."""
    first = site.record.args[0] if site.record.args else None
    if _compute_as_at_run_time(site, original):
        return
    for name, before in original.items():
        arg = site.bound.get(name)
        found = kind(site.rw, before.value) if arg is not None else None
        target = site.record.compute_as.get(found or "") or site.record.promote_as.get(found or "")
        if target is None:
            continue
        if name == first and found in site.record.compute_as:
            site.result_dtype = site.expr("{v}.dtype", v=arg.value) if isinstance(arg.value, cst.Name) \
                else site.ref(_KIND_DTYPES[found])
        site.uncast.setdefault(name, arg.value)
        site.bound[name] = arg.with_changes(
            value=site.expr("{v}.astype({t})", v=atom(arg.value, attribute=True), t="@mindspore." + target))
