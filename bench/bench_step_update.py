"""MindSpore 2.10 CPU: the cost of updating parameters inside a compiled train step, the cause
of mz-406-gan's timeout in the corpus (10,000 iterations of two tiny GAN steps). One compiled
step of a 2-layer generator scored by a discriminator (MorvanZhou's 406_GAN shapes), computing
loss and gradients, then: returning the gradients (the baseline: the same work, no parameter
written), ops.assign_sub of lr * grad, nn.SGD, nn.Adam, and the same model in
nn.TrainOneStepCell. ("no update" returns the loss alone: the graph then drops the gradients.) Each variant in its own subprocess with one compute
thread; median step time over several repeats, printed as ratios to the baseline of this run.

    python bench/bench_step_update.py [--steps 200] [--repeats 3] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "GLOG_v": "3"}
PROGRAM = '''
import sys, time
import mindspore as ms
from mindspore import nn, ops
variant, steps = sys.argv[1], int(sys.argv[2])
G = nn.SequentialCell(nn.Dense(5, 128), nn.ReLU(), nn.Dense(128, 15))
D = nn.SequentialCell(nn.Dense(15, 128), nn.ReLU(), nn.Dense(128, 1), nn.Sigmoid())
G.update_parameters_name("G.")
D.update_parameters_name("D.")
params = G.trainable_params()
opt = {"nn.SGD": lambda: nn.SGD(params, learning_rate=1e-4),
       "nn.Adam": lambda: nn.Adam(params, learning_rate=1e-4)}.get(variant, lambda: None)()


def forward(x):
    return ops.mean(ops.log(1. - D(G(x))))


grad_fn = ms.value_and_grad(forward, None, params)
if variant == "TrainOneStepCell":
    class Loss(nn.Cell):
        def __init__(self):
            super().__init__()
            self.g, self.d = G, D

        def construct(self, x):
            return ops.mean(ops.log(1. - self.d(self.g(x))))

    cell = nn.TrainOneStepCell(Loss(), nn.SGD(params, learning_rate=1e-4))
    cell.set_train()
    step = cell
else:
    @ms.jit
    def step(x):
        loss, grads = grad_fn(x)
        if variant == "assign_sub":
            for p, g in zip(params, grads):
                ops.assign_sub(p, g * 1e-4)
        elif opt is not None:
            opt(grads)
        elif variant == "grads returned":
            return loss, grads
        return loss
x = ops.randn((64, 5))
for _ in range(20):
    step(x)
start = time.perf_counter()
for _ in range(steps):
    loss = step(x)
(loss[0] if isinstance(loss, tuple) else loss).asnumpy()
print((time.perf_counter() - start) / steps * 1000)
'''
VARIANTS = ["grads returned", "no update", "assign_sub", "nn.SGD", "nn.Adam", "TrainOneStepCell"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "step.py"   # ms.jit compiles only code in a file
        script.write_text(PROGRAM)
        ms_per_step = {}
        for variant in VARIANTS:
            runs = [float(subprocess.run([sys.executable, str(script), variant, str(args.steps)], env=ENV, cwd=tmp,
                                         capture_output=True, text=True, check=True).stdout.split()[-1])
                    for _ in range(args.repeats)]
            ms_per_step[variant] = statistics.median(runs)
    base = ms_per_step["grads returned"]
    print(f"{'variant':<18} {'ms/step':>8} {'x baseline':>12}")
    for variant, t in ms_per_step.items():
        print(f"{variant:<18} {t:8.2f} {t / base:12.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"ms_per_step": ms_per_step, "steps": args.steps}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
