"""SummaryWriter calls -> mindspore.SummaryRecord: `add_value(plugin, tag, Tensor)` queues a
value, `record(step)` writes what is queued under that step. One torch call is both, so it
becomes two statements (a call that is not a whole statement is marked)."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible


def summary_writer(site):
    """SummaryWriter(log_dir) -> SummaryRecord(log_dir); torch's default directory
    (runs/<date>_<host>) becomes 'runs'. MindSpore allows one open SummaryRecord per process:
    a file that creates writers in several places (train and validation runs) is marked."""
    if len(re.findall(r"\bSummaryWriter\s*\(", site.rw.module_code)) > 1:
        site.flag("review", f"{site.qualname}: MindSpore allows one open SummaryRecord per process (a second "
                            f"one raises RuntimeError): log every run through one writer, with distinct tags")
    log_dir = site.arg("log_dir")
    if log_dir is None or site.code(log_dir) == "None":
        log_dir = cst.SimpleString("'runs'")
    return site.expr("{SR}({d})", SR=site.ref("mindspore.SummaryRecord"), d=log_dir)


def _whole_statement(site) -> bool:
    stmt = site.statement
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call))


def _writer(site):
    if site.receiver is None:
        raise Unconvertible("a SummaryWriter method called without its writer")
    if not _whole_statement(site):
        raise Unconvertible("a SummaryWriter call used as a value: SummaryRecord needs add_value, then record(step)")
    return site.receiver


def _record(site, writer):
    step = site.arg("global_step")
    step = cst.Integer("0") if step is None or site.code(step) == "None" else step
    return site.expr("{w}.record({step})", w=writer, step=step)


def _tensor(site, value):
    return site.expr("{T}({v}, {f32})", T="@mindspore.Tensor", v=value, f32="@mindspore.float32")


def add_scalar(site):
    """writer.add_scalar(tag, v, step) -> writer.add_value('scalar', tag, Tensor(v)); writer.record(step)"""
    w = _writer(site)
    site.before(site.stmt("{w}.add_value('scalar', {tag}, {v})\n", w=w, tag=site.arg("tag"),
                          v=_tensor(site, site.arg("scalar_value"))))
    return _record(site, w)


def add_scalars(site):
    """writer.add_scalars(main, {k: v}, step) -> one scalar per entry, tagged 'main/k' (torch
    writes each to its own run directory main_k; MindInsight shows them under these tags)."""
    w = _writer(site)
    site.before(site.stmt("for msmigrate_tag, msmigrate_value in {d}.items():\n"
                          "    {w}.add_value('scalar', {main} + '/' + msmigrate_tag, {T}(msmigrate_value, {f32}))\n",
                          w=w, d=site.arg("tag_scalar_dict"), main=site.arg("main_tag"),
                          T=site.ref("mindspore.Tensor"), f32=site.ref("mindspore.float32")))
    return _record(site, w)


def add_histogram(site):
    w = _writer(site)
    if site.has("bins") or site.has("max_bins"):
        site.flag("review", f"{site.qualname}: MindSpore chooses the histogram's bins itself")
    site.before(site.stmt("{w}.add_value('histogram', {tag}, {v})\n", w=w, tag=site.arg("tag"),
                          v=_tensor(site, site.arg("values"))))
    return _record(site, w)


def add_image(site):
    """add_image(tag, CHW) / add_images(tag, NCHW) -> the 'image' plugin, which takes NCHW."""
    w = _writer(site)
    single = site.qualname.endswith(".add_image")
    try:
        layout = site.literal("dataformats", "CHW" if single else "NCHW")
    except ValueError:
        raise Unconvertible("dataformats= is not a literal") from None
    order = {"CHW": "({v}).expand_dims(0)", "HWC": "({v}).transpose(2, 0, 1).expand_dims(0)",
             "NCHW": "({v})", "NHWC": "({v}).transpose(0, 3, 1, 2)"}.get(layout)
    if order is None:
        raise Unconvertible(f"dataformats={layout!r}: write the image as NCHW for SummaryRecord")
    image = site.expr(order.replace("({v})", "{t}"), t=_tensor(site, site.arg("img_tensor")))
    site.before(site.stmt("{w}.add_value('image', {tag}, {img})\n", w=w, tag=site.arg("tag"), img=image))
    return _record(site, w)


def dropped(site):
    """Text, graphs, hyper-parameters, figures, embeddings: SummaryRecord has no plugin for
    them; logging only, so the call goes (marked) and the program keeps training."""
    _writer(site)
    site.flag("review", f"{site.qualname}: MindSpore's SummaryRecord has no equivalent; the call was dropped")
    return site.REMOVED
