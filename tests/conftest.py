from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def convert():
    from msmigrate import convert_source

    def run(code: str, path: str = "t.py", **kw):
        return convert_source(code, path, **kw)

    return run
