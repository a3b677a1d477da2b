"""`msmigrate weights` and the name/layout mapping of migrate/weights.py (rules/weights.toml)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from msmigrate.weights import (KeyMapping, WeightMappingError, candidates, check_complete, infer_against,
                               load_definitions, load_rules, map_key, map_keys)

from conftest import FIXTURES
from isolated import run_script

CLASSES = {"": "x.Net", "features": "torch.nn.Sequential", "features.0": "torch.nn.Conv1d",
           "features.1": "torch.nn.BatchNorm1d", "embed": "torch.nn.Embedding", "norm": "torch.nn.LayerNorm",
           "enc": "torch.nn.TransformerEncoderLayer", "enc.linear1": "torch.nn.Linear",
           "enc.norm1": "torch.nn.LayerNorm", "bn3": "torch.nn.BatchNorm3d"}


@pytest.mark.parametrize("key, ms_key, layout", [
    ("features.0.weight", "features.0.weight", ("unsqueeze:2",)),
    ("features.0.bias", "features.0.bias", ()),
    ("features.1.weight", "features.1.gamma", ()),
    ("features.1.running_var", "features.1.moving_variance", ()),
    ("embed.weight", "embed.embedding_table", ()),
    ("norm.bias", "norm.beta", ()),
    ("enc.linear1.weight", "enc.dense1.weight", ()),
    ("enc.norm1.weight", "enc.norm1.gamma", ()),
    ("enc.self_attn.in_proj_weight", "enc.self_attn.in_proj_weight", ()),
    ("bn3.running_mean", "bn3.bn2d.moving_mean", ()),
    # weight_norm / spectral_norm parameters keep torch's names; the parametrizations' map to them
    ("features.0.weight_g", "features.0.weight_g", ("unsqueeze:2@3",)),
    ("features.0.parametrizations.weight.original1", "features.0.weight_v", ("unsqueeze:2@3",)),
    ("features.0.parametrizations.weight.0._u", "features.0.weight_u", ()),
    ("enc.linear1.parametrizations.weight.original0", "enc.dense1.weight_g", ()),
])
def test_map_key_walks_owners_innermost_first(key, ms_key, layout):
    assert map_key(key, CLASSES, load_rules()) == KeyMapping(key, ms_key, layout)


def test_dropped_keys_and_layout_round_trip():
    kept, dropped = map_keys(["features.1.num_batches_tracked", "features.0.weight"], CLASSES)
    assert dropped == ["features.1.num_batches_tracked"]
    m = kept["features.0.weight"]
    w = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert m.to_ms(w).shape == (2, 3, 1, 4) == m.ms_shape(w.shape)
    assert np.array_equal(m.to_torch(m.to_ms(w)), w)
    with pytest.raises(WeightMappingError):
        m.to_torch(np.zeros((2, 3, 2, 4)))


def test_a_layout_for_one_rank_leaves_other_arrays_alone():
    """Conv1d's weight_v is its kernel under weight_norm (3-d: gets MindSpore's extra axis) and a
    vector under spectral_norm (kept); weight_g is 0-d for dim=None."""
    kept, _ = map_keys(["features.0.weight_v", "features.0.weight_g"], CLASSES)
    v, g = kept["features.0.weight_v"], kept["features.0.weight_g"]
    kernel, vector = np.ones((2, 3, 4), np.float32), np.ones(12, np.float32)
    assert v.to_ms(kernel).shape == (2, 3, 1, 4) == v.ms_shape(kernel.shape)
    assert v.to_ms(vector).shape == (12,) == v.ms_shape(vector.shape)
    assert np.array_equal(v.to_torch(v.to_ms(kernel)), kernel) and v.to_torch(vector).shape == (12,)
    assert g.to_ms(np.float32(2.0)).shape == () and g.ms_shape(()) == ()


def test_infer_against_uses_the_target_network_to_resolve_classes():
    torch_shapes = {"emb.weight": (10, 4), "fc.weight": (3, 4), "ln.weight": (4,), "ln.bias": (4,),
                    "conv.weight": (8, 2, 3), "bn.running_mean": (8,), "bn.num_batches_tracked": ()}
    ms_shapes = {"emb.embedding_table": (10, 4), "fc.weight": (3, 4), "ln.gamma": (4,), "ln.beta": (4,),
                 "conv.weight": (8, 2, 1, 3), "bn.moving_mean": (8,)}
    kept, dropped = infer_against(torch_shapes, ms_shapes)
    assert {k: m.ms_key for k, m in kept.items()} == {
        "emb.weight": "emb.embedding_table", "fc.weight": "fc.weight", "ln.weight": "ln.gamma",
        "ln.bias": "ln.beta", "conv.weight": "conv.weight", "bn.running_mean": "bn.moving_mean"}
    assert kept["conv.weight"].layout == ("unsqueeze:2",)
    assert dropped == ["bn.num_batches_tracked"]
    check_complete(kept, torch_shapes, ms_shapes)
    with pytest.raises(WeightMappingError, match="fc.bias"):
        infer_against({"fc.bias": (3,)}, ms_shapes)
    assert None in candidates("bn.num_batches_tracked", load_rules())


def test_check_complete_reports_every_mismatch():
    kept, _ = map_keys(["fc.weight", "fc.bias"], {"fc": "torch.nn.Linear"})
    with pytest.raises(WeightMappingError) as err:
        check_complete(kept, {"fc.weight": (3, 4), "fc.bias": (3,)}, {"fc.weight": (4, 3), "head.bias": (3,)})
    text = str(err.value)
    assert "fc.weight -> fc.weight: shape" in text and "fc.bias -> fc.bias: no such parameter" in text
    assert "head.bias: MindSpore parameter gets no value" in text


def test_load_definitions_skips_the_training_loop(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import math\nSIZE = 3\nclass A:\n    n = SIZE\nopen('touched', 'w')\nfor i in range(3):\n    raise SystemExit\n")
    assert load_definitions(script, "A").n == 3
    assert not (tmp_path / "touched").exists()
    with pytest.raises(WeightMappingError, match="no top-level definition"):
        load_definitions(script, "B")


# ------------------------------------------------------------ with the frameworks
def _weights(*args, cwd):
    return subprocess.run([sys.executable, "-m", "msmigrate.cli", "weights", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.framework
def test_cli_round_trip_and_loud_failures(tmp_path):
    programs = FIXTURES / "programs"
    torch_model = f"{programs / 'train_cnn.py'}:ConvNet"
    ms_model = f"{programs / 'handwritten' / 'train_cnn_ms.py'}:ConvNet"
    run_script(f"""
        import json, torch
        from msmigrate.weights import load_definitions
        torch.manual_seed(0)
        net = load_definitions({str(programs / 'train_cnn.py')!r}, "ConvNet")()
        net(torch.randn(4, 1, 8, 8))                      # non-trivial running stats
        torch.save({{"model": net.state_dict(), "epoch": 3}}, {str(tmp_path / 'm.pt')!r})
        print(json.dumps(0))
    """)
    proc = _weights("m.pt", "-o", "m.ckpt", "--key", "model", "--model", ms_model, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "every parameter matched" in proc.stdout and "dropped bn.num_batches_tracked" in proc.stdout
    proc = _weights("m.ckpt", "-o", "back.pt", "--torch-model", torch_model, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    diffs = run_script(f"""
        import json, torch, mindspore as ms
        a = torch.load({str(tmp_path / 'm.pt')!r})["model"]; b = torch.load({str(tmp_path / 'back.pt')!r})
        c = ms.load_checkpoint({str(tmp_path / 'm.ckpt')!r})
        print(json.dumps({{"round_trip": {{k: float((a[k].double() - b[k].double()).abs().max()) for k in a
                                          if k != "bn.num_batches_tracked"}},
                          "moving_mean": float(abs(c["bn.moving_mean"].asnumpy() - a["bn.running_mean"].numpy()).max()),
                          "names": sorted(c)}}))
    """)
    assert set(diffs["round_trip"]) == {"conv.weight", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                                        "fc.weight", "fc.bias"}
    assert max(diffs["round_trip"].values()) == 0.0 and diffs["moving_mean"] == 0.0
    assert diffs["names"] == ["bn.beta", "bn.gamma", "bn.moving_mean", "bn.moving_variance", "conv.weight",
                              "fc.bias", "fc.weight"]
    # a network that does not fit, a missing --key, no class information: exit 2 with the reason
    proc = _weights("m.pt", "-o", "x.ckpt", "--key", "model", "--model",
                    f"{programs / 'handwritten' / 'train_mlp_ms.py'}:MLP", cwd=tmp_path)
    assert proc.returncode == 2 and "conv.weight (4, 1, 3, 3): no parameter" in proc.stderr, proc.stderr
    proc = _weights("m.pt", "-o", "x.ckpt", "--model", ms_model, cwd=tmp_path)
    assert proc.returncode == 2 and "--key" in proc.stderr
    proc = _weights("m.pt", "-o", "x.ckpt", "--key", "model", cwd=tmp_path)
    assert proc.returncode == 2 and "--torch-model" in proc.stderr
    # a model class whose constructor takes arguments: the way to give them, not a traceback
    (tmp_path / "net.py").write_text("import torch.nn as nn\n\n\nclass Net(nn.Module):\n"
                                     "    def __init__(self, d_in, d_out):\n        super().__init__()\n"
                                     "        self.fc = nn.Linear(d_in, d_out)\n")
    proc = _weights("m.pt", "-o", "x.ckpt", "--key", "model", "--torch-model", "net.py:Net", cwd=tmp_path)
    assert proc.returncode == 2 and "net.py:Net: calling Net() with no arguments failed" in proc.stderr \
        and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "x.ckpt").exists()


@pytest.mark.framework
def test_converted_weights_give_the_same_forward():
    """Embedding, Conv1d (extra axis), BatchNorm1d, LayerNorm, TransformerEncoderLayer: eval outputs match."""
    result = run_script("""
        import json, numpy as np, torch, mindspore as ms
        from mindspore import nn as mnn
        from msmigrate.weights import check_complete, infer_against

        class T(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(11, 8)
                self.conv = torch.nn.Conv1d(8, 8, 3, padding=1)
                self.bn = torch.nn.BatchNorm1d(8)
                self.enc = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
                self.norm = torch.nn.LayerNorm(8)
            def forward(self, ids):
                h = self.bn(self.conv(self.embed(ids).transpose(1, 2))).transpose(1, 2)
                return self.norm(self.enc(h))

        class M(mnn.Cell):
            def __init__(self):
                super().__init__()
                self.embed = mnn.Embedding(11, 8)
                self.conv = mnn.Conv1d(8, 8, 3, pad_mode='pad', padding=1, has_bias=True)
                self.bn = mnn.BatchNorm1d(8)
                self.enc = mnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
                self.norm = mnn.LayerNorm((8,), epsilon=1e-5)
            def construct(self, ids):
                h = self.bn(self.conv(self.embed(ids).transpose(0, 2, 1))).transpose(0, 2, 1)
                return self.norm(self.enc(h))

        torch.manual_seed(0)
        t = T()
        t(torch.randint(0, 11, (4, 5)))                  # move the running stats away from 0/1
        t.eval()
        # class information from the MindSpore network (names and shapes), as `--model` does
        state = {k: v.numpy() for k, v in t.state_dict().items()}
        m = M(); m.set_train(False)
        shapes = {n: tuple(p.shape) for n, p in m.parameters_and_names()}
        kept, dropped = infer_against({k: v.shape for k, v in state.items()}, shapes)
        check_complete(kept, {k: v.shape for k, v in state.items()}, shapes)
        not_loaded, unused = ms.load_param_into_net(m, {km.ms_key: ms.Parameter(ms.Tensor(km.to_ms(state[k])), name=km.ms_key)
                                                         for k, km in kept.items()})
        ids = np.random.default_rng(0).integers(0, 11, (3, 5))
        want = t(torch.from_numpy(ids)).detach().numpy()
        got = m(ms.Tensor(ids.astype(np.int32))).asnumpy()
        print(json.dumps({"diff": float(np.abs(got - want).max()), "not_loaded": not_loaded, "unused": unused,
                          "dropped": dropped, "renamed": {k: km.ms_key for k, km in kept.items() if k != km.ms_key}}))
    """)
    assert result["not_loaded"] == [] and result["unused"] == []
    assert result["dropped"] == ["bn.num_batches_tracked"]
    assert result["renamed"]["embed.weight"] == "embed.embedding_table"
    assert result["renamed"]["enc.linear1.weight"] == "enc.dense1.weight"
    assert result["renamed"]["enc.norm2.bias"] == "enc.norm2.beta"
    assert result["diff"] < 1e-5


def test_children_added_to_a_sequential_by_name_map_to_their_positions():
    from msmigrate.weights import map_keys, positional_fallback, sequential_positions

    classes = {"": "torch.nn.Sequential", "linear": "torch.nn.Linear", "relu": "torch.nn.ReLU",
               "norm": "torch.nn.BatchNorm1d", "head": "__main__.Head", "head.fc": "torch.nn.Linear"}
    assert sequential_positions(classes) == {"": "", "linear": "0", "relu": "1", "norm": "2", "head": "3",
                                             "head.fc": "3.fc"}
    keys = ["linear.weight", "norm.weight", "norm.running_mean", "head.fc.bias"]
    mappings, _ = map_keys(keys, classes)
    named = {"linear.weight", "norm.gamma", "norm.moving_mean", "head.fc.bias"}
    assert positional_fallback(mappings, classes, named) == mappings      # names kept: nothing changes
    positional = {"0.weight", "2.gamma", "2.moving_mean", "3.fc.bias"}
    got = positional_fallback(mappings, classes, positional)
    assert {k: m.ms_key for k, m in got.items()} == dict(zip(keys, ["0.weight", "2.gamma", "2.moving_mean", "3.fc.bias"]))
    # a name that is neither is left as it was, for check_complete to report
    assert positional_fallback(mappings, classes, {"x.weight"})["linear.weight"].ms_key == "linear.weight"
