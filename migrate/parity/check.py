"""Run a torch program and its MindSpore version in subprocesses and compare them step by step.

Nothing here imports torch, mindspore or the user's program: the runners (`runner.py`) do, each
in its own process with a timeout. The comparison works on the recorded numpy arrays.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from msmigrate.weights import KeyMapping, map_keys, positional_fallback, sequential_positions


class ParityError(RuntimeError):
    """The check could not be run (a program failed, timed out, or the weights did not load)."""


@dataclass
class Options:
    steps: int | None = None
    rtol: float = 1e-4
    atol: float = 1e-5
    grads: bool = False
    timeout: float = 600.0
    args: tuple[str, ...] = ()   # the script's own command-line arguments, given to both runs


def _trees(script: Path, against: Path) -> tuple[Path, Path] | None:
    """The directories the two programs sit in at the same place (`torch/src/train.py` and
    `mindspore/src/train.py`: `torch`, `mindspore`), or None when they are one."""
    a, b = script.resolve().parts, against.resolve().parts
    k = 0
    while k < min(len(a), len(b)) - 1 and a[-1 - k] == b[-1 - k]:
        k += 1
    ta, tb = Path(*a[:len(a) - k]), Path(*b[:len(b) - k])
    return None if ta == tb else (ta, tb)


def _pythonpath_for(against: Path, script: Path) -> str | None:
    """PYTHONPATH for the MindSpore run: an entry inside the torch program's tree (a `src/`
    layout run as `PYTHONPATH=. python src/train.py`) names the same place in the converted
    program's tree, which would otherwise import the torch modules; None: unchanged."""
    value = os.environ.get("PYTHONPATH")
    trees = _trees(script, against)
    if not value or trees is None:
        return None
    out = []
    for entry in value.split(os.pathsep):
        path = Path(entry or ".").resolve()
        if path == trees[0] or trees[0] in path.parents:
            path = trees[1] / path.relative_to(trees[0])
            out.append(str(path))
        else:
            out.append(entry)
    return os.pathsep.join(out)


def _run_runner(framework: str, script: Path, out: Path, opts: Options, torch_record: Path | None,
                workdir: Path, perturb: int = 0, pythonpath: str | None = None) -> tuple[dict, dict]:
    spec = {"framework": framework, "script": str(script), "out": str(out), "steps": opts.steps,
            "grads": opts.grads, "torch_record": str(torch_record) if torch_record else None,
            "args": list(opts.args), "perturb": perturb}
    spec_path = workdir / f"{out.name}_spec.json"
    spec_path.write_text(json.dumps(spec))
    # torch.compile'd code runs eagerly: the runner's hooks (weights, losses) do not trace, and the
    # values are torch's own up to rounding
    env = {**os.environ, "GLOG_v": os.environ.get("GLOG_v", "3"), "PYTHONHASHSEED": "0", "TORCHDYNAMO_DISABLE": "1"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    try:
        # -P: the working directory is not put on sys.path (`-m` would put it first), as for
        # `python script.py`: a `src/` program under PYTHONPATH imports its own tree's modules
        proc = subprocess.run([sys.executable, "-P", "-m", "msmigrate.parity.runner", str(spec_path)],
                              capture_output=True, text=True, timeout=opts.timeout, env=env)
    except subprocess.TimeoutExpired:
        raise ParityError(f"the {framework} program did not finish within {opts.timeout:g} s") from None
    record_path = out / "record.json"
    if not record_path.exists():
        raise ParityError(f"the {framework} runner failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    meta = json.loads(record_path.read_text())
    if meta.get("error"):
        raise ParityError(f"the {framework} program failed:\n{meta['error']}")
    with np.load(out / "arrays.npz") as data:
        arrays = {k: data[k] for k in data.files}
    return meta, arrays


def _abs_diff(ms: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|ms - ref| elementwise, 0 where both hold the same value: an infinity (a causal mask's
    -inf, whose difference is NaN) or NaN."""
    ms = ms.astype(np.float64)
    with np.errstate(invalid="ignore"):
        d = np.abs(ms - ref)
    same = (ms == ref) | (np.isnan(ms) & np.isnan(ref))
    return np.where(same, 0.0, d)


def _close(ms: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> bool:
    return ms.shape == ref.shape and bool(np.all(_abs_diff(ms, ref) <= atol + rtol * np.abs(ref)))


def _close_tensor(ms: np.ndarray, ref: np.ndarray, rtol: float, atol: float, scale: float) -> bool:
    """A parameter or buffer after a step: every element within atol + rtol * the tensor's largest
    magnitude. The float32 error of an updated element does not shrink with its own value: an
    element near zero takes an optimizer step of the same size, and the same rounding, as its
    neighbours (deeplearningzerotoall's RNN under Adam at lr 0.1: torch's own float32 and float64
    runs differ by 1e-5 in weights near zero, as much as atol alone allows there)."""
    return ms.shape == ref.shape and bool(np.all(_abs_diff(ms, ref) <= atol + rtol * scale))


def _scale(ref: np.ndarray) -> float:
    """The largest finite magnitude of a tensor (0 for none): what rtol is relative to."""
    finite = np.abs(ref[np.isfinite(ref)]) if ref.size else ref
    return float(np.max(finite)) if finite.size else 0.0


def _diff(ms: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    if ms.shape != ref.shape:
        return float("inf"), float("inf")
    d = float(np.max(_abs_diff(ms, ref))) if ref.size else 0.0
    scale = _scale(ref)
    return d, d / scale if scale > 0 else (0.0 if d == 0 else float("inf"))


def _mapped(arrays: dict, prefix: str, mappings: dict[str, KeyMapping]) -> dict[str, np.ndarray]:
    """torch arrays under `prefix/` renamed and reshaped to MindSpore names."""
    out = {}
    for key, m in mappings.items():
        arr = arrays.get(f"{prefix}/{key}")
        if arr is not None:
            out[m.ms_key] = m.to_ms(arr).astype(np.float64)
    return out


def network_mappings(tmeta: dict, mmeta: dict) -> tuple[dict[str, KeyMapping], list[str]]:
    """torch key -> MindSpore name of every network the torch run recorded (the model, and each
    further one under its prefix), with the positional names the MindSpore run loaded into
    (children added to an nn.Sequential by name: weights.positional_fallback)."""
    loaded = mmeta.get("loaded")
    nets = [{"prefix": "", "init_keys": tmeta.get("init_keys", []), "module_classes": tmeta.get("module_classes", {})},
            *tmeta.get("networks", [])]
    mappings: dict[str, KeyMapping] = {}
    dropped: list[str] = []
    for net in nets:
        prefix = net["prefix"]
        kept, gone = map_keys(net["init_keys"], net["module_classes"])
        if loaded:
            names = {v[len(prefix):] for k, v in loaded.items() if k.startswith(prefix) and v.startswith(prefix)}
            kept = positional_fallback(kept, net["module_classes"], names)
        mappings.update({prefix + k: KeyMapping(prefix + k, prefix + m.ms_key, m.layout) for k, m in kept.items()})
        dropped += [prefix + k for k in gone]
    return mappings, dropped


def positional_names(tmeta: dict) -> dict[str, str]:
    """torch module path (under its network's prefix) -> the path of the same child in MindSpore
    when the children of an nn.Sequential are named by position (added by name with add_module,
    converted to SequentialCell.append): `conv.dropout_2` -> `conv.4`."""
    nets = [{"prefix": "", "module_classes": tmeta.get("module_classes", {})}, *tmeta.get("networks", [])]
    return {net["prefix"] + k: net["prefix"] + v for net in nets
            for k, v in sequential_positions(net["module_classes"]).items() if k}


def _ms_name(name: str, present, positions: dict[str, str]) -> str:
    """The MindSpore name of torch's module `name`: the same name when MindSpore has it, else its
    positional name (see positional_names) when MindSpore has that one."""
    if name in present:
        return name
    alt = positions.get(name)
    return alt if alt is not None and alt in present else name


# A loss or state the MindSpore run reaches within this many times the distance torch's own run
# moves when its initial weights are rounded differently (see sensitivity) is as close as float32
# lets two correct programs be: training (Adam's normalised steps above all) amplifies rounding
# differences, and two frameworks round differently at every operation (measured on the
# graykode transformers: MindSpore within 0.1-0.8x of torch's own movement at step 3).
SENSITIVITY_FACTOR = 2.0


def sensitivity(tmeta: dict, tarr: dict, pmeta: dict, parr: dict) -> dict[tuple[int, str | None], float]:
    """(step, parameter or None for the loss) -> how far rounding moves torch's own loss and state:
    torch run again from its initial weights rounded differently. One such run moves some tensors
    little by chance, so a tensor's distance is the step's largest relative movement over the
    network (movement / the tensor's largest magnitude) times its own largest magnitude."""
    mappings, _ = network_mappings(tmeta, tmeta)
    out = {}
    for i, loss in enumerate(tmeta["losses"]):
        step = i + 1
        again = pmeta["losses"][i] if i < len(pmeta["losses"]) else None
        if loss is not None and again is not None:
            out[(step, None)] = abs(again - loss)   # the loss (None: no tensor name)
        moved = _mapped(parr, f"state/{step}", mappings)
        scales, relative = {}, 0.0
        for name, ref in _mapped(tarr, f"state/{step}", mappings).items():
            scale = _scale(ref)
            if name in moved and moved[name].shape == ref.shape and scale > 0:
                scales[name] = scale
                relative = max(relative, _diff(moved[name], ref)[0] / scale)
        out.update({(step, name): relative * scale for name, scale in scales.items()})
    return out


def compare(tmeta: dict, tarr: dict, mmeta: dict, marr: dict, opts: Options,
            moved: dict[tuple[int, str], float] | None = None) -> dict:
    """`moved`: torch's sensitivity to float32 rounding (see sensitivity), which widens the state
    tolerance of each tensor by SENSITIVITY_FACTOR times it."""
    rtol, atol = opts.rtol, opts.atol
    moved = moved or {}
    mappings, dropped = network_mappings(tmeta, mmeta)
    positions = positional_names(tmeta)
    result: dict = {"tolerance": {"rtol": rtol, "atol": atol}, "steps": [], "config": []}

    # settings that the run itself cannot show, because dropout is off in both runs
    tdrop, mdrop = dict(tmeta.get("dropout", {})), mmeta.get("dropout", {})
    for net in tmeta.get("networks", []):
        if net["prefix"] in mmeta.get("networks", {}):
            tdrop.update({net["prefix"] + k: p for k, p in net.get("dropout", {}).items()})
    for name, p in tdrop.items():
        q = mdrop.get(_ms_name(name, mdrop, positions))
        if q is None:  # a MindSpore layer may hold its dropout in a sub-cell (nn.LSTM's)
            owners = {name, positions.get(name, name)}
            q = next((v for k, v in mdrop.items() if any(k.startswith(f"{o}.") for o in owners)),
                     None if p > 0 else 0.0)
        if q is None:
            result["config"].append({"kind": "dropout", "name": name, "detail": f"torch Dropout(p={p:g}) "
                                     "has no MindSpore Dropout cell of the same name"})
        elif abs(p - q) > 1e-9:
            result["config"].append({"kind": "dropout", "name": name, "detail": f"torch drops p={p:g}, "
                                     f"MindSpore drops p={q:g} (keep_prob={1 - q:g})"})
    for net in tmeta.get("networks", []):
        if net["prefix"] not in mmeta.get("networks", {}):
            result["config"].append({"kind": "network", "name": net["prefix"].rstrip("."),
                                     "detail": f"torch trains a further {net['class']} (network "
                                     f"{net['prefix'].rstrip('.')}); no MindSpore Cell of its parameter shapes "
                                     f"was found at its rank ({net['rank']}) in creation order"})
    tmode, mmode = tmeta.get("training", {}), mmeta.get("training", {})
    wrong_mode = [n for n, t in tmode.items() if _ms_name(n, mmode, positions) in mmode
                  and mmode[_ms_name(n, mmode, positions)] != t]
    if wrong_mode:
        t = tmode[wrong_mode[0]]
        result["config"].append({"kind": "mode", "name": wrong_mode[0] or "(model)", "names": wrong_mode,
                                 "detail": f"{len(wrong_mode)} layer(s) in {'training' if t else 'inference'} "
                                 f"mode in torch but not in MindSpore at step 1 (set_train missing?)"})

    tl, ml = tmeta["losses"], mmeta["losses"]
    n = len(tl)
    max_abs = max_rel = 0.0
    first = None
    noise: dict[str, np.ndarray] = {}  # elements whose torch gradient was tiny (see runner.TINY_GRADIENT)
    rounding: dict[str, tuple] = {}    # values within torch's own sensitivity to rounding, not the tolerance
    settled: dict[str, int] = {}       # state equal to torch's once what follows the step ran
    for i in range(n):
        step = i + 1
        row = {"step": step, "torch_loss": tl[i], "ms_loss": ml[i] if i < len(ml) else None}
        if row["ms_loss"] is None or row["torch_loss"] is None:
            row.update(abs_diff=None, rel_diff=None, loss_ok=False)
        else:
            a, r = _diff(np.array(row["ms_loss"]), np.array(row["torch_loss"]))
            row.update(abs_diff=a, rel_diff=r, loss_ok=_close(np.array(row["ms_loss"]), np.array(row["torch_loss"]), rtol, atol))
            if not row["loss_ok"] and _close(np.array(row["ms_loss"]), np.array(row["torch_loss"]), rtol,
                                             atol + SENSITIVITY_FACTOR * moved.get((step, None), 0.0)):
                row["loss_ok"] = True
                rounding.setdefault("(loss)", (step, a, moved[(step, None)]))
            max_abs, max_rel = max(max_abs, a), max(max_rel, r)
        tstate = _mapped(tarr, f"state/{step}", mappings)
        for name, mask in _mapped(tarr, f"noise/{step}", mappings).items():
            noise[name] = mask.astype(bool) | noise.get(name, False)
        worst, worst_d, state_ok = None, 0.0, True
        bad = None
        for name, ref in tstate.items():
            got = marr.get(f"state/{step}/{name}")
            if got is None:
                continue
            scale = _scale(ref)
            if name in noise and got.shape == ref.shape:
                got, ref = got[~noise[name]], ref[~noise[name]]
            d, _ = _diff(got, ref)
            if d >= worst_d:
                worst, worst_d = name, d
            if _close_tensor(got, ref, rtol, atol, scale):
                continue
            if _close_tensor(got, ref, rtol, atol + SENSITIVITY_FACTOR * moved.get((step, name), 0.0), scale):
                rounding.setdefault(name, (step, d, moved[(step, name)]))
                continue
            late = marr.get(f"late/{step}/{name}")
            if late is not None and late.shape == got.shape and _close_tensor(
                    late[~noise[name]] if name in noise else late, ref, rtol, atol, scale):
                # a buffer that reached torch's value after the MindSpore step returned (see
                # runner's settle_buffers): the same updates, in the order torch made them
                settled.setdefault(name, step)
            elif bad is None:
                bad, state_ok = name, False
        row.update(state_max_abs=worst_d if tstate else None, state_worst=worst,
                   state_ok=state_ok, state_first_bad=bad, compared_state=bool(tstate))
        result["steps"].append(row)
        if first is None and not (row["loss_ok"] and state_ok):
            if not row["loss_ok"]:
                first = {"step": step, "kind": "loss", "name": None,
                         "detail": "MindSpore made fewer steps" if row["ms_loss"] is None else
                         f"loss {row['ms_loss']:.7g} vs torch {row['torch_loss']:.7g}",
                         "relative": row["rel_diff"]}
            else:
                got, ref = marr[f"state/{step}/{bad}"], tstate[bad]
                scale = _scale(ref)
                if bad in noise:
                    got, ref = got[~noise[bad]], ref[~noise[bad]]
                d, _ = _diff(got, ref)
                first = {"step": step, "kind": "state", "name": bad,
                         "detail": f"{bad} after the step differs by {d:.3g}",
                         "relative": d / scale if scale > 0 else float("inf")}
    if len(ml) > n:
        result["extra_ms_steps"] = len(ml) - n
        first = first or {"step": n + 1, "kind": "loss", "name": None,
                          "detail": f"MindSpore made {len(ml)} steps, torch {n}"}
    result.update(max_abs_diff=max_abs, max_rel_diff=max_rel, torch_steps=n, ms_steps=len(ml),
                  tiny_grad_elements={k: int(v.sum()) for k, v in noise.items()},
                  within_rounding={k: {"step": st, "differs": d, "torch_moved": m} for k, (st, d, m) in rounding.items()},
                  settled_after_step=settled)

    if opts.grads:
        tgrads = _mapped(tarr, "grad", mappings)
        order = [mappings[k].ms_key for k in tmeta.get("grads", []) if k in mappings]
        rows = []
        for name in order:
            got = marr.get(f"grad/{name}")
            if got is None:
                rows.append({"name": name, "max_abs": None, "rel": None, "ok": False, "missing": True})
                continue
            a, r = _diff(got, tgrads[name])
            rows.append({"name": name, "max_abs": a, "rel": r, "ok": _close(got, tgrads[name], rtol, atol)})
        result["grads"] = rows
        bad = [g for g in rows if not g["ok"]]
        result["worst_grad"] = max(bad, key=lambda g: g["rel"] if g["rel"] is not None else float("inf"))["name"] if bad else None
        result["activations"] = _compare_activations(tmeta, tarr, mmeta, marr, rtol, atol, positions)
        bad = [a for a in result["activations"] if not a["ok"]]
        result["first_bad_activation"] = bad[0]["name"] if bad else None
        # the first layer whose step-1 output differs is a better pointer than a later loss
        act = next((a for a in result["activations"] if not a["ok"]), None)
        if act is not None and act["name"] == "(input)":
            first = {"step": 1, "kind": "data", "name": "(input)",
                     "detail": f"the model's first input differs by {act['max_abs']:.3g}: the programs feed "
                               "different data" + ("" if tmeta.get("batches") else
                                                   " (torch used no DataLoader, so nothing could be replayed)")}
        elif act is not None and (first is None or first["step"] >= 1):
            first = {"step": 1, "kind": "layer output", "name": act["name"],
                     "detail": f"output of {act['name']} ({act['ms_cls']}) differs by {act['max_abs']:.3g} "
                               f"(rel {act['rel']:.3g}) in the first forward"}
    if first is None and result["config"]:
        # dropout is off in both runs, so a wrong rate shows in no number: it is the divergence
        c = result["config"][0]
        first = {"step": 1, "kind": c["kind"], "name": c["name"], "detail": c["detail"]}
    if first is not None:
        _explain(first, tmeta, mmeta)
    result["first_divergence"] = first
    result["passed"] = first is None and not result["config"]
    result["dropped_keys"] = dropped
    return result


def _explain(first: dict, tmeta: dict, mmeta: dict) -> None:
    """Say where a divergence comes from when the programs themselves cannot agree (an inherent
    difference, not a conversion error): `first["inherent"]` names it, `detail` explains it.
    torch draws the MindSpore run replayed (see runner._DrawReplay) are no such cause."""
    notes = []
    replayed = (mmeta.get("draw_replay") or {}).get("replayed", 0)
    seq = tmeta.get("draws", [])
    draws = [d for d in seq[replayed:] if not d.get("init") and d["step"] <= first["step"]]
    # draws not in the replayed sequence (inside a DataLoader's iteration)
    draws += [d for d in tmeta.get("random_draws", []) if d.get("index", -1) is None and d["step"] <= first["step"]]
    if draws and first["kind"] in ("loss", "state", "layer output", "data"):
        where = ", ".join(sorted({f"{d['call']} at line {d['line']}" for d in draws})[:3])
        stop = (mmeta.get("draw_replay") or {}).get("stopped")
        why = f" (replayed: the first {replayed}; {_replay_stop(stop)})" if replayed or stop else ""
        notes.append(("random data", f"the program draws numbers from torch's random generator ({where}) "
                      f"before step {first['step']} that MindSpore does not replay{why}; MindSpore's generator "
                      "draws other numbers, so the two programs do not compute on the same values (not a "
                      "conversion error: draw them with NumPy under a seed, or load them, to compare)"))
    if notes:
        first["inherent"] = ", ".join(kind for kind, _ in notes)
        first["detail"] += "".join(f"; inherent ({kind}): {text}" for kind, text in notes)


def _replay_stop(stop: dict | None) -> str:
    """Where and why the replay of torch's draws stopped, in words."""
    if not stop:
        return "all replayed"
    parts = []
    if stop.get("ms_call"):
        parts.append(f"MindSpore {stop['ms_call']} at line {stop['ms_line']} (in {stop['ms_function']})")
    if stop.get("torch_call"):
        parts.append(f"torch {stop['torch_call']} at line {stop['torch_line']} (in {stop['torch_function']})")
    head = f"stopped at draw {stop['index'] + 1}" if "index" in stop else "not replayed"
    return f"{head}: " + " vs ".join(parts) + (": " if parts else "") + stop["reason"]


def _compare_activations(tmeta, tarr, mmeta, marr, rtol, atol, positions=None) -> list[dict]:
    """Outputs of each layer during the first forward, in torch call order, matched by layer
    name (the n-th call of a layer in torch with its n-th call in MindSpore; a child of a
    Sequential MindSpore names by position under that name)."""
    def by_name(meta, arrays):
        seen: dict[str, list] = {}
        for i, a in enumerate(meta.get("activations", [])):
            seen.setdefault(a["name"], []).append((a["cls"], arrays.get(f"act/{i}")))
        return seen

    mseen = by_name(mmeta, marr)
    count: dict[str, int] = {}
    rows = []
    for i, a in enumerate(tmeta.get("activations", [])):
        k = count.get(a["name"], 0)
        count[a["name"]] = k + 1
        ref = tarr.get(f"act/{i}")
        cand = mseen.get(_ms_name(a["name"], mseen, positions or {}), [])
        if k >= len(cand) or ref is None or cand[k][1] is None:
            continue
        cls, got = cand[k]
        d, r = _diff(got, ref.astype(np.float64))
        if a["name"] == "(input)":  # int token ids vs int32: compare values
            ref = ref.astype(np.float64)
            got = got.astype(np.float64)
        rows.append({"name": a["name"] or "(model)", "torch_cls": a["cls"], "ms_cls": cls,
                     "max_abs": d, "rel": r, "ok": _close(got, ref.astype(np.float64), rtol, atol)})
    return rows


def run_parity(script: Path, against: Path | None = None, opts: Options | None = None,
               keep: Path | None = None) -> dict:
    """Run both programs and compare them; raises ParityError when either cannot be run."""
    opts = opts or Options()
    script = Path(script).resolve()
    with tempfile.TemporaryDirectory(prefix="msmigrate-parity-") as tmp:
        workdir = Path(keep or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        converted = against is None
        if converted:
            against = _convert(script, workdir)
        against = Path(against).resolve()
        tmeta, tarr = _run_runner("torch", script, workdir / "torch", opts, None, workdir)
        if tmeta.get("model_class") is None:
            raise ParityError(f"{script}: no module with parameters was called and no optimizer holds "
                              "parameters; nothing to compare")
        if not tmeta["losses"]:
            raise ParityError(f"{script}: no loss.backward() call was seen")
        mmeta, marr = _run_runner("mindspore", against, workdir / "mindspore", opts, workdir / "torch", workdir,
                                  pythonpath=_pythonpath_for(against, script))
        if not mmeta["losses"]:
            raise ParityError(f"{against}: no call of a @ms.jit function named train_step* was seen")
        result = compare(tmeta, tarr, mmeta, marr, opts)
        first = result["first_divergence"] or {}
        if first.get("kind") == "state" or (first.get("kind") == "loss" and first["step"] > 1
                                            and (first.get("relative") or 1) < 1e-2):
            # is that difference more than float32 rounding makes of torch's own training? One
            # rounding may leave a value (a loss that sums large terms) unmoved by chance: a
            # second one, rounded otherwise, is run when the first does not account for it
            moved: dict = {}
            for attempt in (1, 2):
                pmeta, parr = _run_runner("torch", script, workdir / f"torch_rounded{attempt}", opts,
                                          workdir / "torch", workdir, perturb=attempt)
                first_losses = [m["losses"][0] if m["losses"] else None for m in (tmeta, pmeta)]
                # only a run that starts where the first one did measures rounding (not other random draws)
                if None in first_losses or abs(first_losses[1] - first_losses[0]) > 1e-5 * abs(first_losses[0]) + 1e-7:
                    break
                # nor one that counted other steps or batches (its movement would be theirs)
                if any(pmeta.get(k) != tmeta.get(k) for k in ("batches", "voided_backward", "joined_backward")) \
                        or len(pmeta["losses"]) != len(tmeta["losses"]):
                    break
                for key, value in sensitivity(tmeta, tarr, pmeta, parr).items():
                    moved[key] = max(moved.get(key, 0.0), value)
                result = compare(tmeta, tarr, mmeta, marr, opts, moved)
                if result["passed"]:
                    break
    if mmeta.get("compile_error"):
        # the step ran uncompiled to replay draws inside it: the program, run as it is, fails there
        result["passed"] = False
        result["first_divergence"] = {
            "step": 1, "kind": "compile", "name": None,
            "detail": f"the train step does not compile (run uncompiled here, so that its draws are "
                      f"replayed; the program as it is fails at its first step): {mmeta['compile_error']}"}
    result["setup"] = {
        "torch_script": str(script), "converted": converted,
        "mindspore_script": str(against) if keep or not converted else "(temporary; --keep DIR keeps it)",
        "torch_model": tmeta.get("model_class"), "ms_model": mmeta.get("model_class"),
        "networks": [{"name": n["prefix"].rstrip("."), "torch": n["class"],
                      "ms": mmeta.get("networks", {}).get(n["prefix"])} for n in tmeta.get("networks", [])],
        "weights_loaded": len(mmeta.get("loaded", {})), "weights_dropped": mmeta.get("dropped_keys", []),
        "dropout_disabled": {"torch": tmeta.get("dropout", {}), "mindspore": mmeta.get("dropout", {}),
                             "functional_calls": tmeta.get("functional_dropout_calls", 0)},
        "torch_batches_recorded": len(tmeta.get("batches", [])), "replay": mmeta.get("replay", {}),
        "joined_backward": tmeta.get("joined_backward", 0), "voided_backward": tmeta.get("voided_backward", 0),
        "draws": {**(mmeta.get("draw_replay") or {}), "torch_draws": len(tmeta.get("draws", [])),
                  "torch_truncated": tmeta.get("draws_truncated")},
    }
    return result


def _convert(script: Path, workdir: Path) -> Path:
    """Convert the script; when it imports modules beside it (a project), convert its whole
    directory the way `msmigrate convert DIR -o OUT` does, so the converted program imports
    converted models and the conversion knows what the other files define."""
    import io

    from msmigrate.convert_run import Options as ConvertOptions
    from msmigrate.convert_run import run

    out_dir = workdir / "converted"
    source = script.parent if _imports_siblings(script) else script
    err = io.StringIO()
    status = run([source], ConvertOptions(output=out_dir, lint=False, quiet=True, jobs=1, progress=False, cache=False),
                 out=io.StringIO(), err=err)
    if status == 2 or not (out_dir / script.name).exists():
        raise ParityError(f"{script}: could not convert it:\n{err.getvalue()}")
    return out_dir / script.name


def _imports_siblings(script: Path) -> bool:
    import ast

    try:
        tree = ast.parse(script.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return False
    modules = set()   # dotted names the script imports (`from model.resnet import f`: model.resnet, model.resnet.f)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                return True
            modules.add(node.module or "")
            modules.update(f"{node.module}.{a.name}" for a in node.names if node.module)
    here = script.parent
    # a module or package beside it, or a file in a directory beside it (a namespace package:
    # `from model.resnet import resnet20` with no model/__init__.py)
    return any((here / f"{m.replace('.', '/')}.py").is_file() or (here / m.replace(".", "/") / "__init__.py").is_file()
               for m in modules if m and m != script.stem)
