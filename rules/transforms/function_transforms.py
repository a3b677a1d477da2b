"""torch.func / torch.autograd.functional -> MindSpore's function transforms (records in
rules/api/function_transforms.toml). MindSpore compiles the function given to vmap, jacrev and
jacfwd from its source file and cannot parse a lambda written inside a call, so a lambda
argument becomes a def just before the statement (`torch.func.vmap(lambda r: r.sum())` ->
`def msmigrate_fn(r): return r.sum()` ... `ms.vmap(msmigrate_fn)`)."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible, kwarg
from msmigrate.names import fresh_name
from msmigrate.rules.transforms.tensor_methods import _commas

# torch name -> (MindSpore target or generated function, {torch argument: MindSpore keyword})
_TARGETS = {
    "torch.func.grad": ("msmigrate_func_grad", {}),
    "torch.func.grad_and_value": ("msmigrate_func_grad_and_value", {}),
    "torch.func.vjp": ("mindspore.vjp", {}),
    "torch.func.vmap": ("mindspore.vmap", {"in_dims": "in_axes", "out_dims": "out_axes"}),
    "torch.vmap": ("mindspore.vmap", {"in_dims": "in_axes", "out_dims": "out_axes"}),
    "torch.func.jacrev": ("mindspore.jacrev", {"argnums": "grad_position"}),
    "torch.func.jacfwd": ("mindspore.jacfwd", {"argnums": "grad_position"}),
    "torch.func.hessian": ("msmigrate_func_hessian", {}),
    "torch.autograd.functional.jacobian": ("msmigrate_autograd_jacobian", {}),
    "torch.autograd.functional.hessian": ("msmigrate_autograd_hessian", {}),
    "torch.autograd.functional.vjp": ("msmigrate_autograd_vjp", {}),
    "torch.func.jvp": ("msmigrate_func_jvp", {}),
    "torch.autograd.functional.jvp": ("msmigrate_autograd_jvp", {}),
    "torch.autograd.functional.vhp": ("msmigrate_autograd_vhp", {}),
    "torch.autograd.functional.hvp": ("msmigrate_autograd_hvp", {}),
}
# arguments with no MindSpore counterpart, and the values that compute the same without it
_DEFAULT_ONLY = {"randomness": ("'error'", "'different'", "'same'"), "chunk_size": ("None",),
                 "create_graph": ("False",), "strict": ("False",), "vectorize": ("False", "True"),
                 "strategy": ("'reverse-mode'",), "outer_jacobian_strategy": ("'reverse-mode'",)}


def transform_call(site):
    if not site.is_call or site.unbound:
        raise Unconvertible("a function transform used as a value or with * / ** arguments: convert by hand",
                            "review")
    target, renames = _TARGETS[site.record.torch]
    args = []
    for name, arg in site.bound.items():
        value = arg.value
        if name in _DEFAULT_ONLY:
            if site.code(value) not in _DEFAULT_ONLY[name]:
                raise Unconvertible(f"{name}={site.code(value)} has no MindSpore counterpart", "review")
        elif name == "func":
            args.insert(0, cst.Arg(_named(site, value) if isinstance(value, cst.Lambda) else value))
        elif name == "primals" and "*primals" in site.record.args:   # packed into one tuple when several
            several = sum(a.keyword is None for a in site.node.args) > 2   # func and more than one primal
            elements = value.elements if isinstance(value, cst.Tuple) and several else None
            if elements is None and isinstance(value, (cst.Tuple, cst.List)):
                raise Unconvertible("a tuple given as one primal: MindSpore's vjp differentiates tensor inputs "
                                    "only (its gradient of a tuple is empty); pass the tensors as separate "
                                    "primals", "review")
            args += [cst.Arg(e.value) for e in elements] if elements is not None else [cst.Arg(value)]
        else:
            args.append(kwarg(renames.get(name, name), value))
    if target.startswith("msmigrate_"):
        from msmigrate.rules.transforms.torch_functions import generated_function
        func = generated_function(site, target)
    else:
        func = site.ref(target)
    return cst.Call(func=func, args=_commas(args))


def _named(site, fn: cst.Lambda) -> cst.Name:
    """A def of the lambda just before the statement: MindSpore parses the function it compiles
    from its file and fails on a lambda inside a call."""
    name = fresh_name("msmigrate_fn", site.rw.ctx.names.taken | set(site.rw.ctx.names.imports))
    site.rw.ctx.names.taken.add(name)
    params = cst.Module([]).code_for_node(fn.params)
    body = cst.Module([]).code_for_node(fn.body)
    site.before(f"def {name}({params}):\n    return {body}\n")
    return cst.Name(name)
