"""`candor gaps`: what people asked that Candor could not answer, grouped by meaning and re-checked.

1. Read the window's gaps (rag/insights/gaps/queries.py): abstained and low-confidence questions, and
   the unanswered parts of answered ones; the most recent `MAX_ITEMS` (5,000) of them, so that the
   clustering's O(n²) distance matrix stays near 100 MB (`items_in_window` says how many there were).
2. Embed each distinct text once with the configured embedder and cluster by cosine distance, average
   linkage cut at `gap_cluster_distance` (rag/insights/gaps/clustering.py; chosen by benchmarks/gap_clusters.py).
3. For each cluster of at least `min_size` members: its medoid as the representative question, up to
   5 distinct examples (newest first) with trace ids and dates, its routes, and a label from the
   relaxed re-check (rag/insights/relaxed.py): "true_gap" (nothing in the documents) or "possibly_answerable"
   (the documents may hold it: abstentions a person should look at), with the best evidence found.
4. What was done about it (rag/insights/gaps/follow_up.py): the hand-offs of its questions and the
   curated answers that cover it, with how often each answered since it was saved.

Re-check budget: the medoid plus the newest other distinct texts, `RECHECK_CAP` (7) per cluster; a
member whose text and scope equal a re-checked one shares its result. Members of a cluster are
paraphrases of one question, so a handful decide its label as well as all of them would, and the
command's cost grows with the number of clusters, not of questions (a re-check is two retrievals of
three times the shortlist). The label is the majority of the members covered, a tie counting as
"possibly_answerable" (the label asks a person to look; it must not hide a wrong abstention).

Re-check scope, never more than the asker had: the trace's stored scope (its groups, and its
knowledge bases narrowed to `--kb` when given); without a stored scope (chat questions, whose scope the
access policy gave and which is not stored), the public documents of `--kb`, or of every knowledge
base.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.calibration import calibrated
from rag.insights.gaps.clustering import average_linkage, medoid
from rag.insights.gaps.follow_up import embed_questions, fetch_follow_up, follow_up
from rag.insights.gaps.queries import GapRow, fetch_gap_rows
from rag.insights.relaxed import Ranking, Recheck, recheck
from rag.insights.report.build import Window
from rag.model.ports import Embedder
from rag.model.types import AccessScope
from rag.pipeline.understand import strip_markup

GAPS_FORMAT = 1
"""Bump when a key of the JSON changes meaning or goes away (adding keys does not bump it)."""
MAX_ITEMS = 5000
EXAMPLES = 5
RECHECK_CAP = 7
FALLBACK_DISTANCE = 0.5
"""Used only before benchmarks/gap_clusters.py has written `gap_cluster_distance`."""
ROUTE_ORDER = ("abstained", "low_confidence", "answered")


@dataclass(frozen=True, slots=True)
class GapItem:
    """One question (or unanswered part) the pipeline did not answer."""

    trace_id: str
    created_at: datetime
    route: str
    text: str
    part: bool
    """An unanswered part of an answered question (else the whole question)."""
    scope: AccessScope
    """What the re-check may read (module docstring)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "trace_id": self.trace_id,
            "created_at": self.created_at.isoformat(),
            "route": self.route,
            "part": self.part,
        }


def cluster_distance() -> float:
    return calibrated("gap_cluster_distance", FALLBACK_DISTANCE)


def recheck_scope(stored: Mapping[str, Any] | None, kb: str | None) -> AccessScope:
    """The scope a trace's gap is re-checked with: its own, narrowed to `kb`; public without one."""
    if stored is None:
        return AccessScope.public(None if kb is None else frozenset([kb]))
    groups = frozenset(str(g) for g in stored.get("groups") or ())
    listed = stored.get("knowledge_bases")
    kbs = None if not isinstance(listed, list) else frozenset(str(k) for k in listed)
    if kb is not None and (kbs is None or kb in kbs):
        kbs = frozenset([kb])
    return AccessScope(groups, kbs)


def items_of(rows: Sequence[GapRow], kb: str | None) -> list[GapItem]:
    """The traces' gap items, newest first: the question of an abstained or low-confidence trace, the
    unanswered parts of an answered one."""
    items = []
    for row in rows:
        scope = recheck_scope(row.scope, kb)
        if row.route == "answered":
            items += [GapItem(row.trace_id, row.created_at, row.route, p, True, scope) for p in row.unanswered_parts]
        else:
            text = strip_markup(row.question) or row.question  # a chat question is stored as typed
            items.append(GapItem(row.trace_id, row.created_at, row.route, text, False, scope))
    return items


_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """The text two askers share when they typed the same question (case, spacing, end punctuation)."""
    return _SPACE.sub(" ", text).strip().rstrip("?!. ").casefold()


async def embed_items(embedder: Embedder, items: Sequence[GapItem]) -> np.ndarray:
    """One row per item; each distinct text embedded once."""
    distinct = list(dict.fromkeys(normalise(i.text) for i in items))
    if not distinct:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    vectors = np.asarray(await embedder.embed(distinct), dtype=np.float32)
    where = {text: n for n, text in enumerate(distinct)}
    return vectors[[where[normalise(i.text)] for i in items]]


def examples(items: Sequence[GapItem], members: Sequence[int]) -> list[dict[str, Any]]:
    """Up to `EXAMPLES` distinct texts, newest first, each with how many members asked it."""
    counts = Counter(normalise(items[m].text) for m in members)
    seen: dict[str, dict[str, Any]] = {}
    for m in sorted(members, key=lambda m: items[m].created_at, reverse=True):
        key = normalise(items[m].text)
        if key not in seen:
            seen[key] = {**items[m].as_json(), "count": counts[key]}
    return list(seen.values())[:EXAMPLES]


def to_recheck(items: Sequence[GapItem], members: Sequence[int], representative: int) -> list[int]:
    """The representative, then the newest member of each other distinct (text, scope), up to the cap."""
    order = [representative, *sorted(members, key=lambda m: items[m].created_at, reverse=True)]
    picked: dict[tuple[str, AccessScope], int] = {}
    for m in order:
        picked.setdefault(key_of(items[m]), m)
    return list(picked.values())[:RECHECK_CAP]


def key_of(item: GapItem) -> tuple[str, AccessScope]:
    return normalise(item.text), item.scope


def label_of(results: Sequence[Recheck]) -> str:
    """The majority label, a tie counting as possibly answerable."""
    possibly = sum(r.label == "possibly_answerable" for r in results)
    return "possibly_answerable" if 2 * possibly >= len(results) else "true_gap"


async def describe_cluster(
    ranking: Ranking,
    items: Sequence[GapItem],
    vectors: np.ndarray,
    members: Sequence[int],
    *,
    k: int,
    threshold: float | None,
) -> dict[str, Any]:
    """A cluster as JSON: size, representative, examples, routes, re-check label and evidence."""
    representative = medoid(vectors, members)
    checked: dict[tuple[str, AccessScope], tuple[str, Recheck]] = {}
    for m in to_recheck(items, members, representative):
        found = await recheck(ranking, items[m].text, items[m].scope, k=k, threshold=threshold)
        checked[key_of(items[m])] = (items[m].text, found)
    covered = [checked[key_of(items[m])][1] for m in members if key_of(items[m]) in checked]
    best_text, best = max(checked.values(), key=lambda pair: pair[1].score)
    routes = Counter(items[m].route for m in members)
    dates = [items[m].created_at for m in members]
    return {
        "size": len(members),
        "representative": items[representative].as_json(),
        "examples": examples(items, members),
        "routes": {route: routes[route] for route in ROUTE_ORDER if routes[route]},
        "unanswered_parts": sum(items[m].part for m in members),
        "first_seen": min(dates).isoformat(),
        "last_seen": max(dates).isoformat(),
        "label": label_of(covered),
        "recheck": {
            "members_checked": len(covered),
            "possibly_answerable": sum(r.label == "possibly_answerable" for r in covered),
            "texts_rechecked": len(checked),
            "threshold": best.threshold,
        },
        "evidence": {
            "question": best_text,
            "score": round(best.score, 4),
            "passages": [e.as_json() for e in best.evidence],
        },
    }


async def find_gaps(
    engine: AsyncEngine,
    embedder: Embedder,
    ranking: Ranking,
    window: Window,
    *,
    min_size: int = 2,
    k: int,
    distance: float | None = None,
    threshold: float | None = None,
    max_items: int = MAX_ITEMS,
) -> dict[str, Any]:
    """The gaps of `window` as plain JSON (what `candor gaps --json` prints); `k` is the re-check's
    shortlist, `distance` the clustering cut, `threshold` the relaxed re-check's (calibrated by default)."""
    params = {"since": window.since, "until": window.until, "kb": window.knowledge_base, "limit": max_items}
    rows, traces = await fetch_gap_rows(engine, params)
    every = items_of(rows, window.knowledge_base)
    items = every[:max_items]
    cut = cluster_distance() if distance is None else distance
    vectors = await embed_items(embedder, items)
    groups = average_linkage(vectors, cut) if items else []
    shown = [g for g in groups if len(g) >= min_size]
    handoffs, curated, cited = await fetch_follow_up(
        engine, list(dict.fromkeys(i.trace_id for i in items)), window.since, window.until
    )
    curated_vectors = await embed_questions(embedder, curated)
    clusters = []
    for g in shown:
        cluster = await describe_cluster(ranking, items, vectors, g, k=k, threshold=threshold)
        representative = vectors[medoid(vectors, g)]
        cluster["follow_up"] = follow_up(
            [(items[m].trace_id, items[m].created_at) for m in g],
            representative / (np.linalg.norm(representative) or 1.0),
            handoffs,
            curated,
            curated_vectors,
            cited,
            cut=cut,
        )
        clusters.append(cluster)
    clusters.sort(key=lambda c: str(c["last_seen"]), reverse=True)
    clusters.sort(key=lambda c: int(c["size"]), reverse=True)  # largest first, then the newest
    labels = Counter(c["label"] for c in clusters)
    return {
        "gaps_format": GAPS_FORMAT,
        "window": {
            "since": window.since.isoformat(),
            "until": window.until.isoformat(),
            "knowledge_base": window.knowledge_base,
            "timezone": "UTC",
        },
        "traces_in_window": traces,
        "traces_read": len(rows),
        "items": len(items),
        "max_items": max_items,
        "capped": traces > len(rows) or len(every) > max_items,
        "clustering": {"method": "average linkage, cosine distance", "distance": cut, "embedder": embedder.name},
        "min_size": min_size,
        "recheck": {"shortlist": k, "per_cluster_cap": RECHECK_CAP},
        "clusters": [{"id": n, **c} for n, c in enumerate(clusters, 1)],
        "labels": {"true_gap": labels["true_gap"], "possibly_answerable": labels["possibly_answerable"]},
        "left_out": {"items": len(items) - sum(len(g) for g in shown), "clusters": len(groups) - len(shown)},
    }
