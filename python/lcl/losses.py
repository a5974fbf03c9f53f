"""Losses: cross-entropy on soft targets, MBM's hierarchical cross-entropy
(HXE) and online label smoothing (OLS), as lcl's engine computes them
(docs/trainer.md, "Losses"; trainer/torch/loss.hpp).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .hierarchy import Tree, linkage_tree

__all__ = ["HXELoss", "OnlineLabelSmoothing", "soft_target_cross_entropy"]


def soft_target_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, weights: Optional[torch.Tensor] = None,
                              reduction: str = "mean") -> torch.Tensor:
    """The cross-entropy of ``logits`` (N×C) against soft ``targets`` (N×C
    rows, e.g. ``T[labels]`` of a target matrix), summed over classes:
    ``−Σ_j t_j·log softmax(z)_j`` per example.

    ``reduction`` "mean" (lcl's: the mean over the batch; with ``weights``,
    per-example weights, ``Σ w·ℓ / Σ w``, and 0 for a batch whose weights
    are all 0), "sum" or "none".
    """
    if logits.shape != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)}: want the same N×C")
    per = -(targets.to(logits.dtype) * F.log_softmax(logits, dim=1)).sum(1)
    return _reduce(per, weights, reduction)


def _reduce(per: torch.Tensor, weights: Optional[torch.Tensor], reduction: str) -> torch.Tensor:
    if weights is not None:
        per = per * weights.to(per.dtype)
    if reduction == "none":
        return per
    if reduction == "sum":
        return per.sum()
    if reduction != "mean":
        raise ValueError(f"reduction {reduction!r}: want mean, sum or none")
    if weights is None:
        return per.mean()
    return per.sum() / weights.to(per.dtype).sum().clamp_min(1e-12)


class HXELoss(nn.Module):
    """The hierarchical cross-entropy of Bertinetto et al. (CVPR 2020,
    "Making Better Mistakes"): an example of class y costs

        −Σ_l λ(C_l)·log p(C_l | C_{l+1})

    along the path y = C_0, C_1, …, C_L = root of the class tree, with
    p(C) the summed softmax probabilities of the classes under node C
    (so p(C_l | C_{l+1}) = p(C_l)/p(C_{l+1})) and λ(C) = exp(−α·depth(C))
    normalised to sum to 1 over the tree's nodes (depth: edges from the
    root), as MBM's ``get_exponential_weighting``.

    The tree is :func:`~lcl.linkage_tree` of ``distance``: the LCA heights
    (:func:`~lcl.wordnet_lca_heights`), or ``1 − s`` of ``lcl similarity
    --source lca --form height``'s matrix (what ``lcl train --strategy hxe``
    reads), both giving the label set's tree without its one-child nodes.

    ``scale`` multiplies the loss; the default, the tree's node count N, is
    lcl's: then α = 0 (every λ = 1/N) is plain cross-entropy, and SGD
    trains at cross-entropy's learning rates. ``scale=1`` is MBM's own loss.

    ``forward(logits, target)`` takes the labels (N,) or, for mixed
    batches, class weights (N×C rows summing to 1, e.g. ``λ·onehot(y) +
    (1−λ)·onehot(y′)``): the loss is linear in them, as lcl's engine mixes
    every label term. The group probabilities are summed in float64, as the
    engine does, so that a node's log-probability stays finite where every
    member's float32 probability underflows.
    """

    members: torch.Tensor
    path_weights: torch.Tensor

    def __init__(self, distance: torch.Tensor, alpha: float = 0.1, scale: Optional[float] = None) -> None:
        super().__init__()
        if not (alpha >= 0) or math.isinf(alpha):
            raise ValueError(f"alpha = {alpha}: want a finite value ≥ 0")
        tree = linkage_tree(distance)
        c, n = tree.num_classes, len(tree)
        if c < 2:
            raise ValueError(f"HXE needs at least 2 classes, not {c}")
        self.tree: Tree = tree
        self.alpha = float(alpha)
        self.scale = float(n if scale is None else scale)
        lam = torch.tensor([math.exp(-alpha * d) for d in tree.depth], dtype=torch.float64)
        lam = lam / lam.sum()
        # members[v] marks the classes under node v (the root's column is
        # kept: log p(root) = 0); path_weights[y] holds +λ(C_l) at C_l and
        # −λ(C_l) at its parent for every edge of y's path, so that
        # −path_weights[y]·log p(nodes) is the sum above.
        members = torch.zeros(n, c, dtype=torch.float64)
        for v, cls in enumerate(tree.members):
            members[v, cls] = 1
        path = torch.zeros(c, n, dtype=torch.float64)
        for y in range(c):
            nodes = tree.path(y)
            for lower, upper in zip(nodes[:-1], nodes[1:]):
                path[y, lower] += lam[lower]
                path[y, upper] -= lam[lower]
        self.register_buffer("members", members)
        self.register_buffer("path_weights", path)

    @property
    def num_nodes(self) -> int:
        """N, the tree's nodes (classes, groups and the root): lcl's scale,
        and ``curriculum.csv``'s group coefficient of an hxe plan."""
        return len(self.tree)

    def per_example(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The loss of every example (N), unscaled and unreduced."""
        logp = F.log_softmax(logits, dim=1)
        q = logp.to(torch.float64).exp().matmul(self.members[:-1].t())  # N × nodes but the root
        logq = q.clamp_min(1e-300).log()
        logq = torch.cat([logq, logq.new_zeros(logq.shape[0], 1)], dim=1)  # p(root) = 1
        if target.dim() == 1:
            w = self.path_weights.index_select(0, target)
        else:
            w = target.to(torch.float64).matmul(self.path_weights)
        return -(w * logq).sum(1).to(logits.dtype)

    def forward(self, logits: torch.Tensor, target: torch.Tensor,
                weights: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The batch loss: ``scale`` × the mean over the examples (with
        ``weights``, their weighted mean) of :meth:`per_example`."""
        return self.scale * _reduce(self.per_example(logits, target), weights, "mean")

    def extra_repr(self) -> str:
        return f"classes={self.tree.num_classes}, nodes={self.num_nodes}, alpha={self.alpha:g}, scale={self.scale:g}"


class OnlineLabelSmoothing(nn.Module):
    """Online label smoothing (Zhang et al. 2021, "Delving Deep into Label
    Smoothing"), a stateful loss as lcl's ``ols`` strategy trains:

        loss = α·CE(onehot(y)) + (1−α)·CE(T[y])

    where row y of T is, in epoch t, the mean softmax output of the
    training examples of class y the model classified correctly in epoch
    t−1 (as the forward passes computed them, in training mode); in the
    first epoch label smoothing's targets, ``smoothing/(C−1)`` off the
    diagonal and ``1 − smoothing`` on it. A class with no correct example
    in the epoch before gets its one-hot row.

    Call the module as a loss every step (it collects the statistics while
    ``self.training``) and :meth:`next_epoch` after every epoch. The
    targets and the statistics are buffers: ``state_dict()`` checkpoints
    them, and a resumed run continues as an uninterrupted one.
    """

    targets: torch.Tensor
    sums: torch.Tensor
    counts: torch.Tensor

    def __init__(self, num_classes: int, alpha: float = 0.5, smoothing: float = 0.1) -> None:
        super().__init__()
        if num_classes < 2:
            raise ValueError(f"online label smoothing needs at least 2 classes, not {num_classes}")
        if not 0 <= alpha <= 1:
            raise ValueError(f"alpha = {alpha}: want a value in [0, 1]")
        if not 0 <= smoothing < 1:
            raise ValueError(f"smoothing = {smoothing}: want a value in [0, 1)")
        self.num_classes, self.alpha, self.smoothing = num_classes, float(alpha), float(smoothing)
        t = torch.full((num_classes, num_classes), smoothing / (num_classes - 1), dtype=torch.float64)
        t.fill_diagonal_(1 - smoothing)
        self.register_buffer("targets", t.to(torch.float32))
        self.register_buffer("sums", torch.zeros(num_classes, num_classes, dtype=torch.float64))
        self.register_buffer("counts", torch.zeros(num_classes, dtype=torch.int64))

    def forward(self, logits: torch.Tensor, labels: torch.Tensor,
                weights: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The batch loss (the mean over the examples; weighted by
        ``weights`` when given); in training mode it also adds the softmax
        rows of the correctly classified examples to the statistics."""
        logp = F.log_softmax(logits, dim=1)
        hard = -logp.gather(1, labels.unsqueeze(1)).squeeze(1)
        soft = -(self.targets.index_select(0, labels).to(logp.dtype) * logp).sum(1)
        loss = _reduce(self.alpha * hard + (1 - self.alpha) * soft, weights, "mean")
        if self.training:
            self.observe(logits, labels)
        return loss

    @torch.no_grad()
    def observe(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        """Adds the softmax rows of the examples ``logits`` classify
        correctly to their class's statistics (forward does it)."""
        p = torch.softmax(logits.detach(), dim=1)
        ok = p.argmax(1) == labels
        y = labels[ok]
        self.sums.index_add_(0, y, p[ok].to(torch.float64))
        self.counts += torch.bincount(y, minlength=self.num_classes)

    @torch.no_grad()
    def next_epoch(self) -> torch.Tensor:
        """Ends an epoch: the targets become the statistics' row means
        (renormalised; one-hot for a class without a correct example), the
        statistics restart at 0. Returns the new targets (C×C float32)."""
        total = self.sums.sum(1, keepdim=True)
        seen = (self.counts > 0).unsqueeze(1) & (total > 0)
        t = torch.where(seen, self.sums / total.clamp_min(1e-300),
                        torch.eye(self.num_classes, dtype=torch.float64, device=self.sums.device))
        self.targets.copy_(t.to(torch.float32))
        self.sums.zero_()
        self.counts.zero_()
        return self.targets.clone()

    def extra_repr(self) -> str:
        return f"classes={self.num_classes}, alpha={self.alpha:g}, smoothing={self.smoothing:g}"

