"""Robustness run: `convert` and `lint` over every .py file of the installed torch and mindspore
packages (thousands of real files no one here wrote).

    python bench/robustness.py [--jobs 2] [--every N] [--log failures.jsonl] [--json summary.json]

Checks per file (a failure is reported with the path and the exception or a diff):
- crash:        convert_source or lint_source raised anything other than InputError / SyntaxError
                for input that does not parse (those are counted and listed, not failures);
- unparsable:   the converted code does not parse with `ast` although the input did;
- nonidempotent: converting the output again changes it (the pass `msmigrate convert` makes on
                its own output: a full pass when torch imports are left, none otherwise);
- nonidempotent-forced: the same with force=True, which treats the output as torch code even
                when no torch import is left (Tensor methods are matched by name);
- touched:      a file that imports no torch package is not byte-identical after conversion;
- timeout:      one file took longer than --timeout seconds.
Throughput (lines per CPU-second of the first conversion) is printed alongside.

tests/test_corpus.py runs the same checks (`check_file`). Never imports torch or mindspore: the
package directories are located with importlib.util.find_spec.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import importlib.util
import json
import multiprocessing
import signal
import sys
import time
import traceback
from pathlib import Path

PACKAGES = ("torch", "mindspore")
_SOURCE_ROOTS = ("torch", "torchvision", "torchaudio", "torchtext")


def package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def corpus_files(packages=PACKAGES, every: int = 1) -> list[Path]:
    """Every .py file of the installed packages, sorted; every Nth for a deterministic sample."""
    files = []
    for name in packages:
        root = package_dir(name)
        if root is not None:
            files += sorted(root.rglob("*.py"))
    return files[::every]


def imports_torch(tree: ast.AST) -> bool:
    """Independent of the engine's own test: any import of a torch package, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name.split(".")[0] in _SOURCE_ROOTS for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in _SOURCE_ROOTS:
                return True
    return False


def _diff(a: str, b: str, path: str, label: str = "again", limit: int = 40) -> str:
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), path, f"{path} ({label})", lineterm="", n=1))
    return "\n".join(lines[:limit]) + ("\n..." if len(lines) > limit else "")


def _tb(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4)).strip()


class _Timeout(BaseException):  # not caught as a crash by `except Exception`
    pass


def _alarm(signum, frame):
    raise _Timeout()


def check_file(path: str, forced_again: bool = True, timeout: int = 0) -> dict:
    """Run every check on one file; returns {"path", "lines", "seconds", "failures": [...], ...}."""
    from msmigrate import InputError, convert_source
    from msmigrate.lint import LintConfig, lint_source

    out = {"path": path, "lines": 0, "seconds": 0.0, "failures": [], "input_error": None,
           "changed": False, "torch": False}
    fail = lambda kind, detail: out["failures"].append({"kind": kind, "detail": detail})  # noqa: E731
    try:
        source = Path(path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out["input_error"] = f"unreadable: {exc}"
        return out
    out["lines"] = source.count("\n") + 1
    if timeout:
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(timeout)
    try:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            tree = None
        out["torch"] = tree is not None and imports_torch(tree)
        try:
            lint_source(source, path, LintConfig(select=("ALL",)))
        except SyntaxError:
            pass
        except Exception as exc:  # noqa: BLE001 - every crash is a finding
            fail("lint-crash", _tb(exc))
        start = time.process_time()
        try:
            result = convert_source(source, path)
        except InputError as exc:
            out["input_error"] = exc.diagnostic.to_text()
            if tree is not None:    # ast accepts it: the engine's parser must too
                fail("crash", f"InputError on input that ast parses: {exc.diagnostic.to_text()}")
            return out
        except Exception as exc:  # noqa: BLE001
            fail("crash", _tb(exc))
            return out
        finally:
            out["seconds"] = time.process_time() - start
        code = result.code
        out["changed"] = result.changed
        if tree is not None and not out["torch"] and code != source:
            fail("touched", _diff(source, code, path, "converted"))
        if result.changed:
            try:
                ast.parse(code)
            except SyntaxError as exc:
                if tree is not None:
                    fail("unparsable", f"line {exc.lineno}: {exc.msg}\n{_diff(source, code, path, 'converted')}")
                return out
            try:
                lint_source(code, path, LintConfig(select=("ALL",)))
            except Exception as exc:  # noqa: BLE001
                fail("lint-crash-output", _tb(exc))
        if result.changed:
            # Converting the output again, as `msmigrate convert` would (it skips files left
            # without torch imports), must not change it. The forced pass treats the output as
            # torch code even when no torch import is left: reported as its own kind.
            # While torch imports are left the two passes are the same computation: one is run.
            try:
                left = imports_torch(ast.parse(code))
            except SyntaxError:
                left = True
            for kind, force in (("nonidempotent", False), ("nonidempotent-forced", True)):
                if force and (left or not forced_again):
                    continue
                try:
                    again = convert_source(code, path, force=force).code
                except Exception as exc:  # noqa: BLE001
                    fail("crash-again", _tb(exc))
                    return out
                if again != code:
                    fail(kind, _diff(code, again, path))
                    break
    except _Timeout:
        fail("timeout", f"over {timeout} s")
    finally:
        if timeout:
            signal.alarm(0)
    return out


def _worker(args):
    return check_file(*args)


def run(files, jobs: int = 2, forced_again: bool = True, timeout: int = 600, log=None, progress=False):
    """Check `files` in `jobs` processes; returns the list of per-file results."""
    results = []
    tasks = [(str(f), forced_again, timeout) for f in files]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, maxtasksperchild=200) as pool:
        for i, res in enumerate(pool.imap_unordered(_worker, tasks, chunksize=4), 1):
            results.append(res)
            if log is not None and (res["failures"] or res["input_error"]):
                log.write(json.dumps(res) + "\n")
                log.flush()
            if progress and i % 100 == 0:
                print(f"  {time.strftime('%H:%M:%S')} {i}/{len(tasks)} files", file=sys.stderr, flush=True)
    return results


def summarize(results, wall: float) -> dict:
    kinds: dict[str, int] = {}
    for r in results:
        for f in r["failures"]:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    cpu = sum(r["seconds"] for r in results)
    lines = sum(r["lines"] for r in results)
    return {
        "files": len(results), "lines": lines,
        "torch_files": sum(r["torch"] for r in results),
        "changed": sum(r["changed"] for r in results),
        "input_errors": sorted(r["path"] + ": " + r["input_error"] for r in results if r["input_error"]),
        "failures": kinds,
        "failed_files": sorted(r["path"] for r in results if r["failures"]),
        "convert_cpu_s": round(cpu, 1),
        "convert_lines_per_cpu_s": round(lines / cpu) if cpu else None,
        "wall_s": round(wall, 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--every", type=int, default=1, help="check every Nth file (deterministic sample)")
    ap.add_argument("--packages", default=",".join(PACKAGES))
    ap.add_argument("--timeout", type=int, default=600, help="seconds per file")
    ap.add_argument("--no-forced-again", action="store_true",
                    help="skip the forced second pass (force=True) over converted outputs")
    ap.add_argument("--log", help="failures and input errors as JSON lines")
    ap.add_argument("--json", help="summary as JSON")
    ap.add_argument("files", nargs="*", help="check these files instead of the packages")
    args = ap.parse_args(argv)
    files = [Path(f) for f in args.files] or corpus_files(args.packages.split(","), args.every)
    log = open(args.log, "w") if args.log else None
    start = time.time()
    results = run(files, args.jobs, not args.no_forced_again, args.timeout, log, progress=True)
    summary = summarize(results, time.time() - start)
    if log:
        log.close()
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    for r in sorted(results, key=lambda r: r["path"]):
        for f in r["failures"]:
            print(f"{f['kind'].upper()} {r['path']}\n{f['detail']}\n")
    slowest = sorted(results, key=lambda r: -r["seconds"])[:5]
    print(f"files {summary['files']} ({summary['torch_files']} import torch, {summary['changed']} changed), "
          f"lines {summary['lines']}, wall {summary['wall_s']} s, {args.jobs} processes")
    print(f"convert: {summary['convert_cpu_s']} CPU-s, {summary['convert_lines_per_cpu_s']} lines/CPU-s; slowest: "
          + ", ".join(f"{Path(r['path']).name} {r['seconds']:.1f}s/{r['lines']}" for r in slowest))
    print(f"input errors (syntax/unreadable, not failures): {len(summary['input_errors'])}")
    for e in summary["input_errors"]:
        print("  " + e)
    print(f"failures: {summary['failures'] or 'none'} in {len(summary['failed_files'])} files")
    return 1 if summary["failed_files"] else 0


if __name__ == "__main__":
    sys.exit(main())
