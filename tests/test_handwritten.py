"""The hand-written MindSpore training programs (fixtures/programs/handwritten/loop_*_ms.py) run
on CPU, print finite losses for every step, and print them in the format of the torch program
they replace (the benchmark's reference for what the converter should produce)."""
from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from isolated import ENV

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "fixtures" / "programs"
HANDWRITTEN = PROGRAMS / "handwritten"
NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|nan|inf", re.IGNORECASE)
# program -> number of training steps it prints a loss for
STEPS = {"loop_transformer": 8, "loop_amp": 6, "loop_accum": 16, "loop_trainer": 8,
         "loop_multiloss": 12, "loop_gru": 6}


def _run(cmd: list[str], env: dict, cwd: Path, timeout: float = 240) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def _shape(lines: list[str]) -> list[str]:
    """The printed format with every number replaced by a placeholder."""
    return [NUMBER.sub("#", line) for line in lines]


def _loss_values(lines: list[str]) -> list[float]:
    return [float(v) for line in lines if "loss" in line for v in NUMBER.findall(line)]


def _printed(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.strip()]


def test_every_loop_program_has_a_handwritten_counterpart():
    torch_programs = {p.stem for p in PROGRAMS.glob("loop_*.py")}
    handwritten = {p.stem.removesuffix("_ms") for p in HANDWRITTEN.glob("loop_*_ms.py")}
    assert torch_programs <= handwritten, f"missing: {sorted(torch_programs - handwritten)}"
    assert set(STEPS) | {"loop_ddp"} == torch_programs


# prints, as JSON, what every torch loop program prints (one process: torch is imported once)
TORCH_OUTPUTS = """
import contextlib, io, json, runpy, sys, warnings
warnings.simplefilter("ignore")
printed = {}
for path in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(path, run_name="__main__")
    printed[path] = out.getvalue()
print(json.dumps(printed))
"""


@pytest.fixture(scope="module")
def torch_printed(tmp_path_factory) -> dict[str, list[str]]:
    paths = [str(PROGRAMS / f"{name}.py") for name in STEPS]
    stdout = _run([sys.executable, "-c", TORCH_OUTPUTS, *paths], ENV, tmp_path_factory.mktemp("torch"))
    return {Path(path).stem: _printed(text) for path, text in json.loads(stdout.splitlines()[-1]).items()}


@pytest.mark.framework
@pytest.mark.parametrize("name,use_amp", [(name, "0") for name in STEPS] + [("loop_amp", "1")])
def test_handwritten_program_runs_and_prints_finite_losses(name, use_amp, tmp_path, torch_printed):
    env = {**ENV, "USE_AMP": use_amp}
    ms_lines = _printed(_run([sys.executable, str(HANDWRITTEN / f"{name}_ms.py")], env, tmp_path))
    assert _shape(ms_lines) == _shape(torch_printed[name])      # the torch program's output format
    losses = _loss_values(ms_lines)
    assert sum(line.startswith("loss ") for line in ms_lines) == STEPS[name]
    assert losses and all(math.isfinite(v) for v in losses), ms_lines
    if name == "loop_trainer":                   # the model restored from the checkpoint evaluates
        assert ms_lines[-1].startswith("eval ") and math.isfinite(float(ms_lines[-1].split()[1]))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# runs the program, then prints its final parameters: identical on every rank only if the
# gradients really were all-reduced (each rank sees different samples)
DDP_WRAPPER = """
import json, runpy, sys
state = runpy.run_path(sys.argv[1], run_name="__main__")
print("params " + json.dumps([p.asnumpy().ravel().tolist() for p in state["model"].trainable_params()]))
"""


@pytest.mark.framework
@pytest.mark.xdist_group("distributed")   # two gloo/mccl jobs at once on 2 cores abort each other
@pytest.mark.skipif(shutil.which("msrun") is None, reason="msrun (MindSpore's launcher) is not on PATH")
def test_handwritten_ddp_runs_on_two_msrun_workers(tmp_path):
    log_dir = tmp_path / "logs"
    wrapper = tmp_path / "run_and_dump.py"
    wrapper.write_text(DDP_WRAPPER)
    _run(["msrun", "--worker_num=2", "--local_worker_num=2", "--master_addr=127.0.0.1",
          f"--master_port={_free_port()}", "--join=True", f"--log_dir={log_dir}",
          str(wrapper), str(HANDWRITTEN / "loop_ddp_ms.py")], ENV, tmp_path, timeout=300)
    losses, params = {}, {}
    for rank in (0, 1):
        log = (log_dir / f"worker_{rank}.log").read_text().splitlines()
        lines = [line for line in log if re.fullmatch(r"rank \d+ loss " + NUMBER.pattern, line)]
        assert _shape(lines) == [f"rank {rank} loss #"] * 4, lines
        losses[rank] = _loss_values(lines)
        assert all(math.isfinite(v) for v in losses[rank])
        params[rank] = np.concatenate([np.asarray(p) for p in json.loads(
            next(line for line in log if line.startswith("params "))[len("params "):])])
    assert losses[0] != losses[1]                # each rank trains on its own half of every batch
    np.testing.assert_allclose(params[0], params[1], rtol=0, atol=1e-6)
    # both programs start from the same numpy-drawn weights: torchrun/gloo must print the same losses
    torch_logs = tmp_path / "torch_logs"   # one stdout file per rank: lines never interleave
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                           f"--master_port={_free_port()}", f"--log-dir={torch_logs}", "--redirects=3",
                           str(PROGRAMS / "loop_ddp.py")], capture_output=True, text=True, timeout=300,
                          env=ENV, cwd=tmp_path)
    rank_logs = "\n".join(p.read_text() for p in sorted(torch_logs.rglob("*.log")))
    # gloo sometimes aborts while tearing down after the program has finished; the 4 losses per
    # rank are still required below
    assert proc.returncode == 0 or "terminate called without an active exception" in rank_logs, \
        (proc.stderr[-2000:], rank_logs[-3000:])
    torch_out = "\n".join(p.read_text() for p in sorted(torch_logs.rglob("stdout.log")))
    for rank in (0, 1):
        torch_losses = [float(v) for v in re.findall(rf"rank {rank} loss (-?\d+\.\d{{6}})", torch_out)]
        assert len(torch_losses) == 4, torch_out
        np.testing.assert_allclose(losses[rank], torch_losses, rtol=1e-5, atol=2e-6)
