"""`[tool.msmigrate.lint]` in pyproject.toml, merged with command-line options.

    [tool.msmigrate.lint]
    select = ["MSG"]                 # codes or prefixes; default: every rule except info (MSG6xx)
    ignore = ["MSG502"]
    strict = true                    # the project compiles with fullgraph=True
    ported = "auto"                  # which files were ported from torch (migration traps, MSG7xx):
                                     #   "auto" (default: files that show it), true, false, or globs
    [tool.msmigrate.lint.per-file-ignores]
    "tests/*" = ["MSG301"]
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

# Signs that a file was ported from PyTorch (see `is_ported`): msmigrate's own markers in its
# converted output (a `# msmigrate:` note, a generated `msmigrate_*` name), or an import of torch
# or a torch-only package next to the MindSpore code.
PORTED_SIGNS = re.compile(
    r"^[ \t]*#[ \t]*msmigrate:|\bmsmigrate_\w+"
    r"|^[ \t]*(?:import|from)[ \t]+(?:torch|torchvision|torchaudio|torchtext)\b", re.M)


def _norm(codes) -> tuple[str, ...]:
    if isinstance(codes, str):
        codes = codes.split(",")
    return tuple(c.strip().upper() for c in codes or () if c.strip())


@dataclass(frozen=True)
class LintConfig:
    select: tuple[str, ...] = ()          # empty: the default set
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    strict: bool = False
    # True / False for every file, None: detect per file (`is_ported`); a tuple: glob patterns of
    # ported files (the others are detected)
    ported: object = None

    def enabled(self, rule, path: str = "", ported: bool = True) -> bool:
        """Is `rule` on for the file `path`? `ported`: was the file ported from torch (`is_ported`);
        rules for ported code only (the MSG7xx migration traps) are off in native files unless
        a selector names their band or code (MSG7, MSG702), not just ALL or MSG."""
        code = rule.code
        if self.select:
            on = any(_matches(code, s) for s in self.select)
        else:
            on = rule.default
        on = on or any(_matches(code, s) for s in self.extend_select)
        if on and not ported and getattr(rule, "origin", "any") == "ported":
            on = any(_names(code, s) for s in self.select + self.extend_select)
        if on and any(_matches(code, s) for s in self.ignore):
            on = False
        if on and path:
            p = Path(path).as_posix()
            for pattern, codes in self.per_file_ignores:
                if (fnmatch.fnmatch(p, pattern) or fnmatch.fnmatch(Path(p).name, pattern)) and \
                        any(_matches(code, c) for c in codes):
                    return False
        return on

    def is_ported(self, path: str, source: str) -> bool:
        """Was this file ported from PyTorch? From the `ported` setting, else from signs in the
        text (PORTED_SIGNS)."""
        if isinstance(self.ported, bool):
            return self.ported
        if self.ported and path:
            p = Path(path).as_posix()
            if any(fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(Path(p).name, pat) for pat in self.ported):
                return True
        return PORTED_SIGNS.search(source) is not None

    def key(self) -> str:
        """Stable text for cache keys."""
        return repr((self.select, self.ignore, self.extend_select, self.per_file_ignores, self.strict,
                     self.ported))

    def merged(self, select=None, ignore=None, extend_select=None, strict=None, ported=None) -> "LintConfig":
        return LintConfig(
            select=_norm(select) if select else self.select,
            ignore=self.ignore + _norm(ignore or ()),
            extend_select=self.extend_select + _norm(extend_select or ()),
            per_file_ignores=self.per_file_ignores,
            strict=self.strict if strict is None else strict,
            ported=self.ported if ported is None else ported)


def _matches(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def _names(code: str, selector: str) -> bool:
    """A selector that names a rule's band or the rule itself (MSG7, MSG70, MSG702)."""
    return len(selector) >= 4 and code.startswith(selector)


def _ported_setting(value, pyproject) -> object:
    if value is None or value == "auto":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f'{pyproject}: [tool.msmigrate.lint] ported must be "auto", true, false or a list of globs')


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for d in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(pyproject: Path | None) -> LintConfig:
    if pyproject is None:
        return LintConfig()
    import tomllib

    with open(pyproject, "rb") as fh:
        data = tomllib.load(fh)
    section = data.get("tool", {}).get("msmigrate", {}).get("lint", {})
    if not isinstance(section, dict):
        raise ValueError(f"{pyproject}: [tool.msmigrate.lint] must be a table")
    unknown = set(section) - {"select", "ignore", "extend-select", "per-file-ignores", "strict", "ported"}
    if unknown:
        raise ValueError(f"{pyproject}: unknown [tool.msmigrate.lint] keys: {', '.join(sorted(unknown))}")
    pfi = tuple((pat, _norm(codes)) for pat, codes in section.get("per-file-ignores", {}).items())
    return LintConfig(select=_norm(section.get("select", ())), ignore=_norm(section.get("ignore", ())),
                      extend_select=_norm(section.get("extend-select", ())), per_file_ignores=pfi,
                      strict=bool(section.get("strict", False)),
                      ported=_ported_setting(section.get("ported"), pyproject))
