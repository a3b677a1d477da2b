"""Real training scripts, converted with no edits, run end to end (issue 11's loop).

    python bench/corpus/run.py --corpus DIR [-j N] [--only NAME ...] [--no-parity]
    python bench/corpus/run.py --corpus DIR --checkout     # extract the pinned trees (fetch.md)

For each entry of bench/corpus/entries/*.toml: copy its directory out of the corpus, convert it
with `msmigrate convert DIR -o OUT --copy-other` (as a user would), run the torch original and the
converted program with the entry's arguments (the converted one with torch not importable, so a
torch use left shows), then `msmigrate parity` on the pair. Writes bench/results/corpus.json and
prints a table: converts / still needs torch / runs as is / parity / first error.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENTRIES = HERE / "entries"
RESULTS = HERE.parent / "results" / "corpus.json"
MIRRORS = Path("/work/.mirror")
DEFAULT_LOSS = r"loss[^0-9+\-]{0,12}([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
BIG = 5 * 1024 * 1024      # files copied into a run (data beyond this is not what these scripts read)
# an environment in which `import torch` (and torchvision...) fails: the converted program must
# not need it
BLOCKER = '''import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "torchvision", "torchaudio", "torchtext"}:
            raise ImportError(f"msmigrate corpus: {name} is not importable in the converted run")
        return None
sys.meta_path.insert(0, _NoTorch())
'''
FIELDS = {"name", "repo", "commit", "license", "script", "root", "category", "args", "env", "steps",
          "loss_regex", "timeout", "max_losses", "deterministic", "notes", "prepare"}


def load_entries(only=None) -> list[dict]:
    out = []
    for path in sorted(ENTRIES.glob("*.toml")):
        with path.open("rb") as fh:
            e = tomllib.load(fh)
        unknown = set(e) - FIELDS
        missing = {"name", "repo", "commit", "license", "script", "category"} - set(e)
        if unknown or missing or e["name"] != path.stem:
            raise SystemExit(f"{path}: unknown fields {sorted(unknown)}, missing {sorted(missing)}, "
                             f"or name != file name")
        if not only or e["name"] in only:
            out.append(e)
    return out


def tree_of(corpus: Path, e: dict) -> Path:
    return corpus / e["repo"].replace("/", "+") / e["commit"][:12]


def checkout(corpus: Path, entries: list[dict]) -> None:
    """Extract each pinned commit from the mirror the fetch tool made (fetch.md)."""
    for e in entries:
        dest = tree_of(corpus, e)
        if dest.exists():
            continue
        git_dir = MIRRORS / e["repo"].replace("/", "+") / "repo"
        if (git_dir / ".git").is_dir():   # some snapshots come as a work tree
            git_dir = git_dir / ".git"
        if not git_dir.exists():
            print(f"{e['name']}: {git_dir} missing: fetch github:{e['repo']} first", file=sys.stderr)
            continue
        git = ["git", "--git-dir", str(git_dir)]
        # -z: paths as they are (git otherwise quotes and escapes non-ASCII names)
        listing = subprocess.run([*git, "ls-tree", "-r", "-l", "-z", e["commit"]], capture_output=True,
                                 check=True).stdout.decode("utf-8", "surrogateescape")
        missing = []
        for row in filter(None, listing.split("\0")):
            meta, path = row.split("\t", 1)
            _, kind, sha, size = meta.split()
            if kind != "blob" or (size.isdigit() and int(size) > BIG):
                continue
            blob = subprocess.run([*git, "cat-file", "blob", sha], capture_output=True)
            if blob.returncode:   # a snapshot may lack its largest files
                missing.append(path)
                continue
            (dest / path).parent.mkdir(parents=True, exist_ok=True)
            (dest / path).write_bytes(blob.stdout)
        if missing:
            print(f"{e['name']}: not in the snapshot: {', '.join(missing)}", file=sys.stderr)


def copy_root(src: Path, dst: Path) -> None:
    for f in src.rglob("*"):
        if f.is_file() and f.stat().st_size <= BIG and ".git" not in f.parts:
            target = dst / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)


def run_program(script: Path, cwd: Path, args: list[str], env: dict, timeout: float, loss_re: re.Pattern | None,
                max_losses: int, log: Path | None = None) -> dict:
    """Run until it exits, times out, or has printed `max_losses` losses (then it is stopped:
    enough steps were seen). `loss_re` None: a program that prints no loss must exit 0."""
    start = time.time()
    proc = subprocess.Popen([sys.executable, str(script), *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    losses, capped = [], False
    # a program that prints nothing for long blocks the read below: the timer ends it on time
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    try:
        for line in proc.stdout:
            m = loss_re.search(line) if loss_re is not None else None
            if m:
                losses.append(float(m.group(1)))
                if len(losses) >= max_losses:
                    capped = True
                    proc.kill()
                    break
            if time.time() - start > timeout:
                proc.kill()
                break
        proc.wait(timeout=max(1.0, timeout - (time.time() - start)))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    finally:
        watchdog.cancel()
    stderr = proc.stderr.read()
    if log is not None:   # the program's output, for reading a failure later
        log.write_text(stderr[-20000:])
    timed_out = time.time() - start >= timeout - 0.5 and not capped
    ok = (proc.returncode == 0 or capped) and (bool(losses) or loss_re is None) and not timed_out
    return {"ok": ok, "exit": proc.returncode, "capped": capped, "timed_out": timed_out, "losses": losses,
            "seconds": round(time.time() - start, 1), "error": "" if ok else first_error(stderr, losses, timed_out)}


def first_error(stderr: str, losses: list, timed_out: bool) -> str:
    if timed_out:
        return "timed out"
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt)\b", ln) or ln.startswith(("RuntimeError", "TypeError")):
            return ln[:300]
    if not losses:
        return "no loss printed" + (f" ({lines[-1][:200]})" if lines else "")
    return (lines[-1] if lines else "failed")[:300]


def cause_of(error: str) -> str:
    """A short class for the first error (what the README ranks)."""
    rules = [(r"msmigrate: this converted file (still needs torch|needs work by hand)", "stopped at its top (MSC108)"),
             (r"No module named 'torch|torch\w* is not importable", "torch import left"),
             (r"already exists\. Please set a unique name", "parameter names collide in one compiled step"),
             (r"not supported in graph mode|has no attribute '__code__'|object has no attribute 'numpy'",
              "code the compiled step cannot compile"),
             (r"has no attribute", "attribute missing on a converted object"),
             (r"unsupported format string|__format__", "Tensor in Python formatting"),
             (r"timed out", "timed out"),
             (r"no loss printed", "no loss printed"),
             (r"TypeError", "TypeError"), (r"ValueError", "ValueError"), (r"RuntimeError", "RuntimeError")]
    for pattern, label in rules:
        if re.search(pattern, error):
            return label
    return error.split(":")[0][:60] or "other"


def run_entry(e: dict, corpus: Path, work: Path, parity: bool) -> dict:
    tree = tree_of(corpus, e)
    root_rel = e.get("root", str(Path(e["script"]).parent))
    root = tree / root_rel
    rel_script = Path(os.path.relpath(e["script"], root_rel))
    out = {"name": e["name"], "category": e["category"], "repo": e["repo"]}
    run_dir = work / e["name"]
    shutil.rmtree(run_dir, ignore_errors=True)
    torch_dir, ms_dir = run_dir / "torch", run_dir / "mindspore"
    if not root.is_dir():
        return {**out, "converted": False, "error": f"{root} missing: run --checkout", "cause": "not checked out"}
    copy_root(root, torch_dir)
    if e.get("prepare"):   # synthetic data in the script's own on-disk format (synth.py)
        prep = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r}); "
                               f"from synth import *; exec({e['prepare']!r})"], cwd=torch_dir, capture_output=True,
                              text=True)
        if prep.returncode:
            return {**out, "converted": False, "error": "prepare failed: " + prep.stderr.strip()[-300:],
                    "cause": "prepare failed"}
    report = run_dir / "report.json"
    conv = subprocess.run([sys.executable, "-m", "msmigrate.cli", "convert", str(torch_dir), "-o", str(ms_dir),
                           "--copy-other", "-q", "--no-cache", "-j", "1", "--report", str(report)],
                          capture_output=True, text=True, cwd=run_dir)
    files = json.loads(report.read_text())["files"] if report.exists() else []
    # the entry's own script (the directory may hold other programs too)
    mine = next((f for f in files if Path(f["path"]) == torch_dir / rel_script), {"diagnostics": []})
    out["converted"] = conv.returncode != 2 and (ms_dir / rel_script).exists()
    out["diagnostics"] = sorted(d["code"] for d in mine["diagnostics"])
    out["needs_torch"] = "MSC108" in out["diagnostics"]
    if not out["converted"]:
        return {**out, "error": conv.stderr.strip().splitlines()[-1][:300] if conv.stderr.strip() else "failed",
                "cause": "convert failed"}
    env = {**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "GLOG_v": "3", "PYTHONHASHSEED": "0",
           **e.get("env", {})}
    torchvision = corpus / "_torchvision"   # fetch.md: this machine's torchvision, outside the venv
    if torchvision.is_dir():
        env["PYTHONPATH"] = os.pathsep.join([str(HERE / "torchvision_ops"), str(torchvision),
                                             env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    blocker = run_dir / "no_torch"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    ms_env = {**env, "PYTHONPATH": os.pathsep.join([str(blocker), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    pattern = e.get("loss_regex", DEFAULT_LOSS)
    loss_re = re.compile(pattern, re.I) if pattern else None
    timeout, cap = e.get("timeout", 300), e.get("max_losses", 20)
    args = [str(a) for a in e.get("args", [])]
    out["torch"] = run_program(torch_dir / rel_script, torch_dir, args, env, timeout, loss_re, cap,
                               run_dir / "torch.stderr")
    out["mindspore"] = run_program(ms_dir / rel_script, ms_dir, args, ms_env, timeout, loss_re, cap,
                                   run_dir / "mindspore.stderr")
    out["runs"] = out["mindspore"]["ok"]
    out["error"] = out["mindspore"]["error"]
    out["cause"] = cause_of(out["error"]) if out["error"] else ""
    if out["cause"] == "stopped at its top (MSC108)":   # a module it imports stopped at its top
        out["needs_torch"] = True
    if not e.get("deterministic", True):
        out["parity"] = "n/a"
        out["parity_detail"] = {"why": "the torch run is not deterministic (see the entry's notes)"}
    elif parity and out["runs"] and out["torch"]["ok"]:
        steps = str(e.get("steps", 3))
        p = subprocess.run([sys.executable, "-m", "msmigrate.cli", "parity", str(torch_dir / rel_script), "--against",
                            str(ms_dir / rel_script), "--steps", steps, "--json", "--timeout", str(timeout), "--", *args],
                           capture_output=True, text=True, cwd=torch_dir, env=env)
        if p.returncode in (0, 1):
            r = json.loads(p.stdout)
            inherent = (r.get("first_divergence") or {}).get("inherent")
            # a difference parity names as no conversion error (random data) is counted apart
            out["parity"] = "pass" if r["passed"] else f"differs: {inherent}" if inherent else "diverged"
            out["parity_detail"] = {"steps": r.get("torch_steps"), "first_divergence": r.get("first_divergence"),
                                    **({"within_rounding": r["within_rounding"]} if r.get("within_rounding") else {})}
        else:
            out["parity"] = "error"
            out["parity_detail"] = {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:300]}
    return out


def table(results: list[dict]) -> str:
    rows = ["| entry | category | converts | needs torch | torch runs | runs as is | parity | first error |",
            "|---|---|---|---|---|---|---|---|"]
    yes = lambda b: "yes" if b else "no"   # noqa: E731
    for r in results:
        rows.append(f"| {r['name']} | {r['category']} | {yes(r.get('converted'))} | {yes(r.get('needs_torch'))} | "
                    f"{yes(r.get('torch', {}).get('ok'))} | {yes(r.get('runs'))} | {r.get('parity', '-')} | "
                    f"{(r.get('error') or (r.get('parity_detail') or {}).get('error') or '').replace('|', '/')[:120]} |")
    return "\n".join(rows)


def totals(results: list[dict]) -> dict:
    torch_ok = [r for r in results if r.get("torch", {}).get("ok")]
    causes: dict[str, int] = {}
    for r in results:
        if r.get("cause"):
            causes[r["cause"]] = causes.get(r["cause"], 0) + 1
    return {"entries": len(results), "converted": sum(bool(r.get("converted")) for r in results),
            "needs_torch": sum(bool(r.get("needs_torch")) for r in results),
            "torch_runs": len(torch_ok), "runs_as_is": sum(bool(r.get("runs")) for r in results),
            "deterministic": sum(r.get("parity") != "n/a" for r in results),
            "parity_pass": sum(r.get("parity") == "pass" for r in results),
            "parity_diverged": sum(r.get("parity") == "diverged" for r in results),
            "parity_inherent": sum(str(r.get("parity")).startswith("differs:") for r in results),
            "causes": dict(sorted(causes.items(), key=lambda kv: -kv[1]))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True, help="the corpus directory (fetch.md)")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--only", nargs="*", help="entry names")
    ap.add_argument("--checkout", action="store_true", help="extract the pinned commits from the fetched mirrors")
    ap.add_argument("--no-parity", action="store_true")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--recount", action="store_true",
                    help="re-derive causes and totals of the recorded results (no runs)")
    args = ap.parse_args(argv)
    entries = load_entries(args.only)
    if args.only:   # in the order given (the slow ones can go last)
        entries.sort(key=lambda e: args.only.index(e["name"]))
    if args.recount:
        doc = json.loads(args.out.read_text())
        nondeterministic = {e["name"] for e in load_entries() if not e.get("deterministic", True)}
        for r in doc["results"]:
            if r["name"] in nondeterministic and r.get("parity") != "n/a":   # the manifest says so since
                r["parity_detail"] = {"why": "the torch run is not deterministic (see the entry's notes)",
                                      "measured": r.get("parity"), **(r.get("parity_detail") or {})}
                r["parity"] = "n/a"
            if r.get("error") and r.get("cause") not in ("not checked out", "convert failed", "prepare failed"):
                r["cause"] = cause_of(r["error"])
        doc["totals"] = totals(doc["results"])
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
        print(table(doc["results"]))
        print(json.dumps(doc["totals"], indent=1))
        return 0
    if args.checkout:
        checkout(args.corpus, entries)
        return 0
    work = args.corpus / "_runs"
    old: dict = {}
    if args.only and args.out.exists():   # a partial run updates the recorded results
        names = {e["name"] for e in load_entries()}
        old = {r["name"]: r for r in json.loads(args.out.read_text())["results"] if r["name"] in names}
    done: list[dict] = []
    lock = threading.Lock()

    def save() -> list[dict]:   # after every entry: a run cut short keeps what it measured
        merged = {**old, **{r["name"]: r for r in done}}
        results = [merged[k] for k in sorted(merged)]
        import msmigrate
        doc = {"msmigrate": msmigrate.__version__, "revision": _revision(), "date": time.strftime("%Y-%m-%d"),
               "totals": totals(results), "results": results}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
        return results

    def one(e):
        r = run_entry(e, args.corpus, work, not args.no_parity)
        r["revision"] = _revision()   # a partial run mixes entries measured at several revisions
        with lock:
            done.append(r)
            save()
        return r

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(one, entries))
    with lock:
        results = save()
    print(table(results))
    print(json.dumps(totals(results), indent=1))
    return 0


def _revision() -> str:
    p = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
    return p.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
