"""Train-step benchmark: torch program vs its `msmigrate convert` output vs the hand-written
MindSpore program, median milliseconds per training-loop iteration.

    python bench/bench_train_step.py [--steps N] [--only NAME ...] [--json FILE]

Every variant runs in its own subprocess with the same environment (one thread per library).
A step is one loop iteration, measured the same way for all three: a timestamp after each
`loss.backward()` (torch) or after each call of a `@ms.jit` function named `train_step*`
(MindSpore, after waiting for the queued kernels: MindSpore returns before the step has run),
and the interval between consecutive timestamps is one iteration, including data loading,
scheduler steps and printing. The first 2 steps of every run are warm-up (jit compilation). The
fixture programs are short, so each is re-run in the same process until N intervals are
collected. A program that fails is reported with the first line of its error, never with numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "fixtures" / "programs"
HANDWRITTEN = PROGRAMS / "handwritten"
NAMES = ["train_mlp", "train_cnn", "train_lstm", "loop_transformer", "loop_amp", "loop_accum",
         "loop_trainer", "loop_multiloss", "loop_gru", "loop_ddp"]
DISTRIBUTED = {"loop_ddp"}
WORKERS = 2
WARMUP = 2
MAX_RUNS = 40
# identical for every variant: one compute thread, quiet MindSpore logs
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
       "GLOG_v": "3", "PYTHONHASHSEED": "0", "USE_AMP": "0"}


# ---------------------------------------------------------------- measuring (inside the subprocess)

class _Enough(BaseException):
    """Raised from a step hook once enough steps are measured (BaseException: programs that
    catch Exception do not swallow it)."""


def _measure(framework: str, script: str, steps: int, result_file: str | None, repeat: bool) -> None:
    import runpy

    intervals: list[float] = []
    cpu_intervals: list[float] = []
    run_stamps: list[tuple[float, float]] = []

    def record() -> None:
        run_stamps.append((time.perf_counter(), time.process_time()))
        if len(run_stamps) > WARMUP:
            intervals.append(run_stamps[-1][0] - run_stamps[-2][0])
            cpu_intervals.append(run_stamps[-1][1] - run_stamps[-2][1])
            if repeat and len(intervals) >= steps:
                raise _Enough          # distributed runs are not cut short: the other rank would hang

    if framework == "torch":
        import torch

        backward = torch.Tensor.backward

        def timed_backward(self, *args, **kwargs):
            out = backward(self, *args, **kwargs)
            record()
            return out

        torch.Tensor.backward = timed_backward
    else:
        import functools

        import mindspore
        # public ms.runtime.synchronize() rejects the CPU device in 2.10; this waits for the queue
        from mindspore.common.api import _pynative_executor

        jit = mindspore.jit

        def timed_jit(function=None, **options):
            if function is None:
                return lambda fn: timed_jit(fn, **options)
            compiled = jit(function, **options)
            if not getattr(function, "__name__", "").startswith("train_step"):
                return compiled

            @functools.wraps(function)
            def call(*args, **kwargs):
                out = compiled(*args, **kwargs)
                _pynative_executor.sync()
                record()
                return out

            return call

        mindspore.jit = timed_jit

    error = None
    runs = 0
    real_stdout = sys.stdout
    sys.path.insert(0, str(Path(script).parent))
    while len(intervals) < steps and runs < MAX_RUNS:
        runs += 1
        run_stamps.clear()
        before = len(intervals)
        sys.stdout = open(os.devnull, "w")
        try:
            runpy.run_path(script, run_name="__main__")
        except _Enough:
            break
        except BaseException as exc:  # noqa: BLE001 - reported, not hidden
            lines = str(exc).strip().splitlines()
            error = f"{type(exc).__name__}: {lines[0] if lines else ''}".strip()
            break
        finally:
            sys.stdout.close()
            sys.stdout = real_stdout
        if len(intervals) == before:
            error = f"no step measured: fewer than {WARMUP + 1} backward()/train_step* calls per run"
            break
        if not repeat:
            break
    result = {"intervals_ms": [1e3 * t for t in intervals], "cpu_intervals_ms": [1e3 * t for t in cpu_intervals],
              "runs": runs, "error": error}
    text = json.dumps(result)
    if result_file:
        Path(result_file).write_text(text)
    print(text, flush=True)
    if not result_file:
        os._exit(0)        # MindSpore dataset threads can hang interpreter shutdown
    # distributed workers exit normally: msrun's scheduler waits for them to finalize


# ---------------------------------------------------------------- orchestrating

def _first_error_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "Exception" in line:
            return line[:300]
    return lines[-1][:300] if lines else "failed without output"


def _launch_command(name: str, framework: str, script: Path, steps: int, result_dir: str,
                    port: int) -> list[str]:
    measure = [str(Path(__file__).resolve()), "--measure", framework, str(script), "--steps", str(steps)]
    if name not in DISTRIBUTED:
        return [sys.executable, *measure]
    measure += ["--result-dir", result_dir, "--no-repeat"]
    if framework == "torch":
        return [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={WORKERS}",
                f"--master_port={port}", *measure]
    # msrun starts the workers with the `python` on PATH
    return ["msrun", f"--worker_num={WORKERS}", f"--local_worker_num={WORKERS}", "--master_addr=127.0.0.1",
            f"--master_port={port}", "--join=True", f"--log_dir={result_dir}/msrun_logs", *measure]


def run_variant(name: str, framework: str, script: Path, steps: int, timeout: float, port: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-") as result_dir:
        cmd = _launch_command(name, framework, script, steps, result_dir, port)
        started = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=result_dir)
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
        wall = time.perf_counter() - started
        if name in DISTRIBUTED:
            rank_files = sorted(Path(result_dir).glob("rank*.json"))
            if len(rank_files) < WORKERS:
                logs = sorted(Path(result_dir).glob("msrun_logs/worker_*.log"))
                detail = "\n".join(p.read_text(errors="replace") for p in logs) + proc.stderr
                return {"error": _first_error_line(detail)}
            ranks = [json.loads(p.read_text()) for p in rank_files]
            result = ranks[0]          # the step time of the first rank; the others wait for it in all-reduce
            result["error"] = next((r["error"] for r in ranks if r["error"]), None)
        else:
            lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
            if not lines:
                return {"error": _first_error_line(proc.stderr)}
            result = json.loads(lines[-1])
    result["wall_s"] = round(wall, 1)
    if result["intervals_ms"]:
        # a program that fails later (e.g. at its checkpoint) has no row numbers, only a note
        prefix = "partial_" if result["error"] else ""
        result[prefix + "median_ms"] = statistics.median(result["intervals_ms"])
        result[prefix + "cpu_median_ms"] = statistics.median(result["cpu_intervals_ms"])
    return result


def convert_programs(names: list[str], out_dir: Path) -> dict[str, str]:
    """Run the real CLI once on all programs; returns name -> error for files it did not write."""
    sources = [str(PROGRAMS / f"{name}.py") for name in names]
    cli = "import sys; from msmigrate.cli import main; sys.exit(main())"
    proc = subprocess.run([sys.executable, "-c", cli, "convert", "-o", str(out_dir), *sources],
                          capture_output=True, text=True, env=ENV)
    errors = {}
    for name in names:
        if not (out_dir / f"{name}.py").exists():
            errors[name] = f"msmigrate convert exit {proc.returncode}: {_first_error_line(proc.stderr)}"
    return errors


def _pool(previous: dict | None, result: dict) -> dict:
    """Intervals of all rounds of one variant; the first error wins."""
    if previous is None or result.get("error"):
        return result
    pooled = {**previous, "intervals_ms": previous["intervals_ms"] + result["intervals_ms"],
              "cpu_intervals_ms": previous["cpu_intervals_ms"] + result["cpu_intervals_ms"],
              "runs": previous["runs"] + result["runs"], "wall_s": previous["wall_s"] + result["wall_s"]}
    pooled["median_ms"] = statistics.median(pooled["intervals_ms"])
    pooled["cpu_median_ms"] = statistics.median(pooled["cpu_intervals_ms"])
    return pooled


def _ratio(a: dict, b: dict, key: str = "median_ms") -> float | None:
    if key in a and key in b:
        return a[key] / b[key]
    return None


def _cell(result: dict, key: str = "median_ms") -> str:
    return f"{result[key]:.2f}" if key in result else "failed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="measured steps per variant (after 2 warm-up steps per run)")
    parser.add_argument("--only", action="append", choices=NAMES, metavar="NAME", help=f"one of {', '.join(NAMES)}; repeatable")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--rounds", type=int, default=1, help="run the three variants alternately this many times")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per variant")
    parser.add_argument("--port", type=int, default=29517, help="rendezvous port for the distributed program")
    # internal: the measuring subprocess
    parser.add_argument("--measure", nargs=2, metavar=("FRAMEWORK", "SCRIPT"), help=argparse.SUPPRESS)
    parser.add_argument("--result-dir", help=argparse.SUPPRESS)
    parser.add_argument("--no-repeat", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.measure:
        framework, script = args.measure
        # torchrun sets RANK, msrun MS_NODE_ID / RANK_ID
        rank = next((os.environ[k] for k in ("RANK", "RANK_ID", "MS_NODE_ID") if k in os.environ), str(os.getpid()))
        result_file = str(Path(args.result_dir, f"rank{rank}.json")) if args.result_dir else None
        if os.environ.get("MS_ROLE") == "MS_SCHED":      # msrun's scheduler process runs the script too
            result_file = str(Path(args.result_dir, "scheduler.json"))
        _measure(framework, script, args.steps, result_file, repeat=not args.no_repeat)
        return 0

    names = args.only or NAMES
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-converted-") as tmp:
        converted_dir = Path(tmp)
        convert_errors = convert_programs(names, converted_dir)
        for name in names:
            variants = {"torch": ("torch", PROGRAMS / f"{name}.py"),
                        "converted": ("mindspore", converted_dir / f"{name}.py"),
                        "handwritten": ("mindspore", HANDWRITTEN / f"{name}_ms.py")}
            row = {"program": name}
            port = args.port
            # rounds alternate the variants, so a burst of load on the shared machine hits all of them
            for _ in range(args.rounds):
                for variant, (framework, script) in variants.items():
                    port += 1                      # a fresh rendezvous port: the last one may linger
                    if row.get(variant, {}).get("error"):
                        continue
                    if variant == "converted" and name in convert_errors:
                        result = {"error": convert_errors[name]}
                    elif not script.exists():
                        result = {"error": f"missing {script}"}
                    else:
                        result = run_variant(name, framework, script, args.steps, args.timeout, port)
                    row[variant] = _pool(row.get(variant), result)
            for variant in variants:
                print(f"  {name:17s} {variant:11s} {_cell(row[variant]):>9s} ms/step"
                      + (f"   {row[variant]['error']}" if row[variant].get("error") else ""),
                      file=sys.stderr, flush=True)
            for key, suffix in (("median_ms", ""), ("cpu_median_ms", "_cpu")):
                row["converted_over_handwritten" + suffix] = _ratio(row["converted"], row["handwritten"], key)
                row["converted_over_torch" + suffix] = _ratio(row["converted"], row["torch"], key)
            rows.append(row)

    header = f"{'program':17s} {'torch':>9s} {'converted':>10s} {'handwritten':>12s} {'conv/hand':>10s} {'conv/torch':>11s}"
    for key, suffix, title in (("median_ms", "", "wall-clock"),
                               ("cpu_median_ms", "_cpu", "CPU time of the process (all threads)")):
        print(f"median ms per training step, {title} ({args.steps} steps x {args.rounds} rounds, "
              f"after {WARMUP} warm-up steps per run, 1 thread)")
        print(header)
        print("-" * len(header))
        for row in rows:
            ratios = [f"{r:.2f}x" if r is not None else "-" for r in
                      (row["converted_over_handwritten" + suffix], row["converted_over_torch" + suffix])]
            print(f"{row['program']:17s} {_cell(row['torch'], key):>9s} {_cell(row['converted'], key):>10s} "
                  f"{_cell(row['handwritten'], key):>12s} {ratios[0]:>10s} {ratios[1]:>11s}")
        print()
    for row in rows:
        for variant in ("torch", "converted", "handwritten"):
            if row[variant].get("error"):
                print(f"  {row['program']} {variant} failed: {row[variant]['error']}")
    if args.json:
        document = {"steps": args.steps, "rounds": args.rounds, "warmup": WARMUP,
                    "env": {k: ENV[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "USE_AMP")},
                    "target_converted_over_handwritten": 1.05, "programs": rows}
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
