"""torch.distributions converted to mindspore.nn.probability.distribution compute what torch
does: one torch program (fixed inputs from NumPy) run as it is and, converted, under MindSpore;
log_prob / entropy compared at rtol 1e-5, draws by shape, value set and mean over many samples."""
from __future__ import annotations

import numpy as np
import pytest

from isolated import run_script
from msmigrate import convert_source

PROGRAM = '''
import json
import numpy as np
import torch
import torch.nn.functional as F
from torch.distributions import Bernoulli, Categorical, Normal

rng = np.random.default_rng(0)
logits = torch.from_numpy(rng.standard_normal((4, 3)).astype(np.float32))
probs = F.softmax(logits, dim=-1)
actions = torch.from_numpy(np.array([0, 2, 1, 2]))
x = torch.from_numpy(rng.standard_normal((4, 3)).astype(np.float32))
out = {}
for name, d in [("cat_logits", Categorical(logits=logits)), ("cat_probs", Categorical(probs)),
                ("cat_kw", torch.distributions.Categorical(probs=probs))]:
    out[name] = {"log_prob": d.log_prob(actions).tolist(), "entropy": d.entropy().tolist()}
    draws = torch.stack([d.sample() for _ in range(400)]).float()
    out[name]["draw_shape"] = list(d.sample().shape)
    out[name]["freq_of_2"] = (draws == 2).float().mean(0).tolist()
    out[name]["p2"] = probs[:, 2].tolist()
n = Normal(torch.zeros(3), torch.ones(3) * 2.0)
out["normal"] = {"log_prob": n.log_prob(x).sum(-1).tolist(), "entropy": n.entropy().tolist(),
                 "draw_shape": list(n.sample((5,)).shape),
                 "draw_std": float(torch.stack([n.sample() for _ in range(400)]).std())}
for name, b in [("bern_logits", Bernoulli(logits=logits)), ("bern_probs", Bernoulli(probs))]:
    y = (x > 0).float()
    draw = b.sample()
    out[name] = {"log_prob": b.log_prob(y).tolist(), "entropy": b.entropy().tolist(),
                 "draw_values": sorted(set(draw.flatten().tolist())), "draw_shape": list(draw.shape),
                 "draw_is_float": isinstance(draw.flatten().tolist()[0], float)}
print(json.dumps(out))
'''


@pytest.mark.framework
def test_distributions_compute_what_torch_computes():
    result = convert_source(PROGRAM, "dists.py")
    assert result.diagnostics == [] and "torch" not in result.code
    torch_out = run_script(PROGRAM)
    ms_out = run_script(result.code)
    assert torch_out.keys() == ms_out.keys()
    for name, t in torch_out.items():
        m = ms_out[name]
        for key in ("log_prob", "entropy"):
            np.testing.assert_allclose(m[key], t[key], rtol=1e-5, atol=1e-6, err_msg=f"{name}.{key}")
        assert m["draw_shape"] == t["draw_shape"], name
        if "freq_of_2" in t:   # 400 draws: within 4 standard errors of the probability
            np.testing.assert_allclose(m["freq_of_2"], t["p2"], atol=4 * 0.5 / 20, err_msg=name)
        if "draw_std" in t:
            assert abs(m["draw_std"] - 2.0) < 0.3, m["draw_std"]
        if "draw_values" in t:
            assert set(m["draw_values"]) <= {0.0, 1.0} and m["draw_is_float"] == t["draw_is_float"], name


TRAINING = '''
import json
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical, MultivariateNormal

rng = np.random.default_rng(0)
obs = torch.from_numpy(rng.standard_normal((16, 4)).astype(np.float32))
acts = torch.from_numpy(rng.integers(0, 3, 16))
moves = torch.from_numpy(rng.standard_normal((16, 3)).astype(np.float32))
adv = torch.from_numpy(rng.standard_normal(16).astype(np.float32))
policy = nn.Linear(4, 3)
with torch.no_grad():
    policy.weight.copy_(torch.from_numpy(rng.standard_normal((3, 4)).astype(np.float32) * 0.1))
    policy.bias.zero_()
opt = torch.optim.SGD(policy.parameters(), lr=0.1)
cov = torch.eye(3) * 0.5
losses = []
for step in range(3):
    out = policy(obs)
    dist = Categorical(logits=out)
    gauss = MultivariateNormal(out, cov)
    loss = -(dist.log_prob(acts) * adv).mean() - 0.01 * dist.entropy().mean() \\
        - (gauss.log_prob(moves) * adv).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(json.dumps(losses))
'''


@pytest.mark.framework
def test_policy_gradient_steps_train_like_torch():
    """A loss built from distributions made in the training step: MindSpore builds its
    distributions in a static graph only from constants, so the step runs uncompiled (MSC109)
    and trains as torch does."""
    result = convert_source(TRAINING, "pg.py")
    assert [d.code for d in result.diagnostics] == ["MSC109"]
    assert not any(line.startswith(("import torch", "from torch")) for line in result.code.splitlines())
    np.testing.assert_allclose(run_script(result.code), run_script(TRAINING), rtol=1e-5)
