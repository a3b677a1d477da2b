"""Static-graph lint: which code MindSpore compiles, and what in it will fail, be wrong, or be slow.

    from msmigrate.lint import lint_source
    for d in lint_source(code, "model.py"):
        print(d.to_text())

Never imports torch or mindspore (only `msmigrate.lint.verify`, used by the tests, does).
"""
from msmigrate.lint.config import LintConfig, load_config
from msmigrate.lint.linter import all_rules, lint_source, rule_by_code

__all__ = ["lint_source", "LintConfig", "load_config", "all_rules", "rule_by_code"]
