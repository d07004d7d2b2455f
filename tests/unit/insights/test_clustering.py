"""rag/insights/gaps/clustering.py against scipy's average linkage (a reference implementation; scipy comes with
sentence-transformers), and its edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist

from rag.insights.gaps.clustering import average_linkage, cosine_distances, cut, medoid, merges


def blobs(seed: int, n: int, dim: int = 12) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(5, dim)) * 3
    return centres[rng.integers(0, 5, size=n)] + rng.normal(size=(n, dim))


def as_sets(groups: list[list[int]]) -> set[frozenset[int]]:
    return {frozenset(g) for g in groups}


@pytest.mark.parametrize(("seed", "n"), [(0, 2), (1, 7), (2, 60), (3, 250)])
def test_same_clusters_as_scipy_at_every_cut(seed: int, n: int) -> None:
    vectors = blobs(seed, n)
    reference = linkage(pdist(vectors, "cosine"), "average")
    heights = np.sort(reference[:, 2])
    cuts = [heights[0] / 2, *((heights[:-1] + heights[1:]) / 2), heights[-1] + 0.1]  # never on a merge height
    for threshold in cuts:
        labels = fcluster(reference, threshold, criterion="distance")
        expected = {frozenset(np.flatnonzero(labels == c).tolist()) for c in set(labels)}
        assert as_sets(average_linkage(vectors, float(threshold))) == expected, threshold
    found = sorted(h for _, _, h in merges(cosine_distances(vectors)))
    assert np.allclose(found, heights, atol=1e-5)


def test_duplicates_join_first_and_far_points_stay_apart() -> None:
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [-1.0, 0.0]])
    assert as_sets(average_linkage(v, 0.0)) == {frozenset({0, 1}), frozenset({2}), frozenset({3}), frozenset({4})}
    assert as_sets(average_linkage(v, 0.1)) == {frozenset({0, 1, 2}), frozenset({3}), frozenset({4})}
    assert as_sets(average_linkage(v, 2.0)) == {frozenset(range(5))}


def test_order_and_small_inputs() -> None:
    assert average_linkage(np.zeros((0, 3)), 0.5) == []
    assert average_linkage(np.ones((1, 3)), 0.5) == [[0]]
    assert cut(4, [(0, 3, 0.1), (1, 2, 0.9)], 0.5) == [[0, 3], [1], [2]]  # largest first, then by first item


def test_unnormalised_vectors_are_compared_by_angle() -> None:
    v = np.array([[10.0, 0.0], [0.5, 0.0], [0.0, 3.0]])
    assert as_sets(average_linkage(v, 0.01)) == {frozenset({0, 1}), frozenset({2})}


def test_medoid_is_the_most_central_member() -> None:
    v = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]])
    assert medoid(v, [0, 1, 2, 3]) in (1, 2)
    assert medoid(v, [0, 1, 2]) == 1
    assert medoid(v, [4]) == 4
