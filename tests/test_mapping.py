"""The mapping tables themselves: well-formed, every named transform exists, and the published
PyTorch->MindSpore mapping table (r2.4.10) is covered."""
from __future__ import annotations

import csv

import pytest

from msmigrate.mapping import load_table, validate

from conftest import MAPPING_CSV as CSV


def test_tables_validate():
    assert validate(load_table()) == []


def test_every_status_is_explained():
    table = load_table()
    unexplained = [r.torch for r in table.by_name.values() if r.status != "auto" and not r.note]
    assert unexplained == []


@pytest.mark.skipif(CSV is None, reason="the shared reference data is not on this machine")
def test_published_mapping_rows_have_records():
    """Every torch API of the published table has a record (converted, or marked with why not).
    torch.nn.Module / Tensor rows are method records, matched by method name."""
    table = load_table()
    methods = {r.method_name for r in table.by_name.values() if r.is_method}
    # rows whose torch name does not exist in torch (the table's spelling): the real classes
    # torch.nn.CELU / SELU / LogSoftmax and torch.optim.Adamax / RMSprop have records
    misspelled = {"torch.nn.CeLU", "torch.nn.SeLU", "torch.nn.LogSoftMax", "torch.optim.AdaMax",
                  "torch.optim.RMSProp"}
    for real in ("torch.nn.CELU", "torch.nn.SELU", "torch.nn.LogSoftmax", "torch.optim.Adamax",
                 "torch.optim.RMSprop"):
        assert real in table.by_name
    missing = []
    with CSV.open() as fh:
        for row in csv.DictReader(fh):
            api = row["torch_api"]
            if row["section"] == "torch.Tensor":
                # identical methods deliberately have no record (see rules/api/tensor_methods.toml)
                continue
            if api in table.by_name or api in misspelled or (row["section"] == "torch.nn.Module" and api.rsplit(".", 1)[-1] in methods):
                continue
            missing.append(api)
    assert missing == []


def test_aliases_point_at_records_and_exist_in_torch():
    """rules/aliases.toml: every alias names a record, and is the same object in torch."""
    import tomllib
    from msmigrate.mapping import RULES_DIR
    aliases = tomllib.loads((RULES_DIR / "aliases.toml").read_text())["alias"]
    table = load_table()
    assert all(a not in table.by_name and table.lookup(a) is table.lookup(n) is not None
               for a, n in aliases.items())
    pytest.importorskip("torch")
    import importlib
    missing = []
    for alias, name in aliases.items():
        objs = []
        for path in (alias, name):
            module, _, attr = path.rpartition(".")
            objs.append(getattr(importlib.import_module(module), attr, None))
        if objs[0] is None or objs[0] is not objs[1]:
            missing.append(alias)
    assert not missing, missing


def test_same_torchvision_entries_are_records_and_exist_in_torchvision():
    """rules/aliases.toml [same_torchvision]: torchvision.transforms.v2 classes converted with
    v1's record (verified by running: tests/test_vision_v2_transforms.py)."""
    import tomllib
    from msmigrate.mapping import RULES_DIR
    same = tomllib.loads((RULES_DIR / "aliases.toml").read_text())["same_torchvision"]
    table = load_table()
    assert all(table.lookup(a) is not None and table.lookup(a).torch == a and table.lookup(n) is not None
               for a, n in same.items())
    pytest.importorskip("torchvision")
    import importlib
    for alias in same:
        parts = alias.split(".")
        obj, at = None, len(parts)
        while obj is None:   # the longest prefix that imports
            try:
                obj = importlib.import_module(".".join(parts[:at]))
            except ModuleNotFoundError:
                at -= 1
        for attr in parts[at:]:   # InterpolationMode.NEAREST: an attribute of a class
            obj = getattr(obj, attr, None)
        assert obj is not None, alias


def test_same_entries_exist_in_torch_and_have_suite_cases():
    """rules/aliases.toml [same]: other torch objects converted with another API's record. Being
    different objects, each must be verified by running: every entry is a torch callable and has
    cases in the per-API suite (tests/api_suite/cases), which compare it with torch."""
    import sys
    import tomllib
    from pathlib import Path
    from msmigrate.mapping import RULES_DIR
    same = tomllib.loads((RULES_DIR / "aliases.toml").read_text())["same"]
    table = load_table()
    assert all(table.lookup(a) is not None and table.lookup(a).torch == a for a in same)
    sys.path.insert(0, str(Path(__file__).resolve().parent / "api_suite"))
    import suite
    tested = {case.api for case in suite.load_cases()}
    assert not [a for a in same if a not in tested]
    pytest.importorskip("torch")
    import importlib
    for alias in same:
        module, _, attr = alias.rpartition(".")
        assert callable(getattr(importlib.import_module(module), attr, None)), alias
