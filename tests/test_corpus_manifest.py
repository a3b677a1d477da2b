"""The real-script corpus manifest (bench/corpus/entries/*.toml) is complete: every entry names
its repository, a full commit, licence, script and category, and only known fields."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

RUN = Path(__file__).resolve().parents[1] / "bench" / "corpus" / "run.py"


def test_every_entry_is_complete():
    spec = importlib.util.spec_from_file_location("corpus_run", RUN)
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    entries = run.load_entries()            # exits with a message on an unknown or missing field
    assert len(entries) >= 60
    excluded = {"pytorch/examples", "karpathy/nanoGPT", "karpathy/minGPT", "karpathy/makemore",
                "yunjey/pytorch-tutorial", "jcjohnson/pytorch-examples", "kuangliu/pytorch-cifar",
                "pytorch/tutorials", "huggingface/accelerate"}   # kept as an independent check
    for e in entries:
        assert re.fullmatch(r"[0-9a-f]{40}", e["commit"]), e["name"]
        assert e["repo"] not in excluded, e["name"]
        assert e["script"].endswith(".py") and e["license"], e["name"]
        if e.get("prepare"):   # Python run with bench/corpus/synth.py's functions in scope
            compile(e["prepare"], e["name"], "exec")
