"""`msmigrate lint` on native MindSpore repositories: findings per 10k lines and their precision.

    python bench/bench_lint_native.py CHECKOUT_DIR... [--sample 50] [--json out.json] [--show]

Each argument is a checkout of a repository written for MindSpore (mindcv, mindformers, the model
zoo ...). Per repository it lints every `.py` file with the default rules as a user would
(no pyproject of the repository is read), and for comparison as if every file were ported from
torch (`--ported`: the migration traps MSG7xx on). Printed: files, lines, findings per 10k lines,
findings per rule, and a sample of up to `--sample` default findings (seeded, reproducible) with
the verdict recorded for it in bench/lint_native_review.toml (keyed by repository directory name,
path, line and code; `--show` prints each sampled finding with its source lines so it can be
reviewed). Precision = true positives / reviewed findings of the sample. No code of the
repositories is stored here: the review file holds locations, verdicts and reasons only.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from msmigrate.lint import LintConfig  # noqa: E402
from msmigrate.lint.runner import lint_paths  # noqa: E402

REVIEW = ROOT / "bench" / "lint_native_review.toml"


def _revision(path: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def measure(repo: Path, config: LintConfig, jobs: int):
    results = lint_paths([repo], config, jobs=jobs, use_cache=False)
    lines = sum(r.lines for r in results)
    diags = [d for r in results for d in r.diagnostics]
    errors = sum(1 for r in results if r.error)
    return results, lines, diags, errors


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repos", nargs="+", type=Path)
    ap.add_argument("--sample", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--show", action="store_true", help="print each sampled finding with its source lines")
    args = ap.parse_args(argv)
    review = tomllib.loads(REVIEW.read_text()) if REVIEW.is_file() else {}
    report = []
    for repo in args.repos:
        name = repo.resolve().name
        results, lines, diags, errors = measure(repo, LintConfig(), args.jobs)
        _, _, as_ported, _ = measure(repo, LintConfig(ported=True), args.jobs)
        per10k = lambda n: round(n * 10000 / max(lines, 1), 2)  # noqa: E731
        rel = lambda p: Path(p).resolve().relative_to(repo.resolve()).as_posix()  # noqa: E731
        rng = random.Random(args.seed)
        diags.sort()
        sample = sorted(rng.sample(diags, min(args.sample, len(diags))))
        verdicts = {(v["path"], v["line"], v["code"]): v for v in review.get(name, {}).get("finding", [])}
        rows, tp, fp, unreviewed = [], 0, 0, 0
        for d in sample:
            v = verdicts.get((rel(d.path), d.line, d.code))
            verdict = v["verdict"] if v else "unreviewed"
            tp += verdict == "true"
            fp += verdict == "false"
            unreviewed += verdict == "unreviewed"
            rows.append({"path": rel(d.path), "line": d.line, "code": d.code, "verdict": verdict,
                         "why": v.get("why", "") if v else ""})
        errs = [d for d in diags if d.code[3] in "123"]
        err_verdicts = Counter((verdicts.get((rel(d.path), d.line, d.code)) or {}).get("verdict", "unreviewed")
                               for d in errs)
        entry = {
            "repo": name, "revision": _revision(repo), "files": len(results),
            "files_with_compiled_code_candidates": sum(1 for r in results if not r.skipped),
            "lines": lines, "unparsed_files": errors,
            "default_findings": len(diags), "default_per_10k_lines": per10k(len(diags)),
            "default_by_code": dict(sorted(Counter(d.code for d in diags).items())),
            "msg1_3_findings": len(errs), "msg1_3_true": err_verdicts["true"],
            "msg1_3_false": err_verdicts["false"], "msg1_3_unreviewed": err_verdicts["unreviewed"],
            "as_ported_findings": len(as_ported), "as_ported_per_10k_lines": per10k(len(as_ported)),
            "as_ported_by_code": dict(sorted(Counter(d.code for d in as_ported).items())),
            "sample": rows, "sample_true": tp, "sample_false": fp, "sample_unreviewed": unreviewed,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        }
        report.append(entry)
        print(f"== {name} ({entry['revision'][:10]}): {len(results)} files, {lines} lines")
        print(f"   default: {len(diags)} findings, {entry['default_per_10k_lines']} per 10k lines "
              f"{entry['default_by_code']}")
        print(f"   as if ported (--ported): {len(as_ported)}, {entry['as_ported_per_10k_lines']} per 10k lines")
        print(f"   MSG1-MSG3 findings: {len(errs)} ({err_verdicts['true']} true, {err_verdicts['false']} false, "
              f"{err_verdicts['unreviewed']} unreviewed)")
        print(f"   sample of {len(sample)}: {tp} true, {fp} false, {unreviewed} unreviewed; precision "
              f"{entry['precision']}")
        if args.show:
            for d, row in zip(sample, rows):
                src = Path(d.path).read_text(encoding="utf-8", errors="replace").splitlines()
                print(f"\n--- {row['path']}:{d.line}: {d.code} [{row['verdict']}] {d.message}")
                for i in range(max(0, d.line - 3), min(len(src), d.line + 2)):
                    print(f"{'>' if i + 1 == d.line else ' '}{i + 1:5} {src[i]}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
