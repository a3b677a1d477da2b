"""Adam on MindSpore's CPU: what the converter generates for torch.optim.Adam/AdamW
(msmigrate_Adam, rules/generated/optimizers.py: one fused kernel per parameter) against
mindspore.experimental.optim.AdamW (torch's formula in elementwise ops), with nn.Adam (fused,
but eps scaled: not torch's update) as a reference. Compile time (first step) and median
step time of one compiled train step over an MLP of many 512x512 layers, each variant in its own
subprocess with one compute thread; printed as ratios to eoptim.AdamW, measured in this run.

    python bench/bench_optimizers.py [--layers 48] [--steps 15] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "GLOG_v": "3"}
VARIANTS = {
    "eoptim.AdamW": "from mindspore.experimental import optim\n"
                    "opt = optim.AdamW(net.trainable_params(), lr=1e-3, weight_decay=0.0)\n",
    "msmigrate_Adam": "opt = msmigrate_Adam(net.trainable_params(), lr=1e-3)\n",
    "nn.Adam": "opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)\n",
}
PROGRAM = '''
import json, sys, time
import numpy as np
import mindspore as ms
from mindspore import nn, ops
GENERATED
net = nn.SequentialCell([nn.Dense(512, 512) for _ in range(LAYERS)])
OPTIMIZER
x = ms.Tensor(np.random.default_rng(0).standard_normal((32, 512)).astype(np.float32))


def forward():
    return (net(x) ** 2).mean()


grad_fn = ms.value_and_grad(forward, None, opt.parameters)


@ms.jit
def train_step():
    loss, grads = grad_fn()
    opt(grads)
    return loss


times = []
for _ in range(STEPS + 1):
    start = time.perf_counter()
    train_step().asnumpy()
    times.append(time.perf_counter() - start)
print(json.dumps({"compile": times[0], "step": sorted(times[1:])[len(times[1:]) // 2]}))
'''


def generated_source() -> str:
    """rules/generated/optimizers.py as the converter copies it (its imports and definitions)."""
    return (ROOT / "rules" / "generated" / "optimizers.py").read_text()


def run(name: str, layers: int, steps: int) -> dict:
    code = PROGRAM.replace("GENERATED", generated_source()).replace("OPTIMIZER", VARIANTS[name])
    code = code.replace("LAYERS", str(layers)).replace("STEPS", str(steps))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_step.py"   # @ms.jit compiles code that lives in a file
        path.write_text(code)
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=ENV, timeout=1800)
    if proc.returncode:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results = {name: run(name, args.layers, args.steps) for name in VARIANTS}
    base = results["eoptim.AdamW"]
    print(f"{args.layers} Dense(512, 512) layers, {2 * args.layers} parameters; ratios to eoptim.AdamW")
    print(f"{'variant':16} {'compile s':>10} {'step ms':>9} {'compile x':>10} {'step x':>8}")
    for name, r in results.items():
        if "error" in r:
            print(f"{name:16} failed: {r['error']}")
            continue
        ratio = (lambda k: f"{r[k] / base[k]:.2f}") if "error" not in base else (lambda k: "-")
        print(f"{name:16} {r['compile']:10.1f} {1000 * r['step']:9.1f} {ratio('compile'):>10} {ratio('step'):>8}")
    if args.json:
        args.json.write_text(json.dumps({"layers": args.layers, "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
