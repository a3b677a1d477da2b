"""`[tool.msmigrate.lint]` in pyproject.toml, merged with command-line options.

    [tool.msmigrate.lint]
    select = ["MSG"]                 # codes or prefixes; default: every rule except info (MSG6xx)
    ignore = ["MSG502"]
    strict = true                    # the project compiles with fullgraph=True
    [tool.msmigrate.lint.per-file-ignores]
    "tests/*" = ["MSG301"]
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path


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

    def enabled(self, rule, path: str = "") -> bool:
        code = rule.code
        if self.select:
            on = any(_matches(code, s) for s in self.select)
        else:
            on = rule.default
        on = on or any(_matches(code, s) for s in self.extend_select)
        if on and any(_matches(code, s) for s in self.ignore):
            on = False
        if on and path:
            p = Path(path).as_posix()
            for pattern, codes in self.per_file_ignores:
                if (fnmatch.fnmatch(p, pattern) or fnmatch.fnmatch(Path(p).name, pattern)) and \
                        any(_matches(code, c) for c in codes):
                    return False
        return on

    def key(self) -> str:
        """Stable text for cache keys."""
        return repr((self.select, self.ignore, self.extend_select, self.per_file_ignores, self.strict))

    def merged(self, select=None, ignore=None, extend_select=None, strict=None) -> "LintConfig":
        return LintConfig(
            select=_norm(select) if select else self.select,
            ignore=self.ignore + _norm(ignore or ()),
            extend_select=self.extend_select + _norm(extend_select or ()),
            per_file_ignores=self.per_file_ignores,
            strict=self.strict if strict is None else strict)


def _matches(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


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
    unknown = set(section) - {"select", "ignore", "extend-select", "per-file-ignores", "strict"}
    if unknown:
        raise ValueError(f"{pyproject}: unknown [tool.msmigrate.lint] keys: {', '.join(sorted(unknown))}")
    pfi = tuple((pat, _norm(codes)) for pat, codes in section.get("per-file-ignores", {}).items())
    return LintConfig(select=_norm(section.get("select", ())), ignore=_norm(section.get("ignore", ())),
                      extend_select=_norm(section.get("extend-select", ())), per_file_ignores=pfi,
                      strict=bool(section.get("strict", False)))
