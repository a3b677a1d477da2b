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
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write converted files under DIR, mirroring the input tree.")
@click.option("-w", "--write", is_flag=True, help="Rewrite the input files in place (atomically).")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option("--report", "report_path", type=click.Path(path_type=Path), help="Write a JSON report of every conversion and diagnostic.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors and the summary.")
def convert(paths, output, write, check, report_path, quiet):
    """Convert PyTorch scripts to MindSpore.

    PATHS are files or directories (searched recursively for .py files). By default the
    result is printed as a unified diff and nothing is written. Places that could not be
    converted faithfully are marked in the code with `# msmigrate: CODE message` and listed
    on stderr.

    Exit status: 0 ok, 1 with --check when something would change, 2 on any error
    (other files are still processed).
    """
    from msmigrate.diagnostics import InputError
    from msmigrate.engine import convert_source
    from msmigrate.files import iter_python_files, read_source, write_atomic

    if write and output:
        raise click.UsageError("--write and --output exclude each other")
    missing = [p for p in paths if not p.exists()]
    for p in missing:
        click.echo(f"{p}:1:1: error: no such file or directory", err=True)
    files = iter_python_files([p for p in paths if p.exists()])
    if output is not None:
        out_real = output.resolve()
        for p in paths:
            if p.is_dir() and p.resolve() == out_real:
                raise click.UsageError(f"--output {output} is the input directory: choose another")

    errors = len(missing)
    changed = attention = 0
    report = {"version": __version__, "files": []}
    for path, root in files:
        try:
            text = read_source(path)
            bom = text.startswith("\ufeff")
            result = convert_source(text[1:] if bom else text, str(path))
        except InputError as exc:
            click.echo(f"{exc.diagnostic.path}:{exc.diagnostic.line}:{exc.diagnostic.col}: error: "
                       f"{exc.diagnostic.message}", err=True)
            report["files"].append({"path": str(path), "error": exc.diagnostic.to_dict()})
            errors += 1
            continue
        code = ("\ufeff" + result.code) if bom else result.code
        report["files"].append(result.to_dict())
        attention += len(result.diagnostics)
        if not quiet:
            for d in result.diagnostics:
                click.echo(d.to_text(), err=True)
        if result.changed:
            changed += 1
        if check:
            continue
        if write:
            if result.changed:
                write_atomic(path, code)
        elif output is not None:
            dest = output / path.relative_to(root)
            if dest.resolve() == path.resolve():
                click.echo(f"{path}:1:1: error: output would overwrite the input; use --write", err=True)
                errors += 1
                continue
            write_atomic(dest, code)
        elif result.changed:
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(keepends=True), code.splitlines(keepends=True),
                f"a/{path}", f"b/{path}"))
    if report_path is not None:
        from msmigrate.files import write_atomic as _w

        _w(report_path, json.dumps(report, indent=2) + "\n")
    verb = "would be converted" if check else "converted"
    click.echo(f"{changed} file{'s' if changed != 1 else ''} {verb}, {attention} place"
               f"{'s' if attention != 1 else ''} need{'s' if attention == 1 else ''} attention"
               + (f", {errors} error{'s' if errors != 1 else ''}" if errors else ""), err=True)
    if errors:
        sys.exit(EXIT_ERROR)
    if check and changed:
        sys.exit(EXIT_FINDINGS)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
