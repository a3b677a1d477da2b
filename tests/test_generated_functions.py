"""The functions copied into converted files where MindSpore 2.10 has no CPU kernel
(rules/generated/functions.py): a torch program calling them converts to one that computes torch's
values in PyNative and compiled (@ms.jit: their imports become the file's, graph mode compiles
no import statement in a function), and whose gradients are torch's. The per-API suite checks
each argument form (tests/api_suite/cases/portable.toml)."""
from __future__ import annotations

import pytest

from isolated import run_script
from msmigrate import convert_source

pytestmark = pytest.mark.framework

SOURCE = '''
import torch
import torch.nn.functional as F


def f(x, w, u, a, b, s):
    up = F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1)
    pool = F.fractional_max_pool2d(up, 2, output_size=(4, 5), _random_samples=s)
    q = torch.quantile(a, 0.3, dim=1, keepdim=True) + torch.nanquantile(a, 0.5)
    m = torch.fmin(a, torch.where(a > 0, float("nan"), b)) + torch.fmax(a, b)
    d = F.pairwise_distance(a, b) + F.alpha_dropout(a, 0.5, training=False).sum(1)
    e = torch.matrix_exp(a[:, :3] * 0.5) + torch.special.entr(u)[:, :3]
    c = F.conv_transpose1d(x[:, :, 0], w[:, :, 0], stride=3) + torch.cumulative_trapezoid(a).sum()
    return up, pool, q, m, d, e, c
'''

RUNNER = r'''
import json, os
os.environ.setdefault("GLOG_v", "3")
import numpy as np
import torch
import mindspore as ms
import converted
import original
rng = np.random.default_rng(0)
arrays = [rng.normal(size=(2, 3, 5, 6)), rng.normal(size=(3, 2, 3, 3)), rng.uniform(0.1, 2.0, size=(3, 4)),
          rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.uniform(size=(2, 2, 2))]
arrays = [x.astype(np.float32) for x in arrays]
ms_args = [ms.Tensor(x) for x in arrays]
eager = converted.f(*ms_args)
graph = ms.jit(converted.f)(*ms_args)
torch_args = [torch.tensor(x, requires_grad=(i < 2)) for i, x in enumerate(arrays)]
reference = original.f(*torch_args)
sum(r.sum() for r in reference[:2]).backward()
grads = ms.grad(lambda x, w: sum(r.sum() for r in converted.f(x, w, *ms_args[2:])[:2]), grad_position=(0, 1))(*ms_args[:2])
out = {"graph_vs_eager": [float(np.max(np.abs(g.asnumpy() - e.asnumpy()))) for g, e in zip(graph, eager)],
       "eager_vs_torch": [float(np.max(np.abs(e.asnumpy() - r.detach().numpy()))) for e, r in zip(eager, reference)],
       "grads_vs_torch": [float(np.max(np.abs(g.asnumpy() - t.grad.numpy()))) for g, t in zip(grads, torch_args[:2])]}
print(json.dumps(out))
'''


def test_generated_functions_compile_and_match_torch():
    result = convert_source(SOURCE, "converted.py")
    assert "import torch" not in result.code and not result.diagnostics, result.code
    assert "    import mindspore" not in result.code and "    from mindspore" not in result.code
    out = run_script(RUNNER, timeout=300, files={"converted.py": result.code, "original.py": SOURCE})
    assert max(out["graph_vs_eager"]) < 1e-5, out
    assert max(out["eager_vs_torch"]) < 1e-4, out
    assert max(out["grads_vs_torch"]) < 1e-4, out
