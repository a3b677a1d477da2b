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
