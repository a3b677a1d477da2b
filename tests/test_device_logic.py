"""Device logic (torch.accelerator, torch.backends flags, `.type` of a device) converts so that
the program runs and decides as torch did: both versions print the same lines."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES
from msmigrate import convert_source

ENV = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}


@pytest.mark.framework
def test_converted_device_logic_prints_what_torch_prints(tmp_path):
    source = FIXTURES / "programs" / "device_logic.py"
    result = convert_source(source.read_text(), source.name)
    assert "import torch" not in result.code and "MSC108" not in result.code
    script = tmp_path / source.name
    script.write_text(result.code)

    def run(path):
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=ENV)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [line for line in proc.stdout.splitlines() if line.split(" ")[0] in
                ("accelerator", "count", "kind", "built", "deterministic", "out", "cudnn")]

    expected = run(source)
    assert len(expected) == 7
    assert run(script) == expected
