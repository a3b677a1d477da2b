"""Synthetic data for corpus entries, written in the on-disk format the original script reads.

An entry's `prepare` field is Python run in the copied torch directory (before conversion, so the
converted program reads the same files) with these functions in scope. All data are drawn from a
fixed seed: both runs, and every re-run, read identical bytes.
"""
from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path

import numpy as np

_WORDS = ("the a of to and in is was he she it they we you that this with for on as at by from "
          "king queen man woman boy girl dog cat house tree river city water fire light dark good "
          "bad old new big small red blue green run walk see say make take give come go know").split()


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _images(n: int, side: int, classes: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Mostly-zero uint8 images (they compress well) with a class-dependent bright block."""
    labels = rng.integers(0, classes, n).astype(np.uint8)
    imgs = np.zeros((n, side, side), np.uint8)
    block = max(2, side // 4)
    for i, c in enumerate(labels):
        r, col = divmod(int(c), 4)
        y, x = 2 + 5 * r % (side - block), 2 + 6 * col % (side - block)
        imgs[i, y:y + block, x:x + block] = rng.integers(128, 256, (block, block), dtype=np.uint8)
    return imgs, labels


def mnist_idx(directory: str = "data", n_train: int = 600, n_test: int = 100, gz: bool = False, seed: int = 0,
              names: tuple[str, str, str, str] = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                                  "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")) -> None:
    """MNIST in its IDX files (torchvision's raw/ and MindSpore's MnistDataset read these)."""
    rng = _rng(seed)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if gz else open
    for (img_name, lab_name), n in zip(((names[0], names[1]), (names[2], names[3])), (n_train, n_test)):
        imgs, labels = _images(n, 28, 10, rng)
        suffix = ".gz" if gz and not img_name.endswith(".gz") else ""
        with opener(d / (img_name + suffix), "wb") as fh:
            fh.write(struct.pack(">IIII", 2051, n, 28, 28) + imgs.tobytes())
        with opener(d / (lab_name + suffix), "wb") as fh:
            fh.write(struct.pack(">II", 2049, n) + labels.tobytes())


def words_text(path: str, n_lines: int = 200, words_per_line: tuple[int, int] = (5, 12), seed: int = 0) -> None:
    """Plain text, one sentence a line, from a small vocabulary (word-level language models)."""
    rng = _rng(seed)
    lines = [" ".join(rng.choice(_WORDS, rng.integers(*words_per_line))) for _ in range(n_lines)]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(lines) + "\n")


def csv_table(path: str, n_rows: int, n_features: int, kind: str = "binary", header: str | None = None,
              seed: int = 0, fmt: str = "%.6f") -> None:
    """Numeric CSV: features then one target column (kind binary / class:K / regression)."""
    rng = _rng(seed)
    x = rng.normal(size=(n_rows, n_features))
    w = rng.normal(size=n_features)
    if kind == "binary":
        y = (x @ w > 0).astype(float)
    elif kind.startswith("class:"):
        y = np.argmax(x @ rng.normal(size=(n_features, int(kind[6:]))), axis=1).astype(float)
    else:
        y = x @ w + 0.1 * rng.normal(size=n_rows)
    np.savetxt(path, np.column_stack([x, y]), delimiter=",", fmt=fmt, header=header or "", comments="")


def ensure_dir(path: str) -> None:
    os.makedirs(path, exist_ok=True)


def cora_graph(directory: str = "data/cora", n_nodes: int = 1500, n_features: int = 64, n_classes: int = 7,
               n_edges: int = 4000, seed: int = 0) -> None:
    """A citation graph in Cora's two files: `cora.content` (paper id, 0/1 word features, class
    name; tab separated) and `cora.cites` (cited id, citing id). Ids are sparse integers like the
    real ones; every node has a feature set so no row is all zero."""
    rng = _rng(seed)
    ids = rng.choice(np.arange(1000, 1000 + 50 * n_nodes), n_nodes, replace=False)
    names = [f"Topic_{c}" for c in range(n_classes)]
    labels = rng.integers(0, n_classes, n_nodes)
    centers = rng.random((n_classes, n_features)) < 0.15   # class-dependent words
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "cora.content", "w") as fh:
        for i in range(n_nodes):
            words = centers[labels[i]] ^ (rng.random(n_features) < 0.05)
            words[rng.integers(n_features)] = True
            fh.write("\t".join([str(ids[i]), *map(str, words.astype(int)), names[labels[i]]]) + "\n")
    src = rng.integers(0, n_nodes, n_edges)
    dst = rng.integers(0, n_nodes, n_edges)
    keep = src != dst
    with open(d / "cora.cites", "w") as fh:
        for a, b in zip(src[keep], dst[keep]):
            fh.write(f"{ids[a]}\t{ids[b]}\n")


def mnist_csv(path: str, n_rows: int = 512, header: bool = True, seed: int = 0) -> None:
    """MNIST as the Kaggle-style CSV (label, then 784 pixel values 0-255 a row, with a header line)."""
    imgs, labels = _images(n_rows, 28, 10, _rng(seed))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    head = "label," + ",".join(f"{r}x{c}" for r in range(1, 29) for c in range(1, 29)) if header else ""
    np.savetxt(path, np.column_stack([labels, imgs.reshape(n_rows, -1)]).astype(np.int64), delimiter=",",
               fmt="%d", header=head, comments="")


def cal_housing_cache(directory: str = "skdata", n_rows: int = 640, seed: int = 0) -> None:
    """scikit-learn's California-housing cache (`cal_housing_py3.pkz`, a joblib-compressed array whose
    columns are value, income, age, rooms, bedrooms, population, households, latitude, longitude),
    which `fetch_california_housing(data_home=...)` (or $SCIKIT_LEARN_DATA) reads instead of downloading."""
    import joblib   # scikit-learn's own dependency: only the entries that use scikit-learn call this
    rng = _rng(seed)
    households = rng.integers(50, 1500, n_rows).astype(float)
    rooms = households * rng.uniform(3, 7, n_rows)
    table = np.column_stack([
        rng.uniform(15000, 500000, n_rows), rng.uniform(0.5, 15, n_rows), rng.integers(1, 52, n_rows),
        rooms, rooms * rng.uniform(0.15, 0.3, n_rows), households * rng.uniform(1.5, 4, n_rows), households,
        rng.uniform(32.5, 42, n_rows), rng.uniform(-124.3, -114.3, n_rows)])
    Path(directory).mkdir(parents=True, exist_ok=True)
    joblib.dump(table, Path(directory) / "cal_housing_py3.pkz", compress=6)


def solar_csv(path: str, n_rows: int = 104832, n_sites: int = 32, seed: int = 0) -> None:
    """Solar power as in the NREL-derived `solar.csv` of the renewables-scenario GANs: one row per
    5-minute step, one column per site, no header; zero at night, a noisy daily bell by day."""
    rng = _rng(seed)
    t = np.arange(n_rows) % 288
    day = np.clip(np.sin(np.pi * (t - 72) / 144), 0, None)
    power = day[:, None] * rng.uniform(5, 12, n_sites) * rng.uniform(0.6, 1.0, (n_rows, n_sites))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    np.savetxt(path, power, delimiter=",", fmt="%.4g")


CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def cifar10_batches(directory: str = "data", n_train: int = 200, n_test: int = 100, seed: int = 0) -> None:
    """CIFAR-10 as torchvision downloads it: `directory/cifar-10-batches-py/` holding the python pickles
    data_batch_1..5 (n_train images split between them), test_batch and batches.meta; each batch a dict
    of `data` (N x 3072 uint8, the R, G and B planes of a 32x32 image a row), `labels` (a list of
    ints), `batch_label` and `filenames`. Images: noise plus a bright class-dependent block, per channel."""
    import pickle
    rng = _rng(seed)
    d = Path(directory) / "cifar-10-batches-py"
    d.mkdir(parents=True, exist_ok=True)

    def batch(n: int, name: str) -> dict:
        labels = rng.integers(0, 10, n)
        imgs = rng.integers(0, 96, (n, 3, 32, 32), dtype=np.uint8)
        for i, c in enumerate(labels):
            r, col = divmod(int(c), 4)
            imgs[i, c % 3, 4 + 8 * r:12 + 8 * r, 2 + 7 * col:10 + 7 * col] = rng.integers(160, 256, (8, 8),
                                                                                           dtype=np.uint8)
        return {"batch_label": name, "labels": [int(c) for c in labels], "data": imgs.reshape(n, 3072),
                "filenames": [f"synthetic_{name.replace(' ', '_')}_{i}.png" for i in range(n)]}

    sizes = [n_train // 5 + (i < n_train % 5) for i in range(5)]
    for i, n in enumerate(sizes, 1):
        with open(d / f"data_batch_{i}", "wb") as fh:
            pickle.dump(batch(n, f"training batch {i} of 5"), fh, protocol=2)
    with open(d / "test_batch", "wb") as fh:
        pickle.dump(batch(n_test, "testing batch 1 of 1"), fh, protocol=2)
    with open(d / "batches.meta", "wb") as fh:
        pickle.dump({"num_cases_per_batch": max(sizes), "label_names": list(CIFAR10_CLASSES), "num_vis": 3072}, fh,
                    protocol=2)


def keep_first_lines(n: int, *paths: str) -> None:
    """Cut each of the repository's own list files (one item a line: file names, labels) to its
    first `n` lines, the same for every file, so a script that reads a whole shipped dataset
    trains on a tiny part of it; nothing is drawn."""
    for path in paths:
        with open(path, encoding="utf-8", newline="") as fh:
            lines = fh.readlines()
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.writelines(lines[:n])
