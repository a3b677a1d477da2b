"""Runs every case of the per-API suite under ONE framework, in one process:

    python worker.py torch|mindspore cases.json results.pkl

cases.json: [[case id, code], ...] where the code sets `out` (the torch snippet, or its
conversion). Each case gets fresh inputs (the names below), runs under try/except with a
SIGALRM timeout, and its `out` is reduced to plain data (numpy arrays, python scalars, tuples,
dtype names) so that the two frameworks' results can be compared by a process importing neither.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import sys
import tempfile
import types

os.environ.setdefault("GLOG_v", "3")
import numpy as np  # noqa: E402

TIMEOUT = 10  # seconds per case


def inputs() -> dict[str, np.ndarray]:
    """The inputs every case may use, by name (the case files' vocabulary)."""
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return dict(
        a=f32(3, 4), b=f32(3, 4),                                   # float32
        p=rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32),         # positive
        u=rng.uniform(-0.9, 0.9, (3, 4)).astype(np.float32),        # in (-1, 1)
        d=rng.standard_normal((3, 4)),                              # float64
        d2=rng.standard_normal((3, 4)),
        i=rng.integers(-5, 5, (3, 4)), j=rng.integers(1, 5, (3, 4)),   # int64
        n=rng.integers(-5, 5, (3, 4)).astype(np.int32),             # int32
        bo=rng.random((3, 4)) > 0.5, bo2=rng.random((3, 4)) > 0.5,  # bool
        cz=(rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64),
        z0=np.array(1.5, np.float32), zn=np.array(-0.75, np.float32),   # 0-d
        i0=np.array(3, np.int64),
        e=np.zeros((0, 4), np.float32),                             # empty
        nz=np.array([-0.0, 0.0, 1.0, -1.0, np.inf, -np.inf], np.float32),
        v=f32(4), w=f32(4), sq=f32(4, 4), m45=f32(4, 5),
        b3=f32(2, 3, 4), c3=f32(2, 4, 5), x3=f32(2, 3, 5),
        img=f32(2, 3, 6, 6), seq=f32(2, 5, 4),
        prob=rng.uniform(0.05, 0.95, (3, 4)).astype(np.float32),
        tgt=(rng.random((3, 4)) > 0.5).astype(np.float32),
        lab=rng.integers(0, 4, (3,)), idx=rng.integers(0, 4, (3, 2)),
        srt=np.sort(f32(6)),
    )


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout(f"no result within {TIMEOUT} s")


def main(framework: str, cases_path: str, out_path: str) -> None:
    if framework == "torch":
        import functools

        import torch
        # torch.compile with the eager backend: the values are the eager ones, and inductor needs a
        # C compiler that CI machines may lack (dynamo stays on: torch.cond needs it)
        torch.compile = functools.partial(torch.compile, backend="eager")
        make = lambda a: torch.from_numpy(a.copy())  # noqa: E731
        tensor_types = (torch.Tensor,)
        dtype_types = (torch.dtype,)
        size_types = (torch.Size,)

        def array(t):
            t = t.detach().resolve_conj().resolve_neg()
            return (t.float() if t.dtype == torch.bfloat16 else t).numpy().copy()
        base = {"torch": torch}
    else:
        import mindspore as ms
        # PyNative launches kernels asynchronously: a case's failure would surface in a later
        # case (measured: float32 cases failing "Unsupported data type" after an int64 case)
        ms.set_context(pynative_synchronize=True)
        make = lambda a: ms.Tensor(a.copy())  # noqa: E731
        tensor_types = (ms.Tensor,)
        dtype_types = (ms.dtype.Type,)
        size_types = ()

        def array(t):
            return (t.astype(ms.float32) if t.dtype == ms.bfloat16 else t).asnumpy().copy()
        base = {}

    def plain(o, depth=0):
        if depth > 4:
            return ("obj", "nested")
        if isinstance(o, tensor_types):
            return ("tensor", array(o))
        if size_types and isinstance(o, size_types):
            return ("seq", [("int", int(v)) for v in o])
        if isinstance(o, (tuple, list)):
            return ("seq", [plain(v, depth + 1) for v in o])
        if isinstance(o, (bool, np.bool_)):
            return ("bool", bool(o))
        if isinstance(o, (int, np.integer)):
            return ("int", int(o))
        if isinstance(o, (float, np.floating)):
            return ("float", float(o))
        if isinstance(o, complex):
            return ("complex", o)
        if isinstance(o, dtype_types):
            name = str(o).split(".")[-1].lower()
            return ("dtype", {"bool_": "bool"}.get(name, name))
        if o is None:
            return ("none", None)
        if isinstance(o, np.ndarray):
            return ("ndarray", o.copy())
        if hasattr(o, "__iter__") and not isinstance(o, (str, bytes, dict)):
            try:
                return ("seq", [plain(v, depth + 1) for v in list(o)])
            except Exception as exc:  # a generator of tensors that fails while iterating
                return ("error", f"{type(exc).__name__}: {exc}")
        return ("obj", type(o).__name__)

    data = inputs()
    cases = json.load(open(cases_path))
    signal.signal(signal.SIGALRM, _alarm)
    results = {}
    # each case runs from a file of its own, as a module of its own: MindSpore compiles a
    # function (ms.jit, vmap, jacrev) from its source file and resolves the names it reads
    # (a module-level grad_fn in a train step) in the module its __module__ names
    sources = tempfile.mkdtemp(prefix=f"api_suite_{framework}_")
    for number, (case_id, code) in enumerate(cases):
        path = os.path.join(sources, f"case_{number}.py")
        module = types.ModuleType(f"api_suite_case_{number}")
        module.__file__ = path
        sys.modules[module.__name__] = module
        ns = module.__dict__
        ns.update(base, np=np, **{k: make(v) for k, v in data.items()})
        with open(path, "w") as f:
            f.write(code)
        signal.alarm(TIMEOUT)
        try:
            exec(compile(code, path, "exec"), ns)
            results[case_id] = plain(ns["out"])
        except BaseException as exc:  # noqa: BLE001 - any failure is this case's result
            if isinstance(exc, KeyboardInterrupt):
                raise
            text = str(exc).strip().splitlines()
            results[case_id] = ("error", f"{type(exc).__name__}: {text[0] if text else ''}"[:300])
        finally:
            signal.alarm(0)
            del sys.modules[module.__name__]
    shutil.rmtree(sources, ignore_errors=True)
    with open(out_path, "wb") as fh:
        pickle.dump(results, fh)


if __name__ == "__main__":
    main(*sys.argv[1:4])
