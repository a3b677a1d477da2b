"""COO construction -> the dense tensor it stands for (see rules/api/sparse.toml)."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible


def coo_as_dense(site):
    """sparse_coo_tensor(indices (ndim, nnz), values, size) -> ScatterNd(indices.T, values,
    size): duplicates summed, as torch's coalesce does. Without size, torch's: the largest index
    + 1 in each sparse dimension, then the values' own trailing dimensions."""
    indices, values, size = site.arg("indices"), site.arg("values"), site.arg("size")
    if indices is None or values is None:
        raise Unconvertible("a sparse tensor without indices and values", "manual")
    if site.has("dtype"):
        values = site.expr("{v}.astype({d})", v=values, d=site.arg("dtype"))
    elif site.qualname.endswith("FloatTensor"):
        values = site.expr("{v}.astype({f32})", v=values, f32=site.ref("mindspore.float32"))
    if size is None:
        if not all(isinstance(e, (cst.Name, cst.Attribute)) for e in (indices, values)):
            raise Unconvertible("a sparse tensor without size= built from expressions (the size is "
                                "inferred from them: name them first, or give size=)", "manual")
        size = site.expr("tuple(({amax}({i}, 1) + 1).tolist()) + tuple({v}.shape[1:])",
                         amax=site.ref("mindspore.ops.amax"), i=indices, v=values)
    elif isinstance(size, cst.List):   # ScatterNd takes a tuple shape
        size = site.expr("tuple({s})", s=size)
    return site.expr("{scatter}({i}.T, {v}, {s})", scatter=site.ref("mindspore.ops.scatter_nd"),
                     i=indices, v=values, s=size)


_COO = ("torch.sparse_coo_tensor", "torch.sparse.FloatTensor")


def coo_part(site):
    """`a._indices()` / `a._values()` of a sparse tensor: the dense tensor standing for it has
    neither. Where `a` was bound, in straight-line code before, to `torch.sparse_coo_tensor(i,
    v, ...)` (not coalesced: torch keeps i and v as given, duplicates and order) and `i` / `v`
    are names not bound since, they are `i` / `v` themselves. Elsewhere marked."""
    from msmigrate.rules.transforms.dtypes import _NOT_FOUND, _straight_line_value
    part = "indices" if site.record.method_name == "_indices" else "values"
    receiver = site.original_receiver
    value = _straight_line_value(site.rw, receiver.value) if isinstance(receiver, cst.Name) else None
    if isinstance(value, cst.Call) and (site.rw.scopes.resolve(value.func) or "") in _COO:
        position = 0 if part == "indices" else 1
        args = [a for a in value.args if a.keyword is None and not a.star]
        arg = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == part),
                   args[position].value if len(args) > position else None)
        if isinstance(arg, cst.Name) and _straight_line_value(site.rw, arg.value) is _NOT_FOUND:
            return arg
    raise Unconvertible(f"Tensor._{part}() of a sparse tensor: sparse tensors are dense in the converted "
                        f"program; pass the {part} the tensor was built from instead", "manual")
