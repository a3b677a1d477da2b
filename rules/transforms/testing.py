"""torch.testing.assert_close / assert_allclose and torch.random.fork_rng (rules/api/testing.toml)
-> the functions of rules/generated/testing.py, copied into the converted file and called with
torch's arguments; also small answers of test, launch and mixed-precision code: the autocast
decorators of a custom function (rules/api/amp.toml), torch.cuda queries on a machine without
CUDA (device.toml), torchrun's launch flag (distributed.toml)."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible, literal_value
from msmigrate.rules.generated import testing
from msmigrate.rules.transforms.common import generated


def _call_helper(site, *functions):
    func = generated(site, *functions)
    if not site.is_call:
        return func
    if site.unbound:
        raise Unconvertible("arguments passed through * / ** or beyond the torch signature: convert by hand",
                            "review")
    return site.call(func)


def assert_close(site):
    """torch.testing.assert_close(actual, expected, ...) -> msmigrate_assert_close: the same checks,
    tolerances and exceptions, on the values as NumPy arrays. Strides (check_stride=True) are not
    compared: MindSpore's tensors are contiguous, a transposed view of torch's is not."""
    stride = site.arg("check_stride")
    if stride is not None:
        try:
            compared = bool(literal_value(stride))
        except ValueError:
            compared = True
        if compared:
            site.flag("review", f"{site.qualname}: check_stride=True: MindSpore's tensors are contiguous, "
                                f"their strides are not compared (torch's of a transposed or sliced view differ)")
    return _call_helper(site, testing.msmigrate_assert_close)


def assert_allclose(site):
    return _call_helper(site, testing.msmigrate_assert_close, testing.msmigrate_assert_allclose)


def fork_rng(site):
    """`with torch.random.fork_rng(...):` -> `with msmigrate_fork_rng(...):`, MindSpore's random
    state put back on exit (also as a decorator). That state includes NumPy's global one (the
    weight initializers draw from it), which torch's fork_rng leaves alone: a block drawing from
    np.random itself is marked."""
    stmt = site.statement
    if stmt is not None and re.search(r"(?<![\w.])(np|numpy)\.random\.", site.code(stmt)):
        site.flag("review", f"{site.qualname}: NumPy's global random state is put back on exit too (MindSpore's "
                            f"weight initializers draw from it); torch keeps the np.random draws of the block")
    return _call_helper(site, testing.msmigrate_fork_rng)


def _decorates(site) -> bool:
    """This reference is a decorator of the function (or class) statement being converted."""
    stmt = site.statement
    return isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and any(
        site.rw.scopes.resolve(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
        == site.qualname for d in stmt.decorators)


def autocast_decorator(site):
    """torch.amp.custom_fwd / custom_bwd (and torch.cuda.amp's): outside an autocast region the
    function runs as it is; inside one, forward's floating-point inputs are cast to cast_inputs
    and autocast is off. MindSpore's mixed precision belongs to the network (the autocast region
    is converted or marked where it is), so the decorator goes, as it goes from the forward and
    backward of a converted torch.autograd.Function. `custom_fwd(f)` is f."""
    if _decorates(site):
        return site.REMOVED
    if not site.is_call:
        raise Unconvertible("the decorator used as a value: apply it where it decorates, or drop it")
    fwd = site.arg("fwd") if site.has("fwd") else site.arg("bwd")
    if fwd is not None and not (isinstance(fwd, cst.Name) and fwd.value == "None"):
        return fwd
    return cst.parse_expression("(lambda function: function)")


def no_device_states(site):
    """torch.cuda.get_rng_state_all(): one state per CUDA device, [] without one (a CPU build).
    MindSpore has one generator for all devices, saved by torch.get_rng_state's conversion."""
    return cst.List([])


def launched_by_launcher(site):
    """torch.distributed.is_torchelastic_launched(): whether torchrun started this process (it sets
    TORCHELASTIC_RUN_ID). Converted, the program is started by MindSpore's launcher, msrun, which
    gives every process it starts its role in MS_ROLE."""
    return site.expr("{getenv}('MS_ROLE') is not None", getenv="@os.getenv")


def cuda_memory_stats(site):
    """torch.cuda.memory_stats(): {} without CUDA (a CPU build of torch, MindSpore's CPU target);
    on a device, the allocator's counters torch's most read keys name, from mindspore.runtime
    (the current device's)."""
    names = {"allocated_bytes.all.current": "memory_allocated", "allocated_bytes.all.peak": "max_memory_allocated",
             "reserved_bytes.all.current": "memory_reserved", "reserved_bytes.all.peak": "max_memory_reserved"}
    refs = {f"f{i}": f"@mindspore.runtime.{fn}" for i, fn in enumerate(names.values())}
    entries = ", ".join(f"'{key}': {{f{i}}}()" for i, key in enumerate(names))
    return site.expr("({} if {get}('device_target') == 'CPU' else {" + entries + "})",
                     get="@mindspore.get_context", **refs)
