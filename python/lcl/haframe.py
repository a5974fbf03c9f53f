"""HAFrame: a fixed hierarchy-aware frame (``lcl train --strategy haframe``).

Liang & Davis, ICCV 2023, "Inducing Neural Collapse to a Fixed
Hierarchy-Aware Frame for Reducing Mistake Severity" (code
ltong1130ztr/HAFrame): the model's last linear layer is fixed to class
vectors V whose cosines S follow the hierarchy, and the features are pulled
towards those cosines (docs/methods.md, "haframe"; lcl's
plugins/strategy/haframe.go and trainer/torch/loss.hpp).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["HAFrame", "HAFrameLoss", "haframe_similarity", "single_linkage_distance"]

# The magnitude under which HAFrame's solver counts an eigenvalue as 0.
_EIGEN_TOL = 1e-6


def _distance(distance: torch.Tensor) -> torch.Tensor:
    """A C×C distance as lcl reads it: its upper triangle, mirrored, with a
    zero diagonal (float64)."""
    d = torch.as_tensor(distance).detach().to(torch.float64).cpu()
    if d.dim() != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"distance is {'×'.join(map(str, d.shape)) or 'a scalar'}, want a C×C matrix")
    if not bool(torch.isfinite(d).all()):
        raise ValueError("the distances must be finite")
    up = torch.triu(d, 1)
    return up + up.t()


def single_linkage_distance(distance: torch.Tensor) -> torch.Tensor:
    """The single-linkage (cophenetic) distance of a C×C distance: u_ij the
    least, over the paths from i to j, of the path's largest step — the
    largest ultrametric at most d, d itself when d is one (a tree's LCA
    heights). lcl's HAFrame builds its frame on it (``Subdominant``): on
    WordNet's DAG the heights are no ultrametric, and no frame exists for
    them. Reads the upper triangle; float64."""
    u = _distance(distance)
    for k in range(u.shape[0]):  # minimax paths through 0..k (Floyd–Warshall)
        u = torch.minimum(u, torch.maximum(u[:, k:k + 1], u[k:k + 1, :]))
    return u


def haframe_similarity(distance: torch.Tensor, gamma: float = 2.0) -> "tuple[torch.Tensor, float]":
    """HAFrame's cosine matrix of hierarchical distances d (used as given:
    :meth:`HAFrame.from_distance` passes the single-linkage distance)::

        S = (1 − s_min)·exp(−γ·d/max d) + s_min

    with s_min the most negative of 100 values evenly spaced from −1/(C−1)
    to −1 whose S is positive semi-definite (eigenvalues under 1e-6 in
    magnitude count as 0): their ``solve_HAF.py``, lcl's
    ``HAFrameSimilarity``. Returns (S in float64, s_min). Raises ValueError
    when every distance is 0 or no s_min gives a positive semi-definite S.
    """
    if not (gamma > 0) or math.isinf(gamma):
        raise ValueError(f"haf-gamma = {gamma}, want a finite value > 0")
    d = _distance(distance)
    c = d.shape[0]
    if c < 2:
        raise ValueError(f"haframe needs at least 2 classes, not {c}")
    dmax = float(d.max())
    if not dmax > 0:
        raise ValueError("haframe: every pair of classes is at distance 0 (similarity 1): "
                         "no hierarchy to build class vectors from")
    decay = torch.exp(-gamma * d / dmax)
    samples = 100
    best = math.inf
    for k in range(samples):
        smin = -1 / (c - 1) + k * (-1 + 1 / (c - 1)) / (samples - 1)
        w = torch.linalg.eigvalsh((1 - smin) * decay + smin)
        if bool(((w >= 0) | (w.abs() < _EIGEN_TOL)).all()):
            best = min(best, smin)
    if math.isinf(best):
        raise ValueError(f"haframe: no minimum similarity in [−1, −1/(C−1)] makes the class cosines positive "
                         f"semi-definite with haf-gamma {gamma:g}: try another")
    return (1 - best) * decay + best, best


@dataclass(frozen=True)
class HAFrame:
    """A hierarchy-aware frame: C class vectors whose cosines are HAFrame's
    S (:func:`haframe_similarity`).

    ``vectors`` is V = U·Λ^½ of S = U·Λ·Uᵀ (C×C, float64, eigenvalues under
    1e-6 as 0), so V·Vᵀ = S and every row has norm 1. V is S's up to an
    orthogonal map, as any frame of S is (lcl's own V may differ by one);
    what the loss sees, the cosines, does not. :meth:`embed` maps it into
    features wider than C; :meth:`fix_head` puts it into a linear head.
    """

    vectors: torch.Tensor
    similarity: torch.Tensor
    s_min: float
    gamma: float

    @classmethod
    def from_distance(cls, distance: torch.Tensor, gamma: float = 2.0) -> "HAFrame":
        """The frame of a C×C hierarchical distance, as ``lcl train
        --strategy haframe --param haf-gamma=γ`` builds it: S of the
        distance's single-linkage distance (:func:`single_linkage_distance`;
        on a tree's LCA heights the heights themselves). ``distance`` is
        the LCA heights (:func:`~lcl.wordnet_lca_heights`) or 1 − s of
        ``lcl similarity --source lca --form height``
        (:func:`~lcl.distance_from_similarity`), lcl's input; the two give
        the same frame (d/max d is the same)."""
        s, smin = haframe_similarity(single_linkage_distance(distance), gamma)
        w, u = torch.linalg.eigh(s)
        w = torch.where(w.abs() < _EIGEN_TOL, torch.zeros_like(w), w)
        if bool((w < 0).any()):  # pragma: no cover - haframe_similarity chose a PSD S
            raise ValueError(f"haframe: the similarity matrix has eigenvalue {float(w.min()):g} < 0")
        return cls(vectors=u * w.sqrt(), similarity=s, s_min=smin, gamma=float(gamma))

    @property
    def num_classes(self) -> int:
        """C, the number of classes."""
        return int(self.vectors.shape[0])

    def embed(self, dim: int, generator: Optional[torch.Generator] = None) -> torch.Tensor:
        """V mapped into ``dim`` ≥ C feature dimensions by a random map with
        orthonormal rows (the Q of a Gaussian matrix's QR, as their solver
        and lcl's trainer do): C×dim float64, the same cosines."""
        c = self.num_classes
        if dim < c:
            raise ValueError(f"dim = {dim}: want at least the {c} classes")
        g = torch.randn(dim, c, dtype=torch.float64, generator=generator)
        q, _ = torch.linalg.qr(g)  # dim × C, orthonormal columns
        return self.vectors @ q.t()

    def fix_head(self, head: nn.Linear, generator: Optional[torch.Generator] = None) -> None:
        """Fixes a model's last ``nn.Linear`` (C outputs, d ≥ C inputs) to
        the frame: its weight :meth:`embed` into d (V itself when d = C),
        its bias 0, neither trained (``requires_grad`` off: leave them out
        of the optimizer, or let it skip them)."""
        if head.out_features != self.num_classes:
            raise ValueError(f"the head has {head.out_features} outputs, want {self.num_classes} (one per class)")
        v = self.vectors if head.in_features == self.num_classes else self.embed(head.in_features, generator)
        with torch.no_grad():
            head.weight.copy_(v.to(head.weight.dtype))
            if head.bias is not None:
                head.bias.zero_()
        head.weight.requires_grad_(False)
        if head.bias is not None:
            head.bias.requires_grad_(False)


class HAFrameLoss(nn.Module):
    """HAFrame's loss (their ``MixedLoss_CEandGeneralSCSL``, loss
    ``mixed-ce-gscsl``) on the features f of the fixed head V (C×d)::

        β·CE(f·Vᵀ, y) + α·Σ_c (cos(f, V_c) − cos(V_y, V_c))²

    batch means of both, β = 1 − α for α ≤ 1 and 1 above (their constant
    schedule; α 0.4 their CIFAR-100 setting, lcl's default). As lcl's
    engine, the cosine targets are the cosines of V's rows — S up to the
    eigenvalues clipped to 0 — and a norm is clamped at 1e-8
    (``F.cosine_similarity``'s).

    ``vectors`` is the head's fixed weight (:attr:`HAFrame.vectors` or its
    :meth:`HAFrame.embed`); ``forward(features, labels)`` takes the head's
    input (N×d) and the labels (N,). With mixup, mix the losses of the two
    labels (λ·loss(f, y) + (1−λ)·loss(f, y′)), as lcl mixes every label term.
    """

    vectors: torch.Tensor

    def __init__(self, vectors: torch.Tensor, alpha: float = 0.4) -> None:
        super().__init__()
        if not (alpha >= 0) or math.isinf(alpha):
            raise ValueError(f"alpha = {alpha}, want a finite value ≥ 0")
        v = torch.as_tensor(vectors).detach()
        if v.dim() != 2 or v.shape[0] < 2 or v.shape[1] < v.shape[0]:
            raise ValueError(f"vectors are {'×'.join(map(str, v.shape))}, want C×d with d ≥ C ≥ 2")
        self.alpha = float(alpha)
        self.beta = 1 - self.alpha if self.alpha <= 1 else 1.0
        self.register_buffer("vectors", v.clone())

    def forward(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        v = self.vectors.to(features.dtype)
        loss = features.new_zeros(())
        if self.beta != 0:
            loss = loss + self.beta * F.cross_entropy(features @ v.t(), labels)
        if self.alpha != 0:
            vn = v / v.norm(dim=1, keepdim=True).clamp_min(1e-8)
            cos = (features / features.norm(dim=1, keepdim=True).clamp_min(1e-8)) @ vn.t()
            target = (vn @ vn.t()).index_select(0, labels)
            loss = loss + self.alpha * (cos - target).pow(2).sum(1).mean()
        return loss

    def extra_repr(self) -> str:
        return f"classes={self.vectors.shape[0]}, dim={self.vectors.shape[1]}, alpha={self.alpha:g}, beta={self.beta:g}"
