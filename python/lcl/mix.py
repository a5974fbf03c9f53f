"""Mixup and CutMix on soft targets, as lcl's engine (and timm's Mixup in
its "batch" mode) mixes: one λ per batch, example i mixed with example
N−1−i (the batch flipped), the target the same mix of the two examples'
target rows, so every strategy's targets (LCL's, label smoothing's, MBM's)
mix alike. For one-hot-based losses (HXE, the hard term of OLS) mix the
losses instead: ``λ·loss(y) + (1−λ)·loss(y.flip(0))``, or give
:class:`~lcl.HXELoss` the mixed one-hot rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import torch

__all__ = ["Box", "SoftMixer", "cutmix", "cutmix_box", "mix_rows", "mixup"]


def mix_rows(rows: torch.Tensor, lam: float) -> torch.Tensor:
    """``λ·rows + (1−λ)·rows.flip(0)``: a batch's targets (N×C) mixed with
    those of the mirrored examples."""
    return rows * lam + rows.flip(0) * (1.0 - lam)


def mixup(x: torch.Tensor, targets: torch.Tensor, lam: float) -> Tuple[torch.Tensor, torch.Tensor]:
    """Mixup (Zhang et al. 2018) of a batch ``x`` (N×…) and its soft
    ``targets`` (N×C): ``λ·x + (1−λ)·x.flip(0)`` and the same mix of the
    targets."""
    return x * lam + x.flip(0) * (1.0 - lam), mix_rows(targets, lam)


@dataclass(frozen=True)
class Box:
    """A CutMix box: rows [y0, y1) × columns [x0, x1) of the image."""

    y0: int
    y1: int
    x0: int
    x1: int

    @property
    def area(self) -> int:
        """Its pixels."""
        return max(self.y1 - self.y0, 0) * max(self.x1 - self.x0, 0)


def cutmix(x: torch.Tensor, targets: torch.Tensor, box: Box) -> Tuple[torch.Tensor, torch.Tensor, float]:
    """CutMix (Yun et al. 2019) of a batch of images ``x`` (N×C×H×W) and
    its soft ``targets`` (N×C): the ``box`` pasted from the mirrored
    example, the targets mixed by λ = 1 − area/(H·W), the share of each
    image that is still its own. Returns the images, the targets and λ."""
    h, w = x.shape[-2], x.shape[-1]
    lam = 1.0 - box.area / float(h * w)
    out = x.clone()
    out[..., box.y0:box.y1, box.x0:box.x1] = x.flip(0)[..., box.y0:box.y1, box.x0:box.x1]
    return out, mix_rows(targets, lam), lam


def cutmix_box(lam: float, h: int, w: int, generator: Optional[torch.Generator] = None) -> Box:
    """timm's ``rand_bbox``: a box of about (1−λ) of the image, sides
    ``√(1−λ)·h`` by ``√(1−λ)·w``, centred on a uniformly drawn pixel and
    clipped to the image."""
    ratio = math.sqrt(1.0 - lam)
    ch, cw = int(h * ratio), int(w * ratio)
    cy = int(torch.randint(h, (1,), generator=generator))
    cx = int(torch.randint(w, (1,), generator=generator))

    def clip(v: int, hi: int) -> int:
        return min(max(v, 0), hi)

    return Box(clip(cy - ch // 2, h), clip(cy + ch // 2, h), clip(cx - cw // 2, w), clip(cx + cw // 2, w))


class SoftMixer:
    """Draws each batch's mixing as lcl's ``--mixup A --cutmix B
    --mix-prob P --mix-switch-prob S`` (timm's Mixup in "batch" mode) and
    applies it to images and soft targets.

    A batch is mixed with probability ``prob``; with both α set, CutMix is
    chosen with probability ``switch_prob``, else the one set; λ ~ Beta(α,
    α) of the one chosen (CutMix's λ corrected to its clipped box).

    Example::

        mixer = lcl.SoftMixer(mixup_alpha=0.8, cutmix_alpha=1.0)
        x, t = mixer(x, T[y])
        loss = lcl.soft_target_cross_entropy(model(x), t)
    """

    def __init__(self, mixup_alpha: float = 0.0, cutmix_alpha: float = 0.0, prob: float = 1.0,
                 switch_prob: float = 0.5, generator: Optional[torch.Generator] = None) -> None:
        for name, a in (("mixup_alpha", mixup_alpha), ("cutmix_alpha", cutmix_alpha)):
            if not (a >= 0) or math.isinf(a):
                raise ValueError(f"{name} = {a}: want α ≥ 0 (0: off)")
        for name, p in (("prob", prob), ("switch_prob", switch_prob)):
            if not 0 <= p <= 1:
                raise ValueError(f"{name} = {p}: want a probability in [0, 1]")
        self.mixup_alpha, self.cutmix_alpha = float(mixup_alpha), float(cutmix_alpha)
        self.prob, self.switch_prob = float(prob), float(switch_prob)
        self.generator = generator
        self.last_lam: float = 1.0
        """λ of the last batch (1: not mixed)."""
        self.last_box: Optional[Box] = None
        """CutMix's box of the last batch (None: mixup, or not mixed)."""

    def _uniform(self) -> float:
        return float(torch.rand((), generator=self.generator))

    def _beta(self, alpha: float) -> float:
        # Beta(α, α) as the ratio of two Gamma(α) draws, from the generator
        # (torch.distributions takes none), so that a seeded mixer repeats.
        a = _gamma(alpha, 2, self.generator)
        return float(a[0] / (a[0] + a[1]))

    def __call__(self, x: torch.Tensor, targets: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """The batch and its targets, mixed (or as they are, when this
        batch is not)."""
        self.last_lam, self.last_box = 1.0, None
        if (self.mixup_alpha <= 0 and self.cutmix_alpha <= 0) or self._uniform() >= self.prob:
            return x, targets
        cut = self.cutmix_alpha > 0 and (self.mixup_alpha <= 0 or self._uniform() < self.switch_prob)
        lam = self._beta(self.cutmix_alpha if cut else self.mixup_alpha)
        if not cut:
            if lam >= 1:
                return x, targets
            self.last_lam = lam
            return mixup(x, targets, lam)
        box = cutmix_box(lam, x.shape[-2], x.shape[-1], self.generator)
        if box.area == 0:
            return x, targets
        x, t, self.last_lam = cutmix(x, targets, box)
        self.last_box = box
        return x, t


def _gamma(alpha: float, n: int, generator: Optional[torch.Generator]) -> torch.Tensor:
    """``n`` Gamma(α, 1) draws from ``generator`` (Marsaglia and Tsang's
    method, with the usual boost U^(1/α) for α < 1)."""
    out = []
    boost = alpha < 1
    d = (alpha + 1 if boost else alpha) - 1.0 / 3
    c = 1.0 / math.sqrt(9 * d)
    for _ in range(n):
        while True:
            z = float(torch.randn((), generator=generator, dtype=torch.float64))
            v = (1 + c * z) ** 3
            if v <= 0:
                continue
            w = float(torch.rand((), generator=generator, dtype=torch.float64))
            if math.log(max(w, 1e-300)) < 0.5 * z * z + d - d * v + d * math.log(v):
                g = d * v
                break
        if boost:
            g *= float(torch.rand((), generator=generator, dtype=torch.float64)) ** (1.0 / alpha)
        out.append(g)
    return torch.tensor(out, dtype=torch.float64)
