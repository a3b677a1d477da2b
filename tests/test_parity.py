"""`msmigrate parity`: the hand-written counterparts pass, the planted bugs fail at the right
step and layer, the command line, and the comparison logic itself (synthetic records, no
frameworks). Converted programs: tests/test_parity_programs.py."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from msmigrate.parity.check import Options, compare, run_parity
from msmigrate.parity.report import format_text, write_plot

from conftest import FIXTURES

PROGRAMS = FIXTURES / "programs"
HANDWRITTEN = PROGRAMS / "handwritten"


def parity(torch_name, ms_name=None, **kw):
    against = HANDWRITTEN / ms_name if ms_name else None
    return run_parity(PROGRAMS / torch_name, against, Options(timeout=300, **kw))


# ------------------------------------------------------------ fixtures pass
@pytest.mark.framework
@pytest.mark.parametrize("name, steps, batches", [("mlp", 8, 0), ("cnn", 8, 8), ("lstm", 6, 0)])
def test_handwritten_counterpart_passes(name, steps, batches):
    r = parity(f"train_{name}.py", f"train_{name}_ms.py")
    assert r["passed"], format_text(r)
    assert r["torch_steps"] == r["ms_steps"] == steps
    assert r["max_abs_diff"] < 1e-5 and r["first_divergence"] is None
    assert all(row["compared_state"] and row["state_max_abs"] < 1e-5 for row in r["steps"])
    assert r["setup"]["torch_batches_recorded"] == batches
    if name == "cnn":  # shuffled DataLoader vs shuffled MindSpore dataset: orders differ, replayed
        # where the loader yields (the step then takes torch's batch as it is)
        assert r["setup"]["replay"]["from_loader"] == 8 and r["setup"]["replay"]["same"] == 8
        assert r["setup"]["weights_dropped"] == ["bn.num_batches_tracked"]
        assert r["setup"]["dropout_disabled"]["torch"] == {"drop": 0.25}


# ------------------------------------------------------------ planted bugs
@pytest.mark.framework
def test_gelu_tanh_default_points_at_the_activation():
    r = parity("train_mlp.py", "train_mlp_bug_gelu_ms.py", grads=True, steps=2)
    assert not r["passed"]
    f = r["first_divergence"]
    assert (f["step"], f["name"], f["kind"]) == (1, "act", "layer output"), f
    acts = {a["name"]: a for a in r["activations"]}
    assert acts["fc1"]["ok"] and not acts["act"]["ok"] and 1e-5 < acts["act"]["max_abs"] < 1e-2
    assert not [g for g in r["grads"] if g["name"] == "fc1.weight"][0]["ok"]


@pytest.mark.framework
def test_positional_keep_prob_points_at_the_dropout_layer():
    r = parity("train_mlp.py", "train_mlp_bug_keep_prob_ms.py", steps=2)
    assert not r["passed"]
    f = r["first_divergence"]
    assert (f["step"], f["name"], f["kind"]) == (1, "drop", "dropout"), f
    assert "p=0.9" in f["detail"] and "p=0.1" in f["detail"]


@pytest.mark.framework
def test_bn_momentum_left_unconverted_points_at_the_running_stats():
    r = parity("train_cnn.py", "train_cnn_bug_bn_momentum_ms.py", steps=2)
    assert not r["passed"]
    f = r["first_divergence"]
    assert f["step"] == 1 and f["kind"] == "state" and f["name"].startswith("bn.moving_"), f
    assert r["steps"][0]["loss_ok"]        # the training loss alone would not show it


@pytest.mark.framework
def test_adam_eps_semantics_diverge_at_the_first_update():
    r = parity("train_cnn.py", "train_cnn_bug_adam_eps_ms.py", steps=2)
    assert not r["passed"]
    f = r["first_divergence"]
    assert f["step"] == 1 and f["kind"] == "state", f
    assert f["name"] in {"conv.weight", "bn.gamma", "bn.beta", "fc.weight", "fc.bias"}
    assert r["steps"][0]["loss_ok"]        # same weights, same loss: only the update differs


@pytest.mark.framework
def test_missing_set_train_points_at_batchnorm():
    r = parity("train_cnn.py", "train_cnn_bug_no_set_train_ms.py", grads=True, steps=2)
    assert not r["passed"]
    f = r["first_divergence"]
    assert (f["step"], f["name"]) == (1, "bn"), f
    assert not r["steps"][0]["loss_ok"]
    assert [c for c in r["config"] if c["kind"] == "mode" and "bn" in c["names"]]


# ------------------------------------------------------------ command line
def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "msmigrate.cli", "parity", *map(str, args)],
                          capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.mark.framework
def test_cli_json_exit_1_and_plot(tmp_path):
    png = tmp_path / "parity.png"
    proc = _cli(PROGRAMS / "train_lstm.py", "--against", HANDWRITTEN / "train_lstm_ms.py",
                "--steps", "2", "--atol", "0", "--rtol", "1e-9", "--json", "--plot", png)
    assert proc.returncode == 1, proc.stderr      # float noise cannot meet rtol 1e-9, atol 0
    r = json.loads(proc.stdout)
    assert r["torch_steps"] == 2 and r["first_divergence"]["step"] == 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.framework
def test_cli_table_exit_0():
    proc = _cli(PROGRAMS / "train_mlp.py", "--against", HANDWRITTEN / "train_mlp_ms.py", "--steps", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "torch loss" in proc.stdout and "PASS" in proc.stdout
    assert "dropout turned off in both runs" in proc.stdout


@pytest.mark.framework
def test_cli_exit_2_when_a_program_fails(tmp_path):
    bad = tmp_path / "bad_ms.py"
    bad.write_text("raise RuntimeError('boom')\n")
    proc = _cli(PROGRAMS / "train_mlp.py", "--against", bad, "--steps", "1")
    assert proc.returncode == 2 and "boom" in proc.stderr


@pytest.mark.framework
def test_cli_exit_2_when_the_torch_program_fails(tmp_path):
    bad = tmp_path / "train.py"
    bad.write_text("raise SystemExit('not a training script')\n")
    proc = _cli(bad, "--against", bad)
    assert proc.returncode == 2 and "not a training script" in proc.stderr


# ------------------------------------------------------------ comparison logic
def _records(t_losses, m_losses, t_state, m_state, **meta):
    tmeta = {"losses": t_losses, "init_keys": list(t_state[0]), "module_classes": {"": "x.Net", "bn": "torch.nn.BatchNorm1d"},
             "dropout": meta.get("tdrop", {}), "training": {}, "grads": []}
    mmeta = {"losses": m_losses, "dropout": meta.get("mdrop", {}), "training": {}, "grads": []}
    tarr = {f"state/{i + 1}/{k}": np.asarray(v, np.float32) for i, s in enumerate(t_state) for k, v in s.items()}
    marr = {f"state/{i + 1}/{k}": np.asarray(v, np.float32) for i, s in enumerate(m_state) for k, v in s.items()}
    tarr.update(meta.get("tnoise", {}))
    return tmeta, tarr, mmeta, marr


def test_compare_maps_names_and_finds_first_divergence():
    t_state = [{"fc.weight": [1.0, 2.0], "bn.running_mean": [0.1]}, {"fc.weight": [1.1, 2.0], "bn.running_mean": [0.2]}]
    m_state = [{"fc.weight": [1.0, 2.0], "bn.moving_mean": [0.1]}, {"fc.weight": [1.1, 2.0], "bn.moving_mean": [0.25]}]
    r = compare(*_records([1.0, 0.9], [1.0, 0.9], t_state, m_state), Options())
    assert not r["passed"]
    assert r["first_divergence"] == {"step": 2, "kind": "state", "name": "bn.moving_mean",
                                     "detail": "bn.moving_mean after the step differs by 0.05",
                                     "relative": pytest.approx(0.05 / 0.2)}
    assert [row["state_ok"] for row in r["steps"]] == [True, False]


def test_compare_equal_infinities_and_nans_are_equal():
    """A causal mask buffer of -inf: -inf minus -inf is NaN, which compared as a difference."""
    inf = float("inf")
    t_state = [{"mask": [0.0, -inf, -inf], "w": [1.0, float("nan")]}]
    r = compare(*_records([1.0], [1.0], t_state, [dict(t_state[0])]), Options())
    assert r["passed"], r["first_divergence"]
    r = compare(*_records([1.0], [1.0], t_state, [{"mask": [0.0, -inf, inf], "w": [1.0, float("nan")]}]), Options())
    assert not r["passed"] and r["first_divergence"]["name"] == "mask"


def test_compare_loss_tolerance_and_missing_steps():
    s = [{"fc.weight": [1.0]}] * 3
    r = compare(*_records([1.0, 1.0, 1.0], [1.00005, 1.0], s, s[:2]), Options(rtol=1e-4, atol=0))
    assert [row["loss_ok"] for row in r["steps"]] == [True, True, False]
    assert r["first_divergence"]["step"] == 3 and "fewer steps" in r["first_divergence"]["detail"]
    r = compare(*_records([1.0], [1.001], s[:1], s[:1]), Options(rtol=1e-4, atol=1e-5))
    assert r["first_divergence"]["kind"] == "loss" and r["max_abs_diff"] == pytest.approx(1e-3, rel=1e-3)


def test_compare_widens_the_tolerance_by_torchs_own_sensitivity_to_rounding():
    """A difference torch's own training makes of a rounding change of its initial weights (a
    second torch run) is no divergence; twice that distance and more is."""
    t = [{"fc.weight": [1.0, 5.0]}, {"fc.weight": [1.1, 5.0]}]
    m = [{"fc.weight": [1.0, 5.0]}, {"fc.weight": [1.1, 5.01]}]
    records = _records([1.0, 0.9], [1.0, 0.9004], t, m)
    assert compare(*records, Options())["first_divergence"]["step"] == 2
    moved = {(2, "fc.weight"): 0.006, (2, None): 0.0003}
    r = compare(*records, Options(), moved)
    assert r["passed"] and set(r["within_rounding"]) == {"fc.weight", "(loss)"}
    r = compare(*records, Options(), {(2, "fc.weight"): 0.004, (2, None): 0.0003})
    assert r["first_divergence"]["name"] == "fc.weight"


def test_compare_dropout_rate_and_tiny_gradient_mask():
    s = [{"fc.weight": [1.0, 5.0]}]
    m = [{"fc.weight": [1.0, 5.3]}]
    noise = {"noise/1/fc.weight": np.array([False, True])}
    r = compare(*_records([1.0], [1.0], s, m, tnoise=noise), Options())
    assert r["passed"] and r["tiny_grad_elements"] == {"fc.weight": 1}
    r = compare(*_records([1.0], [1.0], s, s, tdrop={"drop": 0.1}, mdrop={"drop": 0.9}), Options())
    assert not r["passed"] and r["first_divergence"]["kind"] == "dropout"


def test_compare_pairs_sequential_children_added_by_name_by_position():
    """`conv.add_module("drop", nn.Dropout(0.5))` converts to `conv.append(nn.Dropout(p=0.5))`,
    which MindSpore names `conv.1`: the rate and the training mode are compared there (the
    end-to-end program: fixtures/programs/train_sequential_add_module.py)."""
    s = [{"fc.weight": [1.0]}]
    classes = {"": "torch.nn.Sequential", "conv": "torch.nn.Sequential", "conv.lin": "torch.nn.Linear",
               "conv.drop": "torch.nn.Dropout", "fc": "torch.nn.Linear"}

    def records(mdrop, mtraining):
        tmeta, tarr, mmeta, marr = _records([1.0], [1.0], s, s, tdrop={"conv.drop": 0.5}, mdrop=mdrop)
        tmeta["module_classes"] = classes
        tmeta["training"] = {"conv.drop": True}
        mmeta["training"] = mtraining
        return tmeta, tarr, mmeta, marr

    r = compare(*records({"0.1": 0.5}, {"0.1": True}), Options())
    assert r["passed"] and not r["config"], r["config"]
    r = compare(*records({"0.1": 0.2}, {"0.1": True}), Options())
    assert r["first_divergence"]["kind"] == "dropout" and "p=0.2" in r["first_divergence"]["detail"]
    r = compare(*records({"0.1": 0.5}, {"0.1": False}), Options())
    assert r["first_divergence"]["kind"] == "mode"


def test_report_and_plot(tmp_path):
    s = [{"fc.weight": [1.0]}] * 2
    r = compare(*_records([1.0, 0.5], [1.0, 0.6], s, s), Options())
    r["setup"] = {"torch_script": "t.py", "mindspore_script": "m.py", "converted": False, "torch_model": "Net",
                  "ms_model": "Net", "weights_loaded": 1, "weights_dropped": [],
                  "dropout_disabled": {"torch": {}, "mindspore": {}, "functional_calls": 0},
                  "torch_batches_recorded": 0, "replay": {}}
    text = format_text(r)
    assert "FAIL: first divergence at step 2" in text and "0.5" in text and "0.6" in text
    write_plot(r, tmp_path / "p.png")
    write_plot(r, tmp_path / "p.svg")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert "<polyline" in (tmp_path / "p.svg").read_text()


def test_compare_points_at_the_data_when_the_first_input_differs():
    s = [{"fc.weight": [1.0]}]
    tmeta, tarr, mmeta, marr = _records([1.0], [1.5], s, s)
    for meta, arrays, batch in ((tmeta, tarr, [1, 2, 3]), (mmeta, marr, [1, 2, 4])):
        meta["activations"] = [{"name": "(input)", "cls": "batch"}, {"name": "fc", "cls": "Linear"}]
        arrays["act/0"] = np.array(batch)
        arrays["act/1"] = np.array([0.5 * b for b in batch], np.float32)
    r = compare(tmeta, tarr, mmeta, marr, Options(grads=True))
    assert r["first_divergence"]["kind"] == "data" and "no DataLoader" in r["first_divergence"]["detail"]
    assert [a["ok"] for a in r["activations"]] == [False, False]


@pytest.mark.framework
def test_cli_gives_the_script_its_own_arguments(tmp_path):
    """`msmigrate parity train.py -- --steps 3 --lr 0.01`: both runs parse the same command line
    (without it the program would run its default 50 steps at lr 0.5)."""
    script = tmp_path / "train_args.py"
    script.write_text(
        "import argparse\nimport numpy as np\nimport torch\nimport torch.nn as nn\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--steps', type=int, default=50)\n"
        "parser.add_argument('--lr', type=float, default=0.5)\nargs = parser.parse_args()\n"
        "rng = np.random.default_rng(1)\n"
        "X = torch.from_numpy(rng.standard_normal((8, 3)).astype(np.float32))\n"
        "Y = torch.from_numpy(rng.standard_normal((8, 1)).astype(np.float32))\n"
        "model = nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=args.lr)\n"
        "for step in range(args.steps):\n    loss = ((model(X) - Y) ** 2).mean()\n"
        "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n")
    proc = _cli(script, "--json", "--", "--steps", "3", "--lr", "0.01")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = json.loads(proc.stdout)
    assert r["torch_steps"] == r["ms_steps"] == 3
    # lr 0.01: the loss barely moves over 3 steps (lr 0.5 would change it a lot)
    losses = [s["torch_loss"] for s in r["steps"]]
    assert abs(losses[2] - losses[0]) < 0.1 * losses[0]


@pytest.mark.framework
def test_every_network_of_a_program_is_compared(tmp_path):
    """A program training one network per optimizer: each network gets torch's initial weights
    and is compared, so a wrong setting of the second network's optimizer (momentum 0.7 for 0.8)
    shows at that network's second update (step 6: four networks a batch), named by its prefix."""
    from msmigrate import convert_source

    source = PROGRAMS / "train_nets_side_by_side.py"
    code = convert_source(source.read_text(), path=str(source)).code
    assert code.count("momentum=0.8") == 1
    planted = tmp_path / "planted_ms.py"
    planted.write_text(code.replace("momentum=0.8", "momentum=0.7"))
    r = run_parity(source, planted, Options(steps=8, timeout=300))
    assert [n["ms"] for n in r["setup"]["networks"]] == ["Net", "Net", "Wide"]
    assert r["first_divergence"]["step"] == 6 and r["first_divergence"]["name"].startswith("#1.")
    assert all(row["loss_ok"] and row["state_ok"] for row in r["steps"][:5])


# two networks, each loss's backward pass on its own line, then both optimizers (MorvanZhou's
# dropout-vs-not comparison): msmigrate convert makes one step on the sum of the losses whose
# gradients each optimizer applies in its own compiled `apply_<optimizer>`
TWO_BACKWARD = '''import numpy as np
import torch

rng = np.random.default_rng(3)
x = torch.from_numpy(np.linspace(-1, 1, 16, dtype=np.float32)[:, None])
y = x + DATA
torch.manual_seed(0)
plain = torch.nn.Sequential(torch.nn.Linear(1, 12), torch.nn.ReLU(), torch.nn.Linear(12, 1))
dropped = torch.nn.Sequential(torch.nn.Linear(1, 12), torch.nn.Dropout(0.5), torch.nn.ReLU(), torch.nn.Linear(12, 1))
opt_plain = torch.optim.Adam(plain.parameters(), lr=0.01)
opt_dropped = torch.optim.Adam(dropped.parameters(), lr=0.01)
loss_func = torch.nn.MSELoss()
for t in range(4):
    loss_plain = loss_func(plain(x), y)
    loss_dropped = loss_func(dropped(x), y)
    opt_plain.zero_grad()
    opt_dropped.zero_grad()
    loss_plain.backward()
    loss_dropped.backward()
    opt_plain.step()
    opt_dropped.step()
    if t % 2 == 0:
        dropped.eval()
        print(f"loss {loss_func(dropped(x), y).item():.6f}")
        dropped.train()
'''


@pytest.mark.framework
def test_backward_passes_before_one_optimizer_step_are_one_step(tmp_path):
    """torch's two backward passes of one iteration are one step (the loss their sum), as in the
    conversion; MindSpore's state is taken after its optimizers applied the step's gradients."""
    script = tmp_path / "two_backward.py"
    script.write_text(TWO_BACKWARD.replace("DATA", "torch.from_numpy(0.3 * rng.standard_normal((16, 1)).astype(np.float32))"))
    r = run_parity(script, None, Options(steps=3, timeout=300))
    assert r["passed"], format_text(r)
    assert r["torch_steps"] == r["ms_steps"] == 3 and r["setup"]["joined_backward"] == 3
    assert [n["ms"] for n in r["setup"]["networks"]] == ["SequentialCell"]
    assert all(row["compared_state"] and row["state_max_abs"] < 1e-5 for row in r["steps"])


@pytest.mark.framework
def test_backward_passes_with_a_forward_between_them_are_one_step():
    """A GAN's discriminator: one backward pass, a forward of the same network, a second backward
    pass, then its optimizer step: the state is taken after that step, not at the forward."""
    r = run_parity(PROGRAMS / "gan_two_backward.py", None, Options(steps=4, timeout=300))
    assert r["passed"], format_text(r)
    assert r["torch_steps"] == r["ms_steps"] == 4 and r["setup"]["joined_backward"] == 2


@pytest.mark.framework
def test_data_drawn_from_torch_random_generator_is_replayed(tmp_path):
    """torch.normal data (ops.normal in the conversion) and a weight drawn by normal_ outside
    __init__ (ops.randn_like * std + mean): MindSpore's calls return torch's draws, in order."""
    script = tmp_path / "two_backward_random.py"
    script.write_text(TWO_BACKWARD.replace("DATA", "0.3 * torch.normal(torch.zeros(16, 1), torch.ones(16, 1))")
                      .replace("opt_plain = ", "dropped[0].weight.data.normal_(0, 0.5)\nopt_plain = ", 1))
    r = run_parity(script, None, Options(steps=2, timeout=300))
    assert r["passed"], format_text(r)
    d = r["setup"]["draws"]
    assert d["torch_draws"] == d["replayed"] == 2 and d["stopped"] is None
    assert d["calls"] == {"ops.normal": 1, "ops.randn_like": 1}
    assert "random draws: 2 of torch's 2 draws" in format_text(r)


@pytest.mark.framework
def test_batches_drawn_by_randint_inside_the_step_are_replayed():
    """karpathy's get_batch: torch.randint offsets for an evaluation, then in every step, where the
    conversion draws them inside the compiled step (run uncompiled to replay them)."""
    r = run_parity(PROGRAMS / "train_randint_batches.py", None, Options(steps=3, timeout=300))
    assert r["passed"], format_text(r)
    d = r["setup"]["draws"]
    # 3 evaluation batches, one per step compared, and the one drawn for step 4 before it stops
    assert d["replayed"] == d["torch_draws"] == 7 and d["calls"] == {"ops.randint": 7}, d
    assert d["uncompiled_step"] and "train_step ran uncompiled" in format_text(r)


@pytest.mark.framework
def test_a_step_run_uncompiled_for_its_draws_must_still_compile(tmp_path):
    """Draws in the loop run the step uncompiled (replayed); a step MindSpore cannot compile (a
    Cell calling itself, `self(x)`, as an older conversion wrote it) fails as the program does,
    where parity said PASS."""
    from msmigrate.parity.check import _convert

    converted = _convert(PROGRAMS / "train_flow_self_call.py", tmp_path)
    text = converted.read_text()
    assert "self.construct(x)" in text
    converted.write_text(text.replace("self.construct(x)", "self(x)"))
    r = run_parity(PROGRAMS / "train_flow_self_call.py", converted, Options(steps=2, timeout=300))
    assert not r["passed"]
    f = r["first_divergence"]
    assert f["kind"] == "compile" and "not callable" in f["detail"], format_text(r)
    good = run_parity(PROGRAMS / "train_flow_self_call.py", None, Options(steps=2, timeout=300))
    assert good["passed"] and good["setup"]["draws"]["uncompiled_step"], format_text(good)


@pytest.mark.framework
def test_noise_drawn_in_forward_is_replayed_into_construct():
    """A VAE's torch.randn_like in forward (and a denoising input's in the loop): the k-th
    ops.randn_like of the uncompiled step, in construct, returns torch's k-th draw."""
    r = run_parity(PROGRAMS / "train_vae_noise.py", None, Options(steps=3, timeout=300))
    assert r["passed"], format_text(r)
    d = r["setup"]["draws"]
    # per step the input's noise and the forward's; step 4's input noise is drawn before it stops
    assert d["replayed"] == 7 and d["torch_draws"] == 8 and d["stopped"] is None, d


@pytest.mark.framework
def test_replay_stops_at_a_draw_of_another_kind_and_says_where(tmp_path):
    """A MindSpore program drawing with another function than the conversion's (ops.rand for
    torch.randn): replaying stops there, the report names both calls and lines, and the
    divergence that follows is named as random data."""
    from msmigrate.parity.check import _convert

    script = tmp_path / "two_backward_randn.py"
    script.write_text(TWO_BACKWARD.replace("DATA", "0.3 * torch.randn(16, 1)")
                      .replace("y = x +", "noise = torch.randn(16, 1)\ny = x + noise +", 1))
    converted = _convert(script, tmp_path / "conv")
    text = converted.read_text()
    assert text.count("ops.randn((16, 1))") == 2, text
    against = tmp_path / "against" / script.name
    against.parent.mkdir()
    # the second draw (the data's) by ops.rand: the first is replayed, the second stops the replay
    against.write_text(text[::-1].replace("ops.randn((16, 1))"[::-1], "ops.rand((16, 1))"[::-1], 1)[::-1])
    r = run_parity(script, against, Options(steps=2, timeout=300))
    d = r["setup"]["draws"]
    assert d["replayed"] == 1 and d["stopped"]["ms_call"] == "ops.rand" and d["stopped"]["torch_line"] == 7, d
    line = next(ln for ln in format_text(r).splitlines() if "replay stopped" in ln)
    assert "stopped at draw 2: MindSpore ops.rand at line" in line and "torch torch.randn at line 7" in line, line
    f = r["first_divergence"]
    assert not r["passed"] and f["inherent"] == "random data" and "torch.randn at line 7" in f["detail"], f


def test_compare_state_tolerance_scales_with_the_tensor():
    """A weight near zero is allowed the error of its tensor's scale: an optimizer step moves it as
    far as its neighbours, with the same float32 noise (deeplearningzerotoall's 2-layer RNN under
    Adam at lr 0.1 missed by 1.7e-5 at a weight of -0.05, torch's own float32 run by 0.7e-5)."""
    t = [{"rnn.weight_hh_l1": [0.4, -0.05]}]
    r = compare(*_records([1.0], [1.0], t, [{"rnn.weight_hh_l1": [0.4, -0.05 + 1.7e-5]}]), Options())
    assert r["passed"], r["first_divergence"]
    r = compare(*_records([1.0], [1.0], t, [{"rnn.weight_hh_l1": [0.4, -0.05 + 6e-5]}]), Options())
    assert r["first_divergence"]["name"] == "rnn.weight_hh_l1"
    assert r["first_divergence"]["relative"] == pytest.approx(6e-5 / 0.4, rel=1e-3)


@pytest.mark.framework
def test_the_rounding_run_starts_from_torchs_weights_rounded_differently(tmp_path):
    """The second torch run (measuring torch's own sensitivity to float32 rounding) loads the
    first run's initial weights and changes them by a unit in the last place: the same first
    loss to float32 precision, states that moved by rounding only."""
    from msmigrate.parity.check import _run_runner, sensitivity

    script = (PROGRAMS / "train_mlp.py").resolve()
    opts = Options(steps=2)
    tmeta, tarr = _run_runner("torch", script, tmp_path / "torch", opts, None, tmp_path)
    pmeta, parr = _run_runner("torch", script, tmp_path / "torch_rounded", opts, tmp_path / "torch", tmp_path,
                              perturb=True)
    assert pmeta["losses"][0] == pytest.approx(tmeta["losses"][0], rel=1e-6)
    moved = sensitivity(tmeta, tarr, pmeta, parr)
    states = [v for (step, name), v in moved.items() if name is not None]
    assert states and 0 < max(states) < 1e-5, moved
    # the second rounding (run where the first leaves a difference unexplained) is another one
    pmeta2, parr2 = _run_runner("torch", script, tmp_path / "torch_rounded2", opts, tmp_path / "torch", tmp_path,
                                perturb=2)
    assert pmeta2["losses"][0] == pytest.approx(tmeta["losses"][0], rel=1e-6)
    moved2 = sensitivity(tmeta, tarr, pmeta2, parr2)
    assert set(moved2) == set(moved) and moved2 != moved and 0 < max(moved2.values()) < 1e-5


_SRC_MODEL = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc(x)
"""
_SRC_TRAIN = """import torch
from src.model import Net

torch.manual_seed(0)
x, y = torch.randn(8, 3), torch.randn(8, 1)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(loss.item())
"""


@pytest.mark.framework
def test_src_layout_run_with_pythonpath_imports_each_trees_modules(tmp_path, monkeypatch):
    """A `src/` project run from its root as `PYTHONPATH=. python src/train.py` (tn-ae-creditcard):
    the converted program imports the converted `src.model`, not the torch one sitting in the
    working directory (`-m` put it first on sys.path; PYTHONPATH named the torch tree)."""
    torch_root, ms_root = tmp_path / "torch", tmp_path / "mindspore"
    (torch_root / "src").mkdir(parents=True)
    (torch_root / "src" / "__init__.py").write_text("")
    (torch_root / "src" / "model.py").write_text(_SRC_MODEL)
    (torch_root / "src" / "train.py").write_text(_SRC_TRAIN)
    conv = subprocess.run([sys.executable, "-m", "msmigrate.cli", "convert", str(torch_root), "-o", str(ms_root),
                           "-q", "--no-cache"], capture_output=True, text=True, cwd=tmp_path)
    assert conv.returncode == 0, conv.stderr
    monkeypatch.chdir(torch_root)
    monkeypatch.setenv("PYTHONPATH", ".")
    r = run_parity(torch_root / "src" / "train.py", ms_root / "src" / "train.py", Options(steps=3, timeout=300))
    assert r["passed"], format_text(r)
    assert r["ms_steps"] == 3


def test_a_script_importing_a_directory_beside_it_converts_with_its_project(tmp_path):
    """`from model.resnet import resnet20` with no model/__init__.py (a namespace package, as in
    real projects): parity converts the whole directory, else the MindSpore program finds no
    `model` (ModuleNotFoundError). An installed module of a name no file beside it has is none."""
    from msmigrate.parity.check import _imports_siblings
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "resnet.py").write_text("def resnet20():\n    pass\n")
    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom model.resnet import resnet20\n")
    assert _imports_siblings(script)
    script.write_text("import torch\nimport model.resnet\n")
    assert _imports_siblings(script)
    script.write_text("import torch\nfrom model import resnet\n")
    assert _imports_siblings(script)
    script.write_text("import torch\nimport numpy as np\n")
    assert not _imports_siblings(script)


def test_the_rounding_run_takes_the_first_runs_batches_in_order(tmp_path):
    """The second torch run (torch's own sensitivity to rounding) trains on the batches the first
    recorded, step by step: a random crop drew other data, the first losses differed and the
    sensitivity was never measured (a deep CIFAR ResNet then failed on float32 noise)."""
    from msmigrate.parity.runner import _first_run_batches
    (tmp_path / "record.json").write_text(json.dumps({"batches": [1, 3]}))
    np.savez(tmp_path / "arrays.npz", **{"batch/1/0": np.zeros(2), "batch/1/1": np.ones(1),
                                         "batch/3/0": np.full(2, 3.0), "batch/2/0": np.full(2, 9.0)})
    batches = _first_run_batches({"torch_record": str(tmp_path)})
    assert [[a.tolist() for a in b] for b in batches] == [[[0.0, 0.0], [1.0]], [[3.0, 3.0]]]
