"""Run rule examples under the real MindSpore compiler (used by the tests; imports mindspore).

Example protocol: an example module defines `drive()` (returns anything JSON-able, may raise),
or `Net` (a Cell class built with no arguments), or `f` (a function). Without `drive`, the entry
is called once per input in `INPUTS`. Each example runs in three modes:

* ``pynative``: `mindspore.jit` replaced by the identity, PYNATIVE_MODE (the reference);
* ``graph``: GRAPH_MODE, `jit` as is (LAX, the default syntax level);
* ``strict``: GRAPH_MODE with `jit(fullgraph=True)` and jit_syntax_level STRICT.

Per mode it records each call's output (lists of floats, or {"error": first line}) and the
number of graph compilations (counted at MindSpore's recompile check, which runs once per
real compile). `python -m msmigrate.lint.verify cases.json` prints one JSON line of results.
"""
from __future__ import annotations

import functools
import importlib.util
import io
import json
import logging
import os
import random
import sys
import tempfile
from pathlib import Path

INPUTS = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [-1.0, -2.0, -3.0], [1.0, 2.0, 3.0]]


def _plain(value):
    import numpy as np
    import mindspore as ms

    if isinstance(value, ms.Tensor):
        value = value.asnumpy()
    if isinstance(value, np.ndarray):
        return [round(float(v), 5) for v in value.reshape(-1)] + [list(value.shape)]
    if isinstance(value, (np.floating, np.integer)):
        return round(float(value), 5)
    if isinstance(value, float):
        return round(value, 5)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return f"<{type(value).__name__}>"


def _error(exc: BaseException) -> dict:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return {"error": f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"}


def run_case(code: str, mode: str, workdir: Path, index: int) -> dict:
    import numpy as np
    import mindspore as ms
    import mindspore.graph.api as gapi

    compiles = [0]
    original_check = gapi._check_recompile

    def counting(*args, **kwargs):
        compiles[0] += 1
        return original_check(*args, **kwargs)

    original_jit = ms.jit
    if mode == "pynative":
        ms.set_context(mode=ms.PYNATIVE_MODE)

        def identity(function=None, **_):
            return function if function is not None else (lambda fn: fn)
        ms.jit = identity
    else:
        ms.set_context(mode=ms.GRAPH_MODE)
        if mode == "strict":
            ms.jit = functools.partial(original_jit, fullgraph=True)
    level = ms.STRICT if mode == "strict" else ms.LAX
    try:
        ms.set_context(jit_syntax_level=level)
    except Exception:  # deprecated in 2.10; fullgraph covers jit functions
        pass
    random.seed(0)
    np.random.seed(0)
    ms.set_seed(0)
    gapi._check_recompile = counting
    name = f"lint_example_{index}_{mode}"
    path = workdir / f"{name}.py"
    path.write_text(code)
    result: dict = {"outputs": [], "compiles": 0}
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        finally:
            ms.jit = original_jit
        if hasattr(module, "drive"):
            try:
                result["outputs"].append(_plain(module.drive()))
            except Exception as exc:
                result["outputs"].append(_error(exc))
        else:
            entry = module.Net() if hasattr(module, "Net") else module.f
            if mode == "strict" and hasattr(module, "Net"):
                entry.set_jit_config(ms.JitConfig(jit_syntax_level="STRICT"))
            for values in INPUTS:
                try:
                    result["outputs"].append(_plain(entry(ms.Tensor(np.array(values, np.float32)))))
                except Exception as exc:
                    result["outputs"].append(_error(exc))
    except Exception as exc:
        result["outputs"].append(_error(exc))
    finally:
        gapi._check_recompile = original_check
        ms.jit = original_jit
    result["compiles"] = compiles[0]
    return result


def run_torch(code: str, workdir: Path, index: int):
    name = f"lint_torch_reference_{index}"
    path = workdir / f"{name}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        return {"outputs": [_plain_torch(module.drive())]}
    except Exception as exc:
        return {"outputs": [_error(exc)]}


def _plain_torch(value):
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().numpy()
    return _plain(value)


def main(argv: list[str]) -> None:
    """argv[0]: JSON file with [{"code": ..., "modes": [...]} | {"torch": ...}, ...]."""
    os.environ.setdefault("GLOG_v", "3")
    cases = json.loads(Path(argv[0]).read_text())
    logging.getLogger("mindspore").setLevel(logging.ERROR)
    results = []
    with tempfile.TemporaryDirectory(prefix="msmigrate-verify-") as tmp:
        sys.path.insert(0, tmp)
        for i, case in enumerate(cases):
            if "torch" in case:
                results.append({"torch": run_torch(case["torch"], Path(tmp), i)})
                continue
            out = {}
            for mode in case["modes"]:
                saved = sys.stdout
                sys.stdout = io.StringIO()  # examples may print; keep the last line for JSON
                try:
                    out[mode] = run_case(case["code"], mode, Path(tmp), i)
                finally:
                    sys.stdout = saved
            results.append(out)
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
