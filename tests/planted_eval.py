"""`candor eval` through the model writer, on a fake model that hallucinates in a known share of its drafts
(`tests.fakes.writers.HallucinatingWriter`): which planted hallucinations the gated pipeline delivered,
which the critic dropped. Shared by tests/integration/insights/test_llm_eval.py and benchmarks/llm_writer_eval.py.

    writer = HallucinatingWriter(every=3, avoid=handbook_text())
    fake.responder = Models(writer)
    run = await eval_golden(writer_core(candor, fake.base_url), items, kb.name, writer)
    print(report(run, writer, offline=await eval_golden(candor, items, kb.name)))

The golden set is asked by the real `run_eval`, as `candor eval GOLDEN --kb KB` asks it; each answer is kept
with the hallucinations planted while it was being answered (the questions are asked one at a time).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rag.insights.evaluation.golden import GoldenItem
from rag.insights.evaluation.run import Scored, run_eval, summarise
from rag.model.answers import Answer, Question
from rag.model.types import AccessScope, Passage
from rag.runtime import Candor, build_answerer
from tests.fakes.writers import KINDS, HallucinatingWriter, Planted, mentions, plain

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "sample" / "golden.yaml"
HANDBOOK = REPO / "sample" / "handbook"

Fate = Literal["delivered", "dropped", "re-cited", "withheld", "unchecked"]
"""What became of a planted hallucination. delivered: in the answer's text or sentences (a moved citation:
its sentence delivered citing the wrong source); dropped: the critic rejected it and it was withheld;
re-cited: the critic rejected it and the claim rescue found a passage that does state it (only a true
sentence can be re-cited: a moved citation); withheld: the critic passed it and the focus check held it
back; unchecked: its draft never reached the critic (a second hop re-drafted the answer)."""
FATES: tuple[Fate, ...] = ("delivered", "dropped", "re-cited", "withheld", "unchecked")
CAUGHT: frozenset[Fate] = frozenset({"dropped", "re-cited"})
"""The fates in which the critic rejected the planted sentence."""


def handbook_text() -> str:
    """Every handbook document and golden question: text a planted value or sentence must not occur in."""
    documents = [path.read_text(encoding="utf-8") for path in sorted(HANDBOOK.iterdir())]
    return "\n\n".join([*documents, GOLDEN.read_text(encoding="utf-8")])


def writer_core(candor: Candor, base_url: str, **settings: Any) -> Candor:
    """Candor as `candor eval` builds it with `CANDOR_WRITER=openai:writer-model` and `OPENAI_BASE_URL`,
    the model writing every answer (`CANDOR_MODEL_ROLE=write`, `CANDOR_EXTRACTIVE_FIRST=false`): every
    planted draft meets the critic."""
    chosen = {
        "writer": "openai:writer-model",
        "openai_base_url": base_url,
        "llm_attempts": 2,
        "model_role": "write",
        "extractive_first": False,
        **settings,
    }
    configured = candor.settings.model_copy(update=chosen)
    answerer = build_answerer(configured, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    return dataclasses.replace(candor, settings=configured, answerer=answerer)


@dataclass(frozen=True, slots=True)
class Asked:
    answer: Answer
    planted: tuple[Planted, ...]
    """The hallucinations planted in the drafts of this answer."""


@dataclass(frozen=True, slots=True)
class Outcome:
    planted: Planted
    answer: Answer
    fate: Fate
    reasons: tuple[str, ...]
    """The critic's reasons when it dropped it, the rescue's verdict when the rescue re-cited it, the focus
    check's when it withheld it."""


@dataclass(frozen=True, slots=True)
class GoldenRun:
    results: list[Scored]
    asked: list[Asked]
    """Every answer in the order asked (a restricted question twice: with its group, then without)."""
    requests: int
    """Writer requests the fake answered (0 for the offline writer)."""

    @property
    def answers(self) -> list[Answer]:
        return [a.answer for a in self.asked]

    @property
    def outcomes(self) -> list[Outcome]:
        return [fate(p, a.answer) for a in self.asked for p in a.planted]


async def eval_golden(
    core: Candor, items: Sequence[GoldenItem], kb: str, writer: HallucinatingWriter | None = None
) -> GoldenRun:
    """The real `run_eval` over `items` with `core` (what `candor eval` runs), every answer kept."""
    asked: list[Asked] = []
    first = writer.requests if writer is not None else 0

    async def ask(question: Question) -> Answer:
        before = len(writer.planted) if writer is not None else 0
        answer = await core.answer(question)
        asked.append(Asked(answer, tuple(writer.planted[before:]) if writer is not None else ()))
        return answer

    async def search(text: str, scope: AccessScope) -> list[Passage]:
        return await core.retriever.run(text, scope, k=5)

    async def reranked(text: str, scope: AccessScope) -> list[Passage]:
        return [r.passage for r in await core.rerank(text, scope)]

    await core.warm_up()
    results = await run_eval(items, ask, search, kb=kb, rerank=reranked)
    return GoldenRun(results, asked, writer.requests - first if writer is not None else 0)


def delivered(planted: Planted, answer: Answer) -> bool:
    """Is the hallucination in what the asker reads? A moved citation: its sentence cites the wrong source."""
    if planted.kind == "citation":
        wrong = {s.n for s in answer.sources if (s.url or s.document) == planted.wrong_source}
        return any(same(s.text, planted.text) and wrong & set(s.citations) for s in answer.sentences)
    return mentions(answer.text, planted.marker) or any(mentions(s.text, planted.marker) for s in answer.sentences)


def fate(planted: Planted, answer: Answer) -> Outcome:
    rescued = tuple(
        f"rejected by the critic, then re-cited by the claim rescue to {r['passage']} (score {r['score']})"
        for r in rescues(answer)
        if r["rescued"] and same(r["sentence"], planted.text)
    )
    if delivered(planted, answer):
        return Outcome(planted, answer, "delivered", rescued or ("passed the critic",))
    rejected = [d for d in answer.dropped if d.stage == "critic" and same(d.text, planted.text)]
    if rejected:
        return Outcome(planted, answer, "dropped", tuple(r for d in rejected for r in d.reasons))
    if rescued:
        return Outcome(planted, answer, "re-cited", rescued)
    withheld = [d for d in answer.dropped if d.stage == "focus" and same(d.text, planted.text)]
    if withheld:
        return Outcome(planted, answer, "withheld", tuple(r for d in withheld for r in d.reasons))
    return Outcome(planted, answer, "unchecked", ())


def rescues(answer: Answer) -> list[dict[str, Any]]:
    """The claim rescue's rows (rag/pipeline/rescue.py): every sentence the critic rejected, rescued or not."""
    return [r for g in answer.gates if g.gate == "rescue" for r in g.details.get("sentences", ())]


def same(a: str, b: str) -> bool:
    return plain(a).rstrip(". ") == plain(b).rstrip(". ")


def planted_table(outcomes: Sequence[Outcome]) -> str:
    """Kinds × fates, with the critic's catches (dropped + re-cited) and totals."""
    header = ("kind", "planted", "caught", *FATES)
    rows = [header]
    for kind in (*KINDS, "total"):
        mine = [o for o in outcomes if kind in ("total", o.planted.kind)]
        counts = [sum(o.fate == f for o in mine) for f in FATES]
        rows.append((kind, str(len(mine)), str(sum(o.fate in CAUGHT for o in mine)), *map(str, counts)))
    return _columns(rows)


def golden_table(runs: dict[str, GoldenRun]) -> str:
    """The golden metrics of each run side by side, every rate with its counts."""
    summaries = {name: summarise(run.results) for name, run in runs.items()}
    metrics = [
        *((f"route {route}", ("routes", route)) for route in ("answered", "low_confidence", "abstained")),
        ("keyword accuracy (delivered answerable)", ("keyword_accuracy",)),
        ("abstention on unanswerable", ("abstention_on_unanswerable",)),
        ("wrong abstention on answerable", ("wrong_abstention_on_answerable",)),
        ("citations valid", ("citations_valid",)),
        ("restricted leaks", ("restricted_leaks",)),
        ("critic dropped share of drafted sentences", ("critic_dropped_share",)),
    ]
    rows = [("", *runs)]
    for label, path in metrics:
        rows.append((label, *(_rate(_at(summaries[name], path)) for name in runs)))
    rows.append(("answers (restricted questions twice)", *(str(len(run.asked)) for run in runs.values())))
    rows.append(("answers delivered", *(str(sum(not a.abstained for a in run.answers)) for run in runs.values())))
    return _columns(rows)


def report(run: GoldenRun, writer: HallucinatingWriter, offline: GoldenRun | None = None) -> str:
    """What `pytest -s` and the benchmark print: the plantings, their fates, the golden metrics."""
    outcomes = run.outcomes
    lines = [
        f"writer requests: {run.requests}; hallucinations planted, one in every {writer.every} requests: "
        f"{len(outcomes)} (expected {run.requests // writer.every})",
        planted_table(outcomes),
    ]
    for o in outcomes:
        if o.fate not in CAUGHT:
            where = f"cites {o.planted.wrong_source}" if o.planted.wrong_source else repr(o.planted.marker)
            lines.append(f"  {o.fate}: {o.planted.kind} {where} in {o.planted.text!r} ({o.planted.question})")
            lines.extend(f"    {reason}" for reason in o.reasons)
    runs = {"model writer (fake)": run, **({"offline extractive": offline} if offline is not None else {})}
    lines += ["", golden_table(runs)]
    for name, r in runs.items():
        lines.append(f"wrong abstentions, {name}: {', '.join(wrong_abstentions(r)) or 'none'}")
    return "\n".join(lines)


def wrong_abstentions(run: GoldenRun) -> list[str]:
    return [r.item.id for r in run.results if r.item.answerable and r.route == "abstained"]


def _at(summary: dict[str, Any], path: Sequence[str]) -> dict[str, Any]:
    for key in path:
        summary = summary[key]
    return summary


def _rate(value: dict[str, Any]) -> str:
    return f"{value['n']}/{value['of']}" + (f" ({value['rate']:.0%})" if value["rate"] is not None else "")


def _columns(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    )
