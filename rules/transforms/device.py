"""Devices and backend flags: placement is global in MindSpore, so most of these become values or
nothing; the program's own device logic keeps running on the strings."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible
from msmigrate.mapping import transform_function
from msmigrate.names import dotted
from msmigrate.rules.generated import device as generated_device
from msmigrate.rules.transforms.common import fixed_answer, generated
from msmigrate.rules.transforms.jit import uncompiled


def device_value(site):
    """torch.device('cuda') -> 'cuda': the string keeps `use_cuda`-style logic running, but has no
    .type / .index."""
    stmt = site.statement
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
            isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1:
        name = dotted(stmt.body[0].targets[0].target)
        if name and re.search(rf"(?<![\w.]){re.escape(name)}\.(type|index)\b", site.rw.module_code):
            site.flag("review", f"{site.qualname}: {name} becomes a string ('cuda' / 'cpu'): "
                                f"{name}.type / {name}.index do not exist on it")
    if site.is_call:
        args = [a.value for a in site.node.args if a.keyword is None]
        if not args and site.has("type"):
            args = [site.arg("type")]
        return args[0] if args else cst.SimpleString("'cpu'")
    return site.node


def gpu_count(site):
    """torch.cuda.device_count() is 0 without CUDA; MindSpore's raises without a GPU target."""
    gpu = site.ref("mindspore.device_context.gpu")
    return site.expr("({g}.device_count() if {g}.is_available() else 0)", g=gpu)


# MindSpore's device target -> the torch device type a program compares against
_TARGET_TYPES = "{'GPU': 'cuda', 'Ascend': 'npu'}"


def current_accelerator(site):
    """torch.accelerator.current_accelerator() -> the device type string ('cuda', 'npu') of
    MindSpore's target, None on CPU as in torch: device values are strings in converted code
    (see device_value), and `.type` of it is the string itself (DeviceTypePass)."""
    return site.expr(_TARGET_TYPES + ".get({get}('device_target'))", get=site.ref("mindspore.get_context"))


def accelerator_available(site):
    return site.expr("{get}('device_target') != 'CPU'", get=site.ref("mindspore.get_context"))


def accelerator_count(site):
    return site.expr("(1 if {get}('device_target') != 'CPU' else 0)", get=site.ref("mindspore.get_context"))


def set_gpu(site):
    dev = site.arg("device")
    if dev is None:
        raise Unconvertible("set_device without a device", "manual")
    return site.expr("{set}('GPU', {d})", set=site.ref("mindspore.set_device"), d=dev)


def current_device(site):
    return site.expr("{get}('device_id')", get=site.ref("mindspore.get_context"))


def device_capability(site):
    """torch.cuda.get_device_capability(device=None): ms.hal.get_device_capability of that GPU
    ((major, minor); None off a GPU target, where torch raises). A device given as anything but
    a number (a torch.device converts to its string) is marked."""
    device = site.arg("device")
    if device is None or isinstance(device, cst.Name) and device.value == "None":
        device = current_device(site)
    elif not isinstance(device, cst.Integer):
        site.flag("review", f"{site.qualname}: MindSpore takes the device's number here (ms.get_context('device_id'))")
    return site.expr("{f}({d}, 'GPU')", f=site.ref("mindspore.hal.get_device_capability"), d=device)


def cuda_version(site):
    """torch.version.cuda: the CUDA toolkit torch was built with, None in a CPU build. MindSpore
    names no toolkit: None, marked (a GPU build of torch says e.g. '12.1')."""
    site.flag("review", f"{site.qualname} -> None: what a CPU build of torch says; MindSpore names no CUDA version")
    return cst.Name("None")


def tensor_place(site):
    """x.is_cuda / x.is_cpu: where the tensor lives. MindSpore places every tensor on its one
    device target (ms.set_device), which compiled code (a construct, where `dv = 'cuda' if
    x.is_cuda else 'cpu'` picks a placement) cannot read: the answer on CPU, marked, since on a
    GPU target torch's answer would be the other one. Device values only place tensors, which
    converted code does not do: a program choosing its device by it computes the same."""
    on_cpu = site.record.method_name == "is_cpu"
    site.flag("review", f"{site.qualname} -> {on_cpu}: the CPU target's answer (MindSpore places every "
                        f"tensor on its one device target; compiled code cannot read it)")
    return cst.Name("True" if on_cpu else "False")


def false_value(site):
    return cst.Name("False")


def none_value(site):
    return cst.Name("None")


def _assigned_value(site):
    """The right-hand side when the statement being converted assigns to this reference."""
    stmt = site.statement
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        assign = stmt.body[0]
        if len(assign.targets) == 1 and site.rw.scopes.resolve(assign.targets[0].target) == site.qualname:
            return assign.value
    return None


def setting_removed(site):
    """`torch.backends.cudnn.benchmark = True`: no MindSpore setting (cuDNN autotuning, TF32 only
    change speed or GPU rounding); the statement goes. Read as a value (a log line, a config
    dump), the setting is off: MindSpore has none to turn on."""
    if site.is_call:
        raise Unconvertible("called: MindSpore has no such setting", "manual")
    if _assigned_value(site) is None:
        return cst.Name("False")
    return site.REMOVED


def deterministic_setting(site):
    """`torch.backends.cudnn.deterministic = v` -> `ms.set_deterministic(v)`; read as a value,
    MindSpore's context answers ('ON' / 'OFF')."""
    value = _assigned_value(site)
    if site.is_call:
        raise Unconvertible("called: torch.backends.cudnn.deterministic is a flag", "manual")
    if value is None:
        return _deterministic(site)
    site.before(cst.SimpleStatementLine([cst.Expr(cst.Call(
        generated(site, generated_device.msmigrate_set_deterministic), [cst.Arg(value)]))]))
    return site.REMOVED


def set_deterministic(site):
    """torch.use_deterministic_algorithms(mode) -> msmigrate_set_deterministic(mode): MindSpore's
    ms.set_deterministic raises when called a second time (torch.backends.cudnn.deterministic
    set as well, or the same call in a function called twice)."""
    return cst.Call(generated(site, generated_device.msmigrate_set_deterministic), [cst.Arg(site.arg("mode"))])


def _is_dtype(site, node) -> bool:
    q = site.rw.scopes.resolve(node)
    if q is not None and q.startswith("torch.") and q.rsplit(".", 1)[-1] in _DTYPES:
        return True
    code = site.code(node)
    return code.startswith(("ms.", "mindspore.")) and code.rsplit(".", 1)[-1] in _DTYPES


_DTYPES = {"float16", "half", "float32", "float", "float64", "double", "bfloat16", "int8", "int16", "int32",
           "int64", "long", "int", "uint8", "bool"}


def module_to(site):
    """model.to(device) -> model (Cells use the global device); model.to(dtype) and
    model.to(device, dtype) cast the stored floating-point parameters, as model.double() does."""
    dtypes = [a.value for a in site.node.args if _is_dtype(site, a.value)]
    if dtypes:
        from msmigrate.rules.transforms.models import cast_module
        return cast_module(site, site.receiver, dtypes[0])
    _register_created_cell(site)
    return site.receiver


def _register_created_cell(site) -> None:
    """`model = Net().to(device)` becomes `model = Net()`: the construction hooks (set_train) and
    the instance tracking that `model = Net()` gets must still happen."""
    receiver = site.receiver
    if not isinstance(receiver, cst.Call):
        return
    func = receiver.func
    rec = site.rw.local_classes.get(dotted(func) or "")
    if rec is None:
        q = site.rw.scopes.resolve(func)
        rec = site.rw.table.lookup(q) if q and q.startswith("torch.nn.") else None
    stmt = site.statement
    if rec is None or not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                           and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1):
        return
    name = dotted(stmt.body[0].targets[0].target)
    if name is None:
        return
    site.rw.instances[name] = rec
    if rec.on_instantiate:
        transform_function(rec.on_instantiate)(site, name)


def _deterministic(site):
    return site.expr("({get}('deterministic') == 'ON')", get=site.ref("mindspore.get_context"))


def deterministic_query(site):
    """torch.are_deterministic_algorithms_enabled() / get_deterministic_debug_mode(): MindSpore's
    context says whether ms.set_deterministic turned it on (debug mode 2, 'error', is torch's
    mode of use_deterministic_algorithms(True))."""
    if site.record.method_name == "get_deterministic_debug_mode":
        return site.expr("(2 if {on} else 0)", on=_deterministic(site))
    return _deterministic(site)


def deterministic_debug_mode(site):
    """torch.set_deterministic_debug_mode(mode): 'default' / 0 turns deterministic algorithms off,
    'warn' / 'error' (1 / 2) on (MindSpore has no warn-only mode: it is deterministic)."""
    mode = site.arg("debug_mode")
    if mode is None:
        raise Unconvertible("set_deterministic_debug_mode without a mode", "manual")
    try:
        on = cst.Name(str(site.literal("debug_mode") not in (0, "default")))
    except ValueError:
        on = site.expr("{m} not in (0, 'default')", m=mode)
    return cst.Call(generated(site, generated_device.msmigrate_set_deterministic), [cst.Arg(on)])


# torch's queries of settings MindSpore has no counterpart of: the answer that describes
# MindSpore's behaviour, and where torch may answer otherwise (marked)
_SETTLED_ANSWERS = {
    "is_deterministic_algorithms_warn_only_enabled": ("False", None),   # no warn-only mode
    "get_float32_matmul_precision": ("'highest'", "torch answers what set_float32_matmul_precision set; "
                                                  "MindSpore's float32 matmul stays float32"),
    "is_warn_always_enabled": ("False", None),
    "compiled_with_cxx11_abi": ("True", None),
    # a device as converted code holds one (torch.device('cpu') -> 'cpu'); MindSpore's target is global
    "get_default_device": ("'cpu'", "torch: the device set_default_device set (converted code places no "
                                    "tensor; MindSpore's device target, ms.set_device, holds them all)"),
    "is_conj": ("False", None),   # MindSpore conjugates and negates at once: no tensor is a lazy view
    "is_neg": ("False", None),
    "is_grad_enabled": ("True", "torch: False inside no_grad() / set_grad_enabled(False) / inference_mode(), "
                                "blocks MindSpore has no global state for (it differentiates functions)"),
    "is_inference_mode_enabled": ("False", "torch: True inside inference_mode(), which MindSpore has no "
                                           "global state for"),
}


def settled_answer(site):
    return fixed_answer(site, *_SETTLED_ANSWERS[site.record.method_name])


# torch.compile(m) -> m: rules/transforms/jit.py (TorchScript's records use it too)
compiled_model = uncompiled


# a global default of float32 is MindSpore's own (Python floats make float32 tensors)
_FLOAT32_DEFAULTS = frozenset({"torch.float32", "torch.float", "torch.FloatTensor", "torch.cuda.FloatTensor"})


def default_dtype_setting(site):
    """torch.set_default_dtype(torch.float32) / set_default_tensor_type(torch.FloatTensor or
    'torch.cuda.FloatTensor'): MindSpore's default already, the call goes. Any other default
    changes every tensor the program creates: MindSpore has no global default dtype."""
    arg = site.arg(site.record.args[0]) if site.record.args else None
    value = site.rw.scopes.resolve(arg) if arg is not None else None
    if value is None and isinstance(arg, cst.SimpleString):
        value = arg.evaluated_value
    if value in _FLOAT32_DEFAULTS or arg is not None and site.code(arg) in ("ms.float32", "mindspore.float32"):
        return site.REMOVED
    raise Unconvertible("MindSpore has no global default dtype: pass dtype= where tensors are created",
                        "unsupported")
