"""What the offline writer's answer threshold costs when it is set for precision (issue 40, item 1).

The calibrated thresholds (rag/calibration.json, benchmarks/calibrate.py) bound wrong abstention.
This asks the other question: at which answer threshold are the answers the offline writer delivers
right at least 90% of the time (golden keywords present, answered answerable questions), and how
many answerable questions does that leave unanswered?

Every question of the blind corpora is asked once with every threshold open and no retry (as
calibrate.py collects), each corpus in a knowledge base of its own; an answer is "delivered at τ"
when it was delivered with the gates open, its best cosine reaches the calibrated retrieval
threshold, its best sentence score reaches τ and its focus shift the calibrated focus threshold
(calibrate.py, `answered`). The threshold is chosen on the development corpora pooled (the lowest τ
on a 0.01 grid with precision ≥ 90%); the held-back corpora are only reported at it, in aggregate.

    HF_HUB_OFFLINE=1 python benchmarks/precision.py                 # hardware, saas, transit: the curve
    HF_HUB_OFFLINE=1 python benchmarks/precision.py --corpora handbook,campus --at 0.62
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import handbook_kb
from benchmarks.calibrate import answered, grid, open_gates
from benchmarks.common import CACHE, REPO, cached_home
from benchmarks.generalisation import DEVELOPMENT
from benchmarks.squad_kb import Record
from rag.calibration import calibrated
from rag.config import offline_model_environment
from rag.insights.evaluation.golden import load_golden
from rag.runtime import open_candor

TARGET = 0.90
RETRIEVAL, ANSWER, FOCUS = (calibrated(k, 0.0) for k in ("retrieval_threshold", "answer_threshold", "focus_threshold"))


async def collect(corpora: Sequence[str], home: Path) -> dict[str, list[Record]]:
    """Each corpus's questions asked with every threshold open and no retry."""
    found: dict[str, list[Record]] = {}
    async with open_candor(open_gates(home)) as candor:
        for name in corpora:
            await candor.ingest([REPO / "eval" / "blind" / name / "docs"], kb=f"blind-{name}", prune=True)
            items = load_golden(REPO / "eval" / "blind" / name / "golden.yaml")
            found[name] = await handbook_kb.ask_items(
                candor, items, lambda line: print(line, flush=True), kb=f"blind-{name}"
            )
    return found


def at(records: Sequence[Record], tau: float) -> tuple[int, int, int, int, int]:
    """(answerable answered, of them right, answerable, unanswerable answered, unanswerable) at τ."""
    retrieval, focus = RETRIEVAL, FOCUS
    yes = [r for r in records if r.answerable]
    no = [r for r in records if not r.answerable]
    delivered = [r for r in yes if answered(r, retrieval, tau, focus)]
    right = sum(bool(r.gold_in_answer) for r in delivered)
    return len(delivered), right, len(yes), sum(answered(r, retrieval, tau, focus) for r in no), len(no)


def row(label: str, counts: tuple[int, int, int, int, int]) -> str:
    answered_n, right, answerable, wrongly, unanswerable = counts
    precision = f"{right}/{answered_n} ({100 * right / answered_n:.0f}%)" if answered_n else "-"
    return (
        f"| {label} | {precision} | {answered_n}/{answerable} ({100 * answered_n / answerable:.0f}%) | "
        f"{right}/{answerable} | {wrongly}/{unanswerable} |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", default=",".join(DEVELOPMENT))
    parser.add_argument("--home", type=Path, default=CACHE / "precision-home")
    parser.add_argument("--at", type=float, default=None, help="report only this threshold (held-back use)")
    args = parser.parse_args(argv)
    offline_model_environment()
    started = time.perf_counter()
    found = asyncio.run(collect(args.corpora.split(","), cached_home(args.home)))
    pooled = [r for records in found.values() for r in records]
    print(f"\n{len(pooled)} questions in {time.perf_counter() - started:.0f} s; calibrated answer threshold {ANSWER}\n")
    print("| τ | keywords when answered | answerable answered | right, of answerable | unanswerable answered |")
    print("|---|---|---|---|---|")
    taus = [args.at] if args.at is not None else grid(0.3, 0.9, 0.01)
    chosen = None
    for tau in taus:
        counts = at(pooled, tau)
        if chosen is None and counts[0] and counts[1] / counts[0] >= TARGET:
            chosen = tau
        if args.at is not None or round(tau * 100) % 5 == 0 or tau == chosen:
            print(row(f"{tau:.2f}" + (" (first ≥ 90%)" if tau == chosen else ""), counts))
    if args.at is None:
        print(row(f"calibrated {ANSWER:.2f}", at(pooled, ANSWER)))
    for name, records in found.items():
        tau = args.at if args.at is not None else (chosen or ANSWER)
        print(row(f"{name} at {tau:.2f}", at(records, tau)))
    print(f"\nchosen on the pooled corpora: {chosen}")


if __name__ == "__main__":
    main()
