"""Keywords-when-answered against the answer threshold, on the pooled development corpora (issue 40,
item 1: "the threshold that gives keywords-when-answered >= 90%, and the coverage it costs").

Reads the offline rows `benchmarks/model_answers.py --system offline` cached for each development
set (no model needed), and for each threshold counts an answer as delivered when it was delivered at
the calibrated threshold and its weakest part's best sentence score (the `completeness` gate's
`best_sentence_score`) reaches the threshold: what raising `CANDOR_ANSWER_THRESHOLD` would keep.
An estimate for thresholds above the calibrated one only; confirm a chosen one with a real run.

    for s in hardware saas transit tasks; do
      HF_HUB_OFFLINE=1 python benchmarks/model_answers.py --set $s --system offline
    done
    HF_HUB_OFFLINE=1 python benchmarks/precision_curve.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.model_answers import ANSWERS, BLIND, judge, read_rows
from benchmarks.squad_kb import code_version
from rag.insights.evaluation.golden import load_golden

DEVELOPMENT = ("hardware", "saas", "transit", "tasks")
THRESHOLDS = (0.57, 0.60, 0.62, 0.64, 0.66, 0.68, 0.70, 0.72, 0.75, 0.80)


def points(commit: str) -> list[tuple[bool, bool, bool, float]]:
    """(answerable, delivered, right, weakest part's best sentence score) per question."""
    found = []
    for name in DEVELOPMENT:
        items = {i.id: i for i in load_golden(BLIND / name / "golden.yaml")}
        for row in read_rows([ANSWERS / f"{name}-offline.jsonl"]):
            if row["commit"] != commit:
                continue
            judged = judge(row, items)
            complete = [g for g in row["answer"]["gates"] if g["gate"] == "completeness"]
            parts = complete[-1]["details"]["parts"] if complete else []
            best = min((p["best_sentence_score"] for p in parts), default=-1.0)
            found.append((items[row["id"]].answerable, judged.delivered, judged.right, best))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default=code_version(), help="the cached rows' commit (default: HEAD)")
    args = parser.parse_args()
    found = points(args.commit)
    answerable = [p for p in found if p[0]]
    unanswerable = [p for p in found if not p[0]]
    print(f"{', '.join(DEVELOPMENT)} @ {args.commit}: {len(answerable)} answerable, {len(unanswerable)} unanswerable\n")
    print("| threshold | answered (of answerable) | keywords when answered | unanswerable answered |")
    print("|---|---|---|---|")
    for tau in THRESHOLDS:
        kept = [p for p in answerable if p[1] and p[3] >= tau]
        right = sum(p[2] for p in kept)
        wrongly = sum(p[1] and p[3] >= tau for p in unanswerable)
        share = f"{right / len(kept):.0%}" if kept else "-"
        cells = (f"{tau:.2f}", f"{len(kept)}/{len(answerable)}", f"{right}/{len(kept)} ({share})")
        print(f"| {' | '.join(cells)} | {wrongly}/{len(unanswerable)} |")


if __name__ == "__main__":
    main()
