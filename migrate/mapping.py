"""The mapping-table schema: one `ApiRecord` per torch API, loaded from `rules/api/*.toml`.

A record says how one torch callable (or attribute) becomes MindSpore:

    [api."torch.nn.Conv2d"]
    target = "mindspore.nn.Conv2d"          # dotted MindSpore name ("" = remove / no target)
    args = ["in_channels", "out_channels", "kernel_size", "stride", "padding", ...]
                                            # torch positional order; "*name" collects varargs
    positional = 4                          # leading positional args that stay positional
    rename = { groups = "group", bias = "has_bias" }
    values = { padding = "conv.padding2d" } # torch arg -> value transform (rules/transforms)
    pin = { pad_mode = "'pad'", has_bias = "True" }   # MindSpore kwargs added when absent
    drop = ["device", "dtype"]              # torch args that mean nothing in MindSpore
    reject = { padding_mode = ["'zeros'"] } # arg -> values that convert; others are flagged
    review = { padding_idx = "why" }        # arg whose presence alone needs a human look
    transform = "module.function"           # irregular API: a function does the whole call
    attributes = { in_features = "in_channels" }   # attributes of the object it creates,
                                            # renamed where the program reads or writes them
                                            # (parameter names come from rules/weights.toml)
    fixed = ["momentum", "eps"]             # attributes MindSpore reads only when it builds the
                                            # object: setting them later is marked
    base = "torch.distributions.Distribution"   # the torch base class of the objects it creates:
                                            # that class's class-bound records (methods, attribute
                                            # reads) apply to them
    children = { norm1 = "torch.nn.LayerNorm" }   # the layers a composite layer holds (so
                                            # `enc.norm1.weight` renames like a LayerNorm's)
    read = true                             # a Tensor attribute (`x.real`): reads convert as
                                            # the call `x.real()` would
    promote = ["input"]                     # float-only in MindSpore, torch promotes int/bool:
                                            # a visibly integer/bool argument gets a cast
    compute_as = { bool = "int32" }         # MindSpore has no kernel for an argument visibly of
                                            # that kind (bool, int, float64): computed in the given
                                            # dtype, the result cast back to the argument's dtype
    empty_value = "0"                       # a reduction's value over no elements: reducing all
                                            # of a tensor that may be empty pads it on first
                                            # (MindSpore skips its kernel on an empty tensor)
    empty_result = "float('nan')"           # a reduction's value over no elements that is no
                                            # identity (mean: nan): the result of a tensor that
                                            # may visibly be empty is filled with it when empty
    fields = ["values", "indices"]          # torch's named-tuple result: `f(x).values` reads
                                            # position 0 of MindSpore's plain tuple
    dtype_review = { input = "why" }        # MindSpore differs silently on some dtypes: marked
                                            # where the argument's dtype is not visible
    promote_as = { bool = "int64" }         # torch's result dtype for an argument visibly of that
                                            # kind (square of bool: int64), MindSpore having no
                                            # kernel for the kind: cast to it, not cast back
    complex = "or"                          # a visibly complex argument (MindSpore's kernel takes
                                            # real dtypes): "or"/"and" joins the function of its
                                            # real and imaginary parts (isnan: or, isfinite: and);
                                            # "real": the result's real part (abs);
                                            # "generated": rules/generated/functions.py's
                                            # msmigrate_<name> computes it
    empty_pad = { input = "1" }             # MindSpore's elementwise kernel raises on an empty
                                            # tensor: one that may visibly be empty is computed
                                            # with one element of this value appended, dropped after
    empty_sizes = "n"                       # the size argument (n / s) of a transform that pads or
                                            # trims `dim` to it: a zero is appended along those
                                            # dims of a tensor that may visibly be empty (exact)
    empty_reduce = "dim"                    # a reduction over `dim` whose kernel raises on an
                                            # empty tensor (torch: an empty result): the tensor's
                                            # other dims that may visibly be empty get one more
                                            # element, dropped from the result
    scalar_dim = "dim"                      # torch takes dim 0 / -1 of a 0-d tensor (MindSpore
                                            # raises): a visibly 0-d input is reshaped to (1,),
                                            # the result back to ()
    unbatched = { input = 4 }               # the rank MindSpore's kernel needs, torch also taking
                                            # one less (unbatched): an argument visibly of that
                                            # rank gets a batch dim of 1, the result loses it
    joined = "tensors"                      # the list of tensors a join takes ("*": its positional
                                            # arguments); torch promotes their dtypes, MindSpore's
                                            # Concat takes one: visibly different kinds are cast
    inplace = "inplace"                     # the torch argument asking for the result to be written
                                            # into the first argument (F.relu(x, inplace=True)), or
                                            # "always" (F.relu_): a whole statement writes it back
    status = "auto"                         # auto | review | manual | unsupported
    note = "why it is not auto / what to check"

Method records (`torch.Tensor.view`, `torch.nn.Module.train`) apply to `obj.view(...)` calls
whose receiver is not a known module. Table-level `[defaults]` apply to every record in a file.
"""
from __future__ import annotations

import functools
import importlib
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from msmigrate.diagnostics import STATUSES

import msmigrate.rules

RULES_DIR = Path(msmigrate.rules.__file__).resolve().parent

# methods of these classes apply only where the receiver is known to be one of their objects
# (`scaler = GradScaler(...)`; `scaler.state_dict()`): their names are too common to guess
CLASS_BOUND_PREFIXES = ("torch.amp.GradScaler.", "torch.distributions.Distribution.",
                        "torch.optim.lr_scheduler.LRScheduler.",
                        # the wrapped network of a (Distributed)DataParallel, a name user classes
                        # use too (`self.module`)
                        "torch.nn.DataParallel.module", "torch.nn.parallel.DistributedDataParallel.module")
METHOD_PREFIXES = ("torch.Tensor.", "torch.nn.Module.", "torch.optim.Optimizer.", "torch.nn.DataParallel.",
                   "torch.utils.data.DataLoader.", "torch.nn.RNNBase.",
                   "torch.utils.data.distributed.DistributedSampler.",
                   "torch.nn.parallel.DistributedDataParallel.",
                   "torch.utils.tensorboard.SummaryWriter.") + CLASS_BOUND_PREFIXES

_FIELDS = {"target", "args", "positional", "rename", "values", "pin", "drop", "reject",
           "transform", "status", "note", "review", "subclass", "instance_call", "on_instantiate",
           "attributes", "fixed", "children", "csv", "read", "promote", "compute_as", "empty_value",
           "empty_result", "fields",
           "dtype_review", "calls_object", "inplace", "base", "promote_as", "complex", "empty_pad",
           "empty_sizes", "empty_reduce", "scalar_dim", "unbatched", "joined"}


@dataclass(frozen=True)
class ApiRecord:
    torch: str
    target: str = ""
    args: tuple[str, ...] = ()
    positional: int = 1
    rename: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    pin: dict = field(default_factory=dict)
    drop: tuple[str, ...] = ()
    reject: dict = field(default_factory=dict)
    review: dict = field(default_factory=dict)  # arg -> why its presence needs a human look
    transform: str = ""
    status: str = "auto"
    note: str = ""
    # hooks for classes and objects created from this API (see rules/transforms/models.py)
    subclass: str = ""        # called on a class deriving from this API
    instance_call: str = ""   # called on calls of an object this API created (criterion(out, y))
    on_instantiate: str = ""  # called on the statement that binds a new instance to a name
    attributes: dict = field(default_factory=dict)   # object attribute -> MindSpore name
    fixed: tuple[str, ...] = ()   # object attributes read only at construction in MindSpore
    children: dict = field(default_factory=dict)   # child attribute -> torch class it holds
    read: bool = False        # a Tensor attribute, not a method: reads `x.real` convert as the
                              # call `x.real()` would (writes `x.real = ...` are left)
    promote: tuple[str, ...] = ()   # arguments MindSpore computes in floating point only, where
                              # torch promotes integer/bool tensors to float32: one visibly
                              # integer or bool at conversion time gets a cast (rules/transforms/dtypes.py)
    compute_as: dict = field(default_factory=dict)   # visible kind of an argument ("bool", "int",
                              # "float64") -> the MindSpore dtype its kernel computes in; the
                              # result is cast back to the first argument's dtype
    empty_value: str = ""     # a reduction's value over no elements (Python literal): reducing
                              # every element of a tensor that may visibly be empty (x[mask])
                              # pads it on first; MindSpore 2.10 skips a reduce kernel on an empty
                              # tensor and returns uninitialised memory
    empty_result: str = ""    # a reduction's value over no elements that is no identity (mean:
                              # nan; Python literal): filled into the result where the input may
                              # visibly be empty and is (msmigrate_empty_result, generated)
    fields: tuple[str, ...] = ()   # the field names of torch's named-tuple result, by position:
                              # `torch.sort(x).values` -> `ops.sort(x)[0]` (a plain tuple in MindSpore)
    dtype_review: dict = field(default_factory=dict)   # arg -> how MindSpore's result differs for
                              # some of its dtypes: marked unless the argument's dtype is visible
    promote_as: dict = field(default_factory=dict)   # visible kind -> torch's result dtype, the
                              # argument cast to it (no kernel for the kind; not cast back)
    complex: str = ""         # a visibly complex argument: "or" / "and" of the function of its
                              # real and imaginary parts, "real" (the result's), or "generated"
    empty_pad: dict = field(default_factory=dict)   # arg -> a value appended to an argument that
                              # may visibly be empty (elementwise kernels raising on empty tensors)
    empty_sizes: str = ""     # the n / s argument: a zero appended along its dims of an input that
                              # may visibly be empty (MindSpore's FFT kernels raise on one)
    empty_reduce: str = ""    # the dim argument of a reduction raising on an empty tensor: the
                              # other dims that may visibly be empty are padded, dropped after
    scalar_dim: str = ""      # the dim argument torch takes on a 0-d tensor (MindSpore raises)
    unbatched: dict = field(default_factory=dict)   # arg -> the rank MindSpore needs; torch also
                              # takes one less (unbatched input)
    joined: str = ""          # the argument listing the tensors a join promotes ("*": positionals)
    inplace: str = ""         # torch argument naming an in-place write of the first argument, or
                              # "always": the rules' INPLACE hook writes the result back
    calls_object: bool = False   # a method whose call is a call of its object (`m.forward(x)`
                              # is `m(x)`): the object's instance_call applies to it too
    base: str = ""            # torch base class of its objects whose class-bound records apply
    source: str = ""          # the toml file it came from

    @property
    def visible(self) -> bool:
        """Its conversion depends on what the source shows of its arguments (dtypes.promote)."""
        return bool(self.dtype_review) or self.rewrites_visible

    @property
    def rewrites_visible(self) -> bool:
        """... and changes for some (a cast, an element appended), not only marks."""
        return bool(self.promote or self.compute_as or self.empty_value or self.empty_result
                    or self.promote_as or self.complex
                    or self.empty_pad or self.empty_sizes or self.empty_reduce or self.scalar_dim or self.unbatched
                    or self.joined)

    @property
    def is_method(self) -> bool:
        return self.torch.startswith(METHOD_PREFIXES)

    @property
    def class_bound(self) -> bool:
        return self.torch.startswith(CLASS_BOUND_PREFIXES)

    @property
    def method_name(self) -> str:
        return self.torch.rsplit(".", 1)[1]


_BY_TORCH_ARG = ("rename", "values", "reject", "review", "dtype_review")


class MappingError(ValueError):
    pass


def _load_file(path: Path) -> list[ApiRecord]:
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    defaults = data.get("defaults", {})
    records = []
    for name, raw in data.get("api", {}).items():
        merged = {**defaults, **raw}
        if "args" in merged:
            # a table-wide default keyed by torch argument names applies where the record has it
            params = {a.lstrip("*") for a in merged["args"]}
            for key in _BY_TORCH_ARG:
                if key in defaults and key not in raw:
                    merged[key] = {k: v for k, v in defaults[key].items() if k in params}
        unknown = set(merged) - _FIELDS
        if unknown:
            raise MappingError(f"{path.name}: {name}: unknown fields {sorted(unknown)}")
        if merged.get("status", "auto") not in STATUSES:
            raise MappingError(f"{path.name}: {name}: bad status {merged['status']!r}")
        merged.pop("csv", None)
        for key in ("args", "drop", "fixed", "promote", "fields"):
            if key in merged:
                merged[key] = tuple(merged[key])
        records.append(ApiRecord(torch=name, source=path.name, **merged))
    return records


@dataclass
class ApiTable:
    by_name: dict[str, ApiRecord]
    by_method: dict[str, list[ApiRecord]]
    namespaces: frozenset[str]  # every proper prefix of a record name: modules, classes
    aliases: dict[str, ApiRecord] = field(default_factory=dict)   # rules/aliases.toml
    # torch.Tensor methods without a record, by name (rules/tensor_passthrough.toml)
    passthrough: dict[str, ApiRecord] = field(default_factory=dict)
    # MindSpore class -> the record targeting it, for records whose objects have class-bound
    # methods (`base`): converted code run through again (engine._converted_constructor)
    by_base_target: dict[str, ApiRecord] = field(default_factory=dict)
    # torch.Tensor methods kept by name: the per-API suite saw MindSpore's method of that name
    # compute torch's result (rules/tensor_passthrough.toml `verified`)
    verified_methods: frozenset[str] = frozenset()

    def lookup(self, qualname: str) -> ApiRecord | None:
        return (self.by_name.get(qualname) or self.aliases.get(qualname)
                or self.passthrough.get(qualname.removeprefix("torch.Tensor.")
                                        if qualname.startswith("torch.Tensor.") else ""))

    def methods(self, name: str) -> list[ApiRecord]:
        found = self.by_method.get(name, [])
        if any(not r.class_bound for r in found):
            return found
        # only records bound to another class's objects (`dist.mean`): a tensor's method too
        return found + ([self.passthrough[name]] if name in self.passthrough else [])


PASSTHROUGH_NOTE = ("passed through by name: the per-API suite has not verified that MindSpore's "
                    "Tensor.{name} computes torch's result; check it, or write the MindSpore code")


def _passthrough(path: Path, by_name: dict[str, ApiRecord],
                 by_method: dict[str, list[ApiRecord]]) -> tuple[dict[str, ApiRecord], frozenset[str]]:
    """Records for the torch.Tensor methods the tables do not hold (rules/tensor_passthrough.toml,
    generated by the per-API suite): a method the suite verified stays as it is (no record, or
    one converting it as its torch function where that function's record casts a visibly
    integer/bool argument: `promote`); one
    with a torch function record converts as that function (`x.fmin(y)` -> torch.fmin(x, y)'s
    conversion; `x.exp2_()` -> x[...] = that of x.exp2()); any other is kept and marked."""
    if not path.exists():
        return {}, frozenset()
    data = tomllib.loads(path.read_text())
    verified = frozenset(data.get("verified", ()))
    out: dict[str, ApiRecord] = {}
    for name in data.get("torch_methods", ()):
        if any(not r.class_bound for r in by_method.get(name, ())):
            continue
        base = name[:-1] if name.endswith("_") else name
        func = by_name.get(f"torch.{base}")
        usable = func is not None and func.status == "auto" and (func.target or func.transform) \
            and not func.is_method and func.args[:1] == ("input",) \
            and func.transform != "torch_functions.as_method"   # that one converts as this method
        qual = f"torch.Tensor.{name}"
        if name in verified:
            if usable and name == base and func.rewrites_visible:
                # kept by name, except on a visibly integer/bool tensor (`torch.arange(5).exp()`):
                # then as the function, whose record casts it (MindSpore's kernel is float-only)
                out[name] = ApiRecord(torch=qual, args=func.args[1:], positional=max(func.positional - 1, 0),
                                      transform="tensor_methods.promoted", source=path.name)
            continue
        if usable and name == base:
            out[name] = ApiRecord(torch=qual, args=func.args[1:], positional=max(func.positional - 1, 0),
                                  transform="tensor_methods.as_function", source=path.name)
        elif base != name and (usable or base in verified or f"torch.Tensor.{base}" in by_name):
            # the out-of-place method's signature, so that `t.scatter_reduce_(..., reduce='sum')`
            # binds as torch's method (a call that does not bind is taken for another object's)
            method = by_name.get(f"torch.Tensor.{base}")
            args, positional = ("*args",), 1
            if usable:
                args = func.args[1:]
            elif method is not None:
                args, positional = method.args, method.positional
            out[name] = ApiRecord(torch=qual, args=args, positional=positional,
                                  transform="tensor_methods.inplace", source=path.name)
        else:
            out[name] = ApiRecord(torch=qual, status="review", transform="tensor_methods.keep",
                                  note=PASSTHROUGH_NOTE.format(name=name), source=path.name)
    for name in data.get("torch_attributes", ()):   # read as they are, or marked
        if name not in verified and name not in by_method:
            out[name] = ApiRecord(torch=f"torch.Tensor.{name}", status="review", transform="tensor_methods.keep",
                                  read=True, note=PASSTHROUGH_NOTE.format(name=name), source=path.name)
    return out, verified


@functools.lru_cache(maxsize=None)
def load_table(rules_dir: str | None = None) -> ApiTable:
    root = Path(rules_dir) if rules_dir else RULES_DIR / "api"
    by_name: dict[str, ApiRecord] = {}
    for path in sorted(root.glob("*.toml")):
        for rec in _load_file(path):
            if rec.torch in by_name:
                raise MappingError(f"{rec.torch} defined in {by_name[rec.torch].source} and {path.name}")
            by_name[rec.torch] = rec
    by_method: dict[str, list[ApiRecord]] = {}
    namespaces = set()
    for rec in by_name.values():
        if rec.is_method:
            by_method.setdefault(rec.method_name, []).append(rec)
        parts = rec.torch.split(".")
        namespaces.update(".".join(parts[:i]) for i in range(1, len(parts)))
    # other import paths of the same APIs (torch.nn.modules.loss.MSELoss): the same record
    aliases: dict[str, ApiRecord] = {}
    path = Path(rules_dir).parent / "aliases.toml" if rules_dir else RULES_DIR / "aliases.toml"
    if path.exists():
        data = tomllib.loads(path.read_text())
        # [alias]: the same torch object; [same]: another object computing the same thing from the
        # same arguments (torch.special.expit and torch.sigmoid): the record, under its own name
        # ([same_torchvision]: the same, for torchvision, which the suite does not run)
        entries = [(section, alias, name) for section in ("alias", "same", "same_torchvision")
                   for alias, name in data.get(section, {}).items()]
        for section, alias, name in entries:
            if name not in by_name:
                raise MappingError(f"aliases.toml: {alias} -> {name}, which has no record")
            if alias not in by_name:
                aliases[alias] = by_name[name] if section == "alias" else replace(by_name[name], torch=alias)
                parts = alias.split(".")
                namespaces.update(".".join(parts[:i]) for i in range(1, len(parts)))
    # a method converts as its torch function also where that function is an alias
    # (x.unsafe_chunk(2) -> torch.unsafe_chunk -> torch.chunk's record)
    passthrough, verified = _passthrough(Path(rules_dir).parent / "tensor_passthrough.toml" if rules_dir
                                         else RULES_DIR / "tensor_passthrough.toml", {**aliases, **by_name},
                                         by_method)
    by_base_target: dict[str, ApiRecord] = {}
    for rec in by_name.values():
        if rec.base and rec.target and not rec.target.startswith("."):
            by_base_target.setdefault(rec.target.lstrip("@"), rec)
    return ApiTable(by_name, by_method, frozenset(namespaces), aliases, passthrough, by_base_target, verified)


@functools.lru_cache(maxsize=None)
def transform_function(ref: str) -> Callable:
    """`"conv.padding2d"` -> msmigrate.rules.transforms.conv.padding2d."""
    module, _, name = ref.rpartition(".")
    mod = importlib.import_module(f"msmigrate.rules.transforms.{module}")
    try:
        return getattr(mod, name)
    except AttributeError:
        raise MappingError(f"transform {ref!r} does not exist") from None


def validate(table: ApiTable) -> list[str]:
    """Problems in the tables that a test should catch: missing transforms, bad fields."""
    problems = []
    for rec in table.by_name.values():
        for ref in [rec.transform, rec.subclass, rec.instance_call, rec.on_instantiate,
                    *rec.values.values()]:
            if ref:
                try:
                    transform_function(ref)
                except (MappingError, ImportError) as exc:
                    problems.append(f"{rec.torch}: {exc}")
        # a method record may keep its method (target "") and only convert arguments
        if rec.status == "auto" and not (rec.target or rec.transform or rec.subclass or rec.is_method):
            problems.append(f"{rec.torch}: status auto needs a target or a transform")
        known = {a.lstrip("*") for a in rec.args}
        if rec.inplace and rec.inplace != "always" and rec.inplace not in known:
            problems.append(f"{rec.torch}: inplace {rec.inplace!r} is not in args")
        for key in [*rec.rename, *rec.values, *rec.reject, *rec.drop, *rec.review, *rec.promote,
                    *rec.dtype_review, *rec.empty_pad, *rec.unbatched,
                    *[k for k in (rec.empty_sizes, rec.empty_reduce, rec.scalar_dim) if k]]:
            if rec.args and key not in known:
                problems.append(f"{rec.torch}: {key!r} is not in args")
    return problems
