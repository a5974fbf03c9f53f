#!/usr/bin/python3
"""Reference SimRank for lcl's tests and benchmarks (Debian python3-networkx,
python3-numpy, python3-scipy).

usage: simrank_reference.py EDGES NODES CLASSES DECAY TOLERANCE OUT.npy [networkx|scipy|both]

EDGES: "child parent" lines; NODES: node ids, one a line (the node order);
CLASSES: node ids of the classes, one a line. Writes the classes' SimRank
matrix as .npy (from networkx, or from scipy when only scipy runs) and prints
"<impl> seconds=<s> iterations=<n>" lines.
"""
import sys
import time

import numpy as np


def load(edges_path, nodes_path, classes_path):
    nodes = [l.strip() for l in open(nodes_path) if l.strip()]
    edges = [l.split() for l in open(edges_path) if l.strip()]
    classes = [l.strip() for l in open(classes_path) if l.strip()]
    return nodes, edges, classes


def scipy_simrank(nodes, edges, decay, tol, max_iter=1000):
    """Sparse SimRank: S <- C * W^T S W with diag(S) = 1, W the column-
    normalised adjacency (parent -> child), stopping as networkx does."""
    import scipy.sparse as sp
    idx = {n: i for i, n in enumerate(nodes)}
    n = len(nodes)
    rows = [idx[p] for c, p in edges]
    cols = [idx[c] for c, p in edges]
    a = sp.csr_matrix((np.ones(len(edges)), (rows, cols)), shape=(n, n))
    s = np.asarray(a.sum(axis=0)).ravel()
    s[s == 0] = 1
    w = sp.csr_matrix(a.multiply(1.0 / s[None, :]))
    wt = w.T.tocsr()
    sim = np.eye(n)
    for it in range(max_iter):
        prev = sim
        sim = decay * (wt @ (sim @ w))
        np.fill_diagonal(sim, 1.0)
        if np.allclose(prev, sim, atol=tol):
            return sim, it + 1
    raise RuntimeError("scipy simrank did not converge")


def networkx_simrank(nodes, edges, decay, tol):
    import networkx as nx
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from((p, c) for c, p in edges)
    d = nx.simrank_similarity(g, importance_factor=decay, tolerance=tol)
    return np.array([[d[u][v] for v in nodes] for u in nodes])


def main():
    edges_path, nodes_path, classes_path, decay, tol, out = sys.argv[1:7]
    which = sys.argv[7] if len(sys.argv) > 7 else "networkx"
    decay, tol = float(decay), float(tol)
    nodes, edges, classes = load(edges_path, nodes_path, classes_path)
    idx = {n: i for i, n in enumerate(nodes)}
    pick = [idx[c] for c in classes]
    result = None
    if which in ("scipy", "both"):
        t = time.perf_counter()
        sim, its = scipy_simrank(nodes, edges, decay, tol)
        print(f"scipy seconds={time.perf_counter() - t:.4f} iterations={its}", flush=True)
        result = sim
    if which in ("networkx", "both"):
        t = time.perf_counter()
        sim = networkx_simrank(nodes, edges, decay, tol)
        print(f"networkx seconds={time.perf_counter() - t:.4f}", flush=True)
        result = sim
    np.save(out, np.ascontiguousarray(result[np.ix_(pick, pick)]))


if __name__ == "__main__":
    main()
