"""Regenerate fixture expectations after an intended change: `python tests/regen.py [NAME...]`.
Read the diff before committing: the expected files are the specification."""
import sys
from pathlib import Path

from msmigrate import convert_source

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "convert"

for case in sorted(ROOT.glob("*.in.py")):
    if len(sys.argv) > 1 and case.name not in sys.argv[1:] and case.name[:-6] not in sys.argv[1:]:
        continue
    result = convert_source(case.read_text(), case.name)
    case.with_name(case.name.replace(".in.py", ".out.py")).write_text(result.code)
    diag = case.with_name(case.name.replace(".in.py", ".diag.txt"))
    lines = [f"{d.line}:{d.col} {d.code}" for d in result.diagnostics]
    if lines:
        diag.write_text("\n".join(lines) + "\n")
    elif diag.exists():
        diag.unlink()
    print("wrote", case.name)
