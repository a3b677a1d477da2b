"""The `msmigrate` command line. Heavy modules are imported inside commands so that
`msmigrate --version` and `lint` stay fast; torch/mindspore only in parity and weights."""
from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

import click

from msmigrate import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="msmigrate")
def cli() -> None:
    """PyTorch to MindSpore migration: convert scripts, lint static-graph code, check parity."""


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write converted files under DIR, mirroring the input tree (one input file: -o NAME.py writes that file, -o - prints it).")
@click.option("-w", "--write", is_flag=True, help="Rewrite the input files in place (atomically).")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option("--report", "report_path", type=click.Path(path_type=Path), help="Write a JSON report of every conversion and diagnostic, and the summary.")
@click.option("--no-lint", is_flag=True, help="Do not lint the converted code for static-graph problems.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors and the summary.")
@click.option("--copy-other", is_flag=True, help="With -o: also copy the files that are not converted (data, configs) and the empty directories.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, help="Worker processes (default 0: all CPUs).")
@click.option("--max-size", "max_mb", type=click.FloatRange(min=0, min_open=True), default=5.0, show_default=True,
              help="Files using torch larger than this many MB are reported, not converted.")
@click.option("--no-cache", is_flag=True,
              help="Do not read or write the result cache (.msmigrate_cache/convert in the current directory).")
@click.option("--strict", is_flag=True,
              help="Exit 1 when any converted file still needs torch (MSC108: it stops at its top).")
def convert(paths, output, write, check, report_path, no_lint, quiet, copy_other, jobs, max_mb, no_cache, strict):
    """Convert PyTorch scripts, notebooks and whole projects to MindSpore.

    PATHS are files or directories (searched recursively for .py and .ipynb files). By default
    the result is printed as a unified diff and nothing is written. Names a file imports from
    other converted files (models, factories returning optimizers or losses) convert as they
    would in one file. Places that could not be converted faithfully are marked in the code with
    `# msmigrate: CODE message` and listed on stderr, followed by a summary.

    A converted file never mixes frameworks: when torch uses are left (APIs not in the tables,
    or marked for manual work), the file starts with a comment block listing them and a `raise`
    that stops it before any torch object meets a MindSpore one (MSC108); the summary's first
    line counts such files.

    Exit status: 0 ok, 1 with --check when something would change or with --strict when a file
    still needs torch, 2 on any error (other files are still processed).

    The converted code is also linted (`msmigrate lint` rules); those findings name the
    converted file and its lines and are listed after the conversion's own diagnostics.
    """
    from msmigrate.convert_run import Options, UsageError, run

    opts = Options(output=output, write=write, check=check, report=report_path, lint=not no_lint,
                   quiet=quiet, copy_other=copy_other, jobs=jobs, max_mb=max_mb, cache=not no_cache,
                   strict=strict)
    try:
        code = run(list(paths), opts)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
    if code:
        sys.exit(code)


@cli.command()
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--against", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="MindSpore version to compare with (default: convert SCRIPT with msmigrate; its whole directory when it imports modules beside it).")
@click.option("--steps", type=click.IntRange(min=1), help="Compare only the first N training steps.")
@click.option("--rtol", type=float, default=1e-4, show_default=True, help="Relative tolerance (loss and parameters).")
@click.option("--atol", type=float, default=1e-5, show_default=True, help="Absolute tolerance (loss and parameters).")
@click.option("--grads", is_flag=True, help="Also compare step-1 gradients and layer outputs, to find the layer that diverges.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON instead of the table.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), help="Write both loss curves and their difference (.png or .svg).")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="Seconds each program may run.")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), help="Keep the recorded runs (and the conversion) in DIR.")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- SCRIPT_ARGS...]")
def parity(script, against, steps, rtol, atol, grads, as_json, plot, timeout, keep, script_args):
    """Check that a MindSpore program trains like the torch SCRIPT, step by step.

    Arguments after `--` are the script's own command line, given to both runs
    (`msmigrate parity train.py -- --epochs 1 --batch-size 16`).

    Both programs run unmodified, each in its own subprocess: the torch initial weights are
    copied into the MindSpore network through the weight mapping, DataLoader batches recorded
    from torch are replayed when the MindSpore data differs, and dropout is turned off in both
    (its rates are compared instead). The loss and every parameter and buffer are compared
    after each step. The MindSpore step is any @ms.jit function named train_step* defined in
    the program (its first output is the loss); a torch step is a loss.backward() call.

    Exit status: 0 within tolerance, 1 when the programs diverge, 2 when the check could not run.
    """
    from msmigrate.parity.check import Options, ParityError, run_parity
    from msmigrate.parity.report import format_text, write_plot
    from msmigrate.weights import WeightMappingError

    opts = Options(steps=steps, rtol=rtol, atol=atol, grads=grads, timeout=timeout, args=tuple(script_args))
    try:
        result = run_parity(script, against, opts, keep=keep)
    except (ParityError, WeightMappingError) as exc:
        click.echo(f"{script}: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    if plot is not None:
        write_plot(result, plot)
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(format_text(result), nl=False)
    sys.exit(EXIT_OK if result["passed"] else EXIT_FINDINGS)


@cli.command()
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Checkpoint to write: .ckpt (MindSpore) or .pt/.pth (torch), the other format than SOURCE.")
@click.option("--key", help="Key of the state_dict inside a torch checkpoint dict (e.g. model_state_dict).")
@click.option("--model", "ms_model", metavar="FILE.py:NAME",
              help="Converted MindSpore network (class or factory): check the result loads into it exactly.")
@click.option("--torch-model", metavar="FILE.py:NAME",
              help="Original torch model (class or factory): tells which layer owns each key.")
def weights(source, output, key, ms_model, torch_model):
    """Convert a torch state_dict to a MindSpore checkpoint, or back (.ckpt -> .pt).

    Parameter names and layouts follow rules/weights.toml, which needs the class of each layer:
    from --torch-model, or inferred from the parameter names and shapes of the --model network.
    Only the imports, classes, functions and call-free assignments of FILE.py are run. Any name
    or shape that does not match is an error (exit 2).
    """
    from msmigrate.weights import WeightMappingError, ms_to_torch_checkpoint, torch_to_ms_checkpoint

    to_ms = output.suffix == ".ckpt"
    if to_ms == (source.suffix == ".ckpt"):
        raise click.UsageError("convert .pt/.pth -> .ckpt or .ckpt -> .pt/.pth")
    try:
        if to_ms:
            summary = torch_to_ms_checkpoint(source, output, key=key, torch_model=torch_model, ms_model=ms_model)
        else:
            summary = ms_to_torch_checkpoint(source, output, torch_model=torch_model, ms_model=ms_model)
    except (WeightMappingError, OSError, KeyError) as exc:
        click.echo(f"{source}: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(summary)


def _codes(values) -> list[str]:
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text",
              show_default=True, help="Output format.")
@click.option("--select", multiple=True, help="Only these codes or prefixes (comma-separated; ALL = every rule).")
@click.option("--extend-select", multiple=True, help="Add codes or prefixes to the selection (e.g. MSG6 for info).")
@click.option("--ignore", multiple=True, help="Skip these codes or prefixes.")
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix/--diff, also apply unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a diff instead of writing them.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule.")
@click.option("--strict/--no-strict", default=None,
              help="The project compiles with fullgraph=True (STRICT); default from pyproject.")
@click.option("--ported/--native", default=None,
              help="Treat every file as ported from PyTorch (the MSG7xx migration traps apply) or as native "
                   "MindSpore (they do not); default from pyproject's `ported`, else per file: converted "
                   "output (# msmigrate: notes) and files importing torch count as ported.")
@click.option("-j", "--jobs", type=int, default=1, show_default=True, help="Parallel worker processes (0 = all CPUs).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache.")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
              help="pyproject.toml to read [tool.msmigrate.lint] from (default: found from the first path).")
def lint(paths, fmt, select, extend_select, ignore, fix, unsafe_fixes, diff, exit_zero, statistics, strict,
         ported, jobs, no_cache, config_path):
    """Find code MindSpore will fail to compile, compile into wrong results, or run slowly.

    Analyses Cell.construct, @jit functions and everything they call. Prints
    `path:line:col: CODE [*] message` ([*]: a fix exists). Exit status: 0 clean,
    1 findings, 2 errors (unreadable files, syntax errors, bad configuration).

    Native MindSpore code gets the graph-mode rules (MSG1-MSG5, MSG8); the torch-to-MindSpore
    migration traps (MSG7xx: Conv2d pad_mode, GELU, LayerNorm epsilon, ...) run on files
    ported from PyTorch: msmigrate's converted output, files that import torch, or as set by
    --ported / `ported` in [tool.msmigrate.lint]. `--extend-select MSG7` runs them everywhere.
    """
    import os

    from msmigrate.lint.config import find_pyproject, load_config
    from msmigrate.lint.linter import all_rules
    from msmigrate.lint.output import render, statistics as stats_text
    from msmigrate.lint.runner import fix_until_stable, lint_paths

    pyproject = config_path or find_pyproject(paths[0] if paths[0].exists() else Path.cwd())
    try:
        config = load_config(pyproject).merged(_codes(select), _codes(ignore), _codes(extend_select), strict,
                                               ported)
    except (ValueError, OSError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    known = {r.code for r in all_rules()}
    for sel in config.select + config.ignore + config.extend_select:
        if sel != "ALL" and not any(c.startswith(sel) for c in known):
            click.echo(f"error: unknown rule selector {sel!r} (see `msmigrate rules`)", err=True)
            sys.exit(EXIT_ERROR)
    missing = [p for p in paths if not p.exists()]
    errors = [(str(p), "1:1: error: no such file or directory") for p in missing]
    jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    root = pyproject.parent if pyproject else Path.cwd()
    results = lint_paths([p for p in paths if p.exists()], config, jobs=jobs, cache_root=root,
                         use_cache=not no_cache)
    diags, fixed_count = [], 0
    for res in results:
        if res.error:
            errors.append((res.path, f"{res.error}"))
            continue
        if (fix or diff) and any(d.fixable and (d.fix_safe or unsafe_fixes) for d in res.diagnostics):
            from msmigrate.files import read_source, write_atomic

            original = read_source(Path(res.path))
            bom = original.startswith("\ufeff")
            text = original[1:] if bom else original
            done = fix_until_stable(text, res.diagnostics, res.path, config, res.external, unsafe_fixes)
            fixed_count += done.fixed
            if done.unstable or done.broken:
                what = (f"kept reapplying after {done.rounds} rounds: {', '.join(done.unstable)}" if done.unstable
                        else f"produced invalid syntax (not applied): {', '.join(done.broken)}")
                click.echo(f"warning: {res.path}: fixes {what}; this is a bug in those rules", err=True)
            if diff:
                sys.stdout.writelines(difflib.unified_diff(
                    text.splitlines(keepends=True), done.text.splitlines(keepends=True),
                    f"a/{res.path}", f"b/{res.path}"))
            else:
                write_atomic(Path(res.path), ("\ufeff" if bom else "") + done.text)
            diags.extend(done.diagnostics)
            continue
        diags.extend(res.diagnostics)
    diags.sort()
    rules = all_rules()
    out = render(fmt, diags if not diff else [], errors, rules) if not (diff and fmt == "text") else ""
    if out:
        click.echo(out)
    summary_err = fmt != "text" or diff
    if statistics and diags:
        click.echo(stats_text(diags, rules), err=summary_err)
    n = len(diags)
    fixable = sum(1 for d in diags if d.fixable and (d.fix_safe or unsafe_fixes))
    hidden_unsafe = sum(1 for d in diags if d.fixable and not d.fix_safe and not unsafe_fixes)
    parts = []
    if diff:
        parts.append(f"Would fix {fixed_count} finding{'s' if fixed_count != 1 else ''}")
    elif fix and fixed_count:
        parts.append(f"Fixed {fixed_count} finding{'s' if fixed_count != 1 else ''}")
    if n:
        notes = []
        if fixable and not fix and not diff:
            notes.append(f"{fixable} fixable with --fix")
        if hidden_unsafe and not diff:
            notes.append(f"{hidden_unsafe} {'more ' if notes else ''}with --unsafe-fixes")
        tail = f" ({'; '.join(notes)})" if notes else ""
        parts.append(f"Found {n} finding{'s' if n != 1 else ''}{tail}")
    elif not diff:
        parts.append("All checks passed!")
    if errors:
        parts.append(f"{len(errors)} file{'s' if len(errors) != 1 else ''} could not be linted")
    skipped = sum(1 for r in results if r.skipped)
    parts.append(f"{len(results)} file{'s' if len(results) != 1 else ''} checked ({skipped} without compiled code)")
    click.echo(" ".join(p if p.endswith(("!", ".")) else p + "." for p in parts), err=summary_err)
    if errors:
        sys.exit(EXIT_ERROR)
    if exit_zero:
        sys.exit(EXIT_OK)
    if (diags and not diff) or (diff and fixed_count):
        sys.exit(EXIT_FINDINGS)


@cli.command()
@click.argument("code")
def rule(code):
    """Print the documentation of one lint rule (by code, e.g. MSG101, or by name)."""
    from msmigrate.lint.linter import rule_by_code

    r = rule_by_code(code)
    if r is None:
        click.echo(f"error: no rule {code!r} (see `msmigrate rules`)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(r.documentation())


@cli.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules_cmd(fmt):
    """List all lint rules: code, name, severity, fix, default selection."""
    from msmigrate.lint.linter import all_rules
    from msmigrate.lint.rule import CATEGORIES

    rules = all_rules()
    if fmt == "json":
        click.echo(json.dumps([{"code": r.code, "name": r.name, "severity": r.severity,
                                "category": CATEGORIES.get(r.code[3], ""), "fix": r.fix_safety,
                                "default": r.default, "origin": r.origin, "summary": r.doc_sections()["summary"]} for r in rules],
                              indent=2))
        return
    for r in rules:
        fixmark = {"safe": "[*]", "unsafe": "[u]"}.get(r.fix_safety or "", "   ")
        off = "" if r.default else "  (opt-in)"
        off += "  (ported code)" if r.origin == "ported" else ""
        click.echo(f"{r.code}  {fixmark}  {r.severity:<7}  {r.name:<32} {r.doc_sections()['summary']}{off}")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
