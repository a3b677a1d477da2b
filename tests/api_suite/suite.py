"""The per-API numerical suite: small torch snippets (cases/*.toml), each run under torch and,
converted by `convert_source`, under MindSpore; values (rtol 1e-4), shapes and dtypes compared.

    python tests/api_suite/suite.py            # run, print the outcome counts and the failures
    python tests/api_suite/suite.py --write    # ... and rewrite docs/api-coverage.md + known.toml

Each framework runs every case in ONE process (worker.py: try/except and a timeout per case);
both processes run at the same time. Outcomes of a case:

    same            unmarked conversion, same values/shape/dtype
    differs, raises unmarked conversion, different result / MindSpore raised   -> failures
    crash           the converter failed on the snippet (exception or MSC107)  -> failure
    marked          the conversion carries a diagnostic: it may differ or raise
    torch-left      the API is not converted (the file still needs torch): unsupported
    n/a             a generated argument form torch itself rejects (not counted)

Known failures are listed in known.toml (case -> outcome); the test fails on any other failure
and on a listed one that no longer fails, so the list only shrinks by fixing or marking.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CASES_DIR = HERE / "cases"
KNOWN = HERE / "known.toml"
PAGE = ROOT / "docs" / "api-coverage.md"
RTOL, ATOL = 1e-4, 1e-5
FAILURES = ("differs", "raises", "crash")
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"   # every snippet's imports


@dataclass
class Case:
    id: str            # the torch snippet itself, one line ("; " between statements)
    api: str           # the torch API it verifies
    code: str          # torch code setting `out`
    family: str
    generated: bool    # from a form template: torch rejecting it makes it n/a, not an error
    unstable: bool = False   # MindSpore's result varies from run to run (group's `unstable`)
    converted: str = ""
    diagnostics: list = field(default_factory=list)
    outcome: str = ""
    detail: str = ""


def _code(snippet: str) -> str:
    snippet = snippet.strip("\n")
    if "\n" not in snippet and not snippet.startswith("out =") and not snippet.startswith("out="):
        return f"out = {snippet}\n"
    return snippet + "\n"


def load_cases() -> list[Case]:
    cases: dict[str, Case] = {}
    for path in sorted(CASES_DIR.glob("*.toml")):
        data = tomllib.loads(path.read_text())
        family = path.stem
        forms = data.get("forms", {})
        for group in data.get("group", []):
            for name in group["names"]:
                # "torch.x.y" or "<operator>:<dunder name>"
                full, _, short = name.rpartition(":") if ":" in name else (name, "", name.rsplit(".", 1)[-1])
                for api_tpl, tpl in forms[group["forms"]]:
                    for x, y in _operands(group):
                        kw = group.get("kw", {}).get(short, "other")
                        snippet = tpl.format(f=short, x=x, y=y, kw=kw, full=full)
                        api = api_tpl.format(f=short, full=name)
                        _add(cases, Case(_id(snippet), api, _code(snippet), family, True,
                                         unstable=x in group.get("unstable", ())))
        for api, snippets in data.get("cases", {}).items():
            for snippet in snippets:
                _add(cases, Case(_id(snippet), api, _code(snippet), family, False))
    return list(cases.values())


def _operands(group):
    if "pairs" in group:
        return [tuple(p.split(",")) for p in group["pairs"]]
    return [(x, "") for x in group["x"]]


def _id(snippet: str) -> str:
    return "; ".join(line for line in snippet.strip("\n").splitlines())


def _add(cases, case):
    cases.setdefault(case.id, case)


def convert(cases: list[Case], table=None) -> None:
    from msmigrate import convert_source
    for case in cases:
        try:
            result = convert_source(HEADER + case.code, "case.py", table=table)
        except Exception as exc:  # noqa: BLE001 - a converter crash is this case's outcome
            case.outcome, case.detail = "crash", f"{type(exc).__name__}: {exc}"[:300]
            continue
        case.converted = result.code
        case.diagnostics = [f"{d.code} {d.message}" for d in result.diagnostics]
        if any(d.code == "MSC107" for d in result.diagnostics):
            case.outcome, case.detail = "crash", case.diagnostics[0]
        elif any(line.startswith(("import torch", "from torch")) for line in result.code.splitlines()):
            case.outcome = "torch-left"


def _run_workers(cases: list[Case]) -> tuple[dict, dict]:
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory(prefix="apisuite-") as tmp:
        jobs = {}
        for side, pairs in (("torch", [[c.id, HEADER + c.code] for c in cases if c.outcome != "crash"]),
                            ("mindspore", [[c.id, c.converted] for c in cases if not c.outcome])):
            cases_json, out = Path(tmp, f"{side}.json"), Path(tmp, f"{side}.pkl")
            cases_json.write_text(json.dumps(pairs))
            jobs[side] = (subprocess.Popen([sys.executable, str(HERE / "worker.py"), side, str(cases_json),
                                            str(out)], env=env, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True), out)
        results = {}
        for side, (proc, out) in jobs.items():
            stdout, stderr = proc.communicate(timeout=1200)
            if proc.returncode != 0:
                raise RuntimeError(f"{side} worker exit {proc.returncode}:\n{stderr[-3000:]}")
            results[side] = pickle.loads(out.read_bytes())
    return results["torch"], results["mindspore"]


def compare(t, m) -> str | None:
    """None when MindSpore's result is torch's; else what differs."""
    if t[0] != m[0]:
        if {t[0], m[0]} <= {"int", "float"}:
            return f"{t[0]} {t[1]!r} vs {m[0]} {m[1]!r}"
        return f"{t[0]} vs {m[0]}: {str(m[1])[:80]}"
    kind = t[0]
    if kind == "seq":
        if len(t[1]) != len(m[1]):
            return f"{len(t[1])} items vs {len(m[1])}"
        for k, (a, b) in enumerate(zip(t[1], m[1])):
            problem = compare(a, b)
            if problem:
                return f"[{k}] {problem}"
        return None
    if kind in ("tensor", "ndarray"):
        x, y = t[1], m[1]
        if x.shape != y.shape:
            return f"shape {x.shape} vs {y.shape}"
        if x.dtype != y.dtype:
            return f"dtype {x.dtype} vs {y.dtype}"
        if x.dtype.kind in "fc":
            if not np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True):
                return f"values differ: {x.ravel()[:4]} vs {y.ravel()[:4]}"
        elif not np.array_equal(x, y):
            return f"values differ: {x.ravel()[:6]} vs {y.ravel()[:6]}"
        return None
    if kind == "float":
        if not (np.isclose(t[1], m[1], rtol=RTOL, atol=ATOL, equal_nan=True)):
            return f"{t[1]!r} vs {m[1]!r}"
        return None
    if t[1] != m[1]:
        return f"{t[1]!r} vs {m[1]!r}"
    return None


def run(cases: list[Case] | None = None, table=None) -> list[Case]:
    cases = load_cases() if cases is None else cases
    convert(cases, table)
    torch_results, ms_results = _run_workers(cases)
    for case in cases:
        t = torch_results.get(case.id)
        if case.outcome == "crash":
            continue
        if t[0] == "error":
            case.outcome, case.detail = ("n/a" if case.generated else "torch-fails"), t[1]
            continue
        if case.outcome == "torch-left":
            continue
        m = ms_results[case.id]
        problem = m[1] if m[0] == "error" else compare(t, m)
        if case.diagnostics:
            case.outcome = "marked"
            case.detail = problem or ""
        elif problem is None:
            case.outcome = "same"
        else:
            case.outcome = "raises" if m[0] == "error" else "differs"
            case.detail = problem
    flaky = {cid for cid, outcome in known().items() if outcome == "flaky"}
    for case in cases:
        if case.id in flaky or (case.unstable and case.outcome in ("same", "differs")):
            case.outcome = "flaky"   # not counted either way (see known.toml)
    return cases


def known() -> dict[str, str]:
    return tomllib.loads(KNOWN.read_text()).get("known", {}) if KNOWN.exists() else {}


# ---- the same cases with their inputs built in the snippet ---------------------------------------

# worker.inputs() whose dtype or shape the converter reads where the snippet builds them
SPECIAL_INPUTS = ("i", "j", "n", "i0", "bo", "bo2", "d", "d2", "cz", "z0", "zn", "e")
INLINE = "inline: "   # the id prefix of such a case


def inline_cases(cases: list[Case] | None = None) -> list[Case]:
    """Each case using one of SPECIAL_INPUTS again, those inputs built by the snippet itself from
    the same values (`i = torch.tensor([[...]])`, `e = torch.zeros(0, 4)`): as a user's code
    shows them, so the converter's casts and guards for visible dtypes and shapes run (the
    worker's own inputs are invisible to it). Empty tensors' reductions count here: built in
    the snippet, the converter knows they may be empty."""
    sys.path.insert(0, str(HERE))
    import worker
    built = {}
    for name, value in worker.inputs().items():
        if value.dtype == np.complex64:
            built[name] = f"torch.complex(torch.tensor({value.real.tolist()!r}), torch.tensor({value.imag.tolist()!r}))"
        elif value.size == 0:
            built[name] = f"torch.zeros({', '.join(map(str, value.shape))})"
        else:
            dtype = {np.int32: ", dtype=torch.int32", np.float64: ", dtype=torch.float64"}.get(value.dtype.type, "")
            built[name] = f"torch.tensor({value.tolist()!r}{dtype})"
    out = []
    for c in load_cases() if cases is None else cases:
        used = [n for n in SPECIAL_INPUTS if re.search(rf"(?<![\w.]){n}\b", c.code)]
        if used:
            code = "".join(f"{n} = {built[n]}\n" for n in used) + c.code
            out.append(Case(INLINE + c.id, c.api, code, c.family, c.generated))
    return out


# ---- the coverage page -------------------------------------------------------------------------

def api_statuses(cases: list[Case]) -> dict[str, dict]:
    """torch API -> {status, target, why, case}: verified (an unmarked case gives torch's result
    and none fails), wrong (an unmarked case fails: known.toml), marked (every case carries a
    marker), unsupported (left as torch)."""
    from msmigrate.mapping import load_table
    table = load_table()
    by_api: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        if case.outcome not in ("n/a", "torch-fails", "flaky"):
            by_api[case.api].append(case)
    out = {}
    for api, items in sorted(by_api.items()):
        rec = table.lookup(api)
        target = (rec.target or rec.transform or "(method kept)") if rec else \
            ("(same-named MindSpore method)" if api.startswith("torch.Tensor.") else "")
        bad = [c for c in items if c.outcome in FAILURES]
        same = [c for c in items if c.outcome == "same"]
        marked = [c for c in items if c.outcome == "marked"]
        left = [c for c in items if c.outcome == "torch-left"]
        if bad:
            # values vary from run to run where MindSpore reads uninitialised memory: not shown
            detail = "values differ" if bad[0].detail.startswith("values differ") else bad[0].detail
            status, why, case = "wrong", f"{bad[0].outcome}: {detail}", bad[0]
        elif same:
            status, case = "verified", same[0]
            why = f"{len(marked)} argument form(s) marked" if marked else ""
        elif marked:
            status, case = "marked", marked[0]
            why = marked[0].diagnostics[0].split(":", 1)[-1].strip() if marked[0].diagnostics else ""
        else:
            status, case = "unsupported", left[0]
            why = "not converted: the file keeps torch"
            # the marker the converted file carries says why (MSC102/103/104), not MSC108's stop
            reasons = sorted((d for d in left[0].diagnostics if not d.startswith("MSC108")),
                             key=lambda d: not d.startswith(("MSC102", "MSC103", "MSC104")))
            if reasons:
                code, _, message = reasons[0].partition(" ")
                head, sep, rest = message.partition(": ")
                why = f"left as torch ({code}): {rest if sep and head.startswith('torch.') else message}"
        out[api] = dict(status=status, target=target.replace("mindspore.", "ms."), why=why, case=case.id,
                        cases=len(items))
    return out


def totals(statuses: dict[str, dict], cases: list[Case]) -> dict[str, int]:
    counts = Counter(s["status"] for s in statuses.values())
    outcome = Counter(c.outcome for c in cases)
    return dict(apis=len(statuses), verified=counts["verified"], marked=counts["marked"],
                unsupported=counts["unsupported"], wrong=counts["wrong"],
                cases=sum(v for k, v in outcome.items() if k not in ("n/a", "flaky")),
                same=outcome["same"], marked_cases=outcome["marked"], torch_left=outcome["torch-left"],
                failing=sum(outcome[k] for k in FAILURES), unstable=outcome["flaky"])


def totals_line(t: dict[str, int]) -> str:
    return (f"{t['apis']} torch APIs in the per-API suite: {t['verified']} verified, {t['marked']} "
            f"marked, {t['unsupported']} unsupported, {t['wrong']} known wrong "
            f"({t['cases']} cases: {t['same']} same, {t['marked_cases']} marked, "
            f"{t['torch_left']} left as torch, {t['failing']} known failures; {t['unstable']} more on empty "
            f"tensors give MindSpore values that vary from run to run)")


def render_page(cases: list[Case]) -> str:
    statuses = api_statuses(cases)
    lines = [
        "# API coverage",
        "",
        "Generated by `python tests/api_suite/suite.py --write` from the mapping tables (rules/api/)",
        "and the per-API suite (tests/api_suite/cases/): every torch API with at least one case, its",
        "MindSpore target, and what running the case under both frameworks showed; then the records",
        "no case runs, with the status their record gives them. Do not edit.",
        "",
        "- **verified**: a case converted without a marker gives torch's values, shape and dtype",
        "  (rtol 1e-4); argument forms the converter marks are counted apart.",
        "- **marked**: every case is converted with a marker (MSC1xx) saying what differs.",
        "- **unsupported**: the API is left as torch (the converted file stops at its top); the",
        "  marker it carries says why.",
        "- **wrong**: a known failure (tests/api_suite/known.toml), to be fixed or marked.",
        "- Not counted: reductions of empty tensors, where MindSpore 2.10 reads uninitialised memory",
        "  (torch: 0 / nan / an error; MindSpore: a different value each run).",
        "",
        totals_line(totals(statuses, cases)) + ".",
        "",
        "| torch API | MindSpore | status | cases | why / note | verifying case |",
        "|---|---|---|---|---|---|",
    ]
    for api, s in statuses.items():
        why = s["why"].replace("|", "\\|").replace("\n", " ")[:160]
        case = s["case"].replace("|", "\\|")
        lines.append(f"| `{api}` | {s['target'] or '—'} | {s['status']} | {s['cases']} | {why} | `{case}` |")
    untested = records_without_cases(statuses)
    lines += [
        "",
        "## Records the suite does not run",
        "",
        f"{len(untested)} records of rules/api/ have no case here: what they convert needs a program",
        "around it (data pipelines, devices, distributed runs, checkpoints on disk, AMP, torchvision",
        "models and datasets, TensorBoard) and is checked by running converted programs (tests/,",
        "`msmigrate parity`), or they are aliases and attributes of APIs above. Their status is the",
        "record's: auto (converted), review (converted with a marker), manual / unsupported (marked,",
        "the file stops at its top).",
        "",
        "| torch API | MindSpore | record status | table |",
        "|---|---|---|---|",
    ]
    for rec in untested:
        target = (rec.target or rec.transform or "—").replace("mindspore.", "ms.")
        lines.append(f"| `{rec.torch}` | {target} | {rec.status} | {rec.source} |")
    return "\n".join(lines) + "\n"


def records_without_cases(statuses: dict[str, dict]) -> list:
    """The records of rules/api/ no case of the suite verifies, by table and name."""
    from msmigrate.mapping import load_table
    table = load_table()
    return sorted((rec for name, rec in table.by_name.items() if name not in statuses),
                  key=lambda rec: (rec.source, rec.torch))


def failures(cases: list[Case]) -> dict[str, str]:
    return {c.id: c.outcome for c in cases if c.outcome in FAILURES}


def write_known(cases: list[Case]) -> None:
    lines = ["# Unmarked cases that do not give torch's result yet (case -> outcome). Generated by",
             "# `python tests/api_suite/suite.py --write`; the suite fails on any failure not listed",
             "# and on a listed case that passes. Fix the conversion or mark it, then regenerate.",
             "# \"flaky\" (kept by --write): MindSpore's result is not deterministic (uninitialised",
             "# memory: sums over empty tensors), the case may pass or fail.",
             "[known]"]
    by_case = {c.id: c for c in cases}
    found = failures(cases)
    found.update({c.id: "flaky" for c in cases if c.outcome == "flaky"})
    for cid, outcome in sorted(found.items()):
        lines.append(f"{json.dumps(cid)} = {json.dumps(outcome)}  # {by_case[cid].detail[:100]!s}"
                     .replace("\n", " "))
    KNOWN.write_text("\n".join(lines) + "\n")


# ---- Tensor methods passed through by name (rules/tensor_passthrough.toml) ----------------------

PASSTHROUGH = ROOT / "rules" / "tensor_passthrough.toml"


def passthrough_verified(cases: list[Case]) -> list[str]:
    """torch.Tensor methods without a record in rules/api/ whose cases, converted keeping the
    method by name (the tables without rules/tensor_passthrough.toml), give torch's result in
    every unmarked case, or fail exactly as the torch function's own conversion does, or raise
    a dtype TypeError on a case the function's casting record converts right (`i.exp()` on
    int64: a dtype matter of that record, not of the method's name; the method converts as the
    function wherever the dtype is visible or checked at run time).
    The by-name cases run again here (about a thousand)."""
    import dataclasses

    from msmigrate.mapping import load_table
    table = load_table()
    by_name = dataclasses.replace(table, passthrough={})
    methods = [Case(c.id, c.api, c.code, c.family, c.generated, c.unstable) for c in cases
               if c.api.startswith("torch.Tensor.") and not c.api.startswith("torch.Tensor.__")
               and not any(not r.class_bound for r in table.by_method.get(c.api.rsplit(".", 1)[1], ()))]
    by_api: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        if not case.api.startswith("torch.Tensor."):
            by_api[case.api].append(case)
    for case in run(methods, by_name):
        by_api[case.api].append(case)
    regular = {c.id: c.outcome for c in cases}
    out = []
    for api, items in by_api.items():
        name = api.removeprefix("torch.Tensor.")
        if name == api or name in TRAINING_LOOP_NAMES:
            continue
        counted = [c for c in items if c.outcome in ("same",) + FAILURES]
        explained = {c.detail for c in by_api.get("torch." + name.rstrip("_"), ()) if c.outcome in FAILURES}
        func = table.lookup("torch." + name.rstrip("_"))
        casts = func is not None and bool(func.promote or func.compute_as)
        if any(c.outcome == "same" for c in counted) and all(
                c.outcome == "same" or c.detail in explained
                or (casts and c.outcome == "raises" and c.detail.startswith("TypeError")
                    and regular.get(c.id) == "same")
                for c in counted):
            out.append(name)
    return sorted(out)


# what the training-loop rewrite converts (rules/training_loop.py), never a method kept by name
TRAINING_LOOP_NAMES = frozenset({"backward", "grad", "register_hook", "retain_grad"})


# Tensor attributes that other objects of real programs carry too (`args.name`, `batch.data`,
# `arr.shape`): an unverified one is not marked on every read
COMMON_ATTRIBUTES = frozenset({"name", "data", "device", "dtype", "shape", "grad", "ndim", "real",
                               "imag", "layout", "T", "requires_grad"})


def torch_method_names(attributes: bool = False) -> list[str]:
    """Public torch.Tensor methods (or, with `attributes`, its non-callable attributes, minus
    COMMON_ATTRIBUTES) that are not also members of Python's builtin types or of nn.Module /
    Optimizer (`d.values()`, `model.float()` are not tensor calls to mark)."""
    import torch
    taken = set()
    for kind in (str, list, dict, set, tuple, int, float, bytes, complex, torch.nn.Module,
                 torch.optim.Optimizer):
        taken |= set(dir(kind))
    taken |= TRAINING_LOOP_NAMES | (COMMON_ATTRIBUTES if attributes else set())
    return sorted(n for n in dir(torch.Tensor) if not n.startswith("_") and n not in taken
                  and callable(getattr(torch.Tensor, n, None)) != attributes)


def render_passthrough(verified: list[str], names: list[str], attributes: list[str]) -> str:
    def listing(items):
        return "[\n" + "".join(f"    {json.dumps(n)},\n" for n in items) + "]"
    return ("# Generated by `python tests/api_suite/suite.py --write`; read by msmigrate.mapping. Do not edit.\n"
            "# A torch.Tensor method without a record in rules/api/ is kept by name only when it is in\n"
            "# `verified`: the per-API suite ran it and MindSpore's method of that name gave torch's\n"
            "# result (or failed as the torch function's own conversion does). Any other method of\n"
            "# `torch_methods` converts as its torch function's record when there is one (x.fmin(y) ->\n"
            "# torch.fmin(x, y)), else it is kept and marked (MSC101).\n"
            f"verified = {listing(verified)}\n\n"
            "# public torch.Tensor methods that are not methods of Python builtins, nn.Module or Optimizer\n"
            f"torch_methods = {listing(names)}\n\n"
            "# the same for its attributes (`x.mH`), minus those other objects carry too (`.name`)\n"
            f"torch_attributes = {listing(attributes)}\n")


def main(argv: list[str]) -> int:
    import time
    start = time.time()
    cases = run()
    print(f"{len(cases)} cases in {time.time() - start:.1f} s: {dict(Counter(c.outcome for c in cases))}")
    for c in cases:
        if c.outcome in FAILURES + ("torch-fails",) and (c.id not in known() or "-v" in argv):
            print(f"{c.outcome:8} {c.api:40} {c.id}\n         {c.detail[:200]}")
    if "--write" in argv:
        text = render_passthrough(passthrough_verified(cases), torch_method_names(),
                                  torch_method_names(attributes=True))
        if not PASSTHROUGH.exists() or PASSTHROUGH.read_text() != text:
            PASSTHROUGH.write_text(text)
            from msmigrate.mapping import load_table
            load_table.cache_clear()
            cases = run()
            print(f"{PASSTHROUGH.name} rewritten: {dict(Counter(c.outcome for c in cases))}")
        write_known(cases)
        PAGE.parent.mkdir(exist_ok=True)
        PAGE.write_text(render_page(cases))
        readme = ROOT / "README.md"
        readme.write_text(re.sub(r"^\d+ torch APIs in the per-API suite: .*$",
                                 totals_line(totals(api_statuses(cases), cases)) + ".",
                                 readme.read_text(), count=1, flags=re.M))
        print(totals_line(totals(api_statuses(cases), cases)))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main(sys.argv[1:]))
