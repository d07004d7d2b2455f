"""Answer quality on corpora nobody on the team wrote: the blind corpora of eval/blind/.

Each corpus (documents and a golden file in the docs/design.md format) was written by a helper that saw
only the golden format and the list of question kinds, never Candor's code, rules or sample
(eval/blind/README.md says which were measured blind, when, and with what result). Each is ingested
into a knowledge base of its own and asked through `Candor.answer` with the offline defaults,
scored as `candor eval` scores (rag/insights/evaluation/run.py), per corpus and pooled:

- wrong abstention on answerable questions; keywords present in answered answerable questions;
- non-answers: answered, but a required keyword absent, as a share of the answerable questions;
- planted conflicts flagged with the newer value preferred; false conflict notes;
- unanswerable and false-premise questions abstained; multi-part questions fully right.

`handbook` and `campus` are held back: development uses `hardware`, `saas` and `transit` (the
default), and a held-back corpus is reported last, each with `--corpora NAME` in a fresh home.

    python benchmarks/generalisation.py                      # hardware, saas and transit, a table
    python benchmarks/generalisation.py --corpora handbook   # a held-back corpus
    python benchmarks/generalisation.py --show               # each miss with the answer given
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE
from rag.config import load_settings, offline_model_environment
from rag.insights.evaluation.golden import load_golden
from rag.insights.evaluation.run import Scored, run_eval, summarise
from rag.model.answers import Answer, Question
from rag.model.types import AccessScope, Passage
from rag.runtime import Candor, open_candor

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO / "eval" / "blind"
DEVELOPMENT = ("hardware", "saas", "transit", "tasks")
HELD_BACK = ("handbook", "campus", "utility", "clinic", "helpcentre", "servicedesk")
"""Never looked at question by question: measured in aggregate, at the end of a sitting."""
COMMAND = "HF_HUB_OFFLINE=1 python benchmarks/generalisation.py"


def share(n: int, total: int) -> str:
    return f"{n}/{total} ({100 * n / total:.0f}%)" if total else "n/a"


def measures(results: Sequence[Scored]) -> dict[str, tuple[int, int]]:
    """The issue's targets, as (count, of)."""
    answerable = [r for r in results if r.item.answerable]
    answered = [r for r in answerable if r.route != "abstained"]
    refusable = [r for r in results if not r.item.answerable]
    conflicts = [r for r in results if r.item.conflict is not None]
    others = [r for r in results if r.item.conflict is None]
    multi = [r for r in results if r.item.parts]
    return {
        "wrong abstention on answerable (<= 10%)": (len(answerable) - len(answered), len(answerable)),
        "keywords present, answered (>= 85%)": (sum(bool(r.keywords_ok) for r in answered), len(answered)),
        "non-answers, of answerable (<= 5%)": (sum(r.keywords_ok is False for r in answered), len(answerable)),
        "conflicts flagged, newer preferred (>= 90%)": (sum(bool(r.conflict_ok) for r in conflicts), len(conflicts)),
        "false conflict notes (<= 5%)": (sum(r.conflict_flagged for r in others), len(others)),
        "unanswerable/false premise abstained (>= 90%)": (
            sum(r.route == "abstained" for r in refusable),
            len(refusable),
        ),
        "multi-part fully right (>= 80%)": (sum(bool(r.parts_ok) for r in multi), len(multi)),
        "citations valid": (sum(r.citations_ok for r in results), len(results)),
        "restricted leaks": (sum(bool(r.leak) for r in results), sum(r.leak is not None for r in results)),
    }


async def measure(names: Sequence[str], home: Path, show: bool) -> dict[str, Any]:
    offline_model_environment()
    settings = load_settings(home=home)
    out: dict[str, Any] = {"corpora": {}, "command": COMMAND}
    pooled: list[Scored] = []
    async with open_candor(settings) as candor:
        await candor.warm_up()
        for name in names:  # all first: full-text statistics are the database's, not one corpus'
            await candor.ingest([CORPORA / name / "docs"], kb=name, prune=True)
        for name in names:
            corpus = CORPORA / name
            answers: dict[str, Answer] = {}
            ask = _recording(candor, answers)

            async def search(text: str, scope: AccessScope) -> list[Passage]:
                return await candor.retriever.run(text, scope, k=5)

            items = load_golden(corpus / "golden.yaml")
            results = await run_eval(items, ask, search, kb=name)
            pooled.extend(results)
            out["corpora"][name] = {"measures": measures(results), "summary": summarise(results)}
            if show:
                print_misses(name, results, answers)
    out["pooled"] = {"measures": measures(pooled), "summary": summarise(pooled)}
    return out


def _recording(candor: Candor, answers: dict[str, Answer]) -> Callable[[Question], Awaitable[Answer]]:
    """`Candor.answer`, keeping each question's first answer (a restricted question is asked again
    without its groups, to check for leaks: the first is the one scored)."""

    async def ask(question: Question) -> Answer:
        answer = await candor.answer(question)
        answers.setdefault(question.text, answer)
        return answer

    return ask


def print_misses(name: str, results: Sequence[Scored], answers: dict[str, Answer]) -> None:
    for r in results:
        item = r.item
        wrong = (
            (item.answerable and (r.route == "abstained" or r.keywords_ok is False))
            or (not item.answerable and r.route != "abstained")
            or (item.conflict is not None and not r.conflict_ok)
            or (item.conflict is None and r.conflict_flagged)
            or (bool(item.parts) and not r.parts_ok)
        )
        if not wrong:
            continue
        answer = answers[item.question]
        print(f"## {name}/{item.id} [{', '.join(item.tags)}] {r.route}")
        print(f"   Q: {item.question}")
        print(f"   want: {list(item.keywords)}" + (f"  conflict: {item.conflict}" if item.conflict else ""))
        for line in answer.text.splitlines():
            print(f"   > {line}")
        print()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpora", default=",".join(DEVELOPMENT), help="comma-separated names under eval/blind/")
    parser.add_argument("--home", type=Path, default=CACHE / "generalisation-home")
    parser.add_argument("--show", action="store_true", help="print each miss with the answer given")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.corpora.split(",") if n.strip()]
    result = asyncio.run(measure(names, args.home, args.show))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    columns = [*names, "pooled"] if len(names) > 1 else names
    tables = {n: result["corpora"][n]["measures"] for n in names} | {"pooled": result["pooled"]["measures"]}
    print(f"{'measure':48}" + "".join(f"{c:>16}" for c in columns))
    for key in tables[columns[0]]:
        print(f"{key:48}" + "".join(f"{share(*tables[c][key]):>16}" for c in columns))


if __name__ == "__main__":
    main()
