"""PyTorch reference of an `lcl train` run end to end, for bench/torch2.sh:
load Fashion-MNIST (Debian's dataset-fashion-mnist), keep a class-stratified
fraction of the training set, train with SGD (Nesterov 0.9, weight decay
5e-4, cosine learning rate from 0.05: lcl's fmnist-cnn preset) on
soft-target cross-entropy (LS targets: the same arithmetic as every lcl
strategy), and evaluate on the whole test set after every epoch. The model
is bench/refnets.py's copy of lcl's (--model takes lcl's spec).

PyTorch at its best on the CPU: the data live in one normalised tensor and
batches are index_select'ed from it (no DataLoader workers to pay for),
evaluation runs under inference_mode, optional channels-last, bf16 autocast
and torch.compile (inductor; mode "default" or "max-autotune-no-cudagraphs").

Prints one JSON line: seconds (wall clock, process start to end: the import
of torch included, as `lcl train`'s includes its start), load_s, train_s and
eval_s per epoch, compile_s (the first epoch's training beyond the median
of the others, where --compile), top1.
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

T0 = time.perf_counter()

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refnets  # noqa: E402 (after the path: python3 -I leaves this folder off it)


def idx(path):
    with gzip.open(path, "rb") as f:
        b = f.read()
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--model", default="cnn:channels=16x32")
    ap.add_argument("--fraction", type=float, default=0.1)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--eval-batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--compile", default="", help="torch.compile mode (default, max-autotune-no-cudagraphs); empty: eager")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)

    t = time.perf_counter()
    mean, std = 0.2860, 0.3530
    xtr = idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))
    ytr = idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    xte = idx(os.path.join(a.data, "t10k-images-idx3-ubyte.gz"))
    yte = idx(os.path.join(a.data, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    keep = []
    for c in range(10):
        ids = np.flatnonzero(ytr == c)
        keep.append(rng.permutation(ids)[: max(1, int(round(a.fraction * len(ids))))])
    keep = np.sort(np.concatenate(keep))
    mf = torch.channels_last if a.channels_last else torch.contiguous_format

    def prep(x):
        x = torch.from_numpy(x.astype(np.float32) / 255).sub_(mean).div_(std).unsqueeze(1)
        return x.contiguous(memory_format=mf)

    X, Y = prep(xtr[keep]), torch.from_numpy(ytr[keep])
    XT, YT = prep(xte), torch.from_numpy(yte)
    load_s = time.perf_counter() - t

    c = 10
    m = refnets.build(a.model, c, (1, 28, 28)).to(memory_format=mf)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    T = torch.full((c, c), 0.1 / (c - 1))
    T.fill_diagonal_(0.9)
    net = torch.compile(m, mode=a.compile) if a.compile else m
    dtype = torch.bfloat16 if a.precision == "bf16" else None
    n = len(Y)
    steps = math.ceil(n / a.batch)
    total = a.epochs * steps
    train_s, eval_s, top1 = [], [], 0.0
    k = 0
    for ep in range(a.epochs):
        t = time.perf_counter()
        m.train()
        perm = torch.randperm(n)
        for s in range(steps):
            b = perm[s * a.batch:(s + 1) * a.batch]
            for g in opt.param_groups:
                g["lr"] = 0.05 * 0.5 * (1 + math.cos(math.pi * k / total))
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype is not None):
                z = net(X.index_select(0, b))
            loss = -(T.index_select(0, Y.index_select(0, b)) * F.log_softmax(z.float(), 1)).sum(1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            k += 1
        train_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        m.eval()
        right = 0
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype is not None):
            for s in range(0, len(YT), a.eval_batch):
                z = net(XT[s:s + a.eval_batch])
                right += int((z.argmax(1) == YT[s:s + a.eval_batch]).sum())
        top1 = right / len(YT)
        eval_s.append(time.perf_counter() - t)
    out = {"seconds": time.perf_counter() - T0, "load_s": load_s, "train_s": train_s, "eval_s": eval_s, "top1": top1,
           "torch": torch.__version__, "model": a.model, "precision": a.precision, "channels_last": a.channels_last,
           "compile": a.compile}
    if a.compile and len(train_s) > 1:
        tot = [tr + ev for tr, ev in zip(train_s, eval_s)]
        rest = sorted(tot[1:])
        out["compile_s"] = tot[0] - rest[len(rest) // 2]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
