"""Hierarchical metrics from logits and an LCA-height matrix, as lcl's
evaluations report them (docs/trainer.md, "Hierarchical metrics"; Bertinetto
et al., CVPR 2020, "Making Better Mistakes"), and conditional risk
minimisation's re-ranking (Karthik et al., ICLR 2021; ``lcl eval --crm``).

``lca`` is the C×C cost matrix: ``lca[i][j]`` the cost of predicting class
j for an example of class i, the height of their lowest common ancestor
(:func:`~lcl.wordnet_lca_heights`), 0 on the diagonal. Lower is better for
every figure. The functions take a whole set's logits; for an evaluation
loop, :class:`HierarchicalMeter` adds them up batch by batch.
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Union

import torch

__all__ = [
    "HierarchicalMeter",
    "crm_rank",
    "crm_risk",
    "hierarchical_distance_at_k",
    "hierarchical_metrics",
    "mistake_severity",
    "severity_histogram",
    "top_k_classes",
]

DEFAULT_KS = (1, 5, 20)


def _check(logits: torch.Tensor, labels: Optional[torch.Tensor], lca: torch.Tensor) -> torch.Tensor:
    if logits.dim() != 2:
        raise ValueError(f"logits {tuple(logits.shape)}: want N×C")
    c = logits.shape[1]
    lca = torch.as_tensor(lca)
    if tuple(lca.shape) != (c, c):
        raise ValueError(f"the LCA matrix is {'×'.join(map(str, lca.shape))}, want {c}×{c} for logits of {c} classes")
    if labels is not None and tuple(labels.shape) != (logits.shape[0],):
        raise ValueError(f"{tuple(labels.shape)} labels for {logits.shape[0]} examples")
    return lca.to(device=logits.device, dtype=torch.float64)


def top_k_classes(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Every example's ``k`` highest-scoring classes, best first (N×k; k
    capped at the class count)."""
    return logits.detach().topk(min(k, logits.shape[1]), dim=1).indices


def crm_risk(logits: torch.Tensor, lca: torch.Tensor) -> torch.Tensor:
    """Conditional risk minimisation's expected cost of predicting each
    class: ``Σ_i softmax(z)_i·lca[i][j]`` (N×C), in the logits' dtype, as
    the engine computes it on the device."""
    lca = _check(logits, None, lca)
    return torch.softmax(logits.detach(), dim=1).matmul(lca.to(logits.dtype))


def crm_rank(logits: torch.Tensor, lca: torch.Tensor, k: Optional[int] = None) -> torch.Tensor:
    """Every example's classes ranked by :func:`crm_risk`, least first
    (N×k; all C without ``k``): column 0 is CRM's prediction."""
    risk = crm_risk(logits, lca)
    k = risk.shape[1] if k is None else min(k, risk.shape[1])
    return risk.topk(k, dim=1, largest=False).indices


def _ranking(logits: torch.Tensor, lca: torch.Tensor, k: int, crm: bool) -> torch.Tensor:
    return crm_rank(logits, lca, k) if crm else top_k_classes(logits, k)


def mistake_severity(logits: torch.Tensor, labels: torch.Tensor, lca: torch.Tensor, *, crm: bool = False) -> float:
    """The mean LCA height between the true class and the top-1 prediction
    over the examples it gets wrong: how far off the mistakes are (0 when
    there is none). ``crm=True``: of CRM's prediction instead of the
    argmax."""
    d = _check(logits, labels, lca)
    pred = _ranking(logits, lca, 1, crm)[:, 0]
    wrong = pred != labels
    if not bool(wrong.any()):
        return 0.0
    return float(d[labels[wrong], pred[wrong]].mean())


def hierarchical_distance_at_k(logits: torch.Tensor, labels: torch.Tensor, lca: torch.Tensor, k: int = 5, *,
                               crm: bool = False) -> float:
    """The mean over every example of the mean LCA height between its true
    class and each of its ``k`` highest-scoring classes (k capped at the
    class count; the true class costs 0, so @1 is the error rate times the
    severity). ``crm=True``: of CRM's ranking."""
    d = _check(logits, labels, lca)
    top = _ranking(logits, lca, k, crm)
    return float(d[labels.unsqueeze(1), top].mean(1).mean())


def severity_histogram(logits: torch.Tensor, labels: torch.Tensor, lca: torch.Tensor, *,
                       crm: bool = False) -> torch.Tensor:
    """The mistakes counted by their LCA height: entry h is the number of
    examples whose top-1 prediction is wrong at height h (int64, length
    the largest height + 1; entry 0 counts none). Its weighted mean is
    :func:`mistake_severity`."""
    d = _check(logits, labels, lca)
    pred = _ranking(logits, lca, 1, crm)[:, 0]
    wrong = pred != labels
    heights = d[labels[wrong], pred[wrong]]
    if heights.numel() and not bool((heights == heights.round()).all()):
        raise ValueError("the LCA matrix holds heights that are not whole numbers: a histogram needs whole heights")
    return torch.bincount(heights.round().long(), minlength=int(d.max().round()) + 1).cpu()


def hierarchical_metrics(logits: torch.Tensor, labels: torch.Tensor, lca: torch.Tensor,
                         ks: Sequence[int] = DEFAULT_KS, *, crm: bool = False) -> Dict[str, Union[float, int]]:
    """The figures of an lcl evaluation, under the names of its JSON
    (``test_hier``; with ``crm=True`` those of ``test_crm``, CRM's ranking,
    with its ``top1``): ``mistake_severity``, ``mistakes`` and ``hdistK``
    for every k of ``ks`` (lcl's 1, 5, 20), plus ``top1``."""
    m = HierarchicalMeter(lca, ks, crm=crm)
    m.update(logits, labels)
    return m.compute()


class HierarchicalMeter:
    """Adds up an evaluation's hierarchical figures batch by batch, as
    lcl's evaluation does (the sums add over batches and processes).

    Example::

        meter = lcl.HierarchicalMeter(lca)
        with torch.no_grad():
            for x, y in test_loader:
                meter.update(model(x), y)
        print(meter.compute())  # {'top1': ..., 'mistake_severity': ..., 'hdist5': ...}
    """

    def __init__(self, lca: torch.Tensor, ks: Sequence[int] = DEFAULT_KS, *, crm: bool = False) -> None:
        self.lca = torch.as_tensor(lca).to(torch.float64)
        if self.lca.dim() != 2 or self.lca.shape[0] != self.lca.shape[1]:
            raise ValueError(f"the LCA matrix is {'×'.join(map(str, self.lca.shape))}, want C×C")
        if not ks or min(ks) < 1:
            raise ValueError(f"ks {list(ks)}: want k ≥ 1")
        self.ks, self.crm = tuple(ks), crm
        self.reset()

    def reset(self) -> None:
        """Starts over."""
        self.n = 0
        self.hits = 0
        self.mistakes = 0
        self.severity_sum = 0.0
        self.hdist_sums = [0.0] * len(self.ks)

    @torch.no_grad()
    def update(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        """Adds a batch: its N×C logits and N labels."""
        d = _check(logits, labels, self.lca)
        k = min(max(self.ks), logits.shape[1])
        top = _ranking(logits, d, k, self.crm)
        cost = d[labels.unsqueeze(1), top]  # N × k, best first
        wrong = top[:, 0] != labels
        self.n += int(labels.shape[0])
        self.hits += int((~wrong).sum())
        self.mistakes += int(wrong.sum())
        self.severity_sum += float(cost[:, 0][wrong].sum())
        for i, kk in enumerate(self.ks):
            kk = min(kk, logits.shape[1])
            self.hdist_sums[i] += float(cost[:, :kk].mean(1).sum())

    def compute(self) -> Dict[str, Union[float, int]]:
        """The figures so far: ``top1``, ``mistake_severity`` (0 without
        mistakes), ``mistakes`` and ``hdistK`` per k."""
        if self.n == 0:
            raise ValueError("no examples")
        out: Dict[str, Union[float, int]] = {
            "top1": self.hits / self.n,
            "mistake_severity": self.severity_sum / self.mistakes if self.mistakes else 0.0,
            "mistakes": self.mistakes,
        }
        for k, s in zip(self.ks, self.hdist_sums):
            out[f"hdist{k}"] = s / self.n
        return out
