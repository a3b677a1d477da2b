from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# the shared reference data sits beside the checkout (CI) or in the workplace's shared folder
MAPPING_CSV = next((p for p in (ROOT.parent / "shared" / "reference" / "torch_ms_api_map_r2.4.10.csv",
                                Path("/work/shared/reference/torch_ms_api_map_r2.4.10.csv")) if p.exists()),
                   None)


@pytest.fixture
def convert():
    from msmigrate import convert_source

    def run(code: str, path: str = "t.py", **kw):
        return convert_source(code, path, **kw)

    return run
