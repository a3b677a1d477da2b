"""What the benchmarks share: the corpus (the installed torch and mindspore sources, located
without importing them), timing helpers, machine facts and the results file."""
from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)   # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def collect(every: int = 1, packages=("torch", "mindspore")) -> list[tuple[Path, str]]:
    """(path, text) of every `every`-th .py file of the packages (a deterministic sample),
    keeping only files that read as UTF-8 and parse, so every tool gets the same files."""
    from msmigrate.lint.runner import iter_files

    files = []
    for name in packages:
        d = package_dir(name)
        if d is None:
            print(f"warning: {name} not installed", file=sys.stderr)
            continue
        files += iter_files([d])
    out = []
    for f in files[::every]:
        try:
            text = f.read_text(encoding="utf-8")
            ast.parse(text)
        except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            continue
        out.append((f, text))
    return out


def count_lines(files) -> int:
    return sum(t.count("\n") + 1 for _, t in files)


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def timed_command(cmd: list[str], repeat: int = 1, **kw) -> tuple[float, float, subprocess.CompletedProcess]:
    """Median wall seconds and median CPU seconds (children: user + sys) of a command."""
    walls, cpus, proc = [], [], None
    for _ in range(repeat):
        before = os.times()
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
        walls.append(time.perf_counter() - t)
        after = os.times()
        cpus.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
    return statistics.median(walls), statistics.median(cpus), proc


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {d: _version(d) for d in ("msmigrate", "libcst", "torch", "mindspore")},
        "load_average_start": list(os.getloadavg()),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_results(name: str, data: dict) -> Path:
    data.setdefault("machine", {})["load_average_end"] = list(os.getloadavg())
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    return path


def table(rows: list[list], header: list[str]) -> str:
    cells = [[str(c) for c in r] for r in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([fmt(cells[0]), "  ".join("-" * w for w in widths), *map(fmt, cells[1:])])
