"""Target matrices: LCL's curriculum, label smoothing, MBM's soft labels.

Every function returns a C×C matrix whose row y is the target distribution
of an example of class y, so a batch's targets are ``T[labels]``. They are
computed in float64 and returned as float32 (the engine's plans travel as
float32, and ``lcl plan`` writes them so), equal to ``lcl plan``'s files to
float32 precision.
"""
from __future__ import annotations

import math
from typing import Dict, Optional, Union

import torch

from .io import Classes, _want

__all__ = [
    "LCLTargets",
    "check_similarity",
    "distance_from_similarity",
    "label_smoothing_targets",
    "lcl_initial",
    "lcl_step",
    "lcl_targets",
    "mbm_soft_labels",
    "one_hot_targets",
]

Device = Optional[Union[str, torch.device]]


def _square(m: torch.Tensor, what: str) -> torch.Tensor:
    m = torch.as_tensor(m)
    if m.dim() != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{what} is {'×'.join(map(str, m.shape)) or 'a scalar'}, want a C×C matrix")
    m = m.detach().to(torch.float64)
    if not bool(torch.isfinite(m).all()):
        i, j = [int(v) for v in (~torch.isfinite(m)).nonzero()[0]]
        raise ValueError(f"{what}[{i}][{j}] = {m[i, j].item()}, want finite values")
    return m


def check_similarity(similarity: torch.Tensor) -> torch.Tensor:
    """Checks a similarity matrix as LCL needs it (C×C, finite,
    non-negative, every row with a positive sum) and returns it in float64.
    Raises ValueError naming the first bad entry."""
    s = _square(similarity, "similarity")
    neg = (s < 0).nonzero()
    if len(neg):
        i, j = [int(v) for v in neg[0]]
        raise ValueError(f"s[{i}][{j}] = {s[i, j].item():g} is negative; LCL needs non-negative similarities "
                         f"(clip them, as lcl similarity does)")
    zero = (s.sum(1) <= 0).nonzero()
    if len(zero):
        raise ValueError(f"row {int(zero[0])} of the similarity matrix sums to 0")
    return s


def lcl_initial(similarity: torch.Tensor) -> torch.Tensor:
    """v(0), LCL's first targets: every row of the similarity divided by
    its sum, ``v(0)[c][j] = s(c,j) / Σ_k s(c,k)`` (float64)."""
    s = check_similarity(similarity)
    return s / s.sum(1, keepdim=True)


def lcl_step(v: torch.Tensor, epsilon: float) -> torch.Tensor:
    """One update of LCL's targets (Dogan et al., ECCV 2020), literally:
    with ``R = Σ_{k≠c} v[c][k]`` the off-target mass of row c,
    ``v[c][c] ← 1/(1+ε·R)`` and ``v[c][j] ← ε·v[c][j]/(1+ε·R)`` for j ≠ c.
    """
    v = torch.as_tensor(v, dtype=torch.float64)
    eye = torch.eye(v.shape[0], dtype=torch.bool, device=v.device)
    rest = v.masked_fill(eye, 0).sum(1, keepdim=True)
    den = 1 + epsilon * rest
    return torch.where(eye, 1 / den, epsilon * v / den)


def _rest_after(rest: torch.Tensor, epsilon: float, epoch: int) -> torch.Tensor:
    """The off-target mass after ``epoch`` updates: each update maps
    R ↦ εR/(1+εR). Iterated as written up to 4096 updates; beyond, the
    same map in closed form (1/R ↦ 1/(εR) + 1/ε, a geometric series)."""
    if epsilon == 0:
        return torch.zeros_like(rest)
    if epoch <= 4096:
        r = rest.clone()
        for _ in range(epoch):
            r = epsilon * r / (1 + epsilon * r)
        return r
    if epsilon == 1:
        u = 1 / rest + epoch
    else:
        lg = -epoch * math.log(epsilon)  # log ε^−t
        g = math.exp(lg) if lg < 700 else math.inf
        u = g / rest + (g - 1) / (1 / epsilon - 1)
    return torch.where(torch.isinf(u), torch.zeros_like(u), 1 / u)


def lcl_targets(similarity: torch.Tensor, epsilon: float, epoch: int, *,
                dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """LCL's C×C targets of 0-based ``epoch``: v(epoch), ``epoch`` updates
    (:func:`lcl_step`) of v(0) (:func:`lcl_initial`), so epoch 0 is v(0),
    what the first epoch trains on.

    Every update keeps the shape of a row's off-target part and only moves
    mass to the diagonal, so the rows are computed from v(0) and the
    off-target mass after ``epoch`` updates, in float64, and rounded once
    to ``dtype``: ``lcl plan --strategy lcl --epsilon ε``'s
    ``epoch-NNN.npy`` to float32 precision.
    """
    if epoch < 0:
        raise ValueError(f"epoch {epoch}: want ≥ 0 (0 is v(0))")
    if not (epsilon >= 0) or math.isinf(epsilon):
        raise ValueError(f"epsilon = {epsilon}: want a finite value ≥ 0")
    v0 = lcl_initial(similarity)
    if epoch == 0:
        return v0.to(dtype)
    eye = torch.eye(v0.shape[0], dtype=torch.bool, device=v0.device)
    rest = v0.masked_fill(eye, 0).sum(1, keepdim=True)
    done = rest <= 0  # already one-hot
    safe = torch.where(done, torch.ones_like(rest), rest)
    rt = _rest_after(safe, float(epsilon), int(epoch))
    v = torch.where(eye, 1 - rt, v0 * (rt / safe))
    return torch.where(done, v0, v).to(dtype)


class LCLTargets:
    """LCL's targets epoch by epoch, computed from a similarity matrix and
    ε (the recurrence of :func:`lcl_targets`): an epoch-indexed provider
    for a training loop.

    ``targets[epoch]`` is the C×C float32 matrix of a 0-based epoch, on
    ``device``; :meth:`rows` the rows of a batch's labels. The last epoch
    asked for is kept, so calling it every step costs nothing.

    Example::

        sim = lcl.load_matrix("sim.npy", classes=train_set.classes)
        targets = lcl.LCLTargets(sim, epsilon=0.99, device="cuda")
        for epoch in range(epochs):
            for x, y in loader:
                loss = lcl.soft_target_cross_entropy(model(x), targets.rows(y, epoch))
    """

    def __init__(self, similarity: torch.Tensor, epsilon: float, *, classes: Optional[Classes] = None,
                 device: Device = None) -> None:
        self.similarity = check_similarity(similarity)
        c = self.similarity.shape[0]
        if classes is not None and len(_want(classes)) != c:
            raise ValueError(f"the similarity matrix is {c}×{c}, want {len(_want(classes))}×{len(_want(classes))} "
                             f"(one row per class)")
        if not (epsilon >= 0) or math.isinf(epsilon):
            raise ValueError(f"epsilon = {epsilon}: want a finite value ≥ 0")
        self.epsilon = float(epsilon)
        self.device = device
        self._cache: Dict[int, torch.Tensor] = {}

    @property
    def num_classes(self) -> int:
        """C, the number of classes."""
        return int(self.similarity.shape[0])

    def __getitem__(self, epoch: int) -> torch.Tensor:
        t = self._cache.get(epoch)
        if t is None:
            t = lcl_targets(self.similarity, self.epsilon, epoch).to(self.device)
            self._cache = {epoch: t}
        return t

    def rows(self, labels: torch.Tensor, epoch: int) -> torch.Tensor:
        """The targets of a batch's ``labels`` in ``epoch`` (N×C)."""
        t = self[epoch]
        return t.index_select(0, labels.to(t.device))

    def __repr__(self) -> str:
        return f"LCLTargets({self.num_classes} classes, epsilon={self.epsilon:g})"


def one_hot_targets(num_classes: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The C×C identity: ``sl``'s targets (``lcl plan`` writes one-hot
    plans, ``hxe``'s among them, as the identity)."""
    return torch.eye(num_classes, dtype=dtype)


def label_smoothing_targets(num_classes: int, alpha: float = 0.1, *,
                            dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Label smoothing's targets ``(1−α)·onehot + α/C`` (``ls``; α 0.1 is
    lcl's default): α/C off the diagonal, 1 − α + α/C on it."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha = {alpha}: want a value in [0, 1]")
    c = num_classes
    t = torch.full((c, c), alpha / c, dtype=torch.float64)
    t.fill_diagonal_(1 - alpha + alpha / c)
    return t.to(dtype)


def distance_from_similarity(similarity: torch.Tensor) -> torch.Tensor:
    """``d = 1 − s`` in float64: the distance lcl's ``mbm-soft`` and
    ``hxe`` read from a similarity matrix. On ``lcl similarity --source lca
    --form height``'s matrix, ``s = 1 − h/H``, it is the LCA height h over
    the graph's height H."""
    return 1 - _square(similarity, "similarity")


def mbm_soft_labels(distance: torch.Tensor, beta: float = 10.0, *,
                    dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The soft labels of Bertinetto et al. (CVPR 2020, "Making Better
    Mistakes"): ``y_c[j] = exp(−β·d(c,j)/D) / Σ_k exp(−β·d(c,k)/D)`` with
    D the largest distance of the matrix, for the whole run.

    ``distance`` is the LCA heights (MBM's choice: then d/D is the height
    over its largest value among the label set's pairs) or any distance,
    e.g. :func:`distance_from_similarity` of a similarity matrix, which is
    what ``lcl plan --strategy mbm-soft`` uses (β 10 its default).
    """
    d = _square(distance, "distance")
    if not (beta > 0) or math.isinf(beta):
        raise ValueError(f"beta = {beta}: want a finite value > 0")
    if bool((d < 0).any()):
        i, j = [int(v) for v in (d < 0).nonzero()[0]]
        raise ValueError(f"distance[{i}][{j}] = {d[i, j].item():g} is negative")
    dmax = float(d.max())
    if dmax == 0:
        raise ValueError("every distance is 0: there is no largest distance to normalise by")
    return torch.softmax(-beta * d / dmax, dim=1).to(dtype)
