"""Does a similarity matrix agree with what the models confuse? (issue 45, item 7)

For trained lcl runs on Quick, Draw! (their model.safetensors, read without
lcl's code into bench/refnets.py's copy of the net), this computes on lcl's
test split (line k of a category's file is a test drawing when k % 5 == 4):

- the confusion profile P[c][j]: the mean softmax probability of class j over
  the test drawings of class c, averaged over the --sl runs (SL models: what
  a model left to itself confuses);
- per class c, Spearman's rank correlation between row c of each similarity
  matrix (--matrix NAME=FILE.npy, as `lcl store export KEY --format npy`
  writes them) and row c of P, leaving out j = c;
- per-class top-1 of the --sl runs and of each --method NAME=DIR,DIR,... ,
  and the rank correlation, across classes, between a class's agreement and
  the method's gain over SL on it: does the prior help where it agrees?

Prints a JSON object (medians, quartiles, counts) and, with --confusion
FILE.npy, writes the symmetrised confusion profile (P + Pᵀ)/2 with a unit
diagonal. That matrix comes from test drawings: it is for analysis only —
training on it would leak the test split into the targets.
"""
import argparse
import gzip
import json
import os
import struct
import sys

import numpy as np
import torch
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refnets  # noqa: E402

MEAN, STD = 0.1496, 0.3107


def categories(root):
    with open(os.path.join(root, "labels", "data", "quickdraw", "categories.txt"), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def test_split(data, names):
    xs, ys = [], []
    for c, name in enumerate(names):
        with gzip.open(os.path.join(data, name + ".ndjson.gz"), "rt") as f:
            for k, line in enumerate(f):
                if line.strip() and k % 5 == 4:
                    xs.append(np.floor(np.asarray(json.loads(line)) * 255 + 0.5).astype(np.uint8))
                    ys.append(c)
    x = torch.from_numpy(np.stack(xs).reshape(-1, 1, 28, 28).astype(np.float32) / 255)
    return (x - MEAN) / STD, np.asarray(ys)


def load_model(run, classes):
    path = os.path.join(run, "model.safetensors")
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    meta = head.pop("__metadata__", {})
    m = refnets.build(meta.get("lcl.model", "cnn"), classes, (1, 28, 28))
    dt = {"F32": np.float32, "I64": np.int64}
    state = {}
    for k, v in head.items():
        lo, hi = v["data_offsets"]
        arr = np.frombuffer(b[8 + n + lo:8 + n + hi], dtype=dt[v["dtype"]]).reshape(v["shape"])
        state[k] = torch.from_numpy(arr.copy())
    m.load_state_dict(state)
    return m.eval()


def softmax_of(run, x, classes):
    m = load_model(run, classes)
    with torch.inference_mode():
        return torch.cat([m(x[i:i + 1000]).softmax(1) for i in range(0, len(x), 1000)]).numpy()


def per_class_top1(p, y, classes):
    right = p.argmax(1) == y
    return np.array([right[y == c].mean() for c in range(classes)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/quickdraw")
    ap.add_argument("--sl", required=True, help="comma-separated run folders of SL runs")
    ap.add_argument("--matrix", action="append", default=[], help="NAME=FILE.npy, a 345×345 similarity")
    ap.add_argument("--method", action="append", default=[], help="NAME=DIR,DIR,... runs of another method")
    ap.add_argument("--confusion", help="write the symmetrised confusion profile here (.npy)")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = categories(root)
    C = len(names)
    torch.set_num_threads(2)
    x, y = test_split(a.data, names)
    sl = [softmax_of(r, x, C) for r in a.sl.split(",")]
    P = np.zeros((C, C))
    for p in sl:
        for c in range(C):
            P[c] += p[y == c].mean(0)
    P /= len(sl)
    sl_acc = np.mean([per_class_top1(p, y, C) for p in sl], 0)
    off = ~np.eye(C, dtype=bool)
    out = {"classes": C, "test_drawings": int(len(y)), "sl_runs": len(sl), "sl_top1": float(sl_acc.mean()),
           "confusion_mass_off_diagonal": float((P * off).sum(1).mean())}
    rho = {}
    for spec in a.matrix:
        name, path = spec.split("=", 1)
        S = np.load(path).astype(np.float64)
        if S.shape != (C, C):
            raise SystemExit("%s: shape %s, want (%d, %d)" % (path, S.shape, C, C))
        r = np.array([stats.spearmanr(S[c][off[c]], P[c][off[c]])[0] for c in range(C)])
        pv = np.array([stats.spearmanr(S[c][off[c]], P[c][off[c]])[1] for c in range(C)])
        rho[name] = r
        out[name] = {"spearman_median": float(np.nanmedian(r)),
                     "spearman_q1_q3": [float(np.nanpercentile(r, 25)), float(np.nanpercentile(r, 75))],
                     "classes_positive_p05": int(((r > 0) & (pv < 0.05)).sum()),
                     "classes_negative_p05": int(((r < 0) & (pv < 0.05)).sum())}
    for spec in a.method:
        name, dirs = spec.split("=", 1)
        acc = np.mean([per_class_top1(softmax_of(r, x, C), y, C) for r in dirs.split(",")], 0)
        gain = acc - sl_acc
        entry = {"top1": float(acc.mean()), "gain_over_sl": float(gain.mean()),
                 "classes_better": int((gain > 0).sum()), "classes_worse": int((gain < 0).sum())}
        for mname, r in rho.items():
            g = stats.spearmanr(r, gain, nan_policy="omit")
            entry["gain_vs_agreement_" + mname] = {"spearman": float(g[0]), "p": float(g[1])}
        out[name] = entry
    if a.confusion:
        Q = (P + P.T) / 2
        np.fill_diagonal(Q, 1)
        np.save(a.confusion, Q.astype(np.float32))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
