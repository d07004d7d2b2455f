"""End-to-end answers on the SQuAD 2.0 subset with the configured gate thresholds.

Every paragraph is its own knowledge base and every question is asked of its own paragraph only
(benchmarks/squad_kb.py), through `Candor.answer` with the settings as configured (thresholds from
rag/calibration.json unless CANDOR_* variables say otherwise; retry on). Per half (the split of
`split_by_title`: calibration = article titles at even positions, report = the rest) and overall:

- answer rate on answerable rows (answered + low_confidence) and wrong abstention;
- answer-when-unanswerable rate (SQuAD 2.0 "No answer" rows that got an answer);
- gold in answer: the share of answered answerable rows whose text contains the gold answer
  string (case-insensitive; a crude check: "13-Apr" style dates in the CSV never match);
- premise-gate abstentions, and what abstained on the answerable rows;
- p50/p95 of `answer.timings_ms["total"]`.

    python benchmarks/squad_answers.py            # a table
    python benchmarks/squad_answers.py --json     # machine-readable
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_squad, percentile, split_by_title
from benchmarks.squad_kb import Record, ask_all, code_version, ensure_knowledge_bases, prepare_home
from rag.config import load_settings
from rag.runtime import open_candor

COMMAND = "HF_HUB_OFFLINE=1 python benchmarks/squad_answers.py"


def share(n: int, total: int) -> dict[str, Any]:
    return {"n": n, "of": total, "pct": round(100 * n / total, 1) if total else None}


def summarise(records: Sequence[Record], retrieval_threshold: float) -> dict[str, Any]:
    yes = [r for r in records if r.answerable]
    no = [r for r in records if not r.answerable]
    delivered_yes = [r for r in yes if r.delivered]
    abstained_yes = [r for r in yes if not r.delivered]
    by_retrieval = [r for r in abstained_yes if r.retrieval_score < retrieval_threshold]
    by_premise = [r for r in abstained_yes if r not in by_retrieval and not r.premise_passed]
    ms = [r.total_ms for r in records]
    return {
        "questions": len(records),
        "answerable_answered": share(len(delivered_yes), len(yes)),
        "answerable_low_confidence": share(sum(r.route == "low_confidence" for r in yes), len(yes)),
        "wrong_abstention": share(len(abstained_yes), len(yes)),
        "wrong_abstention_by": {
            "retrieval_gate": len(by_retrieval),
            "premise_gate": len(by_premise),
            "answer_threshold_or_critic": len(abstained_yes) - len(by_retrieval) - len(by_premise),
        },
        "unanswerable_answered": share(sum(r.delivered for r in no), len(no)),
        "gold_in_answer": share(sum(bool(r.gold_in_answer) for r in delivered_yes), len(delivered_yes)),
        "premise_abstentions": {
            "answerable": sum(not r.delivered and not r.premise_passed for r in yes),
            "unanswerable": sum(not r.delivered and not r.premise_passed for r in no),
        },
        "retried": sum(r.attempts > 1 for r in records),
        "total_ms": {"p50": round(percentile(ms, 50), 1), "p95": round(percentile(ms, 95), 1)},
    }


def fmt(s: dict[str, Any]) -> str:
    return f"{s['n']}/{s['of']} ({s['pct']}%)"


def print_summary(label: str, s: dict[str, Any]) -> None:
    by = s["wrong_abstention_by"]
    premise = s["premise_abstentions"]
    print(f"== {label}: {s['questions']} questions ==")
    print(
        f"  answerable answered          {fmt(s['answerable_answered'])}"
        f"   (low_confidence {s['answerable_low_confidence']['n']})"
    )
    print(
        f"  wrong abstention             {fmt(s['wrong_abstention'])}   (retrieval gate {by['retrieval_gate']}, "
        f"premise gate {by['premise_gate']}, answer threshold/critic {by['answer_threshold_or_critic']})"
    )
    print(f"  unanswerable answered        {fmt(s['unanswerable_answered'])}")
    print(f"  gold answer in the answer    {fmt(s['gold_in_answer'])}   (of answered answerable rows)")
    print(
        f"  premise-gate abstentions     {premise['answerable'] + premise['unanswerable']} "
        f"(answerable {premise['answerable']}, unanswerable {premise['unanswerable']})"
    )
    print(f"  retried                      {s['retried']}")
    print(f"  total time                   p50 {s['total_ms']['p50']} ms, p95 {s['total_ms']['p95']} ms")


async def run(quiet: bool) -> tuple[dict[str, Any], list[Record]]:
    paragraphs, questions = load_squad()
    settings = load_settings(home=prepare_home(), database_url=None)

    def log(line: str) -> None:
        print(line, file=sys.stderr if quiet else sys.stdout, flush=True)

    start = time.perf_counter()
    async with open_candor(settings) as candor:
        await ensure_knowledge_bases(candor, paragraphs, progress=log)
        log(
            f"asking {len(questions)} questions: retrieval_threshold {settings.retrieval_threshold}, "
            f"answer_threshold {settings.answer_threshold}, retry {settings.retry}"
        )
        records = await ask_all(candor, questions, progress=log)
        embedder = candor.embedder.name
    config = {
        "retrieval_threshold": settings.retrieval_threshold,
        "answer_threshold": settings.answer_threshold,
        "retry": settings.retry,
        "min_support": settings.min_support,
        "embedder": embedder,
        "code": code_version(),
        "seconds": round(time.perf_counter() - start, 1),
    }
    return config, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()

    config, records = asyncio.run(run(quiet=args.json))
    _, questions = load_squad()
    calib_q, report_q = split_by_title(questions)
    by_question = {(r.question, r.paragraph_id): r for r in records}
    halves = {
        "calibration half": [by_question[(q.question, q.paragraph_id)] for q in calib_q],
        "report half": [by_question[(q.question, q.paragraph_id)] for q in report_q],
        "all": records,
    }
    threshold = float(config["retrieval_threshold"])
    results = {label: summarise(rs, threshold) for label, rs in halves.items()}
    if args.json:
        print(json.dumps({"command": COMMAND, "config": config, "results": results}, indent=2))
        return
    print(
        f"\nthresholds: retrieval {config['retrieval_threshold']}, answer {config['answer_threshold']}; "
        f"retry {config['retry']}; embedder {config['embedder']}; code {config['code']}; {config['seconds']}s"
    )
    for label, s in results.items():
        print_summary(label, s)
    print(f"\nreproduce: {COMMAND}")


if __name__ == "__main__":
    main()
