"""HAF: hierarchy-aware features (``lcl train --strategy haf``).

Garg, Sani, Anand, ECCV 2022, "Learning Hierarchy Aware Features for
Reducing Mistake Severity" (code 07Agarg/HAF, the loss of
``ResNet18_ours_l7_cejsd_wtconst_dissim``), as lcl trains it
(docs/methods.md, "haf"; lcl's plugins/strategy/haf.go and
trainer/torch/loss.hpp): a trainable head per coarser level of the class
hierarchy on the model's features, and a loss tying the levels together.
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from .hierarchy import _UnionFind

__all__ = ["HAFLoss", "haf_levels"]

_MARGIN = 3.0  # their JSDDissimilarLoss's margin, fixed as theirs


def haf_levels(distance: torch.Tensor, levels: int = 11) -> List[List[int]]:
    """HAF's levels of a C×C distance, as lcl's ``HAFLevels``: the
    partitions of the classes the single-linkage tree of the distance (the
    one :func:`~lcl.linkage_tree` and ``hxe`` build) has after each distance
    at which it merges clusters, smallest first — nested, fine to coarse —
    without the last, all-in-one one. Each level is the group of every
    class (C ints), groups numbered in the order of their first class.

    With more than ``levels`` (lcl's parameter, default 11; 1 to 64), that
    many evenly spaced ones are kept, the finest and the coarsest among
    them (``levels=1``: the finest). ``distance`` is the LCA heights or
    1 − s of ``lcl similarity --source lca --form height``.
    """
    if not 1 <= levels <= 64:
        raise ValueError(f"levels = {levels}, want 1 to 64")
    d = torch.as_tensor(distance).detach().to(torch.float64).cpu()
    if d.dim() != 2 or d.shape[0] != d.shape[1] or d.shape[0] < 1:
        raise ValueError(f"distance is {'×'.join(map(str, d.shape))}, want a C×C matrix")
    if not bool(torch.isfinite(d).all()):
        raise ValueError("the distances must be finite")
    c = d.shape[0]
    d = torch.minimum(d, d.t())
    uf = _UnionFind(c)
    out: List[List[int]] = []
    pairs = sorted(((float(d[a, b]), a, b) for a in range(c) for b in range(a + 1, c)))
    i = 0
    while i < len(pairs):
        # One round: every pair at the next distance joins its clusters.
        j, merged = i, False
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            _, a, b = pairs[j]
            merged = uf.union(a, b) or merged
            j += 1
        i = j
        if not merged:
            continue
        ids: dict = {}
        group = [ids.setdefault(uf.find(k), len(ids)) for k in range(c)]
        if len(ids) < 2:
            break
        out.append(group)
    if len(out) <= levels:
        return out
    if levels == 1:
        return out[:1]
    n = len(out)
    return [out[int(math.floor(k * (n - 1) / (levels - 1) + 0.5))] for k in range(levels)]


def _kl_rows(p: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """KL(p‖q) per row from probabilities p and log-probabilities logq, as
    F.kl_div computes it (0·log 0 = 0)."""
    return (torch.xlogy(p, p) - p * logq).sum(1)


def _log_mid(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The log of the midpoint ½(p + q), clamped to [1e-7, 1] as their JSD
    losses clamp it."""
    return (0.5 * (p + q)).clamp(1e-7, 1).log()


def _unit_rows(w: torch.Tensor) -> torch.Tensor:
    return w / w.norm(dim=1, keepdim=True).clamp_min(1e-12)


class HAFLoss(nn.Module):
    """HAF's loss with its level heads, as lcl's engine computes it.

    The module holds one trainable ``nn.Linear(in_features, G_l)`` per level
    (``heads``, level l's logits ``f·ŵ_lᵀ + b_l`` with ŵ_l the unit weight
    rows, F.normalize's): give its parameters to the optimizer with the
    model's. ``forward(logits, features, labels, head_weight)`` takes the
    model's logits (level 0), the features its head reads (N×in_features),
    the labels and the head's weight (C×in_features, for the geometric
    term), and returns::

        CE(logits, y) + consistency·mean_i Σ_{l≥1} JSD(p_{l−1}·A_l, p_l)
        + dissimilar·Σ_{1≤l<L} mean over consecutive examples of different level-l groups of
              ½[max(3 − KL(p_l[a]‖m), 0) + max(3 − KL(p_l[b]‖m), 0)]
        − geometric·Σ_{l≥1} mean_g cos(ŵ_l[g], normalize(Σ_{h child of g} ŵ_{l−1}[h]))

    with p_l the softmax of level l, A_l the 0/1 matrix summing level l−1's
    groups into level l's, JSD ½[KL(a‖m) + KL(b‖m)] to the midpoint m
    clamped to [1e-7, 1], and ŵ_0 the model's head's unit rows. The pairs
    are consecutive examples of the batch in its own order whose level-l
    groups differ, each once (lcl's; their code reshuffles and cycles to
    256 pairs); no pair at a level: 0. ``levels`` are :func:`haf_levels`'
    partitions (or any nested ones). With mixup, mix the losses of the two
    label sets by λ, as lcl mixes every label term.
    """

    def __init__(self, levels: Sequence[Sequence[int]], in_features: int, *, consistency: float = 1.0,
                 dissimilar: float = 1.0, geometric: float = 1.0) -> None:
        super().__init__()
        for name, v in (("consistency", consistency), ("dissimilar", dissimilar), ("geometric", geometric)):
            if not (v >= 0) or math.isinf(v):
                raise ValueError(f"{name} = {v}, want a finite value ≥ 0")
        if not levels:
            raise ValueError("HAF needs at least one level between the classes and their root")
        c = len(levels[0])
        below = list(range(c))
        self.consistency, self.dissimilar, self.geometric = float(consistency), float(dissimilar), float(geometric)
        self.heads = nn.ModuleList()
        for l, group in enumerate(levels, 1):
            group = [int(g) for g in group]
            n = max(group) + 1
            if len(group) != c or sorted(set(group)) != list(range(n)) or n < 2:
                raise ValueError(f"level {l}: want the group 0..G−1 (G ≥ 2) of each of the {c} classes")
            up = torch.zeros(max(below) + 1, n, dtype=torch.float32)
            for k in range(c):
                if up[below[k]].sum() and up[below[k], group[k]] == 0:
                    raise ValueError(f"level {l} is not nested in the level below: class {k} splits a group")
                up[below[k], group[k]] = 1
            self.register_buffer(f"up{l}", up)
            self.register_buffer(f"group{l}", torch.tensor(group))
            self.heads.append(nn.Linear(in_features, n))
            below = group

    @property
    def num_levels(self) -> int:
        """L, the levels above the classes."""
        return len(self.heads)

    def level_logits(self, features: torch.Tensor) -> List[torch.Tensor]:
        """Every level's logits ``f·ŵ_lᵀ + b_l`` (levels 1..L)."""
        return [torch.addmm(h.bias, features, _unit_rows(h.weight).t()) for h in self.heads]

    def forward(self, logits: torch.Tensor, features: torch.Tensor, labels: torch.Tensor,
                head_weight: Optional[torch.Tensor] = None) -> torch.Tensor:
        P = [torch.softmax(logits, 1)] + [torch.softmax(z, 1) for z in self.level_logits(features)]
        loss = F.cross_entropy(logits, labels)
        if self.consistency != 0:
            jsd = 0
            for l in range(1, len(P)):
                a, b = P[l - 1] @ getattr(self, f"up{l}").to(P[l].dtype), P[l]
                logm = _log_mid(a, b)
                jsd = jsd + 0.5 * (_kl_rows(a, logm) + _kl_rows(b, logm))
            loss = loss + self.consistency * jsd.mean()
        if self.dissimilar != 0:
            for l in range(1, self.num_levels):  # every level but the coarsest, as theirs
                loss = loss + self.dissimilar * self._dissimilar(P[l], getattr(self, f"group{l}"), labels)
        if self.geometric != 0:
            if head_weight is None:
                raise ValueError("the geometric term needs the model's head weight (head_weight=model.fc.weight)")
            below = head_weight
            for l, h in enumerate(self.heads, 1):
                w = _unit_rows(h.weight)
                kids = _unit_rows(getattr(self, f"up{l}").to(w.dtype).t() @ _unit_rows(below))
                cos = (w * kids).sum(1) / (w.norm(dim=1) * kids.norm(dim=1)).clamp_min(1e-8)
                loss = loss - self.geometric * cos.mean()
                below = h.weight
        return loss

    @staticmethod
    def _dissimilar(p: torch.Tensor, group: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        g = group.to(labels.device).index_select(0, labels)
        if p.shape[0] < 2:
            return p.new_zeros(())
        diff = (g[:-1] != g[1:]).nonzero().squeeze(1)
        if diff.numel() == 0:
            return p.new_zeros(())
        a, b = p.index_select(0, diff), p.index_select(0, diff + 1)
        logm = _log_mid(a, b)
        return 0.5 * ((_MARGIN - _kl_rows(a, logm)).clamp_min(0).mean() + (_MARGIN - _kl_rows(b, logm)).clamp_min(0).mean())

    def extra_repr(self) -> str:
        groups = ", ".join(str(h.out_features) for h in self.heads)
        return (f"levels=[{groups}], consistency={self.consistency:g}, dissimilar={self.dissimilar:g}, "
                f"geometric={self.geometric:g}")
