"""Benchmark `msmigrate convert` and `msmigrate lint` over the installed torch + mindspore sources.

    python bench/bench_tree.py                      # deterministic sample: every 20th file
    python bench/bench_tree.py --every 1 -j 2       # the whole trees (README numbers)
    python bench/bench_tree.py --baseline c2e1388   # also time convert as of that git revision
    python bench/bench_tree.py --baseline REV --repeat 3   # interleaved rounds, least CPU kept
    python bench/bench_tree.py --torchfix           # create/reuse a venv with TorchFix and time it

Every figure is measured in this run on the same files and printed as a ratio to a baseline
measured alongside it (the machine is shared: absolute numbers move with the load, which is
recorded). Throughput runs go through one worker script in fresh subprocesses (`--worker`), so
the current tree, a baseline revision and libcst's bare parse are timed the same way:
  - floor: `libcst.parse_module` of every file (convert parses with libcst; TorchFix too);
  - convert: `convert_source` of every file (the engine, no file IO), 1 process CPU time and
    N processes wall time; the CLI path (`msmigrate convert --check`) wall time;
  - lint: the CLI (`msmigrate lint`) cold and warm cache; `bench/bench_lint.py` has the details;
  - TorchFix (the libcst-based PyTorch linter) on the same files, 1 and N processes;
  - start-up of the CLI vs `python -c pass`; peak memory (ru_maxrss of a fresh process) for
    the largest file: import only, libcst parse, convert, lint.
Results go to bench/results/tree.json (machine facts included) and a table on stdout.
Nothing here imports torch or mindspore.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TORCHFIX_VENV = Path(tempfile.gettempdir()) / "torchfix-venv"


# ---- the worker: runs in a fresh interpreter, prints one JSON line ----------------------
def worker(mode: str, list_file: str, jobs: int) -> None:
    sys.setrecursionlimit(10000)
    paths = Path(list_file).read_text().splitlines()
    texts = [Path(p).read_text(encoding="utf-8") for p in paths]
    if mode == "parse":
        import libcst

        def one(text, path):
            libcst.parse_module(text)
    elif mode == "convert":
        from msmigrate.engine import convert_source
        from msmigrate.mapping import load_table

        load_table()
        convert_source("import torch\nx = torch.zeros(1)\n")   # rules and transforms imported

        def one(text, path):
            convert_source(text, path)
    else:
        raise SystemExit(f"unknown worker mode {mode}")
    errors = 0
    wall, cpu = time.perf_counter(), time.process_time()
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(jobs) as pool:
            chunks = [list(range(i, len(paths), jobs * 4)) for i in range(jobs * 4)]
            errors = sum(pool.map(_run_chunk, [(mode, [paths[i] for i in c]) for c in chunks]))
    else:
        for text, path in zip(texts, paths):
            try:
                one(text, path)
            except Exception:   # a crash is counted, not timed away
                errors += 1
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({"wall": wall, "cpu": cpu, "files": len(paths), "errors": errors}))


def _run_chunk(args) -> int:
    mode, paths = args
    sys.setrecursionlimit(10000)
    if mode == "parse":
        import libcst
        fn = lambda text, path: libcst.parse_module(text)   # noqa: E731
    else:
        from msmigrate.engine import convert_source
        fn = convert_source
    errors = 0
    for p in paths:
        try:
            fn(Path(p).read_text(encoding="utf-8"), p)
        except Exception:
            errors += 1
    return errors


def run_worker(mode: str, list_file: Path, jobs: int = 1, pythonpath: str | None = None) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", mode, str(list_file),
                           "-j", str(jobs)], capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise RuntimeError(f"worker {mode} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def export_revision(rev: str, dest: Path) -> str:
    """`msmigrate` as of git revision `rev`, laid out as the installed package; returns the
    PYTHONPATH entry that makes it importable instead of the working tree."""
    src = dest / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "migrate", "rules"],
                             capture_output=True, check=True).stdout
    tar = dest / "rev.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(src, filter="data")
    pkg = dest / "pkg" / "msmigrate"
    shutil.copytree(src / "migrate", pkg)
    shutil.copytree(src / "rules", pkg / "rules")
    return str(dest / "pkg")


def ensure_torchfix(create: bool) -> Path | None:
    exe = TORCHFIX_VENV / "bin" / "torchfix"
    if exe.exists():
        return exe
    if not create:
        return None
    subprocess.run([sys.executable, "-m", "venv", str(TORCHFIX_VENV)], check=True)
    # TorchFix pins libcst<1.6: it gets its own environment
    subprocess.run([str(TORCHFIX_VENV / "bin" / "pip"), "install", "-q", "torchfix"], check=True)
    return exe if exe.exists() else None


def peak_memory(path: Path) -> dict:
    """Peak resident memory (MB) of fresh interpreters that read the file and then do one thing
    with it: VmHWM of the process (ru_maxrss would carry over the benchmark's own footprint
    through fork + exec)."""
    prelude = ("import resource, sys; sys.setrecursionlimit(10000); import libcst, msmigrate.engine, "
               "msmigrate.lint.linter; text = open(sys.argv[1], encoding='utf-8').read(); ")
    steps = {
        "import + read (no work)": "pass",
        "libcst.parse_module": "libcst.parse_module(text)",
        "convert_source": "msmigrate.engine.convert_source(text, sys.argv[1])",
        "lint_source": "msmigrate.lint.linter.lint_source(text + '\\n# construct', sys.argv[1])",
    }
    out = {}
    for name, stmt in steps.items():
        code = prelude + stmt + ("; hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]"
                                 "; print(hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
        proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
        out[name] = (int(proc.stdout.split()[-1]) / 1024) if proc.returncode == 0 else None
    return out


def startup(tmp: Path) -> dict:
    """Median wall time of 7 runs of each command."""
    from corpus import timed_command

    small = tmp / "small.py"
    small.write_text("import torch\n\nx = torch.zeros(2)\n")
    msm = [shutil.which("msmigrate") or "msmigrate"]
    commands = {"python -c pass": [sys.executable, "-c", "pass"],
                "msmigrate --version": [*msm, "--version"],
                "msmigrate lint small.py": [*msm, "lint", "--no-cache", str(small)],
                "msmigrate convert small.py": [*msm, "convert", "--no-lint", str(small)]}
    return {name: timed_command(cmd, repeat=7, cwd=tmp)[0] for name, cmd in commands.items()}


def update_only(args, parts: set[str]) -> None:
    """Re-measure start-up and/or peak memory into an existing results file (same corpus)."""
    from corpus import RESULTS, package_dir

    path = RESULTS / f"{args.name}.json"
    results = json.loads(path.read_text())
    tmp = Path(tempfile.mkdtemp(prefix="msmigrate-bench-"))
    try:
        if "startup" in parts:
            results["startup"] = startup(tmp)
        if "memory" in parts:
            files = [f for name in ("torch", "mindspore") if package_dir(name)
                     for f in package_dir(name).rglob("*.py")]
            size, biggest = max((f.stat().st_size, f) for f in files)
            results["memory"] = {"file": str(biggest), "bytes": size, "MB": peak_memory(biggest)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results.setdefault("notes", []).append(f"{', '.join(sorted(parts))} re-measured "
                                           f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
                                           f"load {os.getloadavg()[0]:.1f}")
    path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    report(results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--every", type=int, default=20, help="use every Nth file (1 = all)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2, help="processes for the parallel runs")
    ap.add_argument("--baseline", metavar="REV", help="also time convert as of this git revision")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds of the 1-process runs (least CPU kept)")
    ap.add_argument("--torchfix", action="store_true", help=f"create {TORCHFIX_VENV} with TorchFix if missing")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: cli, cli1 (the 1-process CLI convert), "
                         "torchfix, memory, startup, parallel")
    ap.add_argument("--name", default="tree", help="results file: bench/results/NAME.json")
    ap.add_argument("--only", default="", help="re-measure only these parts (startup, memory) and update "
                                               "the existing results file")
    ap.add_argument("--worker", nargs=2, metavar=("MODE", "LIST"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker[0], args.worker[1], args.jobs)
    sys.path.insert(0, str(HERE))
    from corpus import collect, count_lines, machine, timed_command, write_results

    skip = set(filter(None, args.skip.split(",")))
    if args.only:
        return update_only(args, set(args.only.split(",")))
    info = machine()
    files = collect(args.every)
    lines = count_lines(files)
    sizes = [(len(t), f) for f, t in files]
    print(f"{len(files)} files, {lines:,} lines (torch + mindspore, every {args.every}th file); "
          f"{info['cpu']}, {info['cores']} cores, load {info['load_average_start'][0]:.1f}")
    tmp = Path(tempfile.mkdtemp(prefix="msmigrate-bench-"))
    list_file = tmp / "files.txt"
    list_file.write_text("\n".join(str(f) for f, _ in files) + "\n")
    results: dict = {"machine": info, "files": len(files), "lines": lines, "every": args.every,
                     "jobs": args.jobs, "repeat": args.repeat, "throughput": {}, "notes": []}
    thr = results["throughput"]
    try:
        # ---- throughput: floor, convert (current, baseline), 1 and N processes -----------
        # 1 process: interleaved rounds, each figure the round with the least CPU time (the
        # box is shared: a single run can be 30% off), every round's CPU time kept
        pp = export_revision(args.baseline, tmp / "baseline") if args.baseline else None
        singles = {"libcst parse, 1 process": ("parse", None), "convert, 1 process": ("convert", None)}
        if pp:
            singles[f"convert at {args.baseline}, 1 process"] = ("convert", pp)
        for _ in range(max(1, args.repeat)):
            for name, (mode, path) in singles.items():
                got = run_worker(mode, list_file, pythonpath=path)
                best = thr.get(name)
                runs = (best or {}).get("cpu_runs", []) + [got["cpu"]]
                thr[name] = {**(got if best is None or got["cpu"] < best["cpu"] else best), "cpu_runs": runs}
        if "parallel" not in skip and args.jobs > 1:
            thr[f"libcst parse, {args.jobs} processes"] = run_worker("parse", list_file, args.jobs)
            thr[f"convert, {args.jobs} processes"] = run_worker("convert", list_file, args.jobs)
        msm = [shutil.which("msmigrate") or "msmigrate"]
        paths = [str(f) for f, _ in files]
        if "cli" not in skip:
            cwd = tmp / "cli"
            cwd.mkdir()
            # -j 1 without the result cache; -j N twice in the same directory: cold (it fills
            # .msmigrate_cache/convert), then warm (every result from the cache)
            runs = [(1, "--no-cache", "")] if args.jobs != 1 and "cli1" not in skip else []
            runs += [(args.jobs, None, ", cold cache"), (args.jobs, None, ", warm cache")]
            for j, flag, label in runs:
                cmd = [*msm, "convert", "--check", "-q", "--no-lint", "-j", str(j), *([flag] if flag else []), *paths]
                w, c, p = timed_command(cmd, cwd=cwd)
                thr[f"CLI convert --check --no-lint -j {j}{label}"] = {"wall": w, "cpu": c, "files": len(paths),
                                                                       "exit": p.returncode}
            for label in ("cold cache", "warm cache"):
                w, c, p = timed_command([*msm, "lint", "--exit-zero", "-j", str(args.jobs), *paths], cwd=cwd)
                thr[f"CLI lint -j {args.jobs}, {label}"] = {"wall": w, "cpu": c, "files": len(paths),
                                                            "exit": p.returncode}
        tf = ensure_torchfix(args.torchfix) if "torchfix" not in skip else None
        if "torchfix" in skip:
            results["notes"].append("skipped: TorchFix (--skip torchfix)")
        elif tf is None:
            results["notes"].append("skipped: TorchFix not installed (--torchfix creates its venv)")
        else:
            for j in sorted({1, args.jobs}):
                w, c, p = timed_command([str(tf), "-j", str(j), *paths], cwd=tmp)
                thr[f"TorchFix -j {j}"] = {"wall": w, "cpu": c, "files": len(paths), "exit": p.returncode,
                                           "findings": p.stdout.count("\n")}
        if "startup" not in skip:
            results["startup"] = startup(tmp)
        if "memory" not in skip:
            size, biggest = max(sizes)
            results["memory"] = {"file": str(biggest), "bytes": size, "MB": peak_memory(biggest)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    path = write_results(args.name, results)
    report(results)
    print(f"\nwritten: {path.relative_to(REPO)}")


def report(r: dict) -> None:
    sys.path.insert(0, str(HERE))
    from corpus import table

    lines = r["lines"]
    thr = r["throughput"]
    floor = thr["libcst parse, 1 process"]
    rows = []
    for name, m in thr.items():
        if "cpu" not in m or not m.get("wall"):
            continue
        procs = 1
        if "processes" in name or "-j " in name:
            procs = int(name.split("-j ")[1].split()[0].rstrip(",")) if "-j " in name else int(name.split(", ")[-1].split()[0])
        per_core = lines / (m["wall"] * procs) if procs > 1 else lines / (m["cpu"] or m["wall"])
        base = floor["wall"] if procs == 1 else thr.get(f"libcst parse, {procs} processes", floor)["wall"]
        rows.append([name, f"{m['wall']:.2f}", f"{m['files'] / m['wall']:.1f}", f"{lines / m['wall']:,.0f}",
                     f"{per_core:,.0f}", f"{base / m['wall']:.2f}" if "cache" not in name else "",
                     m.get("errors", m.get("exit", ""))])
    print()
    print(table(rows, ["run", "wall s", "files/s", "lines/s", "lines/s/core", "x parse", "errors/exit"]))
    conv, parse = thr.get("convert, 1 process"), floor
    if conv:
        print(f"\nconvert vs libcst bare parse, per core (CPU time): {parse['cpu'] / conv['cpu']:.2f}x "
              f"(target >= 0.5x); convert costs {conv['cpu'] / parse['cpu']:.2f} parses")
    for name, m in thr.items():
        if len(m.get("cpu_runs", ())) > 1:
            print(f"{name}: CPU s per round {', '.join(f'{c:.2f}' for c in m['cpu_runs'])} (least kept)")
    for name, m in thr.items():
        if name.startswith("convert at "):
            print(f"{name}: {m['cpu']:.2f} CPU s -> now {conv['cpu']:.2f} CPU s: {m['cpu'] / conv['cpu']:.2f}x faster")
    j = r["jobs"]
    if f"convert, {j} processes" in thr:
        print(f"scaling: convert {conv['wall'] / thr[f'convert, {j} processes']['wall']:.2f}x on {j} processes, "
              f"libcst parse {parse['wall'] / thr[f'libcst parse, {j} processes']['wall']:.2f}x")
    for name in [k for k in thr if k.startswith("TorchFix")]:
        jj = name.split()[-1]
        cli = thr.get(f"CLI convert --check --no-lint -j {jj}") or thr.get(f"CLI convert --check --no-lint -j {jj}, cold cache")
        if cli:
            print(f"{name}: {thr[name]['wall']:.2f} s; msmigrate convert (CLI) {cli['wall']:.2f} s: "
                  f"{thr[name]['wall'] / cli['wall']:.2f}x TorchFix's speed")
    if "startup" in r:
        base = r["startup"]["python -c pass"]
        print("\nstart-up (median of 7, wall):")
        for name, s in r["startup"].items():
            print(f"  {name:30s} {s * 1000:7.0f} ms  ({s / base:.1f}x python -c pass)")
    if "memory" in r:
        m = r["memory"]
        print(f"\npeak memory, largest file ({m['file']}, {m['bytes'] / 1e6:.2f} MB):")
        parse_mb = m["MB"].get("libcst.parse_module")
        for name, mb in m["MB"].items():
            extra = f"  ({mb / parse_mb:.2f}x libcst parse)" if mb and parse_mb else ""
            print(f"  {name:26s} {mb if mb is None else round(mb)} MB{extra}")
    for note in r["notes"]:
        print(note)


if __name__ == "__main__":
    main()
