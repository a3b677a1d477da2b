"""Text report and loss-curve plot for a parity result (the dict from `check.run_parity`)."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path


def _num(x, fmt=".7g") -> str:
    return "-" if x is None else format(x, fmt)


def _shown(path: str) -> str:
    """A path relative to the working directory when it lies under it."""
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") or not os.path.isabs(path) else rel


def format_text(r: dict) -> str:
    s = dict(r["setup"])
    for k in ("torch_script", "mindspore_script"):
        if not s[k].startswith("("):
            s[k] = _shown(s[k])
    tol = r["tolerance"]
    lines = [f"parity: {s['torch_script']}",
             f"    vs: " + (f"msmigrate convert of it {s['mindspore_script']}" if s["converted"] else s["mindspore_script"])]
    lines.append(f"model: torch {s['torch_model']} -> MindSpore {s['ms_model']}; initial weights copied "
                 f"({s['weights_loaded']} tensors" + (f", dropped {', '.join(s['weights_dropped'])}" if s["weights_dropped"] else "") + ")")
    for n in s.get("networks", []):
        lines.append(f"network {n['name']}: torch {n['torch']} -> " + (f"MindSpore {n['ms']}; initial weights copied"
                     if n["ms"] else "no MindSpore Cell of its shape and rank was found: not compared"))
    d = s["dropout_disabled"]
    layers = ", ".join(f"{n} (p={p:g})" for n, p in d["torch"].items() if p > 0)
    if layers or d["functional_calls"]:
        lines.append(f"randomness: dropout turned off in both runs (p -> 0); torch layers: {layers or 'none'}"
                     + (f"; {d['functional_calls']} functional dropout calls" if d["functional_calls"] else ""))
    rp = s["replay"]
    if s["torch_batches_recorded"]:
        lines.append(f"batches: {s['torch_batches_recorded']} recorded from the torch DataLoader; "
                     + (f"{rp['from_loader']} given to the MindSpore program where its loader yielded its own, "
                        if rp.get("from_loader") else "")
                     + f"{rp.get('replayed', 0)} replayed into MindSpore's step (its own data differed), "
                     f"{rp.get('same', 0)} identical" + (f", {len(rp['mismatch'])} of other shape (not replayed)" if rp.get("mismatch") else ""))
    else:
        lines.append("batches: no torch DataLoader; both programs produce their own data")
    dr = s.get("draws") or {}
    if dr.get("torch_draws"):
        from msmigrate.parity.check import _replay_stop

        calls = ", ".join(f"{c} x{n}" for c, n in dr.get("calls", {}).items())
        lines.append(f"random draws: {dr.get('replayed', 0)} of torch's {dr['torch_draws']} draws of the program's own "
                     f"code replayed in MindSpore" + (f" ({calls})" if calls else "")
                     + ("; its train_step ran uncompiled, so that draws inside it are replayed" if dr.get("uncompiled_step") else ""))
        if dr.get("stopped"):
            lines.append(f"random draws: replay {_replay_stop(dr['stopped'])}; the rest drawn by MindSpore")
    if s.get("joined_backward"):
        lines.append(f"steps: {s['joined_backward']} torch backward pass(es) of another line before the optimizer "
                     "step joined to the one before (one update of their summed gradients: one MindSpore step "
                     "on the sum of the losses)")
    if s.get("voided_backward"):
        lines.append(f"steps: {s['voided_backward']} torch backward pass(es) whose gradients a zero_grad() cleared "
                     "before any optimizer step counted as no step (an input's gradient, e.g. for an adversarial "
                     "example: a vjp before the step in MindSpore)")
    lines.append("")
    lines.append(f"{'step':>5}  {'torch loss':>13}  {'mindspore loss':>14}  {'abs diff':>9}  {'rel diff':>9}  {'max param diff':>14}  ok")
    for row in r["steps"]:
        ok = row["loss_ok"] and row["state_ok"]
        lines.append(f"{row['step']:>5}  {_num(row['torch_loss']):>13}  {_num(row['ms_loss']):>14}  "
                     f"{_num(row['abs_diff'], '.2e'):>9}  {_num(row['rel_diff'], '.2e'):>9}  "
                     f"{_num(row['state_max_abs'], '.2e'):>14}  {'yes' if ok else 'NO'}")
    lines.append("")
    lines.append(f"loss: max abs diff {r['max_abs_diff']:.3g}, max rel diff {r['max_rel_diff']:.3g} over "
                 f"{r['torch_steps']} steps (MindSpore ran {r['ms_steps']}); tolerance rtol={tol['rtol']:g} atol={tol['atol']:g}, "
                 "applied to the loss and to every parameter and buffer after each step "
                 "(rtol times the tensor's largest magnitude)")
    if r.get("tiny_grad_elements"):
        parts = ", ".join(f"{n} ({k})" for n, k in r["tiny_grad_elements"].items())
        lines.append(f"not compared: parameter elements whose torch gradient was below 1e-5 of the step's "
                     f"largest (float32 noise dominates; Adam-style steps amplify it): {parts}")
    if r.get("within_rounding"):
        parts = ", ".join(f"{n} (step {v['step']}: {v['differs']:.2g}; torch moved {v['torch_moved']:.2g})"
                          for n, v in r["within_rounding"].items())
        from msmigrate.parity.check import SENSITIVITY_FACTOR

        lines.append(f"within float32 rounding: tensors beyond the tolerance but within {SENSITIVITY_FACTOR:g}x the distance torch's "
                     f"own run moves when its initial weights change by one unit in the last place: {parts}")
    if r.get("settled_after_step"):
        parts = ", ".join(f"{n} (from step {k})" for n, k in r["settled_after_step"].items())
        lines.append("state equal to torch's only once what follows the MindSpore step ran (a forward torch ran before "
                     "its optimizer step that the conversion moved out of the compiled step, or the update of gradients "
                     f"summed over a loop, applied after it): {parts}")
    for c in r["config"]:
        lines.append(f"setting: {c['name']}: {c['detail']}")
    if "grads" in r:
        lines.append("")
        lines.append("step 1 gradients (MindSpore names):")
        for g in r["grads"]:
            lines.append(f"  {g['name']:<32} max abs {_num(g['max_abs'], '.2e'):>9}  rel {_num(g['rel'], '.2e'):>9}  "
                         f"{'ok' if g['ok'] else 'DIFFERS'}")
        lines.append("step 1 layer outputs, in call order:")
        for a in r["activations"]:
            lines.append(f"  {a['name']:<20} {a['torch_cls'] + ' / ' + a['ms_cls']:<26} max abs {a['max_abs']:.2e}  "
                         f"rel {a['rel']:.2e}  {'ok' if a['ok'] else 'DIFFERS'}")
    f = r["first_divergence"]
    lines.append("")
    if f is None:
        lines.append("PASS: the MindSpore program matches torch at every step")
    else:
        where = f" at {f['name']}" if f.get("name") else ""
        # an inherent difference is still a difference: said as such, never as a pass
        verdict = f"DIFFERS (inherent: {f['inherent']})" if f.get("inherent") else "FAIL"
        lines.append(f"{verdict}: first divergence at step {f['step']}{where} ({f['kind']}): {f['detail']}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ plot
# A dependency-free PNG: two panels (both loss curves; their absolute difference), no text.
_W, _H, _PAD = 640, 480, 30
_TORCH, _MS, _DIFF, _AXIS = (31, 119, 180), (255, 127, 14), (214, 39, 40), (90, 90, 90)


def _png(pixels: list[bytearray]) -> bytes:
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", _W, _H, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def write_plot(r: dict, path: Path | str) -> None:
    """Top panel: torch loss (blue) and MindSpore loss (orange, dashed) per step; bottom
    panel: |difference| (red) with the tolerance band at rtol*|loss|+atol (grey)."""
    if str(path).endswith(".svg"):
        Path(path).write_text(_svg(r))
        return
    try:
        _matplotlib_plot(r, path)
        return
    except ImportError:   # without matplotlib: a plain drawing, no text
        pass
    px = [bytearray(b"\xff" * (_W * 3)) for _ in range(_H)]

    def put(x, y, color):
        if 0 <= x < _W and 0 <= y < _H:
            px[y][3 * x:3 * x + 3] = bytes(color)

    def line(x0, y0, x1, y1, color, dashed=False):
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for i in range(n + 1):
            if dashed and (i // 6) % 2:
                continue
            x, y = round(x0 + (x1 - x0) * i / n), round(y0 + (y1 - y0) * i / n)
            for dx in (0, 1):
                put(x + dx, y, color)

    panels = _series(r)
    for (top, bottom), curves in zip(((_PAD, _H // 2 - _PAD // 2), (_H // 2 + _PAD // 2, _H - _PAD)), panels):
        line(_PAD, top, _PAD, bottom, _AXIS)
        line(_PAD, bottom, _W - _PAD, bottom, _AXIS)
        pts = [v for c in curves for v in c[0] if v is not None]
        lo, hi = (min(pts), max(pts)) if pts else (0.0, 1.0)
        if hi - lo < 1e-12:
            lo, hi = lo - 1.0, hi + 1.0
        for values, color, dashed in curves:
            xy = [(_PAD + round((_W - 2 * _PAD) * i / max(len(values) - 1, 1)),
                   bottom - round((bottom - top) * (v - lo) / (hi - lo))) for i, v in enumerate(values) if v is not None]
            for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
                line(x0, y0, x1, y1, color, dashed)
    Path(path).write_bytes(_png(px))


def _matplotlib_plot(r: dict, path: Path | str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (losses, diffs) = _series(r)
    steps = [row["step"] for row in r["steps"]]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    for (values, _, dashed), label in zip(losses, ("torch", "MindSpore")):
        top.plot(steps, values, "--" if dashed else "-", marker="o", markersize=3, label=label)
    top.set_ylabel("loss")
    top.legend()
    top.set_title(f"msmigrate parity: {Path(r.get('setup', {}).get('torch_script', '')).name}")
    bottom.xaxis.get_major_locator().set_params(integer=True)
    (diff, _, _), (band, _, _) = diffs
    bottom.semilogy(steps, [max(d, 1e-12) if d is not None else float("nan") for d in diff],
                    color="tab:red", marker="o", markersize=3, label="|torch - MindSpore|")
    bottom.semilogy(steps, [b if b is not None else float("nan") for b in band], "--", color="grey",
                    label="tolerance")
    bottom.set_xlabel("step")
    bottom.set_ylabel("loss difference")
    bottom.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _series(r: dict):
    tl = [row["torch_loss"] for row in r["steps"]]
    ml = [row["ms_loss"] for row in r["steps"]]
    diff = [row["abs_diff"] for row in r["steps"]]
    tol = r["tolerance"]
    band = [None if t is None else tol["atol"] + tol["rtol"] * abs(t) for t in tl]
    return ([(tl, _TORCH, False), (ml, _MS, True)], [(diff, _DIFF, False), (band, _AXIS, True)])


def _svg(r: dict) -> str:
    (top, bottom) = _series(r)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>']
    for (y0, y1), curves, title in (((_PAD, _H // 2 - _PAD // 2), top, "loss: torch (blue), MindSpore (orange, dashed)"),
                                    ((_H // 2 + _PAD // 2, _H - _PAD), bottom, "|difference| (red), tolerance (grey)")):
        out.append(f'<text x="{_PAD}" y="{y0 - 8}">{title}</text>')
        out.append(f'<polyline points="{_PAD},{y0} {_PAD},{y1} {_W - _PAD},{y1}" fill="none" stroke="rgb{_AXIS}"/>')
        pts = [v for c in curves for v in c[0] if v is not None]
        lo, hi = (min(pts), max(pts)) if pts else (0.0, 1.0)
        if hi - lo < 1e-12:
            lo, hi = lo - 1.0, hi + 1.0
        out.append(f'<text x="2" y="{y0 + 10}">{hi:.3g}</text><text x="2" y="{y1}">{lo:.3g}</text>')
        for values, color, dashed in curves:
            xy = " ".join(f"{_PAD + (_W - 2 * _PAD) * i / max(len(values) - 1, 1):.1f},{y1 - (y1 - y0) * (v - lo) / (hi - lo):.1f}"
                          for i, v in enumerate(values) if v is not None)
            out.append(f'<polyline points="{xy}" fill="none" stroke="rgb{color}" stroke-width="2"'
                       + (' stroke-dasharray="6,6"' if dashed else "") + "/>")
    out.append(f'<text x="{_W // 2}" y="{_H - 8}">step</text></svg>')
    return "\n".join(out) + "\n"
