"""Do two revisions of the converter produce the same results? For speed work, where any
difference is a bug.

    python bench/compare_revisions.py --baseline REV [--every 16] [--jobs 2] [files ...]

Converts every file of the sample (every Nth .py file of the installed torch + mindspore, as
bench/robustness.py samples them, plus the fixture inputs) with the working tree and with git
revision REV (exported as bench_tree.py exports it), each in its own processes, and compares per
file: the output code, the diagnostics and the conversions (line, column, message), and the code
of a second, forced conversion of the output (it reaches the method-name paths of files without
torch imports). Prints the differing files; exit status 1 when any differs. Never imports torch
or mindspore.
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def worker(list_file: str, out_file: str) -> None:
    """Runs in a fresh interpreter whose PYTHONPATH picks the revision; writes JSON lines."""
    sys.setrecursionlimit(10000)
    from msmigrate.diagnostics import InputError
    from msmigrate.engine import convert_source

    with open(out_file, "w") as out:
        for path in Path(list_file).read_text().splitlines():
            rec: dict = {"path": path}
            try:
                source = Path(path).read_bytes().decode("utf-8")
                result = convert_source(source, path)
                rec["code"] = result.code
                rec["report"] = result.to_dict()
                if result.changed:
                    rec["again"] = convert_source(result.code, path, force=True).code
            except InputError as exc:
                rec["error"] = exc.diagnostic.to_text()
            except Exception as exc:  # noqa: BLE001 - a crash is compared like any result
                rec["error"] = f"{type(exc).__name__}: {exc}"
            out.write(json.dumps(rec) + "\n")


def _run(paths: list[str], tmp: Path, label: str, jobs: int, pythonpath: str | None) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    procs = []
    for j in range(jobs):
        lst, out = tmp / f"{label}{j}.txt", tmp / f"{label}{j}.jsonl"
        lst.write_text("\n".join(paths[j::jobs]) + "\n")
        procs.append((subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(lst),
                                        str(out)], env=env, cwd=tempfile.gettempdir()), out))
    results = {}
    for proc, out in procs:
        if proc.wait() != 0:
            raise SystemExit(f"{label} worker failed")
        for line in out.read_text().splitlines():
            rec = json.loads(line)
            results[rec["path"]] = rec
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="HEAD", help="git revision to compare with (default HEAD)")
    ap.add_argument("--every", type=int, default=16, help="every Nth corpus file")
    ap.add_argument("--jobs", type=int, default=1, help="processes per revision")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("files", nargs="*", help="these files instead of the corpus sample")
    args = ap.parse_args()
    if args.worker:
        return worker(*args.worker)
    sys.path.insert(0, str(HERE))
    from bench_tree import export_revision
    from robustness import corpus_files

    if args.files:
        paths = [str(Path(f).resolve()) for f in args.files]
    else:
        paths = [str(f) for f in corpus_files(every=args.every)]
        paths += [str(f) for f in sorted((REPO / "fixtures" / "convert").glob("*.in.py"))]
    tmp = Path(tempfile.mkdtemp(prefix="msmigrate-compare-"))
    try:
        pp = export_revision(args.baseline, tmp / "baseline")
        old = _run(paths, tmp, "old", args.jobs, pp)
        new = _run(paths, tmp, "new", args.jobs, None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    differing = []
    for path in paths:
        a, b = old.get(path), new.get(path)
        if a == b:
            continue
        differing.append(path)
        print(f"DIFFERS: {path}")
        for key in ("error", "code", "again"):
            if (a or {}).get(key) != (b or {}).get(key):
                lines = difflib.unified_diff(str((a or {}).get(key)).splitlines(),
                                             str((b or {}).get(key)).splitlines(), "old", "new", lineterm="", n=1)
                print(f"  {key}:\n" + "\n".join(list(lines)[:30]))
        if (a or {}).get("report") != (b or {}).get("report"):
            print("  report:", json.dumps((a or {}).get("report"))[:600], "\n       ->",
                  json.dumps((b or {}).get("report"))[:600])
    digest = hashlib.sha256(json.dumps([new[p] for p in paths], sort_keys=True).encode()).hexdigest()[:16]
    changed = sum(1 for p in paths if new[p].get("report", {}).get("changed"))
    print(f"{len(paths)} files ({changed} changed by the conversion), baseline {args.baseline}: "
          f"{len(differing)} differ; results digest {digest}")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
