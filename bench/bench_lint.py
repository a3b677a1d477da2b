"""Benchmark `msmigrate lint` on the installed torch and mindspore Python sources.

    python bench/bench_lint.py                 # a deterministic sample (every 8th file)
    python bench/bench_lint.py --every 1 -j 2  # the whole trees

Everything is measured in the same run on the same files, and reported as ratios so the
numbers survive a noisy machine: lint vs stdlib `ast.parse` and vs libcst's bare
`parse_module`; cold (no cache) vs warm (content-hash cache) runs; 1 vs N processes.
CPU time (process_time) is used for single-process figures, wall time for parallel ones.
Nothing here imports torch or mindspore (the packages are located with importlib.util).
"""
from __future__ import annotations

import argparse
import ast
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.setrecursionlimit(10000)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import collect, count_lines, machine, timed, write_results  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--every", type=int, default=8, help="use every Nth file (1 = all)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="processes for the parallel run")
    ap.add_argument("--no-libcst", action="store_true", help="skip the (slow) libcst baseline")
    args = ap.parse_args()

    from msmigrate.lint.linter import all_rules, lint_source, might_compile
    from msmigrate.lint.runner import lint_paths
    from msmigrate.lint.config import LintConfig

    all_rules()
    info = machine()
    files = collect(args.every)
    lines = count_lines(files)
    compiled = [(f, t) for f, t in files if might_compile(t)]
    lines_c = sum(t.count("\n") + 1 for _, t in compiled)
    print(f"{len(files)} files, {lines} lines (torch + mindspore, every {args.every}th file); "
          f"{len(compiled)} files / {lines_c} lines pass the compiled-code prefilter")

    def parse_all():
        for _, t in files:
            ast.parse(t)  # not kept: every pass drops its trees, so GC costs are alike
    _, t_ast = timed(parse_all)
    results = {"ast.parse": t_ast}
    if not args.no_libcst:
        import libcst

        def cst():
            for _, t in files:
                try:
                    libcst.parse_module(t)
                except Exception:
                    pass
        _, results["libcst.parse_module"] = timed(cst)
    config = LintConfig()
    def lint_all(suffix=""):
        for f, t in files:
            lint_source(t + suffix, str(f), config)
    _, results["lint (1 process, default rules, no cache)"] = timed(lint_all)
    # the marker comment defeats the prefilter: every file is parsed and analysed
    _, results["lint without the prefilter (parse every file)"] = timed(lambda: lint_all("\n# construct"))

    print(f"\n{'pass':50s} {'CPU s':>8s} {'lines/CPU-s':>12s} {'x ast.parse':>12s} {'x libcst':>9s}")
    for name, secs in results.items():
        rate = lines / secs if secs else float("inf")
        vs_ast = secs / t_ast
        vs_cst = (f"{secs / results['libcst.parse_module']:9.2f}" if "libcst.parse_module" in results else "     n/a")
        print(f"{name:50s} {secs:8.2f} {rate:12,.0f} {vs_ast:12.2f} {vs_cst}")
    print("(x = time relative to the baseline on the same files; < 1 means faster)")

    # CLI path: files read from disk, cache cold vs warm, 1 vs N processes (wall time)
    paths = [f for f, _ in files]
    tmp = Path(tempfile.mkdtemp(prefix="msmigrate-bench-"))
    try:
        w1, c1 = timed(lambda: lint_paths(paths, config, jobs=1, cache_root=tmp, use_cache=False))
        wn, _ = timed(lambda: lint_paths(paths, config, jobs=args.jobs, cache_root=tmp, use_cache=False))
        wc, _ = timed(lambda: lint_paths(paths, config, jobs=args.jobs, cache_root=tmp, use_cache=True))
        ww, _ = timed(lambda: lint_paths(paths, config, jobs=args.jobs, cache_root=tmp, use_cache=True))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nwall time over {len(paths)} files from disk:")
    print(f"  1 process, no cache        {w1:7.2f} s  ({lines / w1:,.0f} lines/s; CPU {c1:.2f} s = "
          f"{lines / c1:,.0f} lines/CPU-s, with reading files and the cross-file pass)")
    print(f"  {args.jobs} processes, no cache      {wn:7.2f} s  (speed-up x{w1 / wn:.2f} on {os.cpu_count()} CPUs)")
    print(f"  {args.jobs} processes, cold cache    {wc:7.2f} s")
    print(f"  warm cache (nothing changed) {ww:7.2f} s  (x{wc / ww:.1f} faster than cold)")
    path = write_results("lint", {
        "machine": info, "files": len(files), "lines": lines, "every": args.every, "jobs": args.jobs,
        "cpu_seconds": results, "cli_path_wall_seconds": {
            "1 process, no cache": w1, f"{args.jobs} processes, no cache": wn,
            f"{args.jobs} processes, cold cache": wc, f"{args.jobs} processes, warm cache": ww},
        "cli_path_cpu_seconds_1_process": c1})
    print(f"written: {path}")


if __name__ == "__main__":
    main()
