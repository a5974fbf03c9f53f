"""Loaders for what lcl writes, with lcl's checks.

* ``lcl plan --out DIR`` writes ``DIR/epoch-NNN.npy`` (the C×C targets of
  epoch NNN, 0-based: ``epoch-000`` is v(0), what the first epoch trains
  on; ``DIR/STAGE/epoch-NNN.npy`` for strategies with several stages),
  ``DIR/curriculum.csv`` (per epoch: statistics and loss coefficients) and
  ``DIR/classes.txt`` (``INDEX<TAB>ID<TAB>NAME`` per row): :func:`load_plan`.
* ``lcl store export KEY -o m.npy`` writes the C×C float32 matrix and
  ``m.ids.txt``, the row ids one per line: :func:`load_matrix`.
* ``lcl synsets SET --json`` prints one JSON object per class (index, id,
  name, wnid, ...): :func:`load_synsets`.

Every loader checks shapes and, when given the classes the model is trained
on (``classes=``: a list of class ids or names in the model's order, or the
path of a ``classes.txt``/``.ids.txt``), their number and order, and fails
with an :class:`~lcl.LCLFileError` of one line that names the file and
what differs, as lcl does: a plan of another label set, a matrix of the
wrong size, classes in another order.
"""
from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import torch

from ._errors import PathLike, fail, quote

__all__ = [
    "ClassInfo",
    "Classes",
    "Plan",
    "Synset",
    "check_classes",
    "load_matrix",
    "load_plan",
    "load_synsets",
    "read_classes",
]


@dataclass(frozen=True)
class ClassInfo:
    """One row of a ``classes.txt``: the class's index, id and name."""

    index: int
    id: str
    name: str


Classes = Union[Sequence[str], Sequence[ClassInfo], PathLike]
"""What ``classes=`` accepts: ids or names in the model's order, the
:class:`ClassInfo` rows of :func:`read_classes`, or the path of a
``classes.txt`` or ``.ids.txt``."""


def read_classes(path: PathLike) -> List[ClassInfo]:
    """Reads a ``classes.txt`` (``INDEX<TAB>ID<TAB>NAME``, as ``lcl plan``
    writes it) or an ``.ids.txt`` (one id per line, as ``lcl store export``
    writes it beside a ``.npy``). Indices must run 0, 1, 2, ...
    """
    out: List[ClassInfo] = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise fail(path, f"cannot read the class list: {e.strerror or e}") from None
    if lines and lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        parts = line.split("\t")
        if len(parts) == 1:
            out.append(ClassInfo(len(out), parts[0], parts[0]))
            continue
        if len(parts) != 3:
            raise fail(path, f"line {n}: {len(parts)} tab-separated fields, want 3 (index, id, name)")
        try:
            index = int(parts[0])
        except ValueError:
            raise fail(path, f"line {n}: index {quote(parts[0])} is not a number") from None
        if index != len(out):
            raise fail(path, f"line {n}: index {index}, want {len(out)}")
        out.append(ClassInfo(index, parts[1], parts[2]))
    if not out:
        raise fail(path, "no classes")
    return out


def _want(classes: Classes) -> List[ClassInfo]:
    if isinstance(classes, (str, os.PathLike)):
        return read_classes(classes)
    out: List[ClassInfo] = []
    for i, c in enumerate(classes):
        out.append(c if isinstance(c, ClassInfo) else ClassInfo(i, str(c), str(c)))
    return out


def _label(c: ClassInfo) -> str:
    return quote(c.id) if c.id == c.name else f"{quote(c.id)} ({quote(c.name)})"


def check_classes(found: Sequence[ClassInfo], classes: Optional[Classes], file: PathLike) -> None:
    """Checks the classes a file lists (``found``) against the model's
    (``classes``; nothing to check when None): the same number, and row by
    row the same class, by id or by name. Raises an
    :class:`~lcl.LCLFileError` naming ``file`` and the first difference.
    """
    if classes is None:
        return
    want = _want(classes)
    if len(found) != len(want):
        raise fail(file, f"{len(found)} classes, want {len(want)} (a file of another label set?)")

    def same(a: ClassInfo, b: ClassInfo) -> bool:
        return bool({a.id, a.name} & {b.id, b.name})

    for i, (a, b) in enumerate(zip(found, want)):
        if same(a, b):
            continue
        elsewhere = next((j for j, w in enumerate(want) if same(a, w)), None)
        if elsewhere is not None:
            raise fail(file, f"classes in another order: row {i} is {_label(a)}, which the model has at {elsewhere}; "
                             f"the model's row {i} is {_label(b)}")
        raise fail(file, f"row {i} is {_label(a)}, which is not among the model's classes "
                         f"(row {i} there is {_label(b)}; a file of another label set?)")


def _read_npy(path: PathLike) -> np.ndarray:
    try:
        m = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise fail(path, "no such file") from None
    except (OSError, ValueError) as e:
        raise fail(path, f"not a .npy matrix: {e}") from None
    if not isinstance(m, np.ndarray):
        raise fail(path, "not a .npy file (an .npz archive?)")
    if m.ndim != 2:
        raise fail(path, f"{m.ndim}-d array of shape {tuple(m.shape)}, want a 2-d matrix")
    if m.shape[0] != m.shape[1]:
        raise fail(path, f"matrix is {m.shape[0]}×{m.shape[1]}, not square")
    if not np.issubdtype(m.dtype, np.floating):
        raise fail(path, f"matrix of {m.dtype}, want float32 or float64")
    bad = np.argwhere(~np.isfinite(m))
    if len(bad):
        i, j = bad[0]
        raise fail(path, f"value [{i}, {j}] is {m[i, j]}, want finite numbers")
    return m


def load_matrix(path: PathLike, classes: Optional[Classes] = None, *,
                dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Loads a C×C matrix lcl wrote (``lcl store export KEY -o m.npy``, a
    plan's ``epoch-NNN.npy``, or any ``.npy`` matrix ``lcl similarity
    --source matrix`` would take).

    With ``classes``, checks its size against them and, where the export's
    ``m.ids.txt`` lies beside it, its rows' order too. Returns a tensor of
    ``dtype`` (float32: lcl's matrices are float32, so nothing is lost).
    """
    m = _read_npy(path)
    if classes is not None:
        want = _want(classes)
        if m.shape[0] != len(want):
            raise fail(path, f"matrix is {m.shape[0]}×{m.shape[1]}, want {len(want)}×{len(want)} "
                             f"(one row per class of the model; a matrix of another label set?)")
        ids = _ids_file(path)
        if ids is not None:
            check_classes(read_classes(ids), want, ids)
    return torch.from_numpy(np.ascontiguousarray(m)).to(dtype)


def _ids_file(path: PathLike) -> Optional[str]:
    p = os.fspath(path)
    stem = p[:-4] if p.endswith(".npy") else p
    ids = stem + ".ids.txt"
    return ids if os.path.exists(ids) else None


_EPOCH = re.compile(r"^epoch-(\d{3,})\.npy$")


class Plan:
    """The curriculum ``lcl plan --out DIR`` wrote: every epoch's C×C
    targets, their loss coefficients and the classes.

    ``plan[epoch]`` (or :meth:`targets`) is the target matrix of a 0-based
    epoch, row y the target of an example of class y: ``plan[0]`` is v(0),
    what the first epoch trains on. With ``classes`` the plan's
    ``classes.txt`` is checked against the model's classes first. Each
    epoch's file is read when asked for, and checked to be C×C.

    Example::

        plan = lcl.load_plan("plan/", classes=train_set.classes)
        for epoch in range(epochs):
            T = plan[epoch]
            for x, y in loader:
                loss = lcl.soft_target_cross_entropy(model(x), T[y])
    """

    def __init__(self, path: PathLike, classes: Optional[Classes] = None) -> None:
        self.path = os.fspath(path)
        if not os.path.isdir(self.path):
            raise fail(self.path, "no such plan folder (lcl plan --out DIR writes one)")
        names = os.path.join(self.path, "classes.txt")
        if not os.path.exists(names):
            raise fail(names, "missing: not a folder lcl plan wrote")
        self.classes: List[ClassInfo] = read_classes(names)
        check_classes(self.classes, classes, names)
        self._files: Dict[str, List[str]] = {}
        top = self._epoch_files(self.path)
        if top:
            self._files[""] = top
        else:
            for entry in sorted(os.listdir(self.path)):
                sub = os.path.join(self.path, entry)
                if os.path.isdir(sub):
                    files = self._epoch_files(sub)
                    if files:
                        self._files[entry] = files
        if not self._files:
            raise fail(self.path, "no epoch-NNN.npy files: not a folder lcl plan wrote")
        self._coefs = self._read_csv()

    @staticmethod
    def _epoch_files(folder: str) -> List[str]:
        found: Dict[int, str] = {}
        for name in os.listdir(folder):
            m = _EPOCH.match(name)
            if m:
                found[int(m.group(1))] = os.path.join(folder, name)
        for e in range(len(found)):
            if e not in found:
                raise fail(os.path.join(folder, f"epoch-{e:03d}.npy"),
                           f"missing, though the plan has {len(found)} epochs: a plan written only in part?")
        return [found[e] for e in range(len(found))]

    def _read_csv(self) -> Dict[str, List[Dict[str, float]]]:
        path = os.path.join(self.path, "curriculum.csv")
        out: Dict[str, List[Dict[str, float]]] = {}
        if not os.path.exists(path):
            return out
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                stage = row.get("stage_name", "") if len(self._files) > 1 else ""
                out.setdefault(stage, []).append(
                    {k: float(v) for k, v in row.items() if k not in ("stage", "stage_name", "epoch")})
        return out

    @property
    def num_classes(self) -> int:
        """C, the number of classes (rows of every target matrix)."""
        return len(self.classes)

    @property
    def stages(self) -> List[str]:
        """The stages' names; ``[""]`` for a plan of one stage."""
        return list(self._files)

    def epochs(self, stage: Optional[str] = None) -> int:
        """The number of epochs planned (of ``stage`` for a plan of several)."""
        return len(self._files[self._stage(stage)])

    def __len__(self) -> int:
        return self.epochs()

    def _stage(self, stage: Optional[str]) -> str:
        if stage is None:
            if len(self._files) > 1:
                raise fail(self.path, f"a plan of {len(self._files)} stages ({', '.join(self._files)}): name the stage")
            return next(iter(self._files))
        if stage not in self._files:
            raise fail(self.path, f"no stage {quote(stage)} (the plan has {', '.join(map(quote, self._files)) or 'one'})")
        return stage

    def file(self, epoch: int, stage: Optional[str] = None) -> str:
        """The path of the targets of 0-based ``epoch``."""
        files = self._files[self._stage(stage)]
        if not 0 <= epoch < len(files):
            raise fail(self.path, f"epoch {epoch} is not planned: the plan has epochs 0 to {len(files) - 1} "
                                  f"(lcl plan --epochs {len(files)})")
        return files[epoch]

    def targets(self, epoch: int, stage: Optional[str] = None, *,
                device: Optional[Union[str, torch.device]] = None) -> torch.Tensor:
        """The C×C float32 targets of 0-based ``epoch``."""
        path = self.file(epoch, stage)
        m = _read_npy(path)
        c = self.num_classes
        if m.shape[0] != c:
            raise fail(path, f"matrix is {m.shape[0]}×{m.shape[1]}, want {c}×{c} (classes.txt lists {c} classes)")
        return torch.from_numpy(np.ascontiguousarray(m)).to(torch.float32).to(device)

    def __getitem__(self, epoch: int) -> torch.Tensor:
        return self.targets(epoch)

    def coefs(self, epoch: int, stage: Optional[str] = None) -> Dict[str, float]:
        """The loss coefficients of 0-based ``epoch`` from curriculum.csv:
        ``soft_ce``, ``hard_ce``, ``kd``, ``temperature``, ``mutual``,
        ``group``, ``cosine``, ``consistency``, ``dissimilar``,
        ``geometric`` (and the epoch's ``mean_entropy`` and
        ``mean_true_mass``).
        """
        self.file(epoch, stage)
        rows = self._coefs.get(self._stage(stage))
        if rows is None or epoch >= len(rows):
            raise fail(os.path.join(self.path, "curriculum.csv"), f"no row for epoch {epoch}")
        return dict(rows[epoch])

    def __repr__(self) -> str:
        epochs = ", ".join(f"{stage or 'train'}: {len(files)} epochs" for stage, files in self._files.items())
        return f"Plan({self.path!r}: {self.num_classes} classes, {epochs})"


def load_plan(path: PathLike, classes: Optional[Classes] = None) -> Plan:
    """The curriculum ``lcl plan --out PATH`` wrote (:class:`Plan`), its
    classes checked against ``classes`` when given."""
    return Plan(path, classes)


@dataclass(frozen=True)
class Synset:
    """A class of ``lcl synsets SET --json``: index, id, name and wnid
    (``""`` where the class has none)."""

    index: int
    id: str
    name: str
    wnid: str


def load_synsets(path: PathLike) -> List[Synset]:
    """Reads the output of ``lcl synsets SET --json`` (one JSON object per
    class) or of ``lcl synsets SET`` (its table)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f.read().split("\n") if line.strip()]
    except OSError as e:
        raise fail(path, f"cannot read: {e.strerror or e}") from None
    out: List[Synset] = []
    if lines and lines[0].lstrip().startswith("{"):
        for n, line in enumerate(lines, 1):
            try:
                d = json.loads(line)
            except ValueError:
                raise fail(path, f"line {n}: not JSON (want the output of lcl synsets --json)") from None
            if d.get("message_type", "synset") != "synset":
                continue
            out.append(Synset(int(d["index"]), str(d["id"]), str(d["name"]), str(d.get("wnid") or "")))
    else:
        if not lines or not lines[0].startswith("INDEX"):
            raise fail(path, "neither lcl synsets's table nor its --json lines")
        for n, line in enumerate(lines[1:], 2):
            cols = re.split(r" {2,}", line.strip())
            if len(cols) < 4:
                raise fail(path, f"line {n}: {len(cols)} columns, want INDEX ID NAME WNID GLOSS")
            out.append(Synset(int(cols[0]), cols[1], cols[2], "" if cols[3] == "-" else cols[3]))
    for i, s in enumerate(out):
        if s.index != i:
            raise fail(path, f"class {quote(s.id)} has index {s.index}, want {i}")
    return out
