"""`candor eval` on the sample golden set through the model writer, on a fake model that plants a hallucination
in every third draft (`tests.fakes.writers.HallucinatingWriter`): a changed number, an invented sentence, a
swapped plan or product name, a citation moved to an unrelated passage. None may be delivered, and the critic
must be what stopped each one it saw.

The core is built from the settings (`CANDOR_WRITER=openai:writer-model`, `OPENAI_BASE_URL` = the fake) over
the sample handbook in the real embedded Postgres, and the golden set is asked by the real `run_eval`. The
offline extractive writer answers the same set in the same session, for comparison. `pytest -s` prints the
counts (tests/planted_eval.py, `report`); benchmarks/llm_writer_eval.py prints the same over the cached home.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rag.insights.evaluation.golden import load_golden
from rag.runtime import Candor
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.teams_server import ingest_handbook
from tests.fakes.writers import KINDS, HallucinatingWriter, Models, mentions
from tests.planted_eval import (
    CAUGHT,
    GOLDEN,
    GoldenRun,
    delivered,
    eval_golden,
    handbook_text,
    report,
    rescues,
    same,
    writer_core,
)

pytestmark = pytest.mark.slow

EVERY = 3


@dataclass(frozen=True, slots=True)
class Runs:
    writer: HallucinatingWriter
    model: GoldenRun
    offline: GoldenRun


@pytest.fixture(scope="module")
async def runs(candor: Candor) -> Runs:
    kb = await ingest_handbook(candor, "llm-eval")
    items = load_golden(GOLDEN)
    writer = HallucinatingWriter(every=EVERY, avoid=handbook_text())
    async with FakeOpenAI() as fake:
        fake.responder = Models(writer)
        model = await eval_golden(writer_core(candor, fake.base_url), items, kb.name, writer)
        assert all(r.status == 200 for r in fake.chat_requests)  # every draft came from the fake writer
    offline = await eval_golden(candor, items, kb.name)
    print(f"\n{report(model, writer, offline)}")
    return Runs(writer, model, offline)


def test_hallucinations_were_planted_in_one_draft_in_three_of_every_kind(runs: Runs) -> None:
    planted = runs.writer.planted
    assert runs.model.requests == runs.writer.requests >= len(load_golden(GOLDEN))
    assert len(planted) == runs.model.requests // EVERY
    assert [p.request for p in planted] == list(range(EVERY, runs.model.requests + 1, EVERY))
    assert {p.kind for p in planted} == set(KINDS)
    assert sum(len(a.planted) for a in runs.model.asked) == len(planted)  # each one traced to its answer
    handbook = handbook_text()
    for p in planted:
        assert p.text != p.original
        if p.kind != "citation":  # a moved citation's sentence is true; its source is what is wrong
            assert not mentions(handbook, p.marker), p


def test_no_delivered_answer_contains_a_planted_hallucination(runs: Runs) -> None:
    leaks = [
        f"{p.kind}: {p.marker!r} in the answer to {a.answer.question!r}: {a.answer.text!r}"
        for a in runs.model.asked
        for p in runs.writer.planted
        if delivered(p, a.answer)
    ]
    assert not leaks, "\n".join(leaks)


def test_the_critic_rejected_every_planted_hallucination_it_saw(runs: Runs) -> None:
    outcomes = runs.model.outcomes
    missed = [o for o in outcomes if o.fate not in (*CAUGHT, "unchecked")]
    assert not missed, "\n".join(f"{o.fate}: {o.planted} {o.reasons}" for o in missed)
    assert all(o.planted.kind == "citation" for o in outcomes if o.fate == "re-cited")  # only a true sentence
    for o in outcomes:
        if o.fate == "unchecked":  # its draft was replaced by the draft over a second hop's passages
            assert any(g.gate == "bridge" for g in o.answer.gates), o.planted
    assert sum(o.fate in CAUGHT for o in outcomes) >= len(outcomes) // 2


async def test_the_stored_traces_show_the_same(candor: Candor, runs: Runs) -> None:
    """The traces in Postgres hold what the asker read and what the critic dropped: each planted sentence
    in its answer's trace as it fared (dropped, rescued, or delivered)."""
    for asked in runs.model.asked:
        trace = await candor.tracker.trace(asked.answer.trace_id)
        assert trace is not None
        assert trace["answer_text"] == asked.answer.text
        assert [s["text"] for s in trace["answer"]["sentences"]] == [s.text for s in asked.answer.sentences]
        assert [(d["text"], d["stage"]) for d in trace["dropped"]] == [(d.text, d.stage) for d in asked.answer.dropped]
        stored = [r for g in trace["gates"] if g["gate"] == "rescue" for r in g["details"]["sentences"]]
        assert stored == rescues(asked.answer)
        for o in (o for o in runs.model.outcomes if o.answer is asked.answer):
            if o.fate == "dropped":
                assert any(d["stage"] == "critic" and same(d["text"], o.planted.text) for d in trace["dropped"])
            elif o.fate == "re-cited":
                assert any(r["rescued"] and same(r["sentence"], o.planted.text) for r in stored)
            elif o.fate == "delivered" and o.planted.kind != "citation":
                assert mentions(trace["answer_text"], o.planted.marker)
