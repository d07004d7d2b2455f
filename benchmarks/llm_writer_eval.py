"""`candor eval sample/golden.yaml` through the model writer, on a fake model that hallucinates in a known
share of its drafts: are any of the planted hallucinations delivered?

The fake (`tests.fakes.writers.HallucinatingWriter`, on the fake OpenAI-compatible server, in this process)
reads Candor's prompt and answers each question part with the passage sentence that shares most of its
words, cited, or leaves the part unanswered. In every `--every`-th request it plants one hallucination,
the kinds taking turns: a changed number in a copied sentence (16 weeks → 18 weeks), an invented sentence
citing a real passage, a plan/product/collector name swapped for another of the handbook's, a copied
sentence cited to an unrelated passage. Planted values and sentences occur nowhere in the handbook or the
golden file, so finding one in an answer can only mean it was delivered.

Candor is built from the settings as `candor eval` builds it (`CANDOR_WRITER=openai:writer-model`,
`OPENAI_BASE_URL` = the fake; the offline critic, rescue and focus checks as configured by default) over
the cached handbook home (benchmarks/handbook_kb.py), and the golden set is asked by the real `run_eval`.
Printed: the plantings by kind and fate (delivered, dropped by the critic, re-cited by the claim rescue,
withheld by the focus check, never checked), every planting the critic did not catch with its reasons,
and the golden metrics of the model writer next to the offline extractive writer in the same run.

    python benchmarks/llm_writer_eval.py [--every 3] [--first number] [--sweep] [--rebuild]

`--sweep` plants in every draft, four times over (each kind first once): every draft meets most kinds.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import get_args

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import handbook_kb
from rag.config import load_settings
from rag.insights.evaluation.golden import load_golden
from rag.runtime import Candor, open_candor
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.writers import KINDS, HallucinatingWriter, Kind, Models
from tests.planted_eval import CAUGHT, GOLDEN, GoldenRun, eval_golden, handbook_text, planted_table, report, writer_core


async def writer_run(candor: Candor, every: int, first: Kind) -> tuple[GoldenRun, HallucinatingWriter]:
    writer = HallucinatingWriter(every=every, avoid=handbook_text(), first=first)
    async with FakeOpenAI() as fake:
        fake.responder = Models(writer)
        run = await eval_golden(writer_core(candor, fake.base_url), load_golden(GOLDEN), handbook_kb.KB, writer)
    return run, writer


async def main(every: int, first: Kind, sweep: bool, rebuild: bool) -> None:
    settings = load_settings(home=handbook_kb.prepare_home(rebuild), database_url=None)
    async with open_candor(settings) as candor:
        await handbook_kb.ensure_handbook(candor, progress=lambda line: print(line, flush=True))
        start = time.perf_counter()
        offline = await eval_golden(candor, load_golden(GOLDEN), handbook_kb.KB)
        print(f"offline extractive writer: {time.perf_counter() - start:.0f}s", flush=True)
        plan = [(1, kind) for kind in KINDS] if sweep else [(every, first)]
        outcomes = []
        for n, kind in plan:
            start = time.perf_counter()
            run, writer = await writer_run(candor, n, kind)
            print(
                f"\n=== model writer, a hallucination in one draft in {n}, {kind} first "
                f"({time.perf_counter() - start:.0f}s)"
            )
            print(report(run, writer, offline), flush=True)
            outcomes += run.outcomes
    if sweep:
        print(f"\n=== sweep, all four runs: {len(outcomes)} planted, {sum(o.fate in CAUGHT for o in outcomes)} caught")
        print(planted_table(outcomes))
    command = f"python benchmarks/llm_writer_eval.py --every {every} --first {first}" + " --sweep" * sweep
    print(f"\nreproduce: HF_HUB_OFFLINE=1 {command}  (embedder: {settings.embedder})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=int, default=3, help="plant a hallucination in every Nth writer request")
    parser.add_argument("--first", choices=get_args(Kind), default="number", help="the kind planted first")
    parser.add_argument("--sweep", action="store_true", help="plant in every request, each kind first once")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached handbook home")
    args = parser.parse_args()
    asyncio.run(main(args.every, args.first, args.sweep, args.rebuild))
