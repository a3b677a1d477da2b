"""A file with CRLF line ends (Windows-made scripts, osl202/PINNs' train_pinn.py): the converter
keeps them, and its check for steps a static graph would reject or compute wrongly
(msmigrate.compile_check) did not see the `@ms.jit` lines it had added ("@ms.jit\\r\\n" did not
match the decorator pattern), so such a step stayed compiled: a compile failure at run time, or a
random draw frozen into the graph. The same steps are left uncompiled whatever the line ends."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from msmigrate import convert_source

PROGRAMS = FIXTURES / "programs"


@pytest.mark.parametrize("name, finding", [("typo_on_branch_never_taken.py", "MSG118"),
                                           ("train_input_derivatives.py", "MSG119"),
                                           ("train_random_depth.py", "MSG2")])
def test_unsound_steps_stay_uncompiled_in_crlf_files(name, finding):
    source = (PROGRAMS / name).read_text()
    unix = convert_source(source, name)
    assert "MSC109" in [d.code for d in unix.diagnostics] and finding in unix.code
    windows = convert_source(source.replace("\n", "\r\n"), name)
    assert [d.code for d in windows.diagnostics] == [d.code for d in unix.diagnostics]
    assert windows.code.count("@ms.jit") == unix.code.count("@ms.jit")
    assert windows.code.replace("\r\n", "\n") == unix.code
