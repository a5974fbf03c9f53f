"""Class hierarchies: LCA heights from WordNet, and the tree of a distance.

* :func:`wordnet_hierarchy` reads WordNet 3.0's ``data.noun`` (Debian's
  wordnet-base, ``/usr/share/wordnet``) at the classes' wnids and builds
  what lcl's hierarchical metrics and ``lcl similarity --source lca --form
  height`` use: the hypernym graph of the classes' ancestors (hypernyms and
  instance hypernyms, up to ``entity``), a node's height its longest path
  down to a leaf of that graph, and the cost of two classes the height of
  their lowest common ancestor (the common ancestor of least height; 0 for
  a class and itself, the graph's greatest height H for two classes without
  one). Its ``lca`` is the matrix ``lcl eval`` measures with, its
  ``similarity()`` the lca source's height form ``1 − h/H``.
* :func:`linkage_tree` is the single-linkage tree of a distance matrix,
  the tree lcl's ``hxe`` walks: on LCA heights the label set's tree without
  its one-child nodes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import BinaryIO, Dict, List, Optional, Sequence

import torch

from ._errors import LCLFileError, PathLike, fail, quote

__all__ = ["Tree", "WordNetHierarchy", "lca_heights_from_similarity", "linkage_tree", "wordnet_hierarchy",
           "wordnet_lca_heights"]


@dataclass
class Tree:
    """A class hierarchy. Nodes ``0..C−1`` are the classes (the leaves),
    the others the groups above them, each after its children, so the root
    is the last node."""

    parent: List[int]
    """The parent of every node; −1 for the root."""
    members: List[List[int]]
    """The classes under every node, ascending."""
    depth: List[int] = field(default_factory=list)
    """Edges from the root."""

    @property
    def num_classes(self) -> int:
        """C, the number of leaves."""
        return len(self.members[-1])

    def __len__(self) -> int:
        return len(self.parent)

    def path(self, c: int) -> List[int]:
        """The nodes from class ``c`` up to the root, both included."""
        out = [c]
        while self.parent[out[-1]] >= 0:
            out.append(self.parent[out[-1]])
        return out


class _UnionFind:
    """Disjoint sets of 0..n−1 (path halving); a set's root is its smallest
    member, so the sets' roots do not depend on the order of the unions."""

    def __init__(self, n: int) -> None:
        self.root = list(range(n))

    def find(self, x: int) -> int:
        root = self.root
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    def union(self, a: int, b: int) -> bool:
        """Joins a's and b's sets; False when they were one already."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.root[max(ra, rb)] = min(ra, rb)
        return True


def linkage_tree(distance: torch.Tensor) -> Tree:
    """The single-linkage tree of a C×C distance matrix: classes whose
    distance is at most t are in one cluster at level t (joined through
    chains of such pairs), and every cluster that first appears at some
    level is a node, the child of the next larger cluster containing it.
    Clusters that meet at the same distance become children of one node,
    however many there are (not pairwise, as a binary dendrogram would).

    For LCA heights, or any height growing up a tree (``1 − s`` of ``lcl
    similarity --source lca --form height``), this is the tree itself
    without its one-child nodes, which add nothing to a loss over
    ``p(node | parent)``.
    """
    d = torch.as_tensor(distance).detach().to(torch.float64).cpu()
    if d.dim() != 2 or d.shape[0] != d.shape[1] or d.shape[0] < 1:
        raise ValueError(f"distance is {'×'.join(map(str, d.shape))}, want a C×C matrix")
    c = d.shape[0]
    # Single linkage is symmetric: a pair is as near as its nearer direction.
    d = torch.minimum(d, d.t())
    levels = sorted({float(v) for v in d[~torch.eye(c, dtype=torch.bool)].tolist()})
    parent: List[int] = [-1] * c
    members: List[List[int]] = [[i] for i in range(c)]
    node_of: List[int] = list(range(c))  # class → the largest node holding it so far
    for t in levels:
        # Components of the graph {d ≤ t}, by a union-find over the classes.
        uf = _UnionFind(c)
        for a, b in (d <= t).nonzero().tolist():
            uf.union(a, b)
        groups: Dict[int, List[int]] = {}
        for i in range(c):
            groups.setdefault(uf.find(i), []).append(i)
        for cls in sorted(groups.values()):
            children = sorted({node_of[i] for i in cls})
            if len(children) == 1:
                continue  # nothing joined at this level
            n = len(parent)
            parent.append(-1)
            members.append(sorted(cls))
            for ch in children:
                parent[ch] = n
            for i in cls:
                node_of[i] = n
        if len(groups) == 1:
            break
    roots = [v for v, p in enumerate(parent) if p < 0]
    if len(roots) != 1:  # pragma: no cover - every finite matrix ends joined
        raise ValueError(f"the distances leave {len(roots)} separate trees")
    depth = [0] * len(parent)
    for v in range(len(parent) - 1, -1, -1):
        if parent[v] >= 0:
            depth[v] = depth[parent[v]] + 1
    return Tree(parent=parent, members=members, depth=depth)


def _default_wordnet() -> str:
    return os.environ.get("WNHOME") or "/usr/share/wordnet"


@dataclass
class WordNetHierarchy:
    """The WordNet hierarchy of a list of classes (see
    :func:`wordnet_hierarchy`)."""

    wnids: List[str]
    lca: torch.Tensor
    """C×C float32 LCA heights: the cost matrix of lcl's hierarchical metrics."""
    max_height: int
    """H, the greatest height of a node of the graph."""
    nodes: int
    """The nodes of the graph (the classes and their ancestors)."""

    def similarity(self) -> torch.Tensor:
        """``1 − h/H``: ``lcl similarity --source lca --form height``'s
        matrix (float32, diagonal 1)."""
        s = 1 - self.lca.to(torch.float64) / self.max_height
        return s.to(torch.float32)


def _read_synset(f: BinaryIO, path: str, wnid: str, cache: Dict[str, List[str]]) -> List[str]:
    """The hypernyms and instance hypernyms of noun synset ``wnid``."""
    if wnid in cache:
        return cache[wnid]
    if len(wnid) != 9 or wnid[0] != "n" or not wnid[1:].isdigit():
        raise LCLFileError(f"{quote(wnid)} is not a noun wnid (n and 8 digits: the byte offset in data.noun)")
    f.seek(int(wnid[1:]))
    line = f.readline().decode("utf-8", "replace")
    fields = line.split()
    if not fields or fields[0] != wnid[1:]:
        raise fail(path, f"no synset at byte offset {wnid[1:]} (wnid {wnid}; WordNet 3.0's data.noun?)")
    words = int(fields[3], 16)
    at = 4 + 2 * words
    pointers = int(fields[at])
    out: List[str] = []
    for k in range(pointers):
        sym, off, pos = fields[at + 1 + 4 * k: at + 4 + 4 * k]
        if sym in ("@", "@i") and pos == "n":
            out.append("n" + off)
    cache[wnid] = out
    return out


def wordnet_hierarchy(wnids: Sequence[str], wordnet_dir: Optional[PathLike] = None) -> WordNetHierarchy:
    """The LCA heights of classes given by their WordNet 3.0 noun wnids
    (``n02119789``: the synset at that byte offset of ``data.noun``), on
    the hypernym graph of their ancestors, as lcl's hierarchical metrics
    (``lcl eval``, ``lcl train``) and ``lcl similarity --source lca --form
    height`` compute them (module docstring). ``wordnet_dir`` defaults to
    ``$WNHOME``, else ``/usr/share/wordnet``.

    The wnids of a built-in label set: ``lcl synsets SET --json``
    (:func:`lcl.load_synsets`).
    """
    path = os.path.join(os.fspath(wordnet_dir or _default_wordnet()), "data.noun")
    wnids = [str(w) for w in wnids]
    if not wnids:
        raise ValueError("no classes")
    cache: Dict[str, List[str]] = {}
    try:
        f = open(path, "rb")
    except OSError as e:
        raise fail(path, f"cannot read WordNet ({e.strerror or e}): apt-get install wordnet-base, or set WNHOME") from None
    with f:
        parents: Dict[str, List[str]] = {}
        queue = list(dict.fromkeys(wnids))
        while queue:
            v = queue.pop()
            if v in parents:
                continue
            parents[v] = _read_synset(f, path, v, cache)
            queue.extend(p for p in parents[v] if p not in parents)
    children: Dict[str, List[str]] = {v: [] for v in parents}
    for v, ps in parents.items():
        for p in ps:
            children[p].append(v)
    height: Dict[str, int] = {}

    def h(v: str) -> int:
        # Iterative post-order: WordNet's chains are short, but stay safe.
        stack = [v]
        while stack:
            x = stack[-1]
            if x in height:
                stack.pop()
                continue
            todo = [ch for ch in children[x] if ch not in height]
            if todo:
                stack.extend(todo)
                continue
            height[x] = 1 + max((height[ch] for ch in children[x]), default=-1)
            stack.pop()
        return height[v]

    for v in parents:
        h(v)
    top = max(height.values())
    ancestors: Dict[str, Dict[str, int]] = {}

    def anc(v: str) -> Dict[str, int]:
        if v not in ancestors:
            out = {v: height[v]}
            stack = [v]
            while stack:
                for p in parents[stack.pop()]:
                    if p not in out:
                        out[p] = height[p]
                        stack.append(p)
            ancestors[v] = out
        return ancestors[v]

    c = len(wnids)
    lca = torch.zeros(c, c, dtype=torch.float32)
    for i in range(c):
        ai = anc(wnids[i])
        for j in range(i + 1, c):
            common = [hv for node, hv in anc(wnids[j]).items() if node in ai]
            v = min(common) if common else top
            lca[i, j] = lca[j, i] = v
    return WordNetHierarchy(wnids=wnids, lca=lca, max_height=top, nodes=len(parents))


def wordnet_lca_heights(wnids: Sequence[str], wordnet_dir: Optional[PathLike] = None) -> torch.Tensor:
    """The C×C LCA-height matrix of :func:`wordnet_hierarchy` (float32):
    the ``lca`` argument of the metrics."""
    return wordnet_hierarchy(wnids, wordnet_dir).lca


def lca_heights_from_similarity(similarity: torch.Tensor, max_height: float) -> torch.Tensor:
    """The LCA heights ``h = H·(1 − s)`` behind ``lcl similarity --source
    lca --form height``'s matrix s, rounded to whole heights, given the
    graph's height H (``lcl train`` prints it: "hierarchical metrics on the
    wordnet graph of … (LCA heights up to H)"; :func:`wordnet_hierarchy`
    knows it). float32, diagonal 0."""
    s = torch.as_tensor(similarity).to(torch.float64)
    h = torch.round(max_height * (1 - s))
    h.fill_diagonal_(0)
    return h.to(torch.float32)
