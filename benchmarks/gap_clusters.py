"""Calibrate the distance threshold `candor gaps` clusters questions at, and measure cluster purity.

sample/gap_paraphrases.yaml holds two sets of dev-style questions, five wordings per topic, with
near-neighbour topics (sick vs annual leave, Starter vs Business price). Questions are embedded with
the configured embedder (`CANDOR_EMBEDDER`, MiniLM by default) and clustered by average linkage on
cosine distance (rag/insights/gaps/clustering.py), as `candor gaps` does.

Measures at a threshold, against the topics:
- purity: the share of questions whose cluster's majority topic is their own (1.0 for singletons,
  so it is never the objective alone);
- pairwise precision / recall / F1 / F0.5 over pairs of questions (same cluster vs same topic);
- clusters found vs topics.

Rule: on the calibration set only, the threshold (0.01 grid) maximising pairwise F0.5 (precision
weighted twice recall: two gaps merged into one cluster hide one of them, while a topic split in two
still shows as two clusters a person reads side by side); among thresholds within 0.01 of the best,
the lowest. Report: the report set in
full (other topics, other wordings), and 20 seeded subsamples of it (seeds 0-19: 10 of its topics, 3
wordings each, shuffled) for the spread.

    python benchmarks/gap_clusters.py              # choose, measure, write gap_cluster_distance
    python benchmarks/gap_clusters.py --dry-run    # print, do not write rag/calibration.json
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import REPO
from benchmarks.relaxed_recheck import with_keys
from rag.backends.embeddings import build_embedder
from rag.calibration import CALIBRATION
from rag.config import load_settings
from rag.insights.gaps.clustering import cosine_distances, cut, merges

PARAPHRASES = REPO / "sample" / "gap_paraphrases.yaml"
STEP = 0.01
NEAR_BEST = 0.01
BETA = 0.5
"""F-beta's beta: precision (a cluster holds one topic) weighs twice recall (a topic is one cluster)."""
SEEDS = 20
SUBSAMPLE_TOPICS = 10
SUBSAMPLE_WORDINGS = 3


@dataclass(frozen=True, slots=True)
class Labelled:
    texts: list[str]
    topics: list[str]


def load(section: str) -> Labelled:
    data = yaml.safe_load(PARAPHRASES.read_text(encoding="utf-8"))[section]
    texts = [q for t in data for q in t["questions"]]
    topics = [t["topic"] for t in data for _ in t["questions"]]
    return Labelled(texts, topics)


def scores(clusters: Sequence[Sequence[int]], topics: Sequence[str]) -> dict[str, Any]:
    """Purity, pairwise precision/recall/F1 and counts of a flat clustering against the topics."""
    n = len(topics)
    pure = sum(Counter(topics[i] for i in c).most_common(1)[0][1] for c in clusters)
    same_cluster = sum(len(c) * (len(c) - 1) // 2 for c in clusters)
    both = sum(v * (v - 1) // 2 for c in clusters for v in Counter(topics[i] for i in c).values())
    same_topic = sum(v * (v - 1) // 2 for v in Counter(topics).values())
    precision = both / same_cluster if same_cluster else 1.0
    recall = both / same_topic if same_topic else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    f05 = (1 + BETA**2) * precision * recall / (BETA**2 * precision + recall) if precision + recall else 0.0
    return {
        "purity": round(pure / n, 4),
        "pure_questions": pure,
        "questions": n,
        "pairwise_precision": round(precision, 4),
        "pairwise_recall": round(recall, 4),
        "pairwise_f1": round(f1, 4),
        "pairwise_f05": round(f05, 4),
        "clusters": len(clusters),
        "topics": len(set(topics)),
    }


def sweep(vectors: np.ndarray, topics: Sequence[str], taus: Sequence[float]) -> dict[float, dict[str, Any]]:
    found = merges(cosine_distances(vectors))
    return {tau: scores(cut(len(topics), found, tau), topics) for tau in taus}


def choose(curve: dict[float, dict[str, Any]]) -> float:
    best = max(row["pairwise_f05"] for row in curve.values())
    return min(tau for tau, row in curve.items() if row["pairwise_f05"] >= best - NEAR_BEST - 1e-9)


def subsample(data: Labelled, seed: int) -> Labelled:
    rng = random.Random(seed)
    topics = sorted(set(data.topics))
    chosen = set(rng.sample(topics, SUBSAMPLE_TOPICS))
    picked = []
    for topic in sorted(chosen):
        wordings = [t for t, k in zip(data.texts, data.topics, strict=True) if k == topic]
        picked += [(t, topic) for t in rng.sample(wordings, SUBSAMPLE_WORDINGS)]
    rng.shuffle(picked)
    return Labelled([t for t, _ in picked], [k for _, k in picked])


def line(tau: float, row: dict[str, Any], chosen: float) -> str:
    return (
        f"{'*' if tau == chosen else ' '} {tau:.2f}  purity {row['purity']:.3f} ({row['pure_questions']}/"
        f"{row['questions']})  pairwise P {row['pairwise_precision']:.3f} R {row['pairwise_recall']:.3f} "
        f"F1 {row['pairwise_f1']:.3f} F0.5 {row['pairwise_f05']:.3f}  "
        f"clusters {row['clusters']} for {row['topics']} topics"
    )


async def main(dry_run: bool) -> None:
    settings = load_settings()
    embedder = build_embedder(settings)
    calibration, report = load("calibration"), load("report")
    vectors = {
        "calibration": await embedder.embed(calibration.texts),
        "report": await embedder.embed(report.texts),
    }
    taus = [round(i * STEP, 2) for i in range(5, 96)]
    curve = sweep(vectors["calibration"], calibration.topics, taus)
    tau = choose(curve)
    print(f"embedder {embedder.name}; {PARAPHRASES.relative_to(REPO)}")
    print(f"\ncalibration set ({len(calibration.texts)} questions, {len(set(calibration.topics))} topics):")
    for t in [*taus[::5], tau]:
        print(line(t, curve[t], tau))
    measured = sweep(vectors["report"], report.topics, [tau])[tau]
    print(f"\nreport set ({len(report.texts)} questions, {len(set(report.topics))} topics), at {tau}:")
    print(line(tau, measured, tau))
    clusters = cut(len(report.texts), merges(cosine_distances(vectors["report"])), tau)
    for c in clusters:
        topics = Counter(report.topics[i] for i in c)
        if len(topics) > 1 or len(c) < 5:
            print(f"    cluster of {len(c)}: {dict(topics)}")
    seeded = []
    index = {t: i for i, t in enumerate(report.texts)}
    for seed in range(SEEDS):
        sub = subsample(report, seed)
        rows = vectors["report"][[index[t] for t in sub.texts]]
        seeded.append(sweep(rows, sub.topics, [tau])[tau])
    purities = [r["purity"] for r in seeded]
    f1s = [r["pairwise_f1"] for r in seeded]
    print(
        f"seeded subsamples (seeds 0-{SEEDS - 1}, {SUBSAMPLE_TOPICS} topics x {SUBSAMPLE_WORDINGS} wordings): purity "
        f"mean {statistics.mean(purities):.3f} min {min(purities):.3f}; pairwise F1 mean {statistics.mean(f1s):.3f} "
        f"min {min(f1s):.3f}"
    )
    added = {
        "gap_cluster_distance": tau,
        "gap_clusters": {
            "command": "python benchmarks/gap_clusters.py",
            "date": date.today().isoformat(),
            "embedder": embedder.name,
            "clustering": (
                "average linkage on cosine distance, cut at gap_cluster_distance (rag/insights/gaps/clustering.py)"
            ),
            "rule": "on the calibration set, the distance (0.01 grid) maximising pairwise F0.5 (precision weighted "
            "twice recall) against the topics; the lowest within 0.01 of the best",
            "calibrated_on": f"sample/gap_paraphrases.yaml calibration ({len(calibration.texts)} questions)",
            "reported_on": f"sample/gap_paraphrases.yaml report ({len(report.texts)} questions), and {SEEDS} seeded "
            f"subsamples of it",
            "curve": [{"tau": t, **curve[t]} for t in taus[::5]],
            "calibration": curve[tau],
            "report_check": measured,
            "report_seeded": {
                "purity_mean": round(statistics.mean(purities), 4),
                "purity_min": min(purities),
                "pairwise_f1_mean": round(statistics.mean(f1s), 4),
                "pairwise_f1_min": min(f1s),
            },
        },
    }
    text = with_keys(CALIBRATION.read_text(encoding="utf-8"), added)
    if dry_run:
        print(f"\n{CALIBRATION} (dry run, not written): gap_cluster_distance {tau}")
        return
    CALIBRATION.write_text(text, encoding="utf-8")
    print(f"\nwritten gap_cluster_distance {tau} to {CALIBRATION}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print, do not write rag/calibration.json")
    asyncio.run(main(parser.parse_args().dry_run))
