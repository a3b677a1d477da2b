"""The functions copied into converted files where MindSpore 2.10 has no CPU kernel
(rules/generated/functions.py): a torch program calling them converts to one that computes torch's
values in PyNative and compiled (@ms.jit: their imports become the file's, graph mode compiles
no import statement in a function), and whose gradients are torch's. The per-API suite checks
each argument form (tests/api_suite/cases/portable.toml)."""
from __future__ import annotations

import pytest

from isolated import run_script
from msmigrate import convert_source


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


class Net(torch.nn.Module):
    """Layers MindSpore lacks (generated Cells) in a model: compiled, trained mode, gradients."""

    def __init__(self, samples):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 2)
        self.pool = torch.nn.FractionalMaxPool2d(2, output_size=(3, 3), _random_samples=samples)
        self.drop = torch.nn.AlphaDropout(0.0)
        self.dist = torch.nn.PairwiseDistance(p=1.0)

    def forward(self, x):
        y = self.drop(self.pool(self.conv(x))).flatten(1)
        return self.dist(y[:, :18], y[:, 18:])
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
torch_net = original.Net(torch.tensor(arrays[5][:, :1].repeat(4, 1)))
net = converted.Net(ms.Tensor(arrays[5][:, :1].repeat(4, 1)))
net.conv.weight.set_data(ms.Tensor(torch_net.conv.weight.detach().numpy()))
net.conv.bias.set_data(ms.Tensor(torch_net.conv.bias.detach().numpy()))
torch_net(torch_args[0]).sum().backward()
net.set_train(True)
value, grad = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())(ms_args[0])
out["net"] = [abs(float(value.asnumpy()) - float(torch_net(torch_args[0]).sum())),
              float(np.max(np.abs(grad[0].asnumpy() - torch_net.conv.weight.grad.numpy())))]
net_graph = ms.jit(net.construct)
out["net_graph"] = float(np.max(np.abs(net_graph(ms_args[0]).asnumpy() - net(ms_args[0]).asnumpy())))
print(json.dumps(out))
'''


def test_generated_code_converts_to_itself():
    """A converted file converted again is unchanged: no generated function or Cell uses a form
    the converter would rewrite (`x.abs()`, `~mask`, `x.amax(keepdims=)`)."""
    import inspect
    import re
    import textwrap

    from msmigrate.rules.generated import functions
    parts = ["import mindspore as ms\nfrom mindspore import nn\nfrom mindspore import ops\n"]
    for name, obj in vars(functions).items():
        if name.startswith("msmigrate_") and callable(obj):
            source = textwrap.dedent(inspect.getsource(obj))
            parts.append(re.sub(r"^[ \t]*(import mindspore as ms|from mindspore import ops)[ \t]*\n", "", source, flags=re.M))
    parts += [source.strip("\n") + "\n" for source in functions.CELLS.values()]
    text = "\n\n".join(parts)
    again = convert_source(text, "generated.py", force=True)
    assert again.code == text and not again.diagnostics, [d.to_text() for d in again.diagnostics]


@pytest.mark.framework
def test_generated_functions_compile_and_match_torch():
    result = convert_source(SOURCE, "converted.py")
    assert "import torch" not in result.code and not result.diagnostics, result.code
    assert "    import mindspore" not in result.code and "    from mindspore" not in result.code
    out = run_script(RUNNER, timeout=300, files={"converted.py": result.code, "original.py": SOURCE})
    assert max(out["graph_vs_eager"]) < 1e-5, out
    assert max(out["eager_vs_torch"]) < 1e-4, out
    assert max(out["grads_vs_torch"]) < 1e-4, out
    assert max(out["net"]) < 1e-3 and out["net_graph"] < 1e-5, out


BARE_REFERENCES = '''
import json
import torch
import torch.nn as nn
step = torch.nextafter                 # a generated function named, not called
make = nn.LocalResponseNorm            # a generated Cell class named, not called
out = step(torch.tensor([1.0, -2.0]), torch.tensor([2.0, -3.0]))
norm = make(2)(torch.arange(12.0).reshape(1, 3, 2, 2))
print(json.dumps([out.tolist(), norm.reshape(-1).tolist()]))
'''


@pytest.mark.framework
def test_generated_definitions_named_without_a_call_are_written():
    converted = convert_source(BARE_REFERENCES, "bare.py").code
    assert "def msmigrate_nextafter" in converted and "class msmigrate_LocalResponseNorm" in converted
    want, got = run_script(BARE_REFERENCES), run_script(converted)
    assert len(want) == len(got) == 2
    for w, g in zip(want, got):
        assert g == pytest.approx(w, rel=1e-6), (w, g)
