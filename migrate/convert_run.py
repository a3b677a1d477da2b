"""`msmigrate convert` on files and whole trees: what the command does, apart from parsing options.

1. The inputs are walked (files passed directly, `.py` and `.ipynb` under directories; an output
   directory inside the input tree is left out of the walk).
2. Every file is summarised (imports, classes, factories: msmigrate.project) so that names
   defined in one file and used in another convert as they would in a single file.
3. Every file is converted, in worker processes (`-j`), results taken back in file order:
   diagnostics are printed, outputs written (atomically) or diffs printed in that order, so the
   output does not depend on the number of workers.
4. A summary: files, lines, conversions by status, diagnostics and lint findings by code, and the
   torch APIs left for a human, most frequent first.

Never imports torch or mindspore.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from msmigrate import convert_cache
from msmigrate.diagnostics import InputError
from msmigrate.files import copy_atomic, read_text, walk_tree, write_atomic
from msmigrate.torch_left import STOP_CODE

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SOURCE_SUFFIXES = (".py", ".ipynb")
DEFAULT_MAX_MB = 5.0
_API = re.compile(r"^((?:torch|torchvision|torchaudio|torchtext)(?:\.\w+)+)")
_PY2 = re.compile(r"^\s*(?:print\s+[^\s(=.,)]|exec\s+[\"']|except\s+[\w.]+\s*,\s*\w+\s*:|raise\s+\w+\s*,)|"
                  r"\bur[\"']|<>|\b0[0-7]+L?\b|\b\d+L\b", re.M)


class UsageError(ValueError):
    """Options that cannot work together: the CLI turns it into click's usage error (exit 2)."""


@dataclass
class Options:
    output: Path | None = None
    write: bool = False
    check: bool = False
    report: Path | None = None
    lint: bool = True
    quiet: bool = False
    copy_other: bool = False
    jobs: int = 0                  # 0: all cores
    max_mb: float = DEFAULT_MAX_MB
    progress: bool | None = None   # None: when stderr is a terminal
    cache: bool = True             # reuse results from .msmigrate_cache/convert (content-hash keyed)
    strict: bool = False           # exit 1 when an output still needs torch
    # set by run(): one input file and `-o NAME.py` (its own suffix, not a directory) -> that file
    output_is_file: bool = False
    output_is_stdout: bool = False   # set by run(): one input file and `-o -`


@dataclass
class Job:
    path: Path
    root: Path
    kind: str                       # "py" | "ipynb"
    shown: str                      # the name lint findings on the converted code use
    project: dict = field(default_factory=dict)
    classes: dict = field(default_factory=dict)   # name -> (file, first line, last line) of its class
    lint: bool = True
    max_bytes: int = 0
    cache_dir: str | None = None    # where results are cached (None: no cache)
    fingerprint: str = ""           # the converter's version and rules, part of every cache key
    class_sources: dict | None = None   # the code of `classes`, read once per job


# ---------------------------------------------------------------------------------------
# worker side (plain data in and out: runs in other processes)
# ---------------------------------------------------------------------------------------

def summarize_job(job: Job):
    """(module summary or None) of one file, for the project facts."""
    from msmigrate import notebook
    from msmigrate.project import ModuleSummary, summarize

    try:
        text, _ = read_text(job.path)
    except InputError:
        return None
    if job.max_bytes and len(text) > job.max_bytes:
        return None
    if job.kind == "ipynb":
        try:
            return summarize(notebook.program(notebook.load(text, str(job.path))).code)
        except Exception:   # a broken notebook: the conversion reports it
            return None
    if "import" not in text:
        return None
    if job.cache_dir is None:
        return summarize(text, job.path.name == "__init__.py")
    k = convert_cache.key(job.fingerprint, "summary", job.path.name == "__init__.py", text.encode())
    hit = convert_cache.get(job.cache_dir, k)
    if hit is not None:
        return None if hit.get("none") else ModuleSummary.from_dict(hit)
    summary = summarize(text, job.path.name == "__init__.py")
    convert_cache.put(job.cache_dir, k, {"none": True} if summary is None else dataclasses.asdict(summary))
    return summary


def convert_job(job: Job) -> dict:
    """Convert one file. Returns a dict: path, kind, text, encoding, lines (of code), code (None
    if failed), result (ConversionResult.to_dict(); notebooks: diagnostics carry their cell),
    lint, error."""
    out = {"path": str(job.path), "kind": job.kind, "text": None, "encoding": "utf-8", "code": None,
           "result": None, "lint": [], "error": None, "lines": 0}
    try:
        text, encoding = read_text(job.path)
        out["text"], out["encoding"] = text, encoding
        out["lines"] = _count_lines(text)
        if job.max_bytes and len(text) > job.max_bytes and "torch" in text:
            raise InputError(str(job.path), f"file too large to convert ({len(text) / 1e6:.1f} MB > "
                                            f"{job.max_bytes / 1e6:g} MB; raise the limit with --max-size, "
                                            f"or split the file)")
        k = None
        if job.cache_dir is not None:
            job.class_sources = _class_sources(job)
            k = convert_cache.key(job.fingerprint, "convert", str(job.path), job.kind, job.lint,
                                  job.project, job.class_sources, text.encode())
            hit = convert_cache.get(job.cache_dir, k)
            if hit is not None:   # lint findings name the output file, which may differ this run
                out.update(hit, code=text if hit["code"] is None else hit["code"],
                           lint=[{**f, "path": job.shown} for f in hit["lint"]])
                return out
        if job.kind == "ipynb":
            _convert_notebook(job, text, out)
        else:
            _convert_python(job, text, out)
        if k is not None:
            convert_cache.put(job.cache_dir, k, {**{f: v for f, v in out.items() if f != "text"},
                                                 "code": None if out["code"] == text else out["code"]})
    except InputError as exc:
        out["error"] = exc.diagnostic.to_dict()
        if exc.diagnostic.code == "MSC001" and job.kind == "py":
            out["error"].update(_syntax_error(out["text"] or "", exc.diagnostic))
        out["code"] = None
    except RecursionError:
        out["error"] = _error(job.path, "nesting too deep to convert (simplify the expression, or "
                                        "convert this file by hand)")
    except Exception as exc:   # one file's crash must not stop the others
        out["error"] = _error(job.path, f"internal error: {type(exc).__name__}: {exc} "
                                        f"(please report it; the file was left as it was)")
    return out


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _error(path, message: str, line: int = 1, col: int = 1, code: str = "MSC002") -> dict:
    return InputError(str(path), message, line, col, code).diagnostic.to_dict()


def _syntax_error(text: str, d) -> dict:
    """Python's own message and position (clearer than the parser's token list), and what to do."""
    import ast
    import warnings

    message, line, col = d.message, d.line, d.col
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text.lstrip("\ufeff"))
    except SyntaxError as exc:
        message, line, col = f"syntax error: {exc.msg}", exc.lineno or line, exc.offset or col
    except (ValueError, MemoryError, RecursionError):
        pass
    if _PY2.search(text):
        todo = "this looks like Python 2: port it to Python 3 first, e.g. with 2to3, then convert it"
    else:
        todo = "fix the syntax error; the file was left as it was"
    return {"message": f"{message} ({todo})", "line": line, "col": col}


def _convert_python(job: Job, text: str, out: dict) -> None:
    from msmigrate.engine import convert_source

    bom = text.startswith("\ufeff")
    result = convert_source(text[1:] if bom else text, str(job.path), project=job.project,
                            project_classes=_class_sources(job))
    out["code"] = ("\ufeff" + result.code) if bom else result.code
    out["result"] = result.to_dict()
    if result.changed and job.lint:
        out["lint"] = _lint(result.code, job.shown)


def _class_sources(job: Job) -> dict[str, str]:
    """The code of the project classes the file imports, read from their files."""
    if job.class_sources is not None:
        return job.class_sources
    out, files = {}, {}
    for name, (path, first, last) in job.classes.items():
        try:
            if path not in files:
                files[path] = read_text(Path(path))[0].lstrip("\ufeff").splitlines(keepends=True)
        except InputError:
            continue
        out[name] = "".join(files[path][first - 1:last])
    return out


def _lint(code: str, shown: str) -> list[dict]:
    from msmigrate.lint import LintConfig, lint_source

    try:
        # converted code is ported code: the migration traps (MSG7xx) apply
        return [f.to_dict() for f in lint_source(code, shown, LintConfig(ported=True))]
    except SyntaxError:
        return []


def _convert_notebook(job: Job, text: str, out: dict) -> None:
    from msmigrate import notebook
    from msmigrate.engine import convert_source

    nb = notebook.load(text, str(job.path))
    if not notebook.is_python(nb):
        out["code"] = text
        out["result"] = {"path": str(job.path), "changed": False, "conversions": [], "diagnostics": []}
        return
    prog = notebook.program(nb)
    out["lines"] = sum(prog.lengths)   # the code, not the JSON around it
    try:
        result = convert_source(prog.code, str(job.path), project=job.project,
                                project_classes=_class_sources(job))
    except InputError as exc:
        error = exc.diagnostic.to_dict()
        if exc.diagnostic.code == "MSC001":
            error.update(_syntax_error(prog.code, exc.diagnostic))
        error["cell"], error["line"] = prog.locate(error["line"])
        out["error"] = error
        return
    diags = []
    for d in result.diagnostics:
        located, cell = notebook.cell_diagnostic(prog, d)
        diags.append({**located.to_dict(), "cell": cell})
    conversions = []
    for c in result.conversions:
        cell, line = prog.locate(c.line)
        conversions.append({**c.__dict__, "cell": cell, "line": line})
    changed = False
    if result.changed:
        try:
            changed = notebook.apply(nb, notebook.split(prog, result.code))
        except notebook.NotebookError as exc:
            raise InputError(str(job.path), f"{exc} (convert this notebook as a script: "
                                            f"jupyter nbconvert --to script)") from None
    out["code"] = notebook.dump(nb) if changed else text
    out["result"] = {"path": str(job.path), "changed": changed, "conversions": conversions, "diagnostics": diags}
    if changed and job.lint:
        for f in _lint(result.code, job.shown):
            cell, line = prog.locate(f["line"])
            out["lint"].append({**f, "line": line, "cell": cell})


# ---------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------

class Progress:
    """`[#####     ] 12/40 files` on stderr, redrawn in place; other stderr lines clear it first."""

    def __init__(self, total: int, enabled: bool, stream) -> None:
        self.total, self.enabled, self.stream, self.done = total, enabled and total > 1, stream, 0

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")

    def advance(self) -> None:
        self.done += 1
        if self.enabled:
            width = 30
            filled = width * self.done // max(self.total, 1)
            self.stream.write(f"\r\x1b[K[{'#' * filled}{' ' * (width - filled)}] {self.done}/{self.total} files")
            self.stream.flush()


def run(paths: list[Path], opts: Options, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if opts.write and opts.output is not None:
        raise UsageError("--write and --output exclude each other")
    if opts.copy_other and (opts.output is None or opts.check):
        raise UsageError("--copy-other copies into the --output directory: use it with -o DIR "
                         "(not with --write, --check or the default diff)")
    if opts.output is not None and str(opts.output) == "-":
        if len(paths) != 1 or not paths[0].is_file() or opts.copy_other:
            raise UsageError("-o - prints the converted code of one input file: give one file")
        opts = dataclasses.replace(opts, output=None, output_is_stdout=True)
    if opts.output is not None and len(paths) == 1 and paths[0].is_file() \
            and opts.output.suffix == paths[0].suffix and not opts.output.is_dir():
        if opts.output.resolve() == paths[0].resolve():
            raise UsageError(f"--output {opts.output} is the input file: use --write to convert in place")
        if opts.copy_other:
            raise UsageError("--copy-other copies into an --output directory, not a file")
        opts = dataclasses.replace(opts, output_is_file=True)
    elif opts.output is not None:
        if opts.output.exists() and not opts.output.is_dir():
            raise UsageError(f"--output {opts.output} is a file: give a directory (a file is accepted "
                             f"as the output of one input file with the same suffix)")
        out_real = opts.output.resolve()
        for p in paths:
            if p.is_dir() and p.resolve() == out_real:
                raise UsageError(f"--output {opts.output} is the input directory: choose another "
                                 f"(or use --write to convert in place)")

    errors: list[dict] = []
    missing = [p for p in paths if not p.exists() and not p.is_symlink()]
    for p in missing:
        errors.append(_error(p, "no such file or directory (check the path)"))
    exclude = (opts.output,) if opts.output is not None and not opts.output_is_file else ()
    walked = walk_tree([p for p in paths if p not in missing], SOURCE_SUFFIXES, exclude,
                       others=opts.copy_other)
    sources, seen = [], set()
    for f, root, is_source in walked:   # a file named twice (directly and in its directory): once
        if is_source and os.path.realpath(f) not in seen:
            seen.add(os.path.realpath(f))
            sources.append((f, root))
    others = [(f, root) for f, root, is_source in walked if not is_source]

    jobs = []
    max_bytes = int(opts.max_mb * 1e6)
    cache = {"cache_dir": str(Path.cwd() / convert_cache.CACHE_DIR / "convert"),
             "fingerprint": convert_cache.fingerprint()} if opts.cache else {}
    for f, root in sources:
        kind = "ipynb" if f.suffix == ".ipynb" else "py"
        shown = str(_destination(opts, f, root)) if opts.output is not None else str(f)
        jobs.append(Job(f, root, kind, shown, lint=opts.lint, max_bytes=max_bytes, **cache))
    n_workers = opts.jobs if opts.jobs > 0 else (os.cpu_count() or 1)
    with _Pool(n_workers, len(jobs)) as pool:
        _attach_project_facts(jobs, pool, {p for p in paths if p.is_file()})
        progress = Progress(len(jobs), err.isatty() if opts.progress is None else opts.progress, err)
        for p in missing:
            _echo(err, _error_text(errors[missing.index(p)]), progress)
        summary = Summary()
        report = {"version": _version(), "files": []}
        input_set = {os.path.realpath(f) for f, _ in sources}
        for job, res in zip(jobs, pool.map(convert_job, jobs)):
            progress.advance()
            _handle(job, res, opts, summary, report, errors, input_set, out, err, progress)
        progress.clear()
    for f, root in others:
        _copy_other(f, opts.output / f.relative_to(root), errors, err)
    summary.failed += len(missing)
    if opts.report is not None:
        try:
            report["summary"] = summary.to_dict(errors)
            write_atomic(opts.report, json.dumps(report, indent=2) + "\n")
        except OSError as exc:
            e = _error(opts.report, f"cannot write the report: {exc.strerror or exc} (choose another --report path)")
            errors.append(e)
            err.write(_error_text(e) + "\n")
    for line in summary.lines(opts, len(errors)):
        err.write(line + "\n")
    err.flush()
    if errors:
        return EXIT_ERROR
    if opts.check and summary.converted:
        return EXIT_FINDINGS
    if opts.strict and summary.need_torch:
        return EXIT_FINDINGS
    return EXIT_OK


def _version() -> str:
    from msmigrate import __version__

    return __version__


def _echo(stream, line: str, progress: Progress) -> None:
    progress.clear()
    stream.write(line + "\n")


def _error_text(e: dict) -> str:
    where = f"cell {e['cell']}:" if e.get("cell") else ""
    return f"{e['path']}:{where}{e['line']}:{e['col']}: error: {e['message']}"


def _diag_text(d: dict) -> str:
    where = f"cell {d['cell']}:" if d.get("cell") else ""
    mark = " [*]" if d.get("fixable") else ""
    return f"{d['path']}:{where}{d['line']}:{d['col']}: {d['code']}{mark} {d['message']}"


def _handle(job: Job, res: dict, opts: Options, summary: "Summary", report: dict, errors: list,
            input_set: set, out, err, progress: Progress) -> None:
    path = job.path
    summary.lines_in += res["lines"]
    if res["error"] is not None:
        errors.append(res["error"])
        summary.failed += 1
        report["files"].append({"path": str(path), "error": res["error"]})
        _echo(err, _error_text(res["error"]), progress)
        return
    result = res["result"]
    entry = dict(result)
    if res["lint"]:
        entry["lint"] = res["lint"]
    report["files"].append(entry)
    summary.add(result, res["lint"])
    if not opts.quiet:
        for d in result["diagnostics"]:
            _echo(err, _diag_text(d), progress)
        for f in res["lint"]:
            _echo(err, f"{_diag_text(f)} (in the converted code)", progress)
    changed = result["changed"]
    if opts.check:
        return
    code = res["code"]
    if opts.write:
        if changed:
            _write(path, code, res["encoding"], errors, err, progress)
    elif opts.output_is_stdout:
        out.write(code)
    elif opts.output is not None:
        dest = _destination(opts, path, job.root)
        if os.path.realpath(dest) in input_set:
            e = _error(path, f"the output {dest} would overwrite an input file (choose an --output "
                             f"outside the input tree, or use --write)")
            errors.append(e)
            _echo(err, _error_text(e), progress)
            return
        if changed:
            _write(dest, code, res["encoding"], errors, err, progress)
        else:   # unchanged: the very bytes (encoding, line endings) of the input
            _copy_other(path, dest, errors, err)
    elif changed:
        label = path.as_posix().lstrip("/")
        out.writelines(difflib.unified_diff(res["text"].splitlines(keepends=True), code.splitlines(keepends=True),
                                            f"a/{label}", f"b/{label}"))


def _destination(opts: Options, path: Path, root: Path) -> Path:
    return opts.output if opts.output_is_file else opts.output / path.relative_to(root)


def _write(dest: Path, code: str, encoding: str, errors: list, err, progress) -> None:
    try:
        write_atomic(dest, code, encoding=encoding)
    except (OSError, UnicodeEncodeError) as exc:
        e = _error(dest, f"cannot write: {getattr(exc, 'strerror', None) or exc} (check the output "
                         f"directory's permissions and free space)")
        errors.append(e)
        _echo(err, _error_text(e), progress)


def _copy_other(src: Path, dest: Path, errors: list, err) -> None:
    try:
        if os.path.realpath(src) == os.path.realpath(dest):
            return
        if src.is_dir():   # an empty directory of the input tree
            dest.mkdir(parents=True, exist_ok=True)
            return
        copy_atomic(src, dest)
    except OSError as exc:
        e = _error(src, f"cannot copy to {dest}: {exc.strerror or exc} (check permissions and links)")
        errors.append(e)
        err.write(_error_text(e) + "\n")


# ---------------------------------------------------------------------------------------
# project facts
# ---------------------------------------------------------------------------------------

def _attach_project_facts(jobs: list[Job], pool: "_Pool", direct: set[Path]) -> None:
    """Summarise every file, resolve the project facts per root, give each job its names.
    A file passed directly is seen with the .py files beside it that it imports, directly or
    through each other (read, never converted): `convert train.py` knows the model in
    `models.py` beside it."""
    from msmigrate.project import Project, module_name

    summaries = list(pool.map(summarize_job, jobs))
    seen = {j.path for j in jobs}
    converted = set(seen)
    neighbours: list[Job] = []
    pending = [(j, s) for j, s in zip(jobs, summaries) if j.path in direct]
    while pending:
        wanted = []
        for job, summary in pending:
            for f in _imported_siblings(summary, job.path.parent) if summary is not None else ():
                if f not in seen and f.is_file():
                    seen.add(f)
                    wanted.append(Job(f, job.root, "py", "", max_bytes=job.max_bytes,
                                      cache_dir=job.cache_dir, fingerprint=job.fingerprint))
        found = list(pool.map(summarize_job, wanted))
        neighbours += wanted
        summaries += found
        pending = list(zip(wanted, found))
    by_root: dict[Path, list[tuple[Job, object]]] = {}
    for job, s in zip(jobs + neighbours, summaries):
        by_root.setdefault(job.root, []).append((job, s))
    for root, items in by_root.items():
        modules, paths, notebooks = {}, {}, []
        for job, s in items:
            if s is None:
                continue
            if job.kind == "ipynb":
                notebooks.append((job, s))
                continue
            name, _ = module_name(job.path, root)
            modules[name], paths[name] = s, job.path
        if not modules and not notebooks:
            continue
        project = Project(modules)
        for job, s in items:
            if s is None or job.path not in converted:
                continue
            name = module_name(job.path, root)[0]
            if job.kind == "ipynb":   # not importable: resolved as if it sat in its directory
                package, _, stem = name.rpartition(".")
                name = f"{package}.__notebook_{stem}" if package else f"__notebook_{stem}"
            job.project = project.names_for(name, s)
            job.classes = {local: (str(paths[origin]), *project.modules[origin].class_lines[cls])
                           for local, (origin, cls) in project.class_origins(name, s).items()}


def _imported_siblings(summary, directory: Path) -> set[Path]:
    """The `name.py` files in `directory` that a file's top-level imports could mean."""
    names = set()
    for imp in summary.imports.values():
        if imp[0] == "module":
            names.add(imp[1].split(".")[0])
        elif imp[2] <= 1:   # ("from", module, level, name): `from m import x`, `from . import m`
            names.add((imp[1] or imp[3]).split(".")[0])
    names.update(module.split(".")[0] for module, level in summary.star if level <= 1)
    return {directory / f"{n}.py" for n in sorted(names) if n}


class _Pool:
    """map() over worker processes (in order), or in this process for one worker / few files."""

    def __init__(self, workers: int, n_items: int) -> None:
        self.workers = max(1, min(workers, n_items))
        self.pool = None
        self.chunk = max(1, min(16, n_items // (self.workers * 8) if n_items else 1))

    def __enter__(self):
        if self.workers > 1:
            import multiprocessing

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            if method == "fork":   # workers inherit the parsed tables instead of each loading them
                from msmigrate.engine import structural_passes
                from msmigrate.mapping import load_table

                load_table()
                structural_passes()
            self.pool = multiprocessing.get_context(method).Pool(self.workers)
        return self

    def map(self, fn, items):
        if self.pool is None:
            return (fn(i) for i in items) if fn is convert_job else [fn(i) for i in items]
        if fn is convert_job:
            return self.pool.imap(fn, items, self.chunk)
        return self.pool.map(fn, items, self.chunk)

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.terminate() if exc[0] is not None else self.pool.close()
            self.pool.join()


# ---------------------------------------------------------------------------------------
# the summary
# ---------------------------------------------------------------------------------------

@dataclass
class Summary:
    converted: int = 0
    unchanged: int = 0
    failed: int = 0
    lines_in: int = 0
    attention: int = 0
    statuses: Counter = field(default_factory=Counter)
    codes: Counter = field(default_factory=Counter)
    lint_codes: Counter = field(default_factory=Counter)
    by_hand: Counter = field(default_factory=Counter)
    first_seen: dict = field(default_factory=dict)
    need_torch: list = field(default_factory=list)   # files whose converted code stops at its top

    def add(self, result: dict, lint: list[dict]) -> None:
        if result["changed"]:
            self.converted += 1
        else:
            self.unchanged += 1
        self.statuses.update(c["status"] for c in result["conversions"])
        self.attention += len(result["diagnostics"])
        if any(d["code"] == STOP_CODE for d in result["diagnostics"]):
            self.need_torch.append(result["path"])
        for d in result["diagnostics"]:
            self.codes[d["code"]] += 1
            if d.get("status") in ("manual", "unsupported") and d["code"] != STOP_CODE:   # the file, not an API
                key = _api_of(d["message"])
                self.by_hand[key] += 1
                if key not in self.first_seen:
                    where = f"cell {d['cell']}:" if d.get("cell") else ""
                    self.first_seen[key] = f"{d['path']}:{where}{d['line']}:{d['col']}"
        self.lint_codes.update(f["code"] for f in lint)

    @property
    def files(self) -> int:
        return self.converted + self.unchanged + self.failed

    def top_by_hand(self, n: int = 10) -> list[dict]:
        ranked = sorted(self.by_hand.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
        return [{"api": k, "count": v, "first": self.first_seen[k]} for k, v in ranked]

    def to_dict(self, errors: list) -> dict:
        return {"files": {"total": self.files, "converted": self.converted, "unchanged": self.unchanged,
                          "failed": self.failed},
                "lines": self.lines_in,
                "conversions": dict(sorted(self.statuses.items())),
                "diagnostics": dict(sorted(self.codes.items())),
                "lint": dict(sorted(self.lint_codes.items())),
                "need_torch": self.need_torch,
                "errors": [{k: e[k] for k in ("path", "cell", "line", "col", "message") if k in e} for e in errors],
                "by_hand": self.top_by_hand(len(self.by_hand))}

    def lines(self, opts: Options, n_errors: int) -> list[str]:
        out = []
        if self.need_torch:
            n = len(self.need_torch)
            shown = ", ".join(self.need_torch[:5]) + (", ..." if n > 5 else "")
            out.append(f"{n} file{'s' if n != 1 else ''} still need{'s' if n == 1 else ''} torch ({shown}): "
                       f"{'each stops' if n != 1 else 'it stops'} at its top ({STOP_CODE}) until the torch uses "
                       f"listed there are converted by hand")
        if self.files > 1:
            out.append(f"summary: {self.files} files ({self.converted} converted, {self.unchanged} unchanged, "
                       f"{self.failed} failed), {self.lines_in} lines")
            if self.statuses:
                out.append("  conversions: " + ", ".join(f"{v} {k}" for k, v in sorted(self.statuses.items())))
            if self.codes:
                out.append("  diagnostics: " + ", ".join(f"{k} {v}" for k, v in sorted(self.codes.items())))
            if self.lint_codes:
                out.append("  lint findings in the converted code: "
                           + ", ".join(f"{k} {v}" for k, v in sorted(self.lint_codes.items())))
            top = self.top_by_hand()
            if top:
                out.append("  left for you to convert by hand (most frequent first):")
                width = max(len(t["api"]) for t in top)
                out += [f"    {t['count']:>5}  {t['api']:<{width}}  first at {t['first']}" for t in top]
        verb = "would be converted" if opts.check else "converted"
        lint_total = sum(self.lint_codes.values())
        out.append(f"{self.converted} file{'s' if self.converted != 1 else ''} {verb}, {self.attention} place"
                   f"{'s' if self.attention != 1 else ''} need{'s' if self.attention == 1 else ''} attention"
                   + (f", {lint_total} lint finding{'s' if lint_total != 1 else ''} in the converted code"
                      if lint_total else "")
                   + (f", {n_errors} error{'s' if n_errors != 1 else ''}" if n_errors else ""))
        return out


def _api_of(message: str) -> str:
    """The torch API a diagnostic is about (messages start with it), else its first clause."""
    m = _API.match(message)
    if m:
        return m.group(1)
    return message.split(":")[0][:60]
