"""Lint many files: discovery, content-hash cache, parallel workers, fixes.

The cache maps sha256(rules version, config, path, content) to the file's findings, so an
unchanged tree re-lints without parsing anything. It lives in `.msmigrate_cache/lint.json`
under the project root (the directory holding pyproject.toml, else the current directory).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from msmigrate.diagnostics import Diagnostic
from msmigrate.lint.config import LintConfig
from msmigrate.lint.linter import all_rules, lint_source, might_compile

CACHE_DIR = ".msmigrate_cache"
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules",
                       CACHE_DIR, ".mypy_cache", ".pytest_cache", "build", "dist"})


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: str | None = None          # unreadable / syntax error: "line:col: message"
    skipped: bool = False              # no compiled code possible (prefilter)
    cached: bool = False
    lines: int = 0
    external: object = None            # cross-file facts it was linted with (for re-linting after fixes)


def iter_files(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        if p.is_dir():
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
                out.extend(Path(root, f) for f in sorted(files) if f.endswith(".py"))
        else:
            out.append(p)
    return out


def rules_fingerprint() -> str:
    """Changes whenever a rule module changes, so cached results never outlive the rules."""
    import msmigrate.lint as lint_pkg
    import msmigrate.rules.lint as rules_pkg

    from msmigrate.files import code_fingerprint

    return code_fingerprint((lint_pkg, rules_pkg))


def _summarize_one(path) -> dict | None:
    """Cross-file summary of one file (None if it does not parse)."""
    import ast

    from msmigrate.lint.analysis import FileModel
    from msmigrate.lint.crossfile import summarize

    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        tree = ast.parse(text)
        return summarize(tree, FileModel(tree))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None


def _lint_one(args) -> FileResult:
    path, config, external = args
    res = FileResult(str(path))
    try:
        data = Path(path).read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        res.error = f"1:1: cannot read file: {exc}"
        return res
    if text.startswith("\ufeff"):
        text = text[1:]
    res.lines = text.count("\n") + 1
    if not might_compile(text):
        res.skipped = True
        return res
    try:
        res.diagnostics = lint_source(text, str(path), config, external)
    except SyntaxError as exc:
        res.error = f"{exc.lineno or 1}:{(exc.offset or 0) or 1}: syntax error: {exc.msg}"
    except RecursionError:
        res.error = "1:1: file too deeply nested to analyse"
    return res


class Cache:
    def __init__(self, root: Path, config: LintConfig, enabled: bool = True):
        self.enabled = enabled
        self.file = root / CACHE_DIR / "lint.json"
        self.salt = rules_fingerprint() + config.key()
        self.entries: dict = {}
        self.summary_keys: set[str] = set()
        self.dirty = False
        if enabled and self.file.is_file():
            try:
                self.entries = json.loads(self.file.read_text())
            except (OSError, ValueError):
                self.entries = {}

    def key(self, path: Path, data: bytes, extra: str = "") -> str:
        return hashlib.sha256(self.salt.encode() + extra.encode() + str(path).encode() + b"\0" + data).hexdigest()

    def get(self, key: str) -> FileResult | None:
        hit = self.entries.get(key) if self.enabled else None
        if hit is None:
            return None
        diags = [Diagnostic(**{**d, "fix": tuple(tuple(e) for e in d.get("fix", ()))}) for d in hit["d"]]
        return FileResult(hit["p"], diags, hit.get("e"), hit.get("s", False), True, hit.get("n", 0))

    def put(self, key: str, res: FileResult) -> None:
        if self.enabled:
            self.entries[key] = {"p": res.path, "d": [d.to_dict() for d in res.diagnostics], "e": res.error,
                                 "s": res.skipped, "n": res.lines}
            self.dirty = True

    def save(self, live_keys: set[str]) -> None:
        if not (self.enabled and self.dirty):
            return
        self.file.parent.mkdir(parents=True, exist_ok=True)
        gitignore = self.file.parent / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("*\n")
        # keep only entries for the files seen in this run, plus a bounded number of others
        kept = {k: v for k, v in self.entries.items() if k in live_keys}
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(kept))
        os.replace(tmp, self.file)


def lint_paths(paths: list[Path], config: LintConfig, jobs: int = 1, cache_root: Path | None = None,
               use_cache: bool = True) -> list[FileResult]:
    files = iter_files(paths)
    cache = Cache(cache_root or Path.cwd(), config, enabled=use_cache)
    results: dict[int, FileResult] = {}
    data: dict[int, bytes] = {}
    for i, f in enumerate(files):
        try:
            data[i] = f.read_bytes()
        except OSError as exc:
            results[i] = FileResult(str(f), error=f"1:1: cannot read file: {exc}")
    pool = ProcessPoolExecutor(max_workers=jobs) if jobs > 1 and len(data) > 1 else None
    try:
        externals = _link(files, data, cache, pool) if len(data) > 1 else {}
        todo, keys, live = [], {}, set()
        for i in data:
            ext = externals.get(str(files[i]))
            k = cache.key(files[i], data[i], ext.key() if ext else "")
            live.add(k)
            hit = cache.get(k)
            if hit is not None:
                hit.path = str(files[i])
                hit.external = ext
                results[i] = hit
            else:
                keys[i] = k
                todo.append(i)
        live.update(cache.summary_keys)
        if todo:
            all_rules()  # import the rules once before forking workers
            work = [(files[i], config, externals.get(str(files[i]))) for i in todo]
            if pool is not None and len(todo) > 1:
                done = list(pool.map(_lint_one, work, chunksize=max(1, len(work) // (jobs * 8))))
            else:
                done = [_lint_one(w) for w in work]
            for i, res in zip(todo, done):
                res.external = externals.get(str(files[i]))
                results[i] = res
                if res.error is None or "syntax error" in res.error:
                    cache.put(keys[i], res)
    finally:
        if pool is not None:
            pool.shutdown()
    cache.save(live)
    return [results[i] for i in range(len(files))]


_IMPORT_LINE = re.compile(rb"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import|import[ \t]+([\w.]+))", re.M)


def _imports_any(raw: bytes, stems: set[str]) -> bool:
    """Does this file (textually) import a module named like one of the linted files?"""
    for m in _IMPORT_LINE.finditer(raw):
        name = (m.group(1) or m.group(2) or b"").decode("ascii", "replace")
        if name.startswith(".") or any(part in stems for part in name.split(".")):
            return True
    return False


def _link(files, data, cache, pool) -> dict:
    """Cross-file facts for the files linted together (summaries cached by content)."""
    from msmigrate.lint.crossfile import link

    summaries, todo = {}, []
    # only files that import another linted file, and the files they may import, need summaries
    stems = {f.stem if f.stem != "__init__" else f.parent.name for f in files}
    importers = {i for i, raw in data.items() if _imports_any(raw, stems)}
    if not importers:
        return {}
    for i, raw in data.items():
        # files that may hold compiled code, and package `__init__.py` files that import (re-export)
        if not any(m.encode() in raw for m in ("construct", "jit", "mindspore")) and \
                not (i in importers and files[i].name == "__init__.py"):
            continue
        stem = files[i].stem if files[i].stem != "__init__" else files[i].parent.name
        if i not in importers and not any(stem.encode() in data[j] for j in importers):
            continue
        k = "s:" + cache.key(files[i], raw)
        cache.summary_keys.add(k)
        if cache.enabled and k in cache.entries:
            if cache.entries[k] is not None:
                summaries[str(files[i])] = cache.entries[k]
        else:
            todo.append((i, k))
    if todo:
        paths = [files[i] for i, _ in todo]
        done = list(pool.map(_summarize_one, paths, chunksize=max(1, len(paths) // 16))) if pool and len(paths) > 1 \
            else [_summarize_one(p) for p in paths]
        for (i, k), summary in zip(todo, done):
            if cache.enabled:
                cache.entries[k] = summary
                cache.dirty = True
            if summary is not None:
                summaries[str(files[i])] = summary
    return link(summaries) if len(summaries) > 1 else {}


def apply_fixes(text: str, diagnostics: list[Diagnostic], unsafe: bool) -> tuple[str, list[Diagnostic]]:
    """Apply non-overlapping fixes (safe ones, plus unsafe ones if asked); returns the new text
    and the diagnostics that were fixed."""
    chosen, taken = [], []
    for d in sorted(diagnostics, key=lambda d: min((e[0] for e in d.fix), default=0)):
        if not d.fix or not (d.fix_safe or unsafe):
            continue
        spans = [(e[0], e[1]) for e in d.fix]
        if any(s < te and ts < e or s == e == ts for s, e in spans for ts, te in taken):
            continue
        taken.extend(spans)
        chosen.append(d)
    edits = sorted((e for d in chosen for e in d.fix), key=lambda e: (e[0], e[1]), reverse=True)
    for start, end, new in edits:
        text = text[:start] + new + text[end:]
    return text, chosen


MAX_FIX_ROUNDS = 10


@dataclass
class FixOutcome:
    text: str
    fixed: int = 0                     # fixes applied over all rounds
    rounds: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)  # findings left in `text`
    unstable: tuple[str, ...] = ()     # codes whose fixes did not converge (a rule bug)
    broken: tuple[str, ...] = ()       # codes whose fixes produced invalid syntax (a rule bug; not applied)


def fix_until_stable(text: str, diagnostics: list[Diagnostic], path: str, config: LintConfig, external=None,
                     unsafe: bool = False, max_rounds: int = MAX_FIX_ROUNDS) -> FixOutcome:
    """Apply fixes and re-lint until no applicable fix remains: overlapping fixes cannot all
    apply in one round, and one fix can expose another. A fix still offered after `max_rounds`
    rounds, or one that changes nothing, keeps reapplying: its codes end up in `unstable`."""
    out = FixOutcome(text, diagnostics=list(diagnostics))

    def pending(diags):
        return [d for d in diags if d.fixable and (d.fix_safe or unsafe)]

    while pending(out.diagnostics):
        if out.rounds == max_rounds:
            out.unstable = tuple(sorted({d.code for d in pending(out.diagnostics)}))
            break
        new, applied = apply_fixes(out.text, out.diagnostics, unsafe)
        if new == out.text:
            out.unstable = tuple(sorted({d.code for d in applied}))
            break
        try:
            diags = lint_source(new, path, config, external)
        except SyntaxError:
            out.broken = tuple(sorted({d.code for d in applied}))
            break
        out.rounds += 1
        out.fixed += len(applied)
        out.text, out.diagnostics = new, diags
    return out
