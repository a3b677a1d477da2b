import ast

from msmigrate.lint.analysis import dotted
from msmigrate.lint.rule import Rule
from msmigrate.rules.lint.msg501_tensor_sequence_arg import compiled_callee


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()


def _loop_varying(loop) -> set[str]:
    """Names whose value changes from one iteration of `loop` to the next: its `for` targets,
    names augmented in it (`n += 1`), and names assigned from those (to a fixpoint)."""
    varying = set()
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        varying |= _names(loop.target)
    assigns = []
    for n in ast.walk(loop):
        if isinstance(n, (ast.For, ast.AsyncFor)) and n is not loop:
            assigns.append((n.target, n.iter))
        elif isinstance(n, ast.AugAssign):
            varying |= _names(n.target) if isinstance(n.target, ast.Name) else set()
        elif isinstance(n, ast.Assign):
            assigns.extend((t, n.value) for t in n.targets)
        elif isinstance(n, ast.AnnAssign) and n.value is not None:
            assigns.append((n.target, n.value))
    changed = True
    while changed:
        changed = False
        for target, value in assigns:
            if _names(value) & varying:
                new = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} - varying
                if new:
                    varying |= new
                    changed = True
    return varying


def _varying_slice(sub: ast.Subscript, varying: set[str]) -> ast.Slice | None:
    """A slice of `sub` whose length changes with `varying`: exactly one bound depends on them
    (`x[:n]`, `x[:, :seq_len]`, `x[n:]`); `x[i:i + k]` keeps its length and is not one."""
    parts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    for s in parts:
        if isinstance(s, ast.Slice):
            lower, upper = bool(_names(s.lower) & varying), bool(_names(s.upper) & varying)
            if lower != upper:
                return s
    return None


class VaryingInputShape(Rule):
    """Flags compiled functions and Cells fed slices whose length changes every loop iteration.

    ## What it does
    Finds calls of a `@jit` function or an in-file Cell instance, inside a loop outside
    compiled code, whose argument is a slice with one loop-dependent bound (`x[:n]`,
    `x[:, :seq_len]`, `x[n:]`), directly or through a name assigned in the loop
    (`inp = tokens[:, :seq_len]; net(inp)`). "Loop-dependent" means the loop's `for` target,
    a name augmented in the loop (`n += 1`), or a name assigned from those.
    Not flagged: when the file calls `<net>.set_inputs(...)` (or `self.set_inputs` in the
    Cell's class), the jit has a `dynamic=` argument, or the file mentions
    `MS_AUTO_DYNAMIC_SHAPE_ENABLE`; fixed-width windows `x[i:i + k]` (even when the last
    window is shorter). Like MSG501-503, a Cell instance is assumed to run compiled
    (GRAPH_MODE); Cells imported from other linted files count, but a `self.set_inputs` in
    such a Cell's own class is not seen.
    Not detected: the smaller last batch of a dataset batched without `drop_remainder=True`
    (one extra compile, observed; whether it happens depends on the dataset size, so flagging
    every `.batch(n)` would mostly be false alarms), variable-length data read from files or
    padded to each batch's longest sequence, shapes that vary across calls of the surrounding
    function, nets held in attributes or passed as arguments, and slices made in another
    function.

    ## Why is this bad?
    Graphs are compiled for static input shapes: every new shape compiles again (4 compiles
    for 4 distinct shapes in 6 calls observed, ~0.2 s each for a trivial Cell, far more for a
    real model). `Cell.set_inputs(Tensor(shape=[None, ...], dtype=...))` compiles one
    dynamic-shape graph (1 compile observed); `@ms.jit(dynamic=1)` generalises the shape from
    the third distinct one (3 compiles observed). `ms.jit(input_signature=...)` is accepted
    and ignored by MindSpore 2.10 (still 4 compiles).

    ## Example
    ```python
    net = Net()
    for seq_len in (16, 32, 48, 64):
        out = net(tokens[:, :seq_len])
    ```

    ## Use instead
    ```python
    net = Net()
    net.set_inputs(ms.Tensor(shape=[None, None], dtype=ms.int32))
    for seq_len in (16, 32, 48, 64):
        out = net(tokens[:, :seq_len])
    ```
    or pad every input to one length. For a `@jit` function, call it from a Cell's
    `construct` and use `set_inputs`, or accept `@ms.jit(dynamic=1)`'s few compiles.

    ## Fix safety
    No automatic fix: `set_inputs` needs each input's rank and dtype.
    """
    code = "MSG504"
    name = "varying-input-shape"
    severity = "warning"
    claim = "recompile"

    def __init__(self, ctx):
        super().__init__(ctx)
        self._dynamic = None
        self._varying: dict[int, set[str]] = {}

    def _dynamic_names(self, ctx) -> set[str]:
        """Callees already compiled for dynamic shapes (set_inputs, jit(dynamic=...))."""
        if self._dynamic is None:
            out = set()
            if "MS_AUTO_DYNAMIC_SHAPE_ENABLE" in ctx.source:
                out.add("*")
            model = ctx.model
            for node in ast.walk(ctx.tree):
                if isinstance(node, ast.Call):
                    f = node.func
                    if isinstance(f, ast.Attribute) and f.attr == "set_inputs":
                        recv = dotted(f.value) or ""
                        out.add(recv.rsplit(".", 1)[-1])
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for dec in node.decorator_list:
                        if isinstance(dec, ast.Call) and model.is_jit(dec)[0] and \
                                any(k.arg == "dynamic" for k in dec.keywords):
                            out.add(node.name)
                elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                        model.is_jit(node.value.func)[0] and any(k.arg == "dynamic" for k in node.value.keywords):
                    out.update(t.id for t in node.targets if isinstance(t, ast.Name))
            for cls_name in model.cell_classes:
                for n in ast.walk(model.classes[cls_name]):
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "set_inputs" \
                            and dotted(n.func.value) == "self":
                        out.add("class:" + cls_name)
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "construct" and any(
                            isinstance(d, ast.Call) and model.is_jit(d)[0] and
                            any(k.arg == "dynamic" for k in d.keywords) for d in n.decorator_list):
                        out.add("class:" + cls_name)
            self._dynamic = out
        return self._dynamic

    def _loop_names(self, loop) -> set[str]:
        key = id(loop)
        if key not in self._varying:
            self._varying[key] = _loop_varying(loop)
        return self._varying[key]

    def _sliced(self, arg, loop, varying) -> ast.Subscript | None:
        """The varying-length slice `arg` is, or the one a name in the loop was assigned."""
        if isinstance(arg, ast.Subscript):
            return arg if _varying_slice(arg, varying) else None
        if isinstance(arg, ast.Name) and arg.id in varying:
            for n in ast.walk(loop):
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Subscript) and \
                        any(isinstance(t, ast.Name) and t.id == arg.id for t in n.targets) and \
                        _varying_slice(n.value, varying):
                    return n.value
        return None

    def visit_Call(self, node, ctx):
        if ctx.in_graph or not ctx.loops:
            return
        callee = compiled_callee(node, ctx)
        if callee is None:
            return
        dynamic = self._dynamic_names(ctx)
        cls_name = ctx.model.instances.get(callee)
        if "*" in dynamic or callee in dynamic or (cls_name and "class:" + cls_name in dynamic):
            return
        for loop in reversed(ctx.loops):
            varying = self._loop_names(loop)
            for arg in list(node.args) + [k.value for k in node.keywords]:
                sliced = self._sliced(arg, loop, varying)
                if sliced is not None:
                    how = "net.set_inputs(Tensor(shape=[None, ...], dtype=...))" if cls_name else \
                        "a Cell with set_inputs(...) or @ms.jit(dynamic=1)"
                    self.report(arg, f"'{ctx.text(sliced)}' changes shape every iteration: each new shape "
                                     f"compiles '{callee}' again; use {how}")
                    return

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def construct(self, x):
        return x * 2 + 1

def drive():
    net = Net()
    net.set_inputs(ms.Tensor(shape=[None], dtype=ms.float32))
    x = ms.Tensor(np.arange(8, dtype=np.float32))
    out = []
    for n in (2, 3, 4, 5, 3, 2):
        out.append(net(x[:n]).sum())
    return out
""",
        """
import numpy as np
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.set_inputs(ms.Tensor(shape=[None, None], dtype=ms.float32))

    @ms.jit
    def construct(self, x):
        return x.sum(axis=1)

def drive():
    net = Net()
    tokens = ms.Tensor(np.arange(24, dtype=np.float32).reshape(3, 8))
    out = []
    for seq_len in (2, 4, 6, 8):
        inp = tokens[:, :seq_len]
        out.append(net(inp))
    return out
""",
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(x):
    return x * 2 + 1

def drive():
    x = ms.Tensor(np.arange(12, dtype=np.float32))
    out = []
    for i in range(0, 12, 4):
        out.append(f(x[i:i + 4]))
    return out
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def construct(self, x):
        return x * 2 + 1

def drive():
    net = Net()
    x = ms.Tensor(np.arange(8, dtype=np.float32))
    out = []
    for n in (2, 3, 4, 5, 3, 2):
        out.append(net(x[:n]).sum())
    return out
""",
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(x):
    return x.sum(axis=1)

def drive():
    tokens = ms.Tensor(np.arange(24, dtype=np.float32).reshape(3, 8))
    out = []
    for seq_len in (2, 4, 6, 8):
        inp = tokens[:, :seq_len]
        out.append(f(inp))
    return out
""",
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(x):
    return x * 2

def drive():
    x = ms.Tensor(np.arange(8, dtype=np.float32))
    out = []
    n = 1
    while n < 5:
        out.append(f(x[n:]).sum())
        n += 1
    return out
""",
    ]
