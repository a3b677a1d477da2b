import ast

from msmigrate.lint.analysis import dotted as _dotted
from msmigrate.lint.rule import Rule

# optimizers: mindspore.nn's and mindspore.experimental.optim's classes (not the schedulers)
_OPTIMIZER_MODULES = ("mindspore.experimental.optim.", "mindspore.nn.optim.")
_NN_OPTIMIZERS = frozenset({
    "Adam", "AdamWeightDecay", "AdamOffload", "AdaMax", "Adadelta", "Adagrad", "ASGD", "FTRL", "Lamb",
    "LARS", "LazyAdam", "Momentum", "Optimizer", "ProximalAdagrad", "RMSProp", "Rprop", "SGD", "ThorGpu"})
_STEP_CELLS = frozenset({"TrainOneStepCell", "TrainOneStepWithLossScaleCell", "WithGradCell"})
_LOADS = frozenset({"load_param_into_net"})


class SetDataAfterStep(Rule):
    """Flags `load_param_into_net` and `Parameter.set_data` after a training step has run.

    ## What it does
    Finds `ms.load_param_into_net(net, ...)` and `p.set_data(...)` between two training steps
    in the same function or at module level: after a call of a jit-compiled function, of an
    optimizer (`optimizer(grads)`), of a `TrainOneStepCell`, or of a function of the file that
    calls one of these, and before another (inside a loop that runs the step, the next
    iteration's). A load after the last step (to evaluate or export) is not flagged.

    ## Why is this bad?
    Both give the Parameter new data. In MindSpore 2.10 a Parameter given new data after a
    compiled step or an optimizer update has used it is no longer the one that step reads and
    updates: a checkpoint loaded to resume training, the best weights loaded between epochs, a
    target network refreshed from the online one, or a learning rate set by hand, are silently
    lost (observed: the loss after the load goes on from the weights before it, and the step's
    updates no longer reach the loaded values; also in PyNative once the optimizer has run).

    ## Example
    ```python
    for epoch in range(3):
        loss = train_step(x, y)          # @ms.jit
        if epoch == 1:
            ms.load_param_into_net(net, ms.load_checkpoint("best.ckpt"))
    ```

    ## Use instead
    Write the values into the existing Parameters:
    ```python
    ckpt = ms.load_checkpoint("best.ckpt")
    for p in net.get_parameters():
        ops.assign(p, ckpt[p.name])
    ```

    ## Fix safety
    No automatic fix.
    """
    code = "MSG209"
    name = "set-data-after-step"
    severity = "error"
    claim = "differs-from-torch"

    def finish(self, ctx):
        model = ctx.model
        self.ctx_ = ctx
        self.steppers = set(model.jit_entries)   # names whose call runs a training step
        self.steppers |= self._instances(ctx)
        functions = [n for n in ast.walk(ctx.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        self.methods: set[str] = set()   # methods that run a step (`agent.learn()`)
        methods = {id(m) for c in ast.walk(ctx.tree) if isinstance(c, ast.ClassDef) for m in c.body}
        changed = True
        while changed:   # functions of the file that run a step, through each other
            changed = False
            for fn in functions:
                if fn.name not in self.steppers and not model.in_graph(fn) and \
                        any(self._steps(s) for s in fn.body):
                    self.steppers.add(fn.name)
                    if id(fn) in methods:
                        self.methods.add(fn.name)
                    changed = True
        repeated = self._repeated(ctx.tree)
        self._block(ctx.tree.body, False, False)
        for fn in functions:
            if not model.in_graph(fn):
                # a function that runs a step and is itself called again and again (learn() in
                # the episode loop): what it loads at its start follows the previous call's step
                again = fn.name in self.steppers and fn.name in repeated
                self._block(fn.body, again, again)

    def _repeated(self, tree) -> set[str]:
        """Names of functions called inside a loop, or at two places."""
        calls: dict[str, int] = {}
        looped: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                looped.update(self._called_name(n) for s in node.body for n in ast.walk(s)
                              if isinstance(n, ast.Call))
            elif isinstance(node, ast.Call):
                calls[self._called_name(node)] = calls.get(self._called_name(node), 0) + 1
        return (looped | {n for n, k in calls.items() if k >= 2}) - {None}

    @staticmethod
    def _called_name(call: ast.Call) -> str | None:
        f = call.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None

    def _instances(self, ctx) -> set[str]:
        """Names bound to optimizers and one-step training Cells."""
        out = set()
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                q = ctx.qualname(node.value.func) or ""
                last = q.rsplit(".", 1)[-1]
                if (q.startswith(_OPTIMIZER_MODULES) and "lr_scheduler" not in q and last[:1].isupper()) or \
                        (q.startswith("mindspore.nn.") and (last in _NN_OPTIMIZERS or last in _STEP_CELLS)):
                    for t in node.targets:
                        name = _dotted(t)
                        if name:
                            out.add(name)
        return out

    def _steps(self, node) -> bool:
        """Does this statement (or expression) run a training step?"""
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and (_dotted(n.func) in self.steppers or (
                    isinstance(n.func, ast.Attribute) and n.func.attr in self.methods)):
                return True
        return False

    def _block(self, body, stepped: bool, later: bool) -> bool:
        """Walk statements in order: `stepped` when a step has run before, `later` when one may
        run after (further on, or in the enclosing blocks); returns whether a step has run by
        the end."""
        for k, stmt in enumerate(body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            after = later or any(self._steps(s) for s in body[k + 1:])
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                loop_steps = any(self._steps(s) for s in stmt.body)   # the next iteration follows
                self._block(stmt.body, stepped or loop_steps, after or loop_steps)
                self._block(stmt.orelse, stepped or loop_steps, after)
                stepped = stepped or loop_steps
            elif isinstance(stmt, (ast.If, ast.With, ast.AsyncWith, ast.Try)):
                parts = [getattr(stmt, key, []) for key in ("body", "orelse", "finalbody")]
                parts += [h.body for h in getattr(stmt, "handlers", [])]
                ran = stepped
                for part in parts:
                    ran = self._block(part, stepped, after) or ran
                stepped = ran
            else:
                if stepped and after:
                    self._check(stmt, body[:k])
                stepped = stepped or self._steps(stmt)
        return stepped

    def _fresh(self, before) -> set[str]:
        """Names bound to a new object since the last statement that ran a step (`net_fix =
        CoarseNet()` after training): no step has used its Parameters, a load into it is kept."""
        out: set[str] = set()
        for stmt in reversed(before):
            if self._steps(stmt):
                break
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                out.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        return out

    def _check(self, stmt, before=()) -> None:
        ctx = self.ctx_
        fresh = self._fresh(before)
        for n in ast.walk(stmt):
            if not isinstance(n, ast.Call) or not isinstance(n.func, (ast.Attribute, ast.Name)):
                continue
            q = ctx.qualname(n.func) or ""
            if q.startswith("mindspore") and q.rsplit(".", 1)[-1] in _LOADS:
                if n.args and isinstance(n.args[0], ast.Name) and n.args[0].id in fresh:
                    continue
                self.report(n, "load_param_into_net after a training step has run: it gives the Parameters "
                               "new data (set_data), which the compiled step and the optimizer no longer see "
                               "(the load is silently lost): write each with ops.assign(p, ckpt[p.name])")
            elif isinstance(n.func, ast.Attribute) and n.func.attr == "set_data" and len(n.args) >= 1:
                self.report(n, f"'{ctx.text(n.func.value)}.set_data(...)' after a training step has run: a "
                               "Parameter given new data is no longer the one the compiled step and the "
                               "optimizer read and update (the change is silently lost): use "
                               "ops.assign(p, value)")

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn, ops
from mindspore.experimental import optim

def drive():
    net = nn.Dense(3, 1)
    net.weight.set_data(ms.Tensor(np.full((1, 3), 0.1, np.float32)))
    net.bias.set_data(ms.Tensor(np.zeros(1, np.float32)))
    opt = optim.SGD(net.trainable_params(), lr=0.1)
    x = ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 6)
    y = ms.Tensor(np.ones((2, 1), np.float32))
    start = {p.name: p.value().copy() for p in net.get_parameters()}
    grad_fn = ms.value_and_grad(lambda a, b: ((net(a) - b) ** 2).mean(), None, opt.parameters)
    losses = []
    for i in range(4):
        if i == 2:
            for p in net.get_parameters():
                ops.assign(p, start[p.name])
        loss, grads = grad_fn(x, y)
        opt(grads)
        losses.append(float(loss))
    return losses
""",
        """
import numpy as np
import mindspore as ms
from mindspore import nn
from mindspore.experimental import optim

def drive():
    net = nn.Dense(3, 1)
    net.weight.set_data(ms.Tensor(np.full((1, 3), 0.1, np.float32)))
    net.bias.set_data(ms.Tensor(np.zeros(1, np.float32)))
    opt = optim.SGD(net.trainable_params(), lr=0.1)
    x = ms.Tensor(np.ones((2, 3), np.float32))
    grad_fn = ms.value_and_grad(lambda a: net(a).sum(), None, opt.parameters)
    for _ in range(2):
        loss, grads = grad_fn(x)
        opt(grads)
    # a new network, no step has used it yet: the load is kept
    frozen = nn.Dense(3, 1)
    ms.load_param_into_net(frozen, {p.name: ms.Parameter(p.value().copy(), name=p.name)
                                    for p in net.get_parameters()})
    for _ in range(2):
        loss, grads = grad_fn(x)
        opt(grads)
    return float(frozen(x).sum())
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn, ops
from mindspore.experimental import optim

def drive():
    net = nn.Dense(3, 1)
    net.weight.set_data(ms.Tensor(np.full((1, 3), 0.1, np.float32)))
    net.bias.set_data(ms.Tensor(np.zeros(1, np.float32)))
    opt = optim.SGD(net.trainable_params(), lr=0.1)
    x = ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 6)
    y = ms.Tensor(np.ones((2, 1), np.float32))
    start = {p.name: ms.Parameter(p.value().copy(), name=p.name) for p in net.get_parameters()}
    grad_fn = ms.value_and_grad(lambda a, b: ((net(a) - b) ** 2).mean(), None, opt.parameters)
    losses = []
    for i in range(4):
        if i == 2:
            ms.load_param_into_net(net, start)
        loss, grads = grad_fn(x, y)
        opt(grads)
        losses.append(float(loss))
    return losses
""",
        """
import numpy as np
import mindspore as ms
from mindspore import nn, ops
from mindspore.experimental import optim

def drive():
    net = nn.Dense(3, 1)
    net.weight.set_data(ms.Tensor(np.full((1, 3), 0.1, np.float32)))
    net.bias.set_data(ms.Tensor(np.zeros(1, np.float32)))
    opt = optim.SGD(net.trainable_params(), lr=0.1)
    x = ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 6)
    y = ms.Tensor(np.ones((2, 1), np.float32))
    start = {p.name: p.value().copy() for p in net.get_parameters()}
    grad_fn = ms.value_and_grad(lambda a, b: ((net(a) - b) ** 2).mean(), None, opt.parameters)
    losses = []
    for i in range(4):
        if i == 2:
            for p in net.get_parameters():
                p.set_data(start[p.name])
        loss, grads = grad_fn(x, y)
        opt(grads)
        losses.append(float(loss))
    return losses
""",
    ]
    TORCH_REFERENCE = [
        """
import torch

def drive():
    net = torch.nn.Linear(3, 1)
    with torch.no_grad():
        net.weight.fill_(0.1)
        net.bias.zero_()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 6
    y = torch.ones(2, 1)
    start = {k: v.clone() for k, v in net.state_dict().items()}
    losses = []
    for i in range(4):
        if i == 2:
            net.load_state_dict(start)
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses
""",
        """
import torch

def drive():
    net = torch.nn.Linear(3, 1)
    with torch.no_grad():
        net.weight.fill_(0.1)
        net.bias.zero_()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.ones(2, 3)
    for _ in range(2):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()
    frozen = torch.nn.Linear(3, 1)
    frozen.load_state_dict(net.state_dict())
    for _ in range(2):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()
    return float(frozen(x).sum())
""",
    ]

