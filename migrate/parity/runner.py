"""Subprocess side of `msmigrate parity`: run one training program under recording hooks.

    python -m msmigrate.parity.runner SPEC.json

SPEC holds {"framework": "torch" | "mindspore", "script", "out", "steps", "grads", "torch_record",
"args" (the script's own command line)}.
The program runs unmodified through `runpy`; hooks record what the parity check compares:

torch      every `Tensor.backward()` is one step (one of another line before any optimizer step
           joins the step before, its loss added): its loss, the batch most recently produced by a
           DataLoader, the model state after the step (taken after its last optimizer step, else
           before the model's next forward, or at the end), and for step 1 the gradients and every submodule's output. The model is
           the first module with parameters called from outside any other module; every other such
           module that is not part of it (a program training several networks side by side) is
           recorded too, under the prefix `#N.`, with its rank among the live top-level modules
           of its shape in creation order. A program that trains bare tensors (no module with
           parameters is called before the first backward) records its optimizers' parameters.
mindspore  every call of a jitted function named `train_step*` defined in the program (the script
           or a project module it imports: a Trainer's method in trainer.py) is one
           step (its first output is the loss); so is a call of an undecorated `train_step*`
           (a step `msmigrate convert` left uncompiled, MSC109); tensors trained by hand: each call
           of the grad function, the step run uncompiled. Its state is taken when it
           returns, and again after each jitted `apply_*` (an optimizer applying its part of the
           step's gradients). Before step 1 the torch initial weights are
           loaded into the network through the weight mapping (each further torch network into the
           live top-level Cell of the same rank among those of its shape, in creation order);
           batches recorded by torch replace
           those the program's loaders yield at the same place of their sequence (the k-th batch
           of any loader), else the step's positional arguments when they differ. With grads, so
           that gradients and cell outputs can be captured, step 1 first runs once uncompiled with the
           optimizers disabled, and the parameters are restored before the real step.

Dropout cannot draw the same masks in both frameworks: every Dropout layer and functional
dropout is turned into the identity in both runs, and the configured rates are recorded so the
comparison can still check them. Other random draws of the program's own code are recorded
(torch side) and replayed in the MindSpore run (see _DrawReplay); a divergence after draws that
could not be replayed is named as caused by them.
"""
from __future__ import annotations

import json
import os
import re
import runpy
import sys
import traceback
from pathlib import Path

import numpy as np


class StopRun(BaseException):
    """Raised into the program once the requested number of steps has been recorded
    (a BaseException, so the program's own `except Exception` does not swallow it)."""


class Record:
    def __init__(self, spec: dict):
        self.spec = spec
        self.limit = spec.get("steps") or 10**9
        self.losses: list[float | None] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.meta: dict = {"framework": spec["framework"], "notes": [], "dropout": {},
                           "functional_dropout_calls": 0, "training": {}, "activations": [],
                           "grads": [], "state_steps": [], "batches": []}

    def put_state(self, step: int, state: dict[str, np.ndarray]) -> None:
        for name, arr in state.items():
            self.arrays[f"state/{step}/{name}"] = arr
        if step not in self.meta["state_steps"]:
            self.meta["state_steps"].append(step)

    def save(self, error: str | None = None) -> None:
        out = Path(self.spec["out"])
        out.mkdir(parents=True, exist_ok=True)
        np.savez(out / "arrays.npz", **self.arrays)
        self.meta.update(losses=self.losses, error=error)
        (out / "record.json").write_text(json.dumps(self.meta, indent=1))


def _first_tensor(value, is_tensor):
    if is_tensor(value):
        return value
    if isinstance(value, (tuple, list)):
        for v in value:
            found = _first_tensor(v, is_tensor)
            if found is not None:
                return found
    return None


def _flatten(value, is_tensor) -> list:
    if is_tensor(value):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flatten(v, is_tensor)]
    return []


def _reachable(function, args=()) -> list[tuple[object, object]]:
    """(value, setter) for what a step function can reach: its module globals, its closure
    variables and those of the functions among them (a step defined inside `main(model)` reaches
    the model through `grad_fn` -> `forward_fn`), the objects it is called with (a method step's
    `self`), and the attributes of plain objects among those (a Trainer's model/optimizer, its
    class defined in the program or beside it)."""
    import types

    found = [(a, lambda v: None) for a in args]

    def dict_slots(d):
        for key, value in list(d.items()):
            found.append((value, lambda v, _d=d, _k=key: _d.__setitem__(_k, v)))

    dict_slots(function.__globals__)
    functions, seen = [function], {id(function)}
    while functions:
        for cell in functions.pop().__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            found.append((value, lambda v, _c=cell: setattr(_c, "cell_contents", v)))
            inner = getattr(value, "__wrapped__", value)
            if isinstance(inner, types.FunctionType) and id(inner) not in seen:
                seen.add(id(inner))
                functions.append(inner)
    plain = (types.ModuleType, type, types.FunctionType, types.MethodType, types.BuiltinFunctionType)
    for value, _ in list(found):
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict) and _program_class(type(value)) and not isinstance(value, plain):
            for key, attr in list(attrs.items()):
                found.append((attr, lambda v, _o=value, _k=key: setattr(_o, _k, v)))
    return found


def _program_class(cls) -> bool:
    """A class of the program: defined in the script or in a module of its project, not in a library."""
    if cls.__module__ == "__main__":
        return True
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None) or ""
    return bool(path) and _program_file(path)


def _record_input(rec: Record, active: bool, inputs, is_tensor, to_numpy) -> None:
    """The model's first input in the first forward, listed with the layer outputs so that data
    that differ show up as the first divergence."""
    t = _first_tensor(inputs, is_tensor)
    if active and t is not None and not any(a["name"] == "(input)" for a in rec.meta["activations"]):
        i = len(rec.meta["activations"])
        rec.meta["activations"].append({"name": "(input)", "cls": "batch"})
        rec.arrays[f"act/{i}"] = to_numpy(t)


def _top_level(objects: list, parts) -> list:
    """The objects that are no part of another one in the list (`parts(o)` lists o and its parts)."""
    inner = {id(c) for o in objects for c in parts(o) if c is not o}
    return [o for o in objects if id(o) not in inner]


def _alive(refs: list) -> list:
    return [o for o in (r() for r in refs) if o is not None]


def _zero_attribute(cls, attr: str) -> None:
    """After construction, remember the layer's dropout rate and set it to 0."""
    orig_init = cls.__init__

    def init(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        self._msmigrate_p = float(getattr(self, attr) or 0.0)
        setattr(self, attr, 0.0)

    cls.__init__ = init

# Gradient elements this far below the step's largest one are not determined to many digits:
# their float32 sums end at an absolute noise of ~1e-9 (measured: 1e-8 of the largest element
# in loop_transformer's attention key bias), and Adam-style optimizers scale every element to a
# step of ~lr, noise included. Both frameworks are right; the values cannot be compared.
TINY_GRADIENT = 1e-5


def _record_tiny_gradients(rec: Record, step: int, named_parameters, prefix: str = "") -> None:
    grads = {n: p.grad.detach().abs() for n, p in named_parameters if p.grad is not None}
    if not grads:
        return
    top = max(float(g.max()) for g in grads.values())
    for name, g in grads.items():
        tiny = g <= TINY_GRADIENT * top
        # exact zeros are determined (an embedding row no token used), unless the whole tensor
        # is at noise level: the bias of a layer before BatchNorm, whose float32 sum can land on 0
        mask = (tiny if bool(tiny.all()) else (g > 0) & tiny).cpu().numpy()
        if mask.any() and (g > 0).any():
            rec.arrays[f"noise/{step}/{prefix}{name}"] = mask


def _round_differently(parameters, torch, seed: int = 0) -> None:
    """Move the elements of each parameter by float32 rounding (a unit in the last place where
    a random relative change of ~6e-8 crosses one), in place, from a NumPy generator of its own
    (no draw of the program moves)."""
    rng = np.random.RandomState(seed)
    with torch.no_grad():
        for p in parameters:
            if p.is_floating_point() and p.numel():
                exact = p.detach().cpu().double().numpy()
                bumped = exact * (1 + np.finfo(np.float32).eps / 2 * rng.standard_normal(exact.shape))
                p.copy_(torch.from_numpy(bumped.astype(np.float32)))


def _grad_versions(named_parameters) -> dict:
    """What tells whether a backward pass wrote a parameter's gradient (a new tensor or an
    in-place accumulation)."""
    return {n: (id(p.grad), p.grad._version) if p.grad is not None else None for n, p in named_parameters}


_PROGRAM_DIR: list[str] = []    # the script's directory, set by _run_program (the program may change sys.path)


def _program_file(filename: str) -> bool:
    """A file of the program: the script or a module of its project, beside it or in a package
    under its directory (what `msmigrate convert` converted with it), not an installed library."""
    top = _PROGRAM_DIR[0] if _PROGRAM_DIR else os.path.realpath(sys.path[0])
    path = os.path.realpath(filename)
    if not path.startswith(top + os.sep):
        return False
    return not {"site-packages", "dist-packages"} & set(path[len(top):].split(os.sep))


# torch functions and Tensor methods that draw random numbers
RANDOM_FUNCTIONS = ("rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like",
                    "bernoulli", "multinomial", "poisson")
RANDOM_METHODS = ("normal_", "uniform_", "random_", "bernoulli_", "exponential_", "geometric_", "log_normal_",
                  "cauchy_")

# What the conversion calls for each torch draw (rules/api/torch_functions.toml, tensor_methods.toml):
# the MindSpore run replays torch's values into the k-th call of the program's own code.
_REPLAY_KINDS = {"torch.rand": "rand", "torch.randn": "randn", "torch.randint": "randint",
                 "torch.randperm": "randperm", "torch.normal": "normal", "torch.rand_like": "rand_like",
                 "torch.randn_like": "randn_like", "torch.randint_like": "randint_like",
                 "torch.bernoulli": "bernoulli", "torch.multinomial": "multinomial",
                 "torch.poisson": "random_poisson"}
_REPLAY_BYTES = 256 << 20     # torch draws kept for the replay, at most
_REPLAY_COUNT = 200_000
_DATA_PIPELINE_TORCH = "torch/utils/data/"
_DATA_PIPELINE_MS = "mindspore/dataset/"


def _replay_value(name: str, args, kwargs, result):
    """(MindSpore function, value it must return) for a torch draw; (None, None) when the
    conversion makes no single draw that can return it. In-place methods become an expression
    around one draw: `x.normal_(m, s)` -> `ops.randn_like(x) * s + m`, `x.uniform_(a, b)` ->
    `ops.rand_like(x) * (b - a) + a`, `x.bernoulli_(p)` -> `ops.rand_like(x) < p`: the draw
    replayed is the one that gives torch's values through that expression."""
    value = result.detach().cpu()
    if name in _REPLAY_KINDS:
        return _REPLAY_KINDS[name], value.numpy().copy()
    if name == "Distribution.sample":   # the value MindSpore's Distribution.sample returns
        return "sample", value.numpy().copy()

    def param(i, key, default):
        v = args[i] if len(args) > i else kwargs.get(key, default)
        return float(v) if isinstance(v, (int, float)) else None
    if name == "Tensor.normal_":
        mean, std = param(1, "mean", 0.0), param(2, "std", 1.0)
        if mean is not None and std:
            return "randn_like", ((value.double() - mean) / std).numpy()
    elif name == "Tensor.uniform_":
        low, high = param(1, "from", 0.0), param(2, "to", 1.0)
        if low is not None and high is not None and high != low:
            return "rand_like", ((value.double() - low) / (high - low)).numpy()
    elif name == "Tensor.bernoulli_":
        p = param(1, "p", 0.5)
        if p is not None:
            # any uniform number below p gives 1, any other 0: the middle of each interval
            return "rand_like", np.where(value.numpy() != 0, p / 2, (1 + p) / 2)
    return None, None


# ---------------------------------------------------------------- torch
def run_torch(rec: Record, script: str) -> None:
    import torch
    import torch.nn.functional as F
    from torch.nn.modules import dropout as tdropout
    from torch.nn.modules import module as tmodule

    import weakref

    from msmigrate.weights import load_rules, map_keys, public_torch_class

    is_tensor = torch.is_tensor
    rec.meta["random_draws"] = []

    rec.meta["draws"] = []      # the sequence the MindSpore run replays (see _replay_value)
    sizes = {"bytes": 0}

    def record_draw(name: str, args, kwargs, result) -> None:
        """A random draw of the program's own code: MindSpore's generator gives other numbers.
        Not one of torch's own code, nor one in a module's __init__ (its weights are copied; the
        MindSpore run skips a Cell's __init__ alike). One that initializes weights elsewhere
        (`m.weight.data.normal_(0, 0.02)` in a function given to model.apply) is no cause of a
        divergence, but is replayed in sequence: the conversion draws it too."""
        frame = sys._getframe(2)
        code = frame.f_code
        if not _program_file(code.co_filename):
            return
        outer, dataset = frame, False
        while outer is not None:
            if outer.f_code.co_name == "__init__" and isinstance(outer.f_locals.get("self"), torch.nn.Module):
                return
            dataset = dataset or _DATA_PIPELINE_TORCH in outer.f_code.co_filename.replace(os.sep, "/")
            outer = outer.f_back
        target = args[0] if args and torch.is_tensor(args[0]) and name.startswith("Tensor.") else None
        init = target is not None and (isinstance(target, torch.nn.Parameter) or target.data_ptr() in {
            q.data_ptr() for m in _alive(created) if isinstance(m, tmodule.Module)
            for q in m.parameters(recurse=False)})
        entry = {"call": name, "line": frame.f_lineno, "file": os.path.basename(code.co_filename),
                 "function": code.co_name, "step": len(rec.losses) + 1}
        index = None
        # a draw inside a DataLoader's iteration is not replayed: the batch it went into is
        seq = rec.meta["draws"]
        if not dataset and not rec.meta.get("draws_truncated"):
            kind, value = _replay_value(name, args, kwargs, result)
            if value is not None and sizes["bytes"] + value.nbytes > _REPLAY_BYTES or len(seq) >= _REPLAY_COUNT:
                rec.meta["draws_truncated"] = len(seq)
            else:
                index = len(seq)
                seq.append({**entry, "kind": kind, "shape": list(result.shape), "init": init})
                if value is not None:
                    rec.arrays[f"draw/{index}"] = value
                    sizes["bytes"] += value.nbytes
        draws = rec.meta["random_draws"]
        if not init and len(draws) < 20:
            draws.append({**entry, "index": index})

    def drawing(name, function):
        def draw(*args, **kwargs):
            result = function(*args, **kwargs)
            if torch.is_tensor(result):
                record_draw(name, args, kwargs, result)
            return result
        return draw

    for fname in RANDOM_FUNCTIONS:
        if hasattr(torch, fname):
            setattr(torch, fname, drawing(f"torch.{fname}", getattr(torch, fname)))
    for mname in RANDOM_METHODS:
        if hasattr(torch.Tensor, mname):
            setattr(torch.Tensor, mname, drawing(f"Tensor.{mname}", getattr(torch.Tensor, mname)))
    # a distribution's sample (an action of a policy): replayed as MindSpore's Distribution.sample;
    # rsample, differentiable, is recorded as a draw not replayed (the random data it explains)
    import torch.distributions as tdist
    for cls in vars(tdist).values():
        if isinstance(cls, type) and issubclass(cls, tdist.Distribution):
            for mname in ("sample", "rsample"):
                if mname in cls.__dict__:
                    setattr(cls, mname, drawing(f"Distribution.{mname}", cls.__dict__[mname]))
    # nets: every network recorded, {"prefix", "state" (name -> array), "params" (named parameters),
    # "module" (None for an optimizer's bare tensors)}; the first is the model
    st = {"model": None, "depth": 0, "pending": None, "batch": None, "batch_new": False,
          "names": {}, "acts_open": False, "nets": [], "checked": set(), "entry": None,
          "opt_stepped": False, "sites": set(), "unapplied": [], "input_grads": set()}
    rec.meta["networks"] = []
    created: list = []      # weak references to every module and optimizer, in creation order
    optimizers: list = []
    rules = load_rules()

    orig_module_init = tmodule.Module.__init__

    def module_init(self, *args, **kwargs):
        created.append(weakref.ref(self))
        orig_module_init(self, *args, **kwargs)

    tmodule.Module.__init__ = module_init
    orig_optimizer_init = torch.optim.Optimizer.__init__

    def optimizer_init(self, *args, **kwargs):
        orig_optimizer_init(self, *args, **kwargs)
        optimizers.append(weakref.ref(self))

    torch.optim.Optimizer.__init__ = optimizer_init

    orig_dropout_init = tdropout._DropoutNd.__init__

    def dropout_init(self, *args, **kwargs):
        orig_dropout_init(self, *args, **kwargs)
        self._msmigrate_p = float(self.p)
        self.p = 0.0

    tdropout._DropoutNd.__init__ = dropout_init
    _zero_attribute(torch.nn.MultiheadAttention, "dropout")   # attention-weight dropout
    _zero_attribute(torch.nn.RNNBase, "dropout")              # between stacked RNN layers
    orig_sdpa = F.scaled_dot_product_attention

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, *args, **kwargs):
        rec.meta["functional_dropout_calls"] += dropout_p > 0
        return orig_sdpa(query, key, value, attn_mask, 0.0, *args, **kwargs)

    F.scaled_dot_product_attention = sdpa
    for fname in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout"):
        orig = getattr(F, fname)

        def no_dropout(input, p=0.5, training=True, inplace=False, _orig=orig):
            rec.meta["functional_dropout_calls"] += p > 0
            return _orig(input, 0.0, training, inplace)

        setattr(F, fname, no_dropout)

    def distinct_state(model) -> dict:
        """model.state_dict() without the second name of a tied tensor (`wte.weight = lm_head.weight`):
        MindSpore lists a shared Parameter once, under the name torch lists first."""
        seen, out = set(), {}
        for k, v in model.state_dict(keep_vars=True).items():
            if id(v) not in seen:
                seen.add(id(v))
                out[k] = v
        return out

    def state_of(model) -> dict:
        return {k: v.detach().cpu().numpy().copy() for k, v in distinct_state(model).items()}

    def current_state():
        return {net["prefix"] + k: v for net in st["nets"] for k, v in net["state"]().items()}

    def snapshot_pending():
        if st["pending"] is not None:
            stepped = st.pop("stepped", None)
            if stepped is None:
                stepped = st.pop("provisional", None)
            rec.put_state(st["pending"], stepped if stepped is not None else current_state())
            st["pending"] = None
        st.pop("provisional", None)

    def after_optimizer_step(optimizer, args, kwargs):
        """The state right after the last optimizer step of a pending step, as the MindSpore
        side takes it when its compiled step returns: a checkpoint loaded or weights clipped
        before the next forward belong to the next step."""
        st["opt_stepped"] = True
        st["unapplied"] = []
        if st["pending"] is not None and st["nets"]:
            st["stepped"] = current_state()

    import torch.optim.optimizer as toptimizer

    register_step_hook = getattr(toptimizer, "register_optimizer_step_post_hook", None)
    if register_step_hook is not None:
        register_step_hook(after_optimizer_step)
    register_pre_hook = getattr(toptimizer, "register_optimizer_step_pre_hook", None)
    if register_pre_hook is not None:
        register_pre_hook(lambda optimizer, args, kwargs: st.update(in_optimizer_step=True))
        if register_step_hook is not None:
            register_step_hook(lambda optimizer, args, kwargs: st.update(in_optimizer_step=False))

    def void_unapplied() -> None:
        """The steps recorded since the last optimizer step are none: their gradients were
        cleared (or never applied) before any update. They took an input's gradient (an
        adversarial example's: PGD's passes, FGSM's one), which msmigrate convert computes with a
        vjp before the step."""
        unapplied = st["unapplied"]
        if not unapplied or unapplied != list(range(len(rec.losses) - len(unapplied) + 1, len(rec.losses) + 1)):
            return
        if not all(step in st["input_grads"] for step in unapplied):
            # a training loss's gradients dropped: the batches since the last update when an
            # epoch's batch count is no multiple of the accumulation (zero_grad() at the next
            # epoch's start). The conversion computes that step too, and drops its gradients alike
            return
        del rec.losses[len(rec.losses) - len(unapplied):]
        st["pending"], st["sites"], st["unapplied"] = None, set(), []
        st.pop("provisional", None)
        st.pop("stepped", None)
        gone = tuple(f"{kind}/{step}/" for step in unapplied for kind in ("noise", "batch", "state"))
        for key in [k for k in rec.arrays if k.startswith(gone)]:
            del rec.arrays[key]
        rec.meta["state_steps"] = [k for k in rec.meta["state_steps"] if k not in unapplied]
        if any(step in rec.meta["batches"] for step in unapplied):   # their batch is the next step's
            rec.meta["batches"] = [k for k in rec.meta["batches"] if k not in unapplied]
            st["batch_new"] = True
        if 1 in unapplied:
            rec.meta["grads"] = []
        rec.meta["voided_backward"] = rec.meta.get("voided_backward", 0) + len(unapplied)

    def reaches_input(loss) -> bool:
        """Whether the backward pass of `loss` computes the gradient of a tensor no optimizer
        updates (an input's: an adversarial example's)."""
        updated = {id(p) for o in _alive(optimizers) for g in o.param_groups for p in g["params"]}
        seen, todo = set(), [loss.grad_fn]
        while todo:
            fn = todo.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            leaf = getattr(fn, "variable", None)   # (an AccumulateGrad node: a leaf's gradient)
            if leaf is not None and id(leaf) not in updated:
                return True
            todo.extend(f for f, _ in fn.next_functions)
        return False

    def voided(zero_grad):
        """zero_grad() after backward passes and before any optimizer step (outside one: not an
        LBFGS closure): those passes updated nothing (void_unapplied)."""
        def clearing(self, *args, **kwargs):
            if not st["opt_stepped"] and not st.get("in_optimizer_step") and _alive(optimizers):
                void_unapplied()
            return zero_grad(self, *args, **kwargs)
        return clearing

    torch.optim.Optimizer.zero_grad = voided(torch.optim.Optimizer.zero_grad)
    tmodule.Module.zero_grad = voided(tmodule.Module.zero_grad)

    def has_parameters(module) -> bool:
        return any(True for _ in module.parameters())

    def signature(module) -> list:
        """The MindSpore shapes of a module's parameters and buffers, sorted: what tells the
        networks of a program apart whatever their parameters are named."""
        state = distinct_state(module)
        classes = {n: public_torch_class(type(m)) for n, m in module.named_modules()}
        mappings, _ = map_keys(state.keys(), classes, rules)
        return sorted(list(m.ms_shape(tuple(state[k].shape))) for k, m in mappings.items())

    def add_network(module, prefix: str, **info) -> None:
        state = state_of(module)
        for k, v in state.items():
            rec.arrays[f"init/{prefix}{k}"] = v
        if rec.spec.get("perturb"):   # a second run measuring torch's own sensitivity to rounding:
            # the first run's initial weights (an unseeded program draws others), rounded differently
            with np.load(os.path.join(rec.spec["torch_record"], "arrays.npz")) as first, torch.no_grad():
                for k, p in module.named_parameters():
                    if f"init/{prefix}{k}" in first.files:
                        p.copy_(torch.from_numpy(first[f"init/{prefix}{k}"]).to(p.dtype))
            _round_differently(module.parameters(), torch, int(rec.spec["perturb"]) - 1)
        st["nets"].append({"prefix": prefix, "module": module, "state": lambda: state_of(module),
                           "params": module.named_parameters})
        if prefix:
            rec.meta["networks"].append({
                "prefix": prefix, "class": type(module).__qualname__, "init_keys": list(state),
                "module_classes": {n: public_torch_class(type(m)) for n, m in module.named_modules()},
                "dropout": {n: m._msmigrate_p for n, m in module.named_modules() if hasattr(m, "_msmigrate_p")},
                **info})

    def maybe_add_network(module) -> None:
        """A further module with parameters called from outside any other (a program training
        several networks): recorded when it is a live top-level module (part of no other) and
        shares no module with a network already recorded, with its rank among the live
        top-level modules of its signature in creation order, by which the MindSpore run finds
        its Cell."""
        st["checked"].add(id(module))
        recorded = [net["module"] for net in st["nets"] if net["module"] is not None]
        inside = {id(c) for m in recorded for c in m.modules()}
        if any(id(c) in inside for c in module.modules()):
            return
        ranked = rank_of(module)
        if ranked is not None:
            add_network(module, f"#{len(st['nets'])}.", rank=ranked[0], signature=ranked[1],
                        first_step=len(rec.losses) + 1)

    def rank_of(module):
        """(rank, signature) of a live top-level module among those of its signature, in
        creation order; None for a part of another module."""
        tops = _top_level([m for m in _alive(created) if isinstance(m, tmodule.Module) and has_parameters(m)],
                          lambda m: m.modules())
        if not any(m is module for m in tops):
            return None
        sig = signature(module)
        same = [m for m in tops if signature(m) == sig]
        return next(i for i, m in enumerate(same) if m is module), sig

    def act_hook(module, inputs, output):
        if st["acts_open"] and id(module) in st["names"]:
            t = _first_tensor(output, is_tensor)
            if t is not None and t.is_floating_point():
                i = len(rec.meta["activations"])
                rec.meta["activations"].append({"name": st["names"][id(module)], "cls": type(module).__name__})
                rec.arrays[f"act/{i}"] = t.detach().cpu().numpy().copy()

    def pre_hook(called, inputs):
        module = called
        if st["depth"] == 0:
            if st["model"] is None and any(True for _ in module.parameters()):
                st["entry"] = called
                # `model.forward(x)` called directly runs no hook of the model: its first child
                # with parameters is called from outside; the model is the one live top-level
                # module holding it
                owners = [m for m in _top_level([m for m in _alive(created) if isinstance(m, tmodule.Module)
                                                 and has_parameters(m)], lambda m: m.modules())
                          if any(c is module for c in m.modules())]
                module = owners[0] if len(owners) == 1 else module
                st["model"] = module
                st["names"] = {id(m): n for n, m in module.named_modules()}
                rec.meta["module_classes"] = {n: public_torch_class(type(m)) for n, m in module.named_modules()}
                rec.meta["model_class"] = type(module).__qualname__
                rec.meta["dropout"] = {n: m._msmigrate_p for n, m in module.named_modules()
                                       if hasattr(m, "_msmigrate_p")}
                rec.meta["init_keys"] = list(distinct_state(module))
                ranked = rank_of(module)
                if ranked is not None:
                    rec.meta["model_rank"], rec.meta["model_signature"] = ranked
                add_network(module, "")
                st["checked"].add(id(module))
                st["acts_open"] = bool(rec.spec.get("grads"))
            elif st["model"] is not None and id(module) not in st["checked"] and has_parameters(module):
                maybe_add_network(module)
            if any(module is c for net in st["nets"] if net["module"] is not None for c in net["module"].modules()):
                if st["opt_stepped"] or not _alive(optimizers):
                    snapshot_pending()
                elif st["pending"] is not None and "provisional" not in st:
                    # a forward before any optimizer step: the next backward pass tells whether it
                    # still belongs to this step (a GAN's second discriminator loss, joined) or
                    # starts the next (gradient accumulation), whose state is this one's
                    st["provisional"] = current_state()
            if called is st["entry"]:
                _record_input(rec, st["acts_open"], inputs, is_tensor, lambda t: t.detach().cpu().numpy().copy())
        st["depth"] += 1

    def post_hook(module, inputs, output):
        st["depth"] = max(0, st["depth"] - 1)
        act_hook(module, inputs, output)

    tmodule.register_module_forward_pre_hook(pre_hook)
    tmodule.register_module_forward_hook(post_hook)

    orig_iter = torch.utils.data.DataLoader.__iter__
    replay = _first_run_batches(rec.spec) if rec.spec.get("perturb") else []

    def loader_iter(self):
        for batch in orig_iter(self):
            if replay:   # the rounding run takes the first run's batches: augmentations draw others
                tensors, arrays = _flatten(batch, is_tensor), replay.pop(0)
                if len(tensors) == len(arrays) and all(tuple(t.shape) == a.shape for t, a in zip(tensors, arrays)):
                    with torch.no_grad():
                        for t, a in zip(tensors, arrays):
                            t.copy_(torch.from_numpy(a).to(t.dtype))
            st["batch"] = [t.detach().cpu().numpy().copy() for t in _flatten(batch, is_tensor)]
            st["batch_new"] = True
            st["yields"] = st.get("yields", 0) + 1   # over every loader: the MindSpore run counts alike
            yield batch

    torch.utils.data.DataLoader.__iter__ = loader_iter

    # scaler.scale(loss).backward(): record the loss itself, not the scaled one
    scaled = {}
    scaler_cls = getattr(getattr(torch, "amp", None), "GradScaler", None)
    if scaler_cls is not None:
        orig_scale = scaler_cls.scale

        def scale(self, outputs):
            result = orig_scale(self, outputs)
            if torch.is_tensor(result):
                scaled[id(result)] = (result, outputs)
            return result

        scaler_cls.scale = scale

    orig_backward = torch.Tensor.backward

    def backward(self, *args, **kwargs):
        caller = sys._getframe(1)
        site = (caller.f_code.co_filename, caller.f_lineno)
        if (rec.losses and st["pending"] is not None and not st["opt_stepped"] and site not in st["sites"]
                and _alive(optimizers)):
            return joined_backward(self, site, *args, **kwargs)
        st["opt_stepped"], st["sites"] = False, {site}
        step = len(rec.losses) + 1
        # (where backward passes turned out to be none, those not applied yet may be none too)
        settled = len(rec.losses) - (len(st["unapplied"]) if rec.meta.get("voided_backward") else 0)
        if settled + 1 > rec.limit:
            snapshot_pending()
            raise StopRun
        snapshot_pending()
        st["acts_open"] = False
        loss = self
        entry = scaled.pop(id(self), None)
        if entry is not None and entry[0] is self:
            loss = entry[1]
        scaled.clear()
        rec.losses.append(float(loss.detach().reshape(-1)[0]) if loss.numel() == 1 else None)
        if st["batch_new"]:
            for i, arr in enumerate(st["batch"]):
                rec.arrays[f"batch/{step}/{i}"] = arr
            rec.meta["batches"].append(step)
            if st.get("yields"):
                rec.meta.setdefault("batch_yields", {})[str(st["yields"])] = step
            st["batch_new"] = False
        if step == 1 and st["model"] is not None:
            rec.meta["training"] = {n: bool(m.training) for n, m in st["model"].named_modules()}
        if step == 1 and not st["nets"]:
            free_parameters()
        if step == 1 and not st["nets"]:
            free_tensors(self)
        if reaches_input(self):
            st["input_grads"].add(step)
        before = [_grad_versions(net["params"]()) for net in st["nets"]]
        result = orig_backward(self, *args, **kwargs)
        for net, versions in zip(st["nets"], before):
            # a network this backward pass did not reach keeps its last step's gradients
            if net["prefix"] == "" or _grad_versions(net["params"]()) != versions:
                _record_tiny_gradients(rec, step, net["params"](), net["prefix"])
        if step == 1 and rec.spec.get("grads") and st["model"] is not None:
            for name, p in st["model"].named_parameters():
                if p.grad is not None:
                    rec.arrays[f"grad/{name}"] = p.grad.detach().cpu().numpy().copy()
                    rec.meta["grads"].append(name)
        if st["nets"]:
            st["pending"] = step
        st["unapplied"].append(step)
        return result

    def joined_backward(loss, site, *args, **kwargs):
        """A further backward pass of another line before any optimizer step (`loss_a.backward();
        loss_b.backward(); opt.step()`): the gradients add up into one update, which msmigrate
        convert makes one step on the sum of the losses; so is it counted here."""
        step = len(rec.losses)
        st["sites"].add(site)
        st.pop("provisional", None)
        entry = scaled.pop(id(loss), None)
        value = entry[1] if entry is not None and entry[0] is loss else loss
        scaled.clear()
        if rec.losses[-1] is not None:
            rec.losses[-1] = rec.losses[-1] + float(value.detach().reshape(-1)[0]) if value.numel() == 1 else None
        rec.meta["joined_backward"] = rec.meta.get("joined_backward", 0) + 1
        before = [_grad_versions(net["params"]()) for net in st["nets"]]
        result = orig_backward(loss, *args, **kwargs)
        for net, versions in zip(st["nets"], before):
            if net["prefix"] == "" or _grad_versions(net["params"]()) != versions:
                # the mask of the summed gradients replaces the first pass's
                for name, _ in net["params"]():
                    rec.arrays.pop(f"noise/{step}/{net['prefix']}{name}", None)
                _record_tiny_gradients(rec, step, net["params"](), net["prefix"])
        if step == 1 and rec.spec.get("grads") and st["model"] is not None:
            for name, p in st["model"].named_parameters():
                if p.grad is not None:
                    rec.arrays[f"grad/{name}"] = p.grad.detach().cpu().numpy().copy()
        return result

    def free_parameters() -> None:
        """No module with parameters was called before the first backward: the program trains
        tensors of its own (`w = torch.tensor(0.0, requires_grad=True)`); its optimizers' parameters,
        in creation order, stand for the model (`optimizer0.0`, ...)."""
        opts = _alive(optimizers)
        params = {f"optimizer{j}.{k}": p for j, o in enumerate(opts)
                  for k, p in enumerate(p for g in o.param_groups for p in g["params"])}
        if not params:
            return
        state = lambda: {n: p.detach().cpu().numpy().copy() for n, p in params.items()}  # noqa: E731
        for k, v in state().items():
            rec.arrays[f"init/{k}"] = v
        st["nets"].append({"prefix": "", "module": None, "state": state, "params": lambda: list(params.items())})
        rec.meta.update(model_class=f"(the parameters of {len(opts)} optimizer{'s' if len(opts) > 1 else ''})",
                        init_keys=list(params), module_classes={}, free_parameters=len(opts))

    def free_tensors(loss) -> None:
        """No module and no optimizer: the program updates by hand the tensors it made with
        requires_grad=True (`w -= lr * w.grad`). They are the leaves of the loss's graph, known by
        the names the program gives them (the converted program's Parameters carry the same)."""
        import inspect

        leaves, seen, todo = [], set(), [loss.grad_fn]
        while todo:
            fn = todo.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            if hasattr(fn, "variable"):
                leaves.append(fn.variable)
            todo.extend(f for f, _ in fn.next_functions)
        named, frames = {}, {}
        for frame in inspect.stack(0)[2:]:   # the program's frames, innermost first
            for n, v in frame.frame.f_locals.items():
                if any(v is leaf for leaf in leaves) and not any(v is x for x in named.values()):
                    named.setdefault(n, v)
                    frames.setdefault(n, frame.frame)
        if not named or len(named) != len(leaves):
            return

        def current(n, p):
            """The tensor the name holds now: a program may make a new leaf at every pass
            (`x = x - lr * x.grad` under no_grad), which the converted program updates in place."""
            v = frames[n].f_locals.get(n, p)
            return v if isinstance(v, torch.Tensor) and v.shape == p.shape else p

        state = lambda: {n: current(n, p).detach().cpu().numpy().copy() for n, p in named.items()}  # noqa: E731
        for k, v in state().items():
            rec.arrays[f"init/{k}"] = v
        st["nets"].append({"prefix": "", "module": None, "state": state, "params": lambda: list(named.items())})
        rec.meta.update(model_class=f"(tensors trained by hand: {', '.join(named)})", init_keys=list(named),
                        module_classes={}, free_tensors=list(named))

    torch.Tensor.backward = backward
    try:
        _run_program(script, rec.spec.get("args", ()))
    finally:
        if rec.meta.get("voided_backward") and _alive(optimizers):
            void_unapplied()   # input gradients after the last update (an evaluation on adversarial examples)
        if st["nets"]:
            snapshot_pending()
        # a network first called after the last step recorded (a model rebuilt from a checkpoint
        # to evaluate) takes part in no step compared
        rec.meta["networks"] = [n for n in rec.meta["networks"] if n["first_step"] <= len(rec.losses)]


# ---------------------------------------------------------------- mindspore
def run_mindspore(rec: Record, script: str) -> None:
    import mindspore as ms
    from mindspore import nn, ops

    import weakref

    from msmigrate.weights import WeightMappingError, check_complete, map_keys, positional_fallback

    torch_dir = Path(rec.spec["torch_record"])
    torch_meta = json.loads((torch_dir / "record.json").read_text())
    torch_arrays = np.load(torch_dir / "arrays.npz")
    mappings, dropped = map_keys(torch_meta.get("init_keys", []), torch_meta.get("module_classes", {}))
    rec.meta["dropped_keys"] = dropped
    is_tensor = lambda v: isinstance(v, ms.Tensor)  # noqa: E731
    # nets: prefix -> named parameters of each network whose torch weights were loaded
    st = {"model": None, "grad_fns": {}, "captured": None, "nets": {}, "ready": False}
    created: list = []      # weak references to every Cell, in creation order
    orig_cell_init = nn.Cell.__init__

    def cell_init(self, *args, **kwargs):
        created.append(weakref.ref(self))
        orig_cell_init(self, *args, **kwargs)

    nn.Cell.__init__ = cell_init

    # the batch a MindSpore pipeline yielded last: a step given values derived from it (x.view(-1,
    # 784)) gets torch's batch derived alike (replay_args)
    from mindspore.dataset.engine import iterators
    orig_next = iterators.Iterator.__next__

    yield_steps = {int(k): v for k, v in torch_meta.get("batch_yields", {}).items()}

    def pipeline_next(self):
        row = orig_next(self)
        st["yields"] = st.get("yields", 0) + 1
        if st["yields"] in yield_steps:
            row = torch_batch_instead(row, yield_steps[st["yields"]])
        values = row.values() if isinstance(row, dict) else row
        st["pipeline_batch"] = [v.asnumpy() if is_tensor(v) else np.asarray(v) for v in values]
        return row

    def torch_batch_instead(row, step: int):
        """The batch torch's step `step` took, in place of the one the program's loaders yield
        at the same place of their sequence (the k-th batch yielded by any loader in both runs:
        an evaluation loader's or a statistics pass's batches stay the program's own), where
        every value has its rank and kind (another shuffle order, another split; sequences padded
        to another length): what the program derives from the batch before its step (`noisy =
        add_noise(clean)`, a reshape, a one-hot) is then derived from torch's values too, not
        only the step's arguments (replay_args)."""
        keys = list(row) if isinstance(row, dict) else None
        values = [row[k] for k in keys] if keys is not None else list(row)
        torch_values = []
        while f"batch/{step}/{len(torch_values)}" in torch_arrays:
            torch_values.append(torch_arrays[f"batch/{step}/{len(torch_values)}"])
        if not torch_values or len(torch_values) != len(values) or any(
                len(np.shape(v)) != t.ndim or
                np.asarray(v.asnumpy() if is_tensor(v) else v).dtype.kind != t.dtype.kind
                for v, t in zip(values, torch_values)):
            return row
        new = [ms.Tensor(t).astype(v.dtype) if is_tensor(v) else t.astype(np.asarray(v).dtype)
               for v, t in zip(values, torch_values)]
        counts = rec.meta.setdefault("replay", {})
        counts["from_loader"] = counts.get("from_loader", 0) + 1
        return dict(zip(keys, new)) if keys is not None else (type(row)(new) if isinstance(row, tuple) else new)

    iterators.Iterator.__next__ = pipeline_next

    dropout_classes = [getattr(nn, n) for n in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d") if hasattr(nn, n)]
    for cls in dropout_classes:
        def make(orig_init):
            def dropout_init(self, *args, **kwargs):
                orig_init(self, *args, **kwargs)
                p = getattr(self, "p", None)
                keep = getattr(self, "keep_prob", None)
                self._msmigrate_p = float(p) if p is not None else 1.0 - float(keep if keep is not None else 0.5)
                self.p = 0.0
                if hasattr(self, "keep_prob"):
                    self.keep_prob = 1.0
            return dropout_init
        cls.__init__ = make(cls.__init__)

    if hasattr(nn, "MultiheadAttention"):
        _zero_attribute(nn.MultiheadAttention, "dropout")

    def no_dropout(input, p=0.5, training=True, seed=None):
        return input

    for fname in ("dropout", "dropout1d", "dropout2d", "dropout3d"):
        if hasattr(ops, fname):
            setattr(ops, fname, no_dropout)

    orig_vag = ms.value_and_grad

    def value_and_grad(fn, grad_position=0, weights=None, has_aux=False, **kwargs):
        real = orig_vag(fn, grad_position, weights, has_aux, **kwargs)
        st["grad_fns"][id(real)] = (real, weights, grad_position)
        if torch_meta.get("free_tensors") and weights is not None:
            return by_hand(real, weights)
        return real

    def by_hand(grad_fn, weights):
        """torch updated tensors of its own by hand (see run_torch's free_tensors): each call of
        the grad function is a step (the program updates the Parameters after it, in Python);
        a step's state is taken when the next one starts, or when the program ends."""
        def step_fn(*args, **kwargs):
            step = len(rec.losses) + 1
            flush_by_hand()
            if step > rec.limit:
                raise StopRun
            if not st["ready"]:
                params = [(p.name, p) for p in weights]
                load_torch_weights(lambda: params, torch_meta["init_keys"], {})
                rec.meta.update(model_class=f"(Parameters updated by hand: {', '.join(n for n, _ in params)})",
                                dropout={}, training={})
                st["ready"] = True
            out = grad_fn(*args, **kwargs)
            loss = _first_tensor(out, is_tensor)
            rec.losses.append(float(loss.asnumpy().reshape(-1)[0]) if loss is not None and loss.size == 1 else None)
            st["by_hand"] = step
            return out

        return step_fn

    def flush_by_hand():
        if st.get("by_hand") is not None:
            rec.put_state(st.pop("by_hand"), state_of())

    ms.value_and_grad = value_and_grad
    ops.value_and_grad = value_and_grad

    def _optimizer_types() -> tuple:
        types = tuple(t for t in (getattr(nn, "Optimizer", None),) if t is not None)
        try:
            from mindspore.experimental.optim import Optimizer as EOptimizer
            types += (EOptimizer,)
        except ImportError:
            pass
        return types

    def find_model(function, args=()):
        optimizer_types = _optimizer_types()
        reachable = [v for v, _ in _reachable(function, args)]
        cells = [v for v in reachable if isinstance(v, nn.Cell) and not isinstance(v, optimizer_types)
                 and any(True for _ in v.get_parameters())]
        if not cells:
            cells = owners_of_optimized([v for v in reachable if isinstance(v, optimizer_types)])
        if not cells:   # held where no walk goes (a SimpleNamespace, a dict): torch's model by its names
            cells = [c for c in live_cells() if {n for n, _ in c.parameters_and_names()} & wanted_keys()]
        wanted = wanted_keys()

        def score(cell):
            names = {n for n, _ in cell.parameters_and_names()}
            return len(names & wanted), -len(names ^ wanted)
        if not cells:
            return None
        best = max(score(c) for c in cells)
        cells = [c for c in cells if score(c) == best]
        if len(cells) > 1 and "model_rank" in torch_meta:
            # several networks of the model's names (one per optimizer, a spare one): the one of
            # torch's model's rank among the live top-level networks of its shapes
            same = [c for c in live_networks() if signature(c) == torch_meta["model_signature"]]
            ranked = same[torch_meta["model_rank"]] if torch_meta["model_rank"] < len(same) else None
            if any(c is ranked for c in cells):
                return ranked
        return cells[0]

    def wanted_keys() -> set:
        return {m.ms_key for m in mappings.values()}

    def live_cells() -> list:
        import gc
        optimizer_types = _optimizer_types()
        # by type(): isinstance on a dead weak proxy among gc's objects raises
        return [c for c in gc.get_objects() if issubclass(type(c), nn.Cell) and not issubclass(type(c), optimizer_types)]

    def owners_of_optimized(optimizers) -> list:
        """The live Cells holding every parameter an optimizer the step reaches updates: the
        network, when the step reaches it only through the optimizer (a forward held by an
        object of a library class, a functools.partial, ...)."""
        wanted = {id(p) for opt in optimizers for p in getattr(opt, "parameters", ())
                  if isinstance(p, ms.Parameter)}
        if not wanted:
            return []
        return [c for c in live_cells() if wanted <= {id(p) for p in c.get_parameters()}]

    rec.meta["loaded"] = {}

    def load_torch_weights(named_parameters, keys, classes, prefix=""):
        """Copy torch's initial values of one network (its keys without `prefix`) into the
        MindSpore parameters `named_parameters` lists; remember the network under `prefix`.
        The state of an optimizer the network holds (`self.optimizer = Adam(self.parameters())`,
        a Cell attribute in MindSpore) is no weight of it: torch's state_dict has none."""
        ms_params = dict(named_parameters())
        owner = getattr(named_parameters, "__self__", None)
        if isinstance(owner, nn.Cell):
            inner = [name + "." for name, cell in owner.cells_and_names()
                     if name and isinstance(cell, _optimizer_types())]
            ms_params = {n: p for n, p in ms_params.items() if not n.startswith(tuple(inner))}
        net_mappings, _ = map_keys(keys, classes)
        net_mappings = positional_fallback(net_mappings, classes, ms_params)
        torch_shapes = {k: torch_arrays[f"init/{prefix}{k}"].shape for k in net_mappings}
        try:
            check_complete(net_mappings, torch_shapes, {n: tuple(p.shape) for n, p in ms_params.items()})
        except WeightMappingError as exc:
            raise WeightMappingError(f"network {prefix.rstrip('.')}: {exc}" if prefix else str(exc)) from None
        for key, m in net_mappings.items():
            param = ms_params[m.ms_key]
            param.set_data(ms.Tensor(np.array(m.to_ms(torch_arrays[f"init/{prefix}{key}"]), order="C")).astype(param.dtype))  # ascontiguousarray makes 0-d arrays 1-d
        rec.meta["loaded"].update({prefix + k: prefix + m.ms_key for k, m in net_mappings.items()})
        st["nets"][prefix] = named_parameters

    def state_of() -> dict:
        return {prefix + n: p.asnumpy().copy() for prefix, named in st["nets"].items() for n, p in named()}

    def settle_buffers() -> None:
        """The state of the last step again, once it is final (the next step starts, the run
        ends): a forward the conversion moved after the compiled step (a value torch computed
        before its optimizer step only to show it) updates BatchNorm statistics after the step
        returned, and an update of gradients summed over a loop is applied after the loop (the
        step computes one pass), where torch's state was taken when its next pass started."""
        step = len(rec.losses)
        if step and st["ready"] and step not in st.setdefault("settled", set()):
            st["settled"].add(step)
            for prefix, named in st["nets"].items():
                for n, p in named():
                    rec.arrays[f"late/{step}/{prefix}{n}"] = p.asnumpy().copy()

    def live_networks() -> list:
        """The live Cells with parameters that are part of no other, in creation order."""
        optimizer_types = _optimizer_types()
        return _top_level([c for c in _alive(created) if not isinstance(c, optimizer_types)
                           and any(True for _ in c.get_parameters())],
                          lambda c: [x for _, x in c.cells_and_names()])

    def signature(cell) -> list:
        return sorted(list(p.shape) for _, p in cell.parameters_and_names())

    def match_networks() -> None:
        """Each further torch network (see run_torch) not matched yet: the live top-level Cell
        with parameters of its signature and rank, in creation order; its torch initial weights
        are loaded into it. One not created yet is matched at a later step."""
        pending = [n for n in torch_meta.get("networks", []) if n["prefix"] not in st["nets"]]
        if not pending:
            return
        tops = live_networks()
        taken = {id(st["model"])} | {id(c) for c in st.get("cells", [])}
        for n in pending:
            same = [c for c in tops if signature(c) == n["signature"]]
            if n["rank"] >= len(same):
                continue
            cell = same[n["rank"]]
            if id(cell) in taken:
                raise WeightMappingError(f"network {n['prefix'].rstrip('.')} (torch {n['class']}): the MindSpore "
                                         f"Cell of its rank among those of its shape is already matched")
            taken.add(id(cell))
            st.setdefault("cells", []).append(cell)
            load_torch_weights(cell.parameters_and_names, n["init_keys"], n["module_classes"], n["prefix"])
            rec.meta.setdefault("networks", {})[n["prefix"]] = type(cell).__qualname__
            rec.meta["dropout"].update({n["prefix"] + k: c._msmigrate_p for k, c in cell.cells_and_names()
                                        if hasattr(c, "_msmigrate_p")})

    def free_parameters() -> None:
        """torch trained tensors of its own (see run_torch): the parameters of the live
        optimizers, in creation order."""
        opts = [c for c in _alive(created) if isinstance(c, _optimizer_types())]
        params = [(f"optimizer{j}.{k}", p) for j, o in enumerate(opts) for k, p in enumerate(o.parameters)]
        load_torch_weights(lambda: params, torch_meta["init_keys"], {})
        rec.meta.update(model_class=f"(the parameters of {len(opts)} optimizer{'s' if len(opts) > 1 else ''})",
                        dropout={}, training={})

    torch_batches = set(torch_meta.get("batches", []))
    replay = {"same": 0, "replayed": 0, "mismatch": []}
    rec.meta["replay"] = replay

    last = {}   # the MindSpore batch last replaced and the torch batch it was replaced by

    def replay_args(step, args):
        def is_batch(a):   # 0-d tensors are step flags (e.g. "apply the accumulated update")
            return is_tensor(a) and len(a.shape) > 0

        pos = [a for a in args if is_batch(a)]
        if step not in torch_batches:
            # torch's step took no new DataLoader batch (several networks, or several steps, on
            # one batch): where MindSpore's step gets the batch it got last, so does torch's
            if not last or len(pos) != len(last["ms"]) or not all(
                    tuple(a.shape) == m.shape and np.array_equal(a.asnumpy(), m) for a, m in zip(pos, last["ms"])):
                return args
            replay["replayed"] += 1
            it = iter(last["torch"])
            return tuple(ms.Tensor(next(it)).astype(a.dtype) if is_batch(a) else a for a in args)
        last.clear()
        tb = []
        i = 0
        while f"batch/{step}/{i}" in torch_arrays:
            tb.append(torch_arrays[f"batch/{step}/{i}"])
            i += 1
        if len(pos) != len(tb) or any(tuple(a.shape) != t.shape for a, t in zip(pos, tb)):
            tb = reshaped_batch(pos, tb)
            if tb is None:
                replay["mismatch"].append(step)
                return args
        # (an argument that is no value of the batch, e.g. noise drawn for it, stays as it is)
        tb = [a.asnumpy() if t is None else t for a, t in zip(pos, tb)]
        if all(np.array_equal(a.asnumpy().astype(np.float64), t.astype(np.float64)) for a, t in zip(pos, tb)):
            replay["same"] += 1
            return args
        replay["replayed"] += 1
        last.update(ms=[a.asnumpy().copy() for a in pos], torch=tb)
        it = iter(tb)
        return tuple(ms.Tensor(next(it)).astype(a.dtype) if is_batch(a) else a for a in args)

    def reshaped_batch(pos, tb):
        """torch's batch as the step's arguments, where one is a reshape of a value of the batch
        the pipeline yielded last (`b_x = x.view(-1, 28 * 28)`; the same value may feed two): the
        torch value of the same place, reshaped alike; None for an argument that is not (noise
        drawn for the batch: its draws are replayed on their own). None when none is."""
        drawn = st.get("pipeline_batch") or []
        if len(drawn) != len(tb) or any(d.shape != t.shape for d, t in zip(drawn, tb)):
            return None
        out = []
        for a in pos:
            # compared in the argument's dtype: the step may take a cast of the value
            # (`data.unsqueeze(2).float()` of a float64 NumPy window rounds it to float32)
            flat = a.asnumpy().reshape(-1)
            j = next((j for j, d in enumerate(drawn) if d.size == flat.size
                      and np.array_equal(d.reshape(-1).astype(flat.dtype), flat)), None)
            out.append(None if j is None else tb[j].reshape(tuple(a.shape)))
        return out if any(t is not None for t in out) else None

    class _NoStep:
        """Stands in for an optimizer during the dry run: calling it updates nothing (calling
        an eoptim optimizer eagerly would also break its later compilation in MindSpore 2.10)."""
        def __init__(self, optimizer):
            self._optimizer = optimizer

        def __call__(self, *args, **kwargs):
            return True

        def __getattr__(self, name):
            return getattr(self._optimizer, name)

    def dry_run(function, args, kwargs):
        """Run step 1 once uncompiled, with the optimizers disabled, to capture gradients and
        cell outputs; then put every parameter (BN statistics included) back as it was."""
        model = st["model"]
        ids = {id(p): n for n, p in model.parameters_and_names()}
        names = {id(c): n for n, c in model.cells_and_names()}
        saved = {n: p.asnumpy().copy() for n, p in model.parameters_and_names()}
        optimizer_types = _optimizer_types()
        restore = []
        for value, setter in _reachable(function, args):
            if isinstance(value, optimizer_types):
                setter(_NoStep(value))
                restore.append((setter, value))
                continue
            entry = st["grad_fns"].get(id(value))
            if entry is None or entry[0] is not value:
                continue
            real, weights, grad_position = entry

            def capture(*a, _real=real, _weights=weights, _gp=grad_position, **k):
                out = _real(*a, **k)
                grads = out[1] if _gp is None else out[1][1]
                plist = list(_weights) if _weights is not None else []
                for p, g in zip(plist, grads):
                    name = ids.get(id(p), getattr(p, "name", "?"))
                    if f"grad/{name}" not in rec.arrays:
                        rec.meta["grads"].append(name)
                    rec.arrays[f"grad/{name}"] = g.asnumpy().copy()
                return out

            setter(capture)
            restore.append((setter, value))
        handles = []

        def hook(cell, inputs, output):
            t = _first_tensor(output, is_tensor)
            if t is not None and t.dtype in (ms.float16, ms.float32, ms.float64):
                i = len(rec.meta["activations"])
                rec.meta["activations"].append({"name": names.get(id(cell), "?"), "cls": type(cell).__name__})
                rec.arrays[f"act/{i}"] = t.asnumpy().copy()

        opened = [True]

        def input_hook(cell, inputs):
            _record_input(rec, opened[0], inputs, is_tensor, lambda t: t.asnumpy().copy())
            opened[0] = False

        handles.append(model.register_forward_pre_hook(input_hook))
        for name, cell in model.cells_and_names():
            handles.append(cell.register_forward_hook(hook))
        try:
            function(*args, **kwargs)
        finally:
            for h in handles:
                h.remove()
            for setter, value in reversed(restore):
                setter(value)
            for n, p in model.parameters_and_names():
                p.set_data(ms.Tensor(saved[n]).astype(p.dtype))

    draw_replay = _DrawReplay(rec, torch_meta, torch_arrays, ms, nn)
    _keep_numpy_state_in_initializers()
    # a draw made during training (after torch's first backward pass) may sit inside the compiled
    # step (a get_batch called by the forward function): the step then runs uncompiled, so that
    # its draws are replayed as well
    st["uncompiled"] = draw_replay.active and any(
        d["step"] > 1 and d["kind"] for d in torch_meta.get("draws", []) if not d.get("init"))
    rec.meta["draw_replay"]["uncompiled_step"] = st["uncompiled"]

    orig_jit = ms.jit

    def jit(function=None, *jargs, **jkwargs):
        if function is None:
            return lambda f: jit(f, *jargs, **jkwargs)
        if st["uncompiled"] and isinstance(function, nn.Cell):
            return function   # a network compiled outside the step (msmigrate_forward): draws replayed too
        compiled = orig_jit(function, *jargs, **jkwargs)
        code = getattr(function, "__code__", None)
        if code is None or not _program_file(code.co_filename):   # a step in an imported project module too
            return compiled
        if function.__name__.startswith("apply_"):
            return applying(compiled)
        if not function.__name__.startswith("train_step"):
            return compiled
        if torch_meta.get("free_tensors"):
            # tensors trained by hand: each call of the grad function it holds is the step
            # (by_hand), which records it from Python: the step runs uncompiled
            return function
        if st["uncompiled"]:
            return recording(function, function, compiled)
        return recording(function, compiled)

    def applying(compiled):
        """An optimizer applying its part of the step's gradients after the step returned (several
        optimizers after one backward pass: msmigrate convert's `apply_<optimizer>(grads)`): the
        step's state is taken again after it, as torch's is after its last optimizer.step()."""
        def applying_step(*args, **kwargs):
            out = compiled(*args, **kwargs)
            if rec.losses and st["ready"]:
                rec.put_state(len(rec.losses), state_of())
            return out

        applying_step.__wrapped__ = compiled
        return applying_step

    def adopt(model, function) -> None:
        """The program's network: torch's initial weights loaded into it."""
        st["model"] = model
        if st["model"] is None:
            raise WeightMappingError("no MindSpore network (a Cell with parameters) reachable from "
                                     f"{function.__name__}: its globals, closure, arguments, their "
                                     f"attributes, or the parameters of an optimizer among them")
        load_torch_weights(model.parameters_and_names, torch_meta.get("init_keys", []),
                           torch_meta.get("module_classes", {}))
        rec.meta["model_class"] = type(model).__qualname__
        rec.meta["dropout"] = {n: c._msmigrate_p for n, c in model.cells_and_names()
                               if hasattr(c, "_msmigrate_p")}
        rec.meta["training"] = {n: bool(c.training) for n, c in model.cells_and_names()}

    orig_vjp = ms.vjp

    def vjp(fn, *inputs, **kwargs):
        """An input's gradient taken before step 1 (an adversarial example for it, whose backward
        pass torch's run counts as no step): the network it differentiates gets torch's initial
        weights first, as the step would."""
        if not st["ready"] and torch_meta.get("init_keys") and not torch_meta.get("free_parameters") \
                and not torch_meta.get("free_tensors") and torch_meta.get("voided_backward"):
            model = find_model(fn, inputs)
            if model is not None:
                adopt(model, fn)
                st["ready"] = True
        return orig_vjp(fn, *inputs, **kwargs)

    ms.vjp = vjp

    def recording(function, compiled, unused=None):
        """`compiled` runs each step; `unused`, the step compiled, when it runs uncompiled (draws
        replayed): compiled once without running, so that a step MindSpore cannot compile fails
        here as it does when the program runs as it is."""
        def recording_step(*args, **kwargs):
            step = len(rec.losses) + 1
            settle_buffers()
            if step > rec.limit:
                raise StopRun
            if not st["ready"] and torch_meta.get("free_parameters"):
                free_parameters()
            elif not st["ready"]:
                adopt(find_model(function, args), function)
            st["ready"] = True
            match_networks()
            args = replay_args(step, args)
            if step == 1 and unused is not None:
                error = _compile_only(unused, args, kwargs)
                if error:
                    rec.meta["compile_error"] = error
            if step == 1 and rec.spec.get("grads") and st["model"] is not None:
                # the dry run replays step 1's draws, and the real step replays them again
                mark = draw_replay.mark()
                dry_run(function, args, kwargs)
                draw_replay.rewind(mark)
            out = compiled(*args, **kwargs)
            loss = _first_tensor(out, is_tensor)
            rec.losses.append(float(loss.asnumpy().reshape(-1)[0]) if loss is not None and loss.size == 1 else None)
            rec.put_state(step, state_of())
            return out

        recording_step.__name__ = function.__name__
        recording_step.__wrapped__ = function
        return recording_step

    ms.jit = jit
    # a train_step* left uncompiled (msmigrate convert's MSC109) is recorded the same way
    try:
        _run_program(script, rec.spec.get("args", ()), steps=lambda function: recording(function, function))
    finally:
        flush_by_hand()
        settle_buffers()
        draw_replay.finish()


def _compile_only(compiled, args, kwargs) -> str | None:
    """Compile a jitted function for these arguments without running it (MindSpore's
    MS_DEV_PRECOMPILE_ONLY): the error compiling raises, else None."""
    os.environ["MS_DEV_PRECOMPILE_ONLY"] = "1"
    try:
        compiled(*args, **kwargs)
    except Exception as exc:   # what the program would raise at its first step
        lines = [ln for ln in str(exc).splitlines() if ln.strip() and not set(ln.strip()) <= set("-")]
        return f"{type(exc).__name__}: {lines[0] if lines else ''}"
    finally:
        os.environ.pop("MS_DEV_PRECOMPILE_ONLY", None)
    return None


# MindSpore functions the conversion draws with (those that exist in ops / mint); the ones no torch
# draw maps to are wrapped too, so that a program drawing with them stops the replay
_MS_RANDOM = ("rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like",
              "bernoulli", "multinomial", "random_poisson", "uniform", "standard_normal", "gamma", "poisson",
              "random_gamma", "shuffle", "random_categorical", "laplace", "standard_laplace")


def _keep_numpy_state_in_initializers() -> None:
    """MindSpore's initializers seed each parameter's draw from NumPy's global random state
    (np.random.randint), torch's layers do not touch it: a program's own NumPy draws after its
    networks are built (mixup's `np.random.beta`) would differ from torch's run from the first
    one. The parity run replaces the initial weights with torch's anyway, so each initializer
    call leaves NumPy's state as it found it. (The converted program run alone still draws
    other values: the converter marks `np.random.seed` so, MSC101.)"""
    from mindspore.common.initializer import Initializer

    orig = Initializer.__call__

    def call(self, arr):
        state = np.random.get_state()
        try:
            return orig(self, arr)
        finally:
            np.random.set_state(state)

    Initializer.__call__ = call


class _DrawReplay:
    """Replays torch's draws (run_torch's meta["draws"]) into the MindSpore program: the k-th call
    of a random function of ops / mint made by the program's own code (not in a Cell's __init__,
    not in a dataset pipeline) returns the k-th torch draw, in the dtype MindSpore's own draw has,
    when its function, its shape and the function calling it match (a `forward` in torch is a
    `construct`); at the first that does not, replaying stops and the rest is drawn by MindSpore.
    Inside compiled code a wrapper is the original function (MindSpore's parser resolves it
    through convert_object_map), so a draw there is no call here."""

    def __init__(self, rec, torch_meta, torch_arrays, ms, nn):
        self.rec, self.ms, self.nn = rec, ms, nn
        self.seq = torch_meta.get("draws", [])
        self.arrays = torch_arrays
        self.truncated = torch_meta.get("draws_truncated")
        self.torch_steps = len(torch_meta.get("losses", []))
        self.pos = 0                  # the next torch draw to replay
        self.stopped = None
        self.info = {"torch_draws": len(self.seq), "replayed": 0, "stopped": None, "calls": {}}
        rec.meta["draw_replay"] = self.info
        self.active = bool(self.seq) and self._install()

    def _install(self) -> bool:
        try:
            from mindspore.graph._parse.resources import convert_object_map
        except ImportError:
            try:
                from mindspore._extends.parse.resources import convert_object_map
            except ImportError:
                self.info["stopped"] = {"reason": "this MindSpore has no convert_object_map: draws not replayed"}
                return False
        import mindspore.ops as ops
        modules = [ops]
        try:
            import mindspore.mint as mint
            modules.append(mint)
        except ImportError:
            pass
        for module in modules:
            for name in _MS_RANDOM:
                orig = getattr(module, name, None)
                if orig is None or not callable(orig):
                    continue
                wrapper = self._wrap(name, f"{module.__name__.split('.')[-1]}.{name}", orig)
                try:
                    convert_object_map[wrapper] = orig
                except TypeError:
                    continue
                setattr(module, name, wrapper)
        try:   # a distribution's sample, called from the program (a step with one runs uncompiled)
            from mindspore.nn.probability.distribution import Distribution
            Distribution.sample = self._wrap("sample", "Distribution.sample", Distribution.sample)
        except ImportError:
            pass
        return True

    def _wrap(self, kind, call, orig):
        def replayed(*args, **kwargs):
            out = orig(*args, **kwargs)
            frame = sys._getframe(1)
            if self.stopped is None and self._programs(frame):
                out = self._next(kind, call, frame, out)
            return out

        replayed.__name__ = getattr(orig, "__name__", kind)
        replayed.__wrapped__ = orig
        return replayed

    def _programs(self, frame) -> bool:
        if not _program_file(frame.f_code.co_filename):
            return False
        outer = frame
        while outer is not None:
            if outer.f_code.co_name == "__init__" and isinstance(outer.f_locals.get("self"), self.nn.Cell):
                return False
            if _DATA_PIPELINE_MS in outer.f_code.co_filename.replace(os.sep, "/"):
                return False
            outer = outer.f_back
        return True

    def _next(self, kind, call, frame, out):
        where = {"ms_call": call, "ms_line": frame.f_lineno, "ms_function": frame.f_code.co_name,
                 "index": self.pos, "step": len(self.rec.losses) + 1}
        if self.pos >= len(self.seq):
            more = (f"torch recorded only its first {self.truncated} draws (size limit)" if self.truncated
                    is not None else f"torch made {len(self.seq)} draws, MindSpore makes more")
            self._stop(where, None, more)
            return out
        t = self.seq[self.pos]
        shape = tuple(getattr(out, "shape", ()))
        function = lambda n: "forward" if n == "construct" else n  # noqa: E731
        # a draw the conversion moved into the functions it builds a step from (forward_fn,
        # train_step: a GAN's noise) was drawn where torch's loop ran
        moved = _STEP_FUNCTION.match(frame.f_code.co_name) is not None
        reason = None
        if t["kind"] != kind:
            reason = (f"torch's {t['call']} has no single MindSpore draw to replay" if t["kind"] is None
                      else f"kind: MindSpore {kind}, torch {t['call']} (MindSpore {t['kind']})")
        elif tuple(t["shape"]) != shape:
            reason = f"shape: MindSpore {list(shape)}, torch {t['shape']}"
        elif function(t["function"]) != function(frame.f_code.co_name) and not moved:
            reason = f"called in {frame.f_code.co_name}, torch's in {t['function']}"
        elif f"draw/{self.pos}" not in self.arrays:
            reason = "torch's value was not recorded"
        if reason is not None:
            self._stop(where, t, reason)
            return out
        value = self.arrays[f"draw/{self.pos}"]
        self.pos += 1
        self.info["replayed"] = self.pos
        self.info["calls"][call] = self.info["calls"].get(call, 0) + 1
        return self.ms.Tensor(np.ascontiguousarray(value)).astype(out.dtype)

    def _stop(self, where, torch_draw, reason):
        self.stopped = {**where, "reason": reason}
        if torch_draw is not None:
            self.stopped.update(torch_call=torch_draw["call"], torch_line=torch_draw["line"],
                                torch_function=torch_draw["function"], torch_file=torch_draw["file"])
        self.info["stopped"] = self.stopped

    def mark(self):
        return self.pos, self.stopped, dict(self.info["calls"])

    def rewind(self, mark):
        self.pos, self.stopped, calls = mark
        self.info.update(replayed=self.pos, stopped=self.stopped, calls=calls)

    def finish(self):
        """torch draws of the steps compared that no MindSpore call asked for (a draw inside a
        compiled function, or one the conversion dropped): the first is named."""
        if self.stopped is None and self.active:
            left = [i for i in range(self.pos, len(self.seq)) if self.seq[i]["step"] <= min(
                self.torch_steps, len(self.rec.losses) or self.torch_steps)]
            if left:
                t = self.seq[left[0]]
                self.info["stopped"] = {"index": left[0], "reason": f"MindSpore made no call for {len(left)} "
                                        f"torch draw(s) of the steps compared (drawn inside compiled code?)",
                                        "torch_call": t["call"], "torch_line": t["line"],
                                        "torch_function": t["function"], "torch_file": t["file"], "step": t["step"]}


# the functions msmigrate convert builds a training step from (their fresh names: forward_fn_1)
_STEP_FUNCTION = re.compile(r"(forward_fn|train_step)(_\d+)?$")


def _first_run_batches(spec: dict) -> list[list[np.ndarray]]:
    """The DataLoader batches the first torch run recorded, in the order it took them: what a run
    measuring torch's sensitivity to rounding trains on (a random crop or flip draws other ones,
    and the run would measure the data, not the rounding)."""
    with open(os.path.join(spec["torch_record"], "record.json")) as fh:
        steps = json.load(fh).get("batches", [])
    out = []
    with np.load(os.path.join(spec["torch_record"], "arrays.npz")) as first:
        for step in steps:
            arrays, i = [], 0
            while f"batch/{step}/{i}" in first.files:
                arrays.append(first[f"batch/{step}/{i}"])
                i += 1
            out.append(arrays)
    return out


def _run_program(script: str, args=(), steps=None) -> None:
    """Run `script` as __main__; with `steps`, every undecorated function named train_step*
    of the script and of the project modules it imports is decorated with it first (the code
    is otherwise compiled from the file as it is)."""
    script_dir = str(Path(script).resolve().parent)
    _PROGRAM_DIR[:] = [os.path.realpath(script_dir)]
    sys.path.insert(0, script_dir)
    sys.argv = [script, *args]
    try:
        if steps is None:
            runpy.run_path(script, run_name="__main__")
        else:
            _run_with_step_decorator(script, steps)
    except StopRun:
        pass
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise


def _decorate_steps(path: str):
    """The code of a file with every undecorated function named train_step* decorated by
    `__msmigrate_step__`; None when it has none."""
    import ast

    tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    found = False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("train_step") and not node.decorator_list \
                and not _calls_steps(node):
            node.decorator_list.append(ast.copy_location(ast.Name("__msmigrate_step__", ast.Load()), node))
            found = True
    if not found:
        return None
    ast.fix_missing_locations(tree)
    return compile(tree, path, "exec")


def _calls_steps(function) -> bool:
    """Whether a function calls steps of its own (the program's `train_step(G, D, ...)` holding a
    GAN's two compiled steps): it is no step itself."""
    import ast

    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id != function.name
               and n.func.id.startswith(("train_step", "make_train_step")) for n in ast.walk(function))


def _run_with_step_decorator(script: str, decorator) -> None:
    """Run the script as __main__ with its undecorated steps decorated, and those of the project
    modules it imports (a Trainer class in trainer.py) decorated as they are imported."""
    import builtins
    import importlib.machinery as machinery

    class StepLoader(machinery.SourceFileLoader):
        def get_code(self, fullname):
            # compiled from the source, never from or into the bytecode cache: the code differs
            return _decorate_steps(self.get_filename(fullname)) or super().get_code(fullname)

        def exec_module(self, module):
            module.__dict__["__msmigrate_step__"] = decorator
            super().exec_module(module)

    class StepFinder:
        @staticmethod
        def find_spec(fullname, path=None, target=None):
            spec = machinery.PathFinder.find_spec(fullname, path, target)
            if (spec is not None and type(spec.loader) is machinery.SourceFileLoader and spec.origin
                    and _program_file(spec.origin)):
                spec.loader = StepLoader(fullname, spec.origin)
            return spec

    path = str(Path(script).resolve())
    code = _decorate_steps(path) or compile(Path(path).read_text(encoding="utf-8"), path, "exec")
    main = type(sys)("__main__")
    main.__dict__.update(__file__=path, __builtins__=builtins, __msmigrate_step__=decorator)
    saved, sys.modules["__main__"] = sys.modules.get("__main__"), main
    finder = StepFinder()
    sys.meta_path.insert(0, finder)
    try:
        exec(code, main.__dict__)
    finally:
        sys.modules["__main__"] = saved
        sys.meta_path.remove(finder)


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    rec = Record(spec)
    try:
        if spec["framework"] == "torch":
            run_torch(rec, spec["script"])
        else:
            run_mindspore(rec, spec["script"])
    except BaseException as exc:  # the program's own failure is reported, not re-raised
        if isinstance(exc, KeyboardInterrupt):
            raise
        rec.save(error="".join(traceback.format_exception(exc))[-6000:])
        return 3
    rec.save()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
