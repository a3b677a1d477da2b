"""Map parameter names and layouts between a torch state_dict and a MindSpore network.

The knowledge (which torch layer class renames, drops or reshapes which key) is the table in
`rules/weights.toml`; this module only applies it. Pure Python + numpy: the frameworks are
imported by the callers (the `weights` command, the parity runners), never here.

A torch key such as `enc.layers.0.linear1.weight` is mapped by walking its owning modules from
the innermost outwards (`enc.layers.0.linear1`, `enc.layers.0`, `enc.layers`, `enc`, the root);
a module whose class has a table applies it to the part of the key relative to itself.
"""
from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import msmigrate.rules

RULES_PATH = Path(msmigrate.rules.__file__).resolve().parent / "weights.toml"


class WeightMappingError(ValueError):
    """A name or shape does not match: the message lists every offending key."""


@dataclass(frozen=True)
class LayerRule:
    torch_class: str
    rename: dict = field(default_factory=dict)   # relative key or child prefix -> MindSpore name
    drop: frozenset = frozenset()                # relative keys with no MindSpore counterpart
    layout: dict = field(default_factory=dict)   # relative key -> "unsqueeze:AXIS"


@dataclass(frozen=True)
class KeyMapping:
    torch_key: str
    ms_key: str
    layout: tuple[str, ...] = ()                 # array changes torch -> MindSpore, in order

    def to_ms(self, arr):
        for change in self.layout:
            arr = _layout_op(change, arr, forward=True)
        return arr

    def to_torch(self, arr):
        for change in reversed(self.layout):
            arr = _layout_op(change, arr, forward=False)
        return arr

    def ms_shape(self, shape: tuple) -> tuple:
        shape = tuple(shape)
        for change in self.layout:
            axis, rank = _unsqueeze_axis(change)
            if rank is None or len(shape) == rank:
                shape = shape[:axis] + (1,) + shape[axis:]
        return shape


def _unsqueeze_axis(change: str) -> tuple[int, int | None]:
    """"unsqueeze:AXIS" -> (AXIS, None); "unsqueeze:AXIS@RANK" (only arrays of torch rank RANK:
    one key names a kernel or a vector) -> (AXIS, RANK)."""
    kind, _, spec = change.partition(":")
    axis, _, rank = spec.partition("@")
    if kind != "unsqueeze" or not axis.lstrip("-").isdigit() or (rank and not rank.isdigit()):
        raise WeightMappingError(f"unknown layout change {change!r} in {RULES_PATH.name}")
    return int(axis), int(rank) if rank else None


def _layout_op(change: str, arr, forward: bool):
    import numpy as np

    axis, rank = _unsqueeze_axis(change)
    if rank is not None and arr.ndim != (rank if forward else rank + 1):
        return arr
    if forward:
        return np.expand_dims(arr, axis)
    if arr.shape[axis] != 1:
        raise WeightMappingError(f"cannot undo {change}: axis {axis} of shape {arr.shape} is not 1")
    return np.squeeze(arr, axis)


def load_rules(path: Path | str | None = None) -> dict[str, LayerRule]:
    data = tomllib.loads(Path(path or RULES_PATH).read_text())
    rules = {}
    for cls, table in data.items():
        unknown = set(table) - {"rename", "drop", "layout"}
        if unknown:
            raise WeightMappingError(f"{cls}: unknown fields {sorted(unknown)}")
        for change in table.get("layout", {}).values():
            _unsqueeze_axis(change)
        rules[cls] = LayerRule(cls, dict(table.get("rename", {})), frozenset(table.get("drop", ())),
                               dict(table.get("layout", {})))
    return rules


def public_torch_class(cls) -> str:
    """`torch.nn.BatchNorm2d` for BatchNorm2d and its user subclasses (first torch.nn class in the
    MRO that torch.nn exports); the plain qualified name otherwise."""
    import sys

    tnn = sys.modules.get("torch.nn")
    for base in cls.__mro__:
        if tnn is not None and base.__module__.startswith("torch.nn") and getattr(tnn, base.__name__, None) is base:
            return f"torch.nn.{base.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _apply_rule(rule: LayerRule, rel: list[str]) -> tuple[list[str] | None, tuple[str, ...]]:
    """Apply one layer's table to a key relative to that layer: (new parts or None if dropped, layout)."""
    joined = ".".join(rel)
    if joined in rule.drop:
        return None, ()
    layout = (rule.layout[joined],) if joined in rule.layout else ()
    for src, dst in rule.rename.items():
        n = src.count(".") + 1
        if rel[:n] == src.split("."):
            return dst.split(".") + rel[n:], layout
    return rel, layout


def map_key(key: str, module_classes: Mapping[str, str], rules: Mapping[str, LayerRule]) -> KeyMapping | None:
    """MindSpore name and layout of torch `key`; None when the key has no MindSpore counterpart.
    `module_classes` maps module prefixes ('' = root) to public torch class names."""
    parts = key.split(".")
    layout: tuple[str, ...] = ()
    for depth in range(len(parts) - 1, -1, -1):
        rule = rules.get(module_classes.get(".".join(parts[:depth]), ""))
        if rule is None:
            continue
        rel, extra = _apply_rule(rule, parts[depth:])
        if rel is None:
            return None
        parts = parts[:depth] + rel
        layout = extra + layout
    return KeyMapping(key, ".".join(parts), layout)


def map_keys(keys: Iterable[str], module_classes: Mapping[str, str],
             rules: Mapping[str, LayerRule] | None = None) -> tuple[dict[str, KeyMapping], list[str]]:
    """torch key -> KeyMapping for every kept key, plus the dropped keys."""
    rules = load_rules() if rules is None else rules
    kept, dropped = {}, []
    for key in keys:
        m = map_key(key, module_classes, rules)
        if m is None:
            dropped.append(key)
        else:
            kept[key] = m
    return kept, dropped


def candidates(key: str, rules: Mapping[str, LayerRule]) -> list[KeyMapping | None]:
    """Every mapping of `key` under some assignment of table classes to its owning modules
    (used when the torch classes are unknown and a target network decides)."""
    results: dict[tuple, KeyMapping | None] = {}

    def walk(parts: list[str], depth: int, layout: tuple[str, ...]):
        if depth < 0:
            m = KeyMapping(key, ".".join(parts), layout)
            results[(m.ms_key, m.layout)] = m
            return
        walk(parts, depth - 1, layout)
        for rule in rules.values():
            rel, extra = _apply_rule(rule, parts[depth:])
            if rel is None:
                results[("", ())] = None
            elif rel != parts[depth:] or extra:
                walk(parts[:depth] + rel, depth - 1, extra + layout)

    parts = key.split(".")
    walk(parts, len(parts) - 1, ())
    return list(results.values())


def infer_against(torch_shapes: Mapping[str, tuple], ms_shapes: Mapping[str, tuple],
                  rules: Mapping[str, LayerRule] | None = None) -> tuple[dict[str, KeyMapping], list[str]]:
    """Map torch keys onto an existing MindSpore network whose parameter shapes are known: each
    key takes the one candidate mapping that names a parameter of the right shape; a key with
    none is dropped if some table allows dropping it (num_batches_tracked, loss weights)."""
    rules = load_rules() if rules is None else rules
    kept, dropped, errors = {}, [], []
    for key, shape in torch_shapes.items():
        fits = [c for c in candidates(key, rules)
                if c is not None and ms_shapes.get(c.ms_key) == c.ms_shape(shape)]
        names = {c.ms_key for c in fits}
        if len(names) == 1:
            kept[key] = fits[0]
        elif len(names) > 1:
            errors.append(f"{key}: ambiguous, could be any of {sorted(names)}")
        elif None in candidates(key, rules):
            dropped.append(key)
        else:
            errors.append(f"{key} {tuple(shape)}: no parameter of the MindSpore network fits")
    if errors:  # a droppable key (num_batches_tracked, a loss weight) that fits nothing is suspect then too
        errors += [f"{key} {tuple(torch_shapes[key])}: no parameter of the MindSpore network fits "
                   "(droppable only if the torch layer has no MindSpore counterpart)" for key in dropped
                   if not any(c is not None and c.ms_key in ms_shapes for c in candidates(key, rules))]
        raise WeightMappingError("cannot map the state_dict onto the network:\n  " + "\n  ".join(errors))
    return kept, dropped


def check_complete(mappings: Mapping[str, KeyMapping], torch_shapes: Mapping[str, tuple],
                   ms_shapes: Mapping[str, tuple]) -> None:
    """Raise unless every MindSpore parameter gets exactly one torch value of the right shape
    (MindSpore's own `load_param_into_net` reports mismatches only in its return value)."""
    errors = []
    seen: dict[str, str] = {}
    for key, m in mappings.items():
        if m.ms_key in seen:
            errors.append(f"{key} and {seen[m.ms_key]} both map to {m.ms_key}")
        seen[m.ms_key] = key
        if m.ms_key not in ms_shapes:
            errors.append(f"{key} -> {m.ms_key}: no such parameter in the MindSpore network")
        elif m.ms_shape(torch_shapes[key]) != tuple(ms_shapes[m.ms_key]):
            errors.append(f"{key} -> {m.ms_key}: shape {m.ms_shape(torch_shapes[key])} "
                          f"(torch {tuple(torch_shapes[key])}) vs MindSpore {tuple(ms_shapes[m.ms_key])}")
    for name in ms_shapes:
        if name not in seen:
            errors.append(f"{name}: MindSpore parameter gets no value from the state_dict")
    if errors:
        raise WeightMappingError("weights do not match the network:\n  " + "\n  ".join(errors))


def load_definitions(path: Path | str, name: str) -> object:
    """Run only the imports, definitions and simple assignments of a script (not its training
    loop) and return the object `name` from it. Used for `--model file.py:Class`."""
    path = Path(path)
    tree = ast.parse(path.read_text(), str(path))

    def has_call(node):
        return any(isinstance(n, ast.Call) for n in ast.walk(node))

    keep = [n for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            or (isinstance(n, (ast.Assign, ast.AnnAssign)) and not has_call(n))]
    module = ast.Module(body=keep, type_ignores=[])
    namespace = {"__name__": f"msmigrate_definitions_{path.stem}", "__file__": str(path.resolve())}
    import sys

    sys.path.insert(0, str(path.resolve().parent))
    try:
        exec(compile(module, str(path), "exec"), namespace)
    finally:
        sys.path.remove(str(path.resolve().parent))
    if name not in namespace:
        raise WeightMappingError(f"{path}: no top-level definition named {name!r}")
    return namespace[name]


# ---------------------------------------------------------------- checkpoint files
# These import torch / mindspore: only `msmigrate weights` calls them.

def _instantiate(spec: str):
    path, sep, name = spec.rpartition(":")
    if not sep or not path:
        raise WeightMappingError(f"{spec!r}: expected FILE.py:NAME")
    obj = load_definitions(path, name)
    if not callable(obj):
        return obj
    try:
        return obj()
    except TypeError as exc:   # `Net(n_in, n_out)`: the tool cannot guess the arguments
        raise WeightMappingError(f"{spec}: calling {name}() with no arguments failed ({exc}); name a "
                                 f"function of FILE.py that returns the model built with its arguments "
                                 f"(def make_model(): return {name}(...)) and pass FILE.py:make_model") from exc


def _torch_state(source: Path, key: str | None) -> dict:
    import torch

    obj = torch.load(str(source), map_location="cpu", weights_only=True)
    if key is not None:
        if not isinstance(obj, dict) or key not in obj:
            raise WeightMappingError(f"no key {key!r} in the checkpoint (keys: {sorted(obj)[:20] if isinstance(obj, dict) else type(obj).__name__})")
        obj = obj[key]
    if not isinstance(obj, dict) or not obj or not all(torch.is_tensor(v) for v in obj.values()):
        hint = f" (it holds {sorted(obj)[:10]}: name the state_dict with --key)" if isinstance(obj, dict) else ""
        raise WeightMappingError(f"not a state_dict of tensors{hint}")
    return {k: v.detach().cpu().numpy() for k, v in obj.items()}


def _torch_classes(torch_model) -> dict[str, str]:
    return {n: public_torch_class(type(m)) for n, m in torch_model.named_modules()}


def _ms_shapes(net) -> dict[str, tuple]:
    return {n: tuple(p.shape) for n, p in net.parameters_and_names()}


def torch_to_ms_checkpoint(source, output, key=None, torch_model=None, ms_model=None) -> str:
    import mindspore as ms
    import numpy as np

    state = _torch_state(Path(source), key)
    shapes = {k: v.shape for k, v in state.items()}
    net = _instantiate(ms_model) if ms_model else None
    if torch_model:
        mappings, dropped = map_keys(state, _torch_classes(_instantiate(torch_model)))
    elif net is not None:
        mappings, dropped = infer_against(shapes, _ms_shapes(net))
    else:
        raise WeightMappingError("a state_dict does not say which layer class owns each key: name the "
                                 "torch model (--torch-model train.py:Net) or the converted network (--model)")
    if net is not None:
        check_complete(mappings, shapes, _ms_shapes(net))
    params = [{"name": m.ms_key, "data": ms.Tensor(np.array(m.to_ms(state[k]), order="C"))} for k, m in mappings.items()]
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    ms.save_checkpoint(params, str(output))
    summary = f"wrote {output}: {len(params)} parameters" + (f", dropped {', '.join(dropped)}" if dropped else "")
    if net is not None:
        not_loaded, unused = ms.load_param_into_net(net, ms.load_checkpoint(str(output)))
        if not_loaded or unused:  # load_param_into_net only reports these
            raise WeightMappingError(f"loading into {ms_model}: not loaded {not_loaded}; unused {unused}")
        summary += f"; loaded into {ms_model}: every parameter matched"
    return summary


def ms_to_torch_checkpoint(source, output, torch_model=None, ms_model=None) -> str:
    import mindspore as ms
    import torch

    if not torch_model:
        raise WeightMappingError("converting to torch needs the torch model (--torch-model train.py:Net) "
                                 "to know the target names")
    model = _instantiate(torch_model)
    target = model.state_dict()
    ckpt = {k: v.asnumpy() for k, v in ms.load_checkpoint(str(source)).items()}
    mappings, dropped = map_keys(target, _torch_classes(model))
    if ms_model:
        check_complete(mappings, {k: tuple(v.shape) for k, v in target.items() if k in mappings},
                       _ms_shapes(_instantiate(ms_model)))
    errors = []
    out = {}
    for k, m in mappings.items():
        if m.ms_key not in ckpt:
            errors.append(f"{k}: the checkpoint has no {m.ms_key}")
            continue
        arr = m.to_torch(ckpt[m.ms_key])
        if tuple(arr.shape) != tuple(target[k].shape):
            errors.append(f"{m.ms_key} -> {k}: shape {tuple(arr.shape)} vs torch {tuple(target[k].shape)}")
            continue
        out[k] = torch.from_numpy(arr.copy()).to(target[k].dtype)
    used = {m.ms_key for m in mappings.values()}
    errors += [f"{n}: checkpoint entry with no torch counterpart" for n in ckpt if n not in used]
    if errors:
        raise WeightMappingError("checkpoint does not match the torch model:\n  " + "\n  ".join(errors))
    for k in dropped:  # e.g. num_batches_tracked: MindSpore keeps no such value
        out[k] = target[k]
    model.load_state_dict(out, strict=True)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    torch.save(out, str(output))
    return (f"wrote {output}: {len(out)} tensors" + (f" ({', '.join(dropped)} kept at the model's initial value)" if dropped else "")
            + f"; loaded into {torch_model} with strict=True")


def sequential_positions(module_classes: Mapping[str, str]) -> dict[str, str]:
    """Module path -> the same path with every child of an `nn.Sequential` named by its position
    (`fc.net` -> `fc.0` when `net` is the first child of the Sequential `fc`). A child added by name
    (`seq.add_module('net', m)`) converts to `SequentialCell.append(m)`, which names it by position;
    `module_classes` lists the modules in torch's registration order (named_modules)."""
    children: dict[str, list[str]] = {}
    for path in module_classes:
        if path:
            parent, _, name = path.rpartition(".")
            children.setdefault(parent, []).append(name)
    out: dict[str, str] = {"": ""}
    for path in module_classes:
        if not path:
            continue
        parent, _, name = path.rpartition(".")
        if module_classes.get(parent) == "torch.nn.Sequential":
            name = str(children[parent].index(name))
        out[path] = f"{out[parent]}.{name}" if out.get(parent) else name
    return out


def positional_fallback(mappings: Mapping[str, KeyMapping], module_classes: Mapping[str, str],
                        ms_names: Iterable[str], rules: Mapping[str, LayerRule] | None = None) -> dict[str, KeyMapping]:
    """`mappings` with each key whose MindSpore name is not in `ms_names` mapped instead through
    the positional names of its Sequential children (see `sequential_positions`), where that
    name is a MindSpore parameter."""
    ms_names = set(ms_names)
    if all(m.ms_key in ms_names for m in mappings.values()):
        return dict(mappings)
    positions = sequential_positions(module_classes)
    classes = {positions[p]: c for p, c in module_classes.items()}
    rules = load_rules() if rules is None else rules
    out = {}
    for key, m in mappings.items():
        if m.ms_key not in ms_names:
            owner, _, leaf = key.rpartition(".")
            while owner and owner not in positions:     # a parameter of a child module_classes does not list
                owner, _, more = owner.rpartition(".")
                leaf = f"{more}.{leaf}"
            alt_key = f"{positions.get(owner, owner)}.{leaf}" if owner else leaf
            alt = map_key(alt_key, classes, rules) if alt_key != key else None
            if alt is not None and alt.ms_key in ms_names:
                m = KeyMapping(key, alt.ms_key, alt.layout)
        out[key] = m
    return out
