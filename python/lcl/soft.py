"""A user's own target matrix: ``lcl train --strategy soft --matrix FILE``.

:func:`load_target_matrix` reads the files ``soft`` reads (docs/methods.md,
"soft — a target matrix from a file") with the same checks and the same
one-line errors (``FILE:LINE: row I sums to 0.9, want 1 within 0.001 ...``);
:class:`SoftTargets` trains on the matrix as given or annealed to one-hot
by LCL's update, epoch by epoch, as ``lcl plan --strategy soft`` plans it.
"""
from __future__ import annotations

import csv
import json
import math
import os
import re
from typing import Dict, List, Optional, Union

import numpy as np
import torch

from ._errors import LCLFileError, PathLike, fail, quote
from .io import ClassInfo, Classes, _want
from .targets import check_similarity, lcl_targets

__all__ = ["TARGET_SUM_TOLERANCE", "SoftTargets", "load_target_matrix", "soft_targets"]

TARGET_SUM_TOLERANCE = 1e-3
"""How far a row of a target matrix may sum from 1 (lcl's
``strategy.TargetSumTolerance``): loose enough for values typed with a few
digits (0.333, 0.333, 0.334), tight enough that a similarity matrix given by
mistake (rows summing to far more) is refused rather than normalised."""

Device = Optional[Union[str, torch.device]]

# Go's strconv.ParseFloat syntax, which lcl's reader uses: decimal with an
# optional exponent, hexadecimal with a binary exponent, inf/infinity
# (signed) and nan (unsigned), case-insensitive. Python's float() accepts
# more ("1_0", "+nan", other scripts' digits), which lcl refuses.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+")
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity)|nan", re.IGNORECASE)


def _parse_float(s: str) -> Optional[float]:
    """The value of ``s`` as Go's strconv.ParseFloat reads it (out of range
    values as ±inf, as lcl takes them); None where it is no number."""
    s = s.strip()
    if _DECIMAL.fullmatch(s) or _SPECIAL.fullmatch(s):
        return float(s)
    if _HEX.fullmatch(s):
        return float.fromhex(s)
    return None


def _go_float(v: float) -> str:
    """A float32 value as Go's ``%v`` prints it: the shortest digits that
    read back as the same float32, in ``%g``'s layout (an exponent below −4
    or from 6 on, written with at least two digits: ``1e+06``)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    sci = np.format_float_scientific(np.float32(v), unique=True, trim="-", exp_digits=2)
    mant, exp = sci.split("e")
    e = int(exp)
    sign = "-" if mant.startswith("-") else ""
    digits = mant.lstrip("-").replace(".", "")
    if e < -4 or e >= 6:
        rest = digits[1:]
        return f"{sign}{digits[0]}{'.' + rest if rest else ''}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if e < 0:
        return f"{sign}0.{'0' * (-e - 1)}{digits}"
    if len(digits) <= e + 1:
        return f"{sign}{digits}{'0' * (e + 1 - len(digits))}"
    return f"{sign}{digits[:e + 1]}.{digits[e + 1:]}"


def _go_quote(s: str) -> str:
    """``s`` as Go's ``%q`` writes it (double quotes, escapes)."""
    return json.dumps(s, ensure_ascii=False)


def _fail_at(path: str, line: Optional[int], what: str) -> LCLFileError:
    """``PATH:LINE: what`` (``PATH: what`` without a line), on one line."""
    if line is None:
        return fail(path, what)
    return LCLFileError(f"{quote(path)}:{line}: {what}".replace("\n", "\\n").replace("\r", "\\r"))


def _class_name(c: ClassInfo) -> str:
    """How lcl names a class in a message: its id, or "name, id"."""
    return c.id if c.name == c.id or not c.name else f"{c.name}, {c.id}"


def _ids_path(path: str) -> str:
    """FILE.ids.txt for FILE.npy: the path without its extension (as Go's
    filepath.Ext takes it: from the last dot of the last element), plus
    ``.ids.txt``."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return path + ".ids.txt"
    return path[:dot] + ".ids.txt"


def _is_class(c: ClassInfo, s: str) -> bool:
    s = s.strip()
    return s in (c.id, c.name)


class _Reader:
    """The checks of lcl's similarity.ReadTargets, in its order and words."""

    def __init__(self, path: PathLike, classes: Optional[List[ClassInfo]], normalize: bool, tolerance: float) -> None:
        self.path = os.fspath(path)
        self.classes = classes
        self.normalize = normalize
        self.tolerance = tolerance

    def fail(self, what: str, line: Optional[int] = None) -> LCLFileError:
        return _fail_at(self.path, line, what)

    def size_problem(self, c: int) -> str:
        if self.classes is not None and c != len(self.classes):
            return f"the model has {len(self.classes)} classes"
        return ""

    def check_row(self, row: np.ndarray, i: int) -> str:
        """"" for a good row i, else the message after "row I"."""
        cls = f" ({_class_name(self.classes[i])})" if self.classes is not None else ""
        total = 0.0
        for j, v in enumerate(row.tolist()):
            if not math.isfinite(v):
                return f"{cls}, column {j}: {_go_float(v)} is not finite"
            if v < 0:
                return f"{cls}, column {j}: {_go_float(v)} is negative (targets are probabilities)"
            total += v
        if total <= 0:
            return f"{cls} sums to 0: no target distribution"
        if not self.normalize and abs(total - 1) > self.tolerance:
            return (f"{cls} sums to {total:.6g}, want 1 within {self.tolerance:g} "
                    f"(or normalize=True to divide each row by its sum)")
        return ""

    # .npy

    def read_npy(self) -> np.ndarray:
        try:
            m = np.load(self.path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise self.fail(f"npy: {e}") from None
        if m.ndim == 1:
            m = m.reshape(1, -1)  # lcl reads a 1-d array as one row
        if m.ndim != 2:
            raise self.fail(f"npy: {m.ndim}-D array, want a 2-D matrix")
        if m.dtype.kind != "f" or m.dtype.itemsize not in (4, 8):
            raise self.fail(f"npy: dtype {m.dtype.str!r}, want float32 or float64 ('<f4', '<f8')")
        m = m.astype(np.float32)
        rows, cols = m.shape
        if rows != cols:
            raise self.fail(f"matrix is {rows}×{cols}, not square (row y is the target of class y)")
        why = self.size_problem(rows)
        if why:
            raise self.fail(f"matrix is {rows}×{cols} but {why}")
        self.check_ids(_ids_path(self.path))
        for i in range(rows):
            why = self.check_row(m[i], i)
            if why:
                raise self.fail(f"row {i}{why}")
        return m

    def check_ids(self, ids_path: str) -> None:
        """lcl checks FILE.ids.txt beside FILE.npy (the ids file ``lcl store
        export -o FILE.npy`` writes) against the classes when both exist."""
        if self.classes is None or not os.path.exists(ids_path):
            return
        try:
            with open(ids_path, encoding="utf-8", errors="replace", newline="") as f:
                # One id per line (an id may hold a space: "Ankle boot").
                ids = f.read().replace("\r\n", "\n").rstrip("\n").split("\n")
        except OSError as e:
            raise fail(ids_path, f"cannot read: {e.strerror or e}") from None
        if len(ids) != len(self.classes):
            raise fail(ids_path, f"{len(ids)} ids, the model has {len(self.classes)} classes")
        for i, s in enumerate(ids):
            if not _is_class(self.classes[i], s):
                raise _fail_at(ids_path, i + 1,
                               f"id {_go_quote(s)} is not class {i} of the model ({_class_name(self.classes[i])})")

    # text

    def read_text(self, text: str) -> np.ndarray:
        self.c, self.labels, self.header, self.rows = 0, False, False, 0
        self.data: List[np.ndarray] = []
        last = 0
        for n, raw in enumerate(text.split("\n"), 1):
            line = raw.rstrip("\r")
            if line.startswith("\ufeff"):
                line = line[1:]
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            last = n
            try:
                fields = _split_fields(line)
            except csv.Error as e:
                raise self.fail(f"{e}", n) from None
            why = self.line(fields)
            if why:
                raise self.fail(why, n)
        if self.c == 0:
            raise self.fail("no rows")
        if self.rows != self.c:
            raise self.fail(f"{self.rows} rows of {self.c} values: want {self.c} rows, one per class "
                            f"(row y is the target of class y)", last)
        return np.stack(self.data)

    def line(self, fields: List[str]) -> str:
        if self.c == 0 and not self.header and _is_header(fields):
            return self.read_header(fields)
        if self.c == 0:
            # The first row says the width: a leading cell that is no
            # number is its class.
            self.labels = _parse_float(fields[0]) is None
            self.c = len(fields) - (1 if self.labels else 0)
            why = self.size_problem(self.c)
            if why:
                return f"the first row has {self.c} values but {why}"
        want = self.c + (1 if self.labels else 0)
        if len(fields) != want:
            return f"{len(fields)} cells, want {want} like the first row"
        if self.rows == self.c:
            return f"more than {self.c} rows (one per class)"
        i = self.rows
        if self.labels:
            if self.classes is not None and not _is_class(self.classes[i], fields[0]):
                return (f"row {i} is labelled {_go_quote(fields[0])}, but class {i} is "
                        f"{_class_name(self.classes[i])}")
            fields = fields[1:]
        values = []
        for j, f in enumerate(fields):
            x = _parse_float(f)
            if x is None:
                return f"row {i}, column {j}: {_go_quote(f)} is not a number"
            values.append(x)
        with np.errstate(over="ignore"):
            row = np.array(values, dtype=np.float64).astype(np.float32)
        why = self.check_row(row, i)
        if why:
            return f"row {i}{why}"
        self.data.append(row)
        self.rows += 1
        return ""

    def read_header(self, fields: List[str]) -> str:
        self.header = True
        names = fields
        corner = fields[0].strip()
        if (self.classes is not None and len(fields) == len(self.classes) + 1) or corner == "" \
                or corner.lower() == "class":
            names = fields[1:]
        why = self.size_problem(len(names))
        if why:
            return f"the header names {len(names)} classes but {why}"
        if self.classes is not None:
            for j, n in enumerate(names):
                if not _is_class(self.classes[j], n):
                    return (f"header column {j} is {_go_quote(n)}, but class {j} of the model is "
                            f"{_class_name(self.classes[j])}")
        self.c = len(names)
        self.labels = len(names) < len(fields)
        return ""


def _split_fields(text: str) -> List[str]:
    """A line's cells, as lcl splits them: at commas, else tabs, else
    semicolons (with CSV quoting), else at runs of spaces."""
    for sep in (",", "\t", ";"):
        if sep in text:
            return next(csv.reader([text], delimiter=sep, strict=True))
    return text.split()


def _is_header(fields: List[str]) -> bool:
    """lcl's rule: a corner cell ("class", or empty) before the names, or
    words only past the first cell; a single cell is a header when it is
    no number."""
    corner = fields[0].strip()
    if len(fields) > 1 and (corner == "" or corner.lower() == "class"):
        return True
    for f in fields[1:]:
        if not f.strip() or _parse_float(f) is not None:
            return False
    return len(fields) > 1 or _parse_float(fields[0]) is None


def load_target_matrix(path: PathLike, classes: Optional[Classes] = None, *, normalize: bool = False,
                       tolerance: float = TARGET_SUM_TOLERANCE) -> torch.Tensor:
    """Reads a C×C target matrix, row y the target distribution of an
    example of class y, as ``lcl train --strategy soft --matrix FILE`` reads
    it, and returns it as given (float32, not normalised).

    The file: CSV, TSV, semicolon- or space-separated text (``#`` comment
    lines and blank lines skipped), with an optional header of the classes'
    names or ids (after an optional corner cell such as ``class``) and
    optional class labels in front of each row, so ``lcl store export KEY
    --format csv`` reads as it is; or an ``.npy`` (2-D float32 or float64;
    checked against ``FILE.ids.txt`` beside ``FILE.npy``, the ids file
    ``lcl store export -o FILE.npy`` writes, when that exists and ``classes`` are given).

    With ``classes`` (the model's, in its order: names, ids, or a
    ``classes.txt``) the matrix must be C×C for them and a header's names,
    row labels or ids must be theirs in that order. Every value must be
    finite and ≥ 0, every row sum > 0 and, unless ``normalize``, within
    ``tolerance`` (0.001, lcl's) of 1. A file that breaks one raises an
    :class:`~lcl.LCLFileError` of one line naming the file, the line (of a
    text file) or the row (of an .npy), and the reason, as lcl's::

        targets.csv:2: row 1 (Trouser) sums to 0.9, want 1 within 0.001 (or normalize=True ...)
    """
    want = _want(classes) if classes is not None else None
    r = _Reader(path, want, normalize, tolerance)
    try:
        with open(r.path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise fail(r.path, "no such file") from None
    except OSError as e:
        raise fail(r.path, f"cannot read: {e.strerror or e}") from None
    if raw.startswith(b"\x93NUMPY"):
        m = r.read_npy()
    else:
        m = r.read_text(raw.decode("utf-8", errors="replace"))
    return torch.from_numpy(np.ascontiguousarray(m))


def _check_targets(matrix: torch.Tensor, normalize: bool, tolerance: float) -> torch.Tensor:
    """lcl's strategy.CheckTargets: finite, ≥ 0, row sums > 0 and, unless
    ``normalize``, within ``tolerance`` of 1. Returns float64."""
    m = check_similarity(matrix)
    if not normalize:
        sums = m.sum(1)
        off = ((sums - 1).abs() > tolerance).nonzero()
        if len(off):
            i = int(off[0])
            raise ValueError(f"row {i} sums to {float(sums[i]):.6g}, want 1 within {tolerance:g} "
                             f"(or normalize=True to divide each row by its sum)")
    return m


def _check_anneal(anneal: float) -> float:
    if not 0 <= anneal <= 1:
        raise ValueError(f"anneal = {anneal}, want 0 (static) or ε in (0,1]")
    return float(anneal)


def soft_targets(matrix: torch.Tensor, epoch: int, anneal: float = 0.0, *, normalize: bool = False,
                 dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The C×C targets of 0-based ``epoch`` of ``--strategy soft``: the
    matrix with each row divided by its sum (M̂) every epoch (``anneal``
    0), or M̂ after ``epoch`` of LCL's updates with ε = ``anneal`` (in
    (0, 1]; :func:`~lcl.lcl_targets` of M̂). Equal to ``lcl plan
    --strategy soft --matrix FILE [--param anneal=ε]``'s files.

    ``matrix`` is checked as lcl checks it (finite, ≥ 0, rows summing to 1
    within 0.001 unless ``normalize``); raises ValueError otherwise.
    """
    a = _check_anneal(anneal)
    m = _check_targets(matrix, normalize, TARGET_SUM_TOLERANCE)
    if epoch < 0:
        raise ValueError(f"epoch {epoch}: want ≥ 0 (0 is the matrix itself)")
    return lcl_targets(m, a, epoch if a > 0 else 0, dtype=dtype)


class SoftTargets:
    """The targets of ``--strategy soft`` epoch by epoch: an epoch-indexed
    provider like :class:`~lcl.LCLTargets`, over a user's target matrix
    (:func:`load_target_matrix`) instead of a similarity.

    ``targets[epoch]`` is the C×C float32 matrix of a 0-based epoch on
    ``device`` (:func:`soft_targets`: the matrix's rows divided by their
    sums, annealed to one-hot by LCL's update when ``anneal`` = ε > 0);
    :meth:`rows` the rows of a batch's labels.

    Example::

        M = lcl.load_target_matrix("targets.csv", classes=train_set.classes)
        targets = lcl.SoftTargets(M, anneal=0.9)
        for epoch in range(epochs):
            for x, y in loader:
                loss = lcl.soft_target_cross_entropy(model(x), targets.rows(y, epoch))
    """

    def __init__(self, matrix: torch.Tensor, anneal: float = 0.0, *, normalize: bool = False,
                 device: Device = None) -> None:
        self.anneal = _check_anneal(anneal)
        self.matrix = _check_targets(matrix, normalize, TARGET_SUM_TOLERANCE)
        self.device = device
        self._cache: Dict[int, torch.Tensor] = {}

    @property
    def num_classes(self) -> int:
        """C, the number of classes."""
        return int(self.matrix.shape[0])

    def __getitem__(self, epoch: int) -> torch.Tensor:
        if epoch < 0:
            raise ValueError(f"epoch {epoch}: want ≥ 0 (0 is the matrix itself)")
        key = epoch if self.anneal > 0 else 0
        t = self._cache.get(key)
        if t is None:
            t = lcl_targets(self.matrix, self.anneal, key).to(self.device)
            self._cache = {key: t}
        return t

    def rows(self, labels: torch.Tensor, epoch: int) -> torch.Tensor:
        """The targets of a batch's ``labels`` in ``epoch`` (N×C)."""
        t = self[epoch]
        return t.index_select(0, labels.to(t.device))

    def __repr__(self) -> str:
        return f"SoftTargets({self.num_classes} classes, anneal={self.anneal:g})"

