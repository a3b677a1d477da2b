"""A NumPy scalar on the left of an arithmetic operator or comparison with a Tensor
(`w * x` where `w = np.sqrt(w0**2 - d**2)`, `np.log(2) + t`): torch.Tensor sets
`__array_priority__ = 1000`, so NumPy's scalar hands the operation to the Tensor and torch gives
a Tensor; MindSpore's Tensor sets none, NumPy converts it and computes a float64 ndarray, which
MindSpore's next op rejects ("Failed calling Cos with input=<class 'numpy.ndarray'>") or through
which no gradient flows. Where the file shows such an operand, a generated function giving
MindSpore's Tensor torch's priority is called once after the imports (it changes the Tensor
class for the whole process, as torch's attribute is there for every torch program; an ndarray
on the left then raises TypeError, as torch's does). A NumPy value on the right of +, -, *, / or
** (`position * div_term[0::2]`, `div_term = 1 / 10000 ** (np.arange(d) / d)`): torch's Tensor
reads the array as a tensor, MindSpore's rejects it ("Failed calling Mul with other=ndarray"); a
second generated function makes those five operators of MindSpore's Tensor read an ndarray as
ms.Tensor(array), in Python code.

The operand is visibly NumPy's when it calls a NumPy function or reads a name every binding of
which in the file is such a call (or arithmetic on such names: `A = 1 / (2 * np.cos(phi))`; a
loop variable, a parameter or a name also bound to anything else is not) and names no torch API
(`torch.from_numpy(a)` is a Tensor), and the other operand is not a literal (nor a name bound
only to literals, or an item of one: `EPSILON = 0.9`, `bound[1]` of `bound = [0, 0.5]`). A
structural pass on torch names, before the table pass."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import PathTransformer, bound_names, resolve, walk
from msmigrate.rules.transforms.common import generated_text

_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power,
              cst.MatrixMultiply)
FUNCTION = "msmigrate_numpy_defers_to_tensors"
ARRAYS_FUNCTION = "msmigrate_tensor_takes_ndarrays"


class NumpyOperandsPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "numpy" in source and "torch" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.imports = dict(ctx.names.imports)
        # a file already converted (no torch import, or MindSpore's) is not changed again:
        # conversion is idempotent
        roots = {q.split(".")[0] for q in self.imports.values()}
        self.sides = self._numpy_operands(ctx.module) \
            if "numpy" in self.imports.values() and "torch" in roots and "mindspore" not in roots else set()
        self.needed = bool(self.sides)
        self.path = {id(ctx.module)} if self.needed else set()

    def _numpy_call(self, node) -> bool:
        return isinstance(node, cst.Call) and (resolve(node.func, self.imports) or "").startswith("numpy.")

    def _torch(self, node) -> bool:
        return any(isinstance(n, (cst.Name, cst.Attribute)) and
                   (resolve(n, self.imports) or "").split(".")[0] in ("torch", "mindspore") for n in walk(node))

    def _numpy_operands(self, module) -> set[str]:
        """"left" where a NumPy value is on the left of an operator with a non-literal operand,
        "right" where one is on the right of an arithmetic operator (a Tensor's +, -, *, /, **
        take an ndarray in torch)."""
        bindings: dict[str, list] = {}   # name -> the values bound to it (None: a binding with no value seen)
        for n in walk(module):
            if isinstance(n, cst.Assign):
                for t in n.targets:
                    for name in bound_names(t.target):
                        bindings.setdefault(name, []).append(n.value if isinstance(t.target, cst.Name) else None)
            elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
                for name in bound_names(n.target):
                    bindings.setdefault(name, []).append(n.value)
            elif isinstance(n, (cst.For, cst.CompFor)):
                for name in bound_names(n.target):
                    bindings.setdefault(name, []).append(None)
            elif isinstance(n, cst.Param):
                bindings.setdefault(n.name.value, []).append(None)
            elif isinstance(n, cst.AsName):
                for name in bound_names(n.name):
                    bindings.setdefault(name, []).append(None)
        numpy_names: set[str] = set()
        while True:   # names every binding of which is a NumPy value, through arithmetic on them
            more = {name for name, values in bindings.items() if name not in numpy_names and all(
                v is not None and not self._torch(v) and self._numpy(v, numpy_names) for v in values)}
            if not more:
                break
            numpy_names |= more
        sides: set[str] = set()
        for n in walk(module):
            if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, _OPERATORS):
                left, right = n.left, n.right
            elif isinstance(n, cst.Comparison) and len(n.comparisons) == 1:
                left, right = n.left, n.comparisons[0].comparator
            else:
                continue
            sides |= {side for side, this, other in (("left", left, right), ("right", right, left))
                      if (side == "left" or isinstance(n, cst.BinaryOperation) and isinstance(
                          n.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power))
                          and self._array(this, bindings))
                      and self._numpy(this, numpy_names) and not self._torch(this)
                      and not _constant(other, bindings) and not self._numpy(other, numpy_names)}
        return sides

    def _array(self, node, bindings, depth: int = 0) -> bool:
        """Visibly an ndarray, not a NumPy scalar (MindSpore's Tensor takes np.float64 on its right,
        `scores / np.sqrt(d_k)`): an array constructor's call, arithmetic or a slice of one, or a
        name every binding of which is one (`div_term = 1 / 10000 ** (np.arange(d) / d)`)."""
        if depth > 8:
            return False
        if isinstance(node, cst.Call):
            return (resolve(node.func, self.imports) or "") in _ARRAYS
        if isinstance(node, cst.BinaryOperation):
            return self._array(node.left, bindings, depth + 1) or self._array(node.right, bindings, depth + 1)
        if isinstance(node, cst.UnaryOperation):
            return self._array(node.expression, bindings, depth + 1)
        if isinstance(node, cst.Subscript):
            return any(isinstance(e.slice, cst.Slice) for e in node.slice) and self._array(node.value, bindings,
                                                                                           depth + 1)
        if isinstance(node, cst.Name):
            values = bindings.get(node.value) or [None]
            return all(v is not None and self._array(v, bindings, depth + 1) for v in values)
        return False

    def _numpy(self, node, numpy_names: set[str]) -> bool:
        return any(self._numpy_call(n) or (isinstance(n, cst.Name) and n.value in numpy_names) for n in walk(node))

    def leave_Module(self, original, updated):
        if not self.needed:
            return updated
        calls = []
        if "left" in self.sides:
            name = generated_text(self.ctx.plan, "numpy_operands", FUNCTION).value
            calls.append(f"{name}()  # NumPy scalars on the left of an operator give Tensors, as in torch\n")
        if "right" in self.sides:
            name = generated_text(self.ctx.plan, "numpy_operands", ARRAYS_FUNCTION).value
            calls.append(f"{name}()  # a Tensor's +, -, *, /, ** take an ndarray on their right, as in torch\n")
        body = list(updated.body)
        at = 0
        while at < len(body) and isinstance(body[at], cst.SimpleStatementLine) and (
                isinstance(body[at].body[0], (cst.Import, cst.ImportFrom)) or
                (at == 0 and isinstance(body[at].body[0], cst.Expr)
                 and isinstance(body[at].body[0].value, (cst.SimpleString, cst.ConcatenatedString)))):
            at += 1
        body[at:at] = [cst.parse_statement(call) for call in calls]
        return updated.with_changes(body=body)


# NumPy functions whose result is an array (of any shape given, or of the data given)
_ARRAYS = frozenset(f"numpy.{f}" for f in ("array", "asarray", "arange", "linspace", "logspace", "zeros", "ones",
                                           "empty", "full", "eye", "identity", "zeros_like", "ones_like",
                                           "full_like", "stack", "concatenate", "vstack", "hstack"))


def _constant(node, bindings) -> bool:
    """A literal, or a name bound only to literals, or an item of one (`EPSILON = 0.9`, `bound[1]`
    of `bound = [0, 0.5]`)."""
    held = node.value if isinstance(node, cst.Subscript) else node
    return _literal(node) or (isinstance(held, cst.Name) and held.value in bindings and all(
        v is not None and _literal(v) for v in bindings[held.value]))


def _literal(node) -> bool:
    """A number, string or constant, arithmetic on them, or a list or tuple of them."""
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return _literal(node.expression)
    if isinstance(node, cst.BinaryOperation):
        return _literal(node.left) and _literal(node.right)
    if isinstance(node, cst.IfExp):
        return _literal(node.body) and _literal(node.orelse)
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _literal(e.value) for e in node.elements)
    return False

