"""Average-linkage clustering by cosine distance, cut at a distance threshold (for `candor gaps`).

Why not a library: scikit-learn and scipy would do this, but neither is a declared dependency of
Candor (scipy arrives only through sentence-transformers, and an OpenAI-embedder deployment need not
carry it); the job is small and exact in numpy. The nearest-neighbour-chain algorithm (Murtagh 1983)
finds the same merges as the textbook greedy algorithm for a reducible linkage such as average
linkage, in O(n²) time and O(n²) memory instead of O(n³): the caller caps n (`rag.insights.gaps.find.MAX_ITEMS`,
5,000 items: a float32 distance matrix of 100 MB).

Cutting at `threshold`: average linkage never merges below an earlier merge inside the same subtree
(no inversions), so the flat clusters at the cut are the connected components of the merges whose
height is at most `threshold`, in whatever order the chain found them (scipy's
`fcluster(..., criterion="distance")`; the unit tests compare the two).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.floating]


def cosine_distances(vectors: Matrix) -> npt.NDArray[np.float32]:
    """1 - cosine for every pair (rows normalised again here, so the function stands on its own)."""
    raw = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    unit = (raw / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    distances = 1.0 - unit @ unit.T
    np.clip(distances, 0.0, 2.0, out=distances)
    return distances.astype(np.float32, copy=False)


def merges(distances: npt.NDArray[np.float32]) -> list[tuple[int, int, float]]:
    """The n - 1 average-linkage merges `(a, b, height)`; the merged cluster keeps index `a`, so the
    node with index i always contains item i. `distances` is overwritten."""
    n = distances.shape[0]
    d = distances
    np.fill_diagonal(d, np.inf)
    size = np.ones(n, dtype=np.float64)
    active = np.ones(n, dtype=bool)
    chain: list[int] = []
    out: list[tuple[int, int, float]] = []
    while len(out) < n - 1:
        if not chain:
            chain.append(int(np.flatnonzero(active)[0]))
        while True:
            a = chain[-1]
            b = int(np.argmin(d[a]))
            if len(chain) > 1 and d[a, chain[-2]] <= d[a, b]:
                b = chain[-2]  # ties go back down the chain, or it could cycle
            if len(chain) > 1 and b == chain[-2]:
                break
            chain.append(b)
        chain.pop()
        chain.pop()
        height = float(d[a, b])
        a, b = min(a, b), max(a, b)
        out.append((a, b, height))
        merged = (size[a] * d[a].astype(np.float64) + size[b] * d[b].astype(np.float64)) / (size[a] + size[b])
        d[a, :] = merged
        d[:, a] = merged
        d[a, a] = np.inf
        d[b, :] = np.inf
        d[:, b] = np.inf
        size[a] += size[b]
        active[b] = False
    return out


def cut(n: int, found: Sequence[tuple[int, int, float]], threshold: float) -> list[list[int]]:
    """Flat clusters: items joined by merges of height <= threshold; largest first, then by first item."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b, height in found:
        if height <= threshold:
            parent[root(b)] = root(a)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def average_linkage(vectors: Matrix, threshold: float) -> list[list[int]]:
    """Indices of `vectors` grouped by average-linkage clustering on cosine distance, cut at `threshold`."""
    n = len(vectors)
    if n == 0:
        return []
    if n == 1:
        return [[0]]
    return cut(n, merges(cosine_distances(vectors)), threshold)


def medoid(vectors: Matrix, members: Sequence[int]) -> int:
    """The member with the least total cosine distance to the others (the first on ties)."""
    sub = cosine_distances(np.asarray(vectors)[list(members)])
    return members[int(np.argmin(sub.sum(axis=1)))]
