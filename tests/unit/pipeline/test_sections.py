"""`rag.pipeline.sections`: open questions answered by the section whose heading names their subject."""

from __future__ import annotations

import pytest

from rag.model.evidence import PartEvidence, Ranked, ScoredSentence, SynthesisRequest
from rag.model.types import Passage
from rag.pipeline.sections import MAX_SENTENCES, has_sections, is_open, section_extract
from rag.pipeline.synthesis import ExtractiveSynthesizer
from tests.unit.pipeline.stage_data import passage

TITLE = "Plotwise for Slack"


def section(chunk_id: int, heading: str, sentences: list[str], score: float) -> Ranked:
    """A passage of the Slack article under `heading` (a path below the title), its sentences scored
    alike: the extract is chosen by heading, not by sentence score."""
    source: Passage = passage(
        chunk_id, " ".join(sentences), title=TITLE, heading=f"{TITLE} > {heading}" if heading else TITLE
    )
    scored = tuple(ScoredSentence(source, i, t, score, score, 0.5, 0.0) for i, t in enumerate(sentences))
    return Ranked(source, score, scored)


INTRO = section(1, "", ["Bring Plotwise updates into the Slack channels where your team already talks."], 0.85)
POST = section(
    2,
    "Post a project's updates to a channel",
    [
        "Open the project and go to Project settings > Notifications > Slack.",
        "Click Add channel and pick the channel.",
        "Type /invite @Plotwise in a private channel first.",
    ],
    0.73,
)
STOPPED = section(
    3, "Troubleshooting > Channel updates stopped arriving", ["The Admin who connected Slack left."], 0.65
)


@pytest.mark.parametrize(
    ("question", "open_"),
    [
        ("how do I get task updates posted into a slack channel?", True),
        ("what are the different user roles in a workspace?", True),
        ("Tell me about spousal support", True),
        ("slack updates stopped showing up in our channel since our admin left", True),
        ("why does my rule show Owner missing?", True),
        ("How many days of annual leave do I get?", False),
        ("How long does a refund take?", False),
        ("What does the Team plan cost per person?", False),
        ("When is the office closed?", False),
        ("How long does Beacon keep check results?", False),
        ("my VPN keeps dropping on hotel wifi", True),
    ],
)
def test_open_questions_ask_for_an_explanation_not_a_value(question: str, open_: bool) -> None:
    assert is_open(question) is open_


def test_the_section_whose_own_heading_names_the_subject_is_quoted_from_its_start() -> None:
    extract = section_extract(
        "how do I get task updates from a project posted into a slack channel?", (INTRO, POST, STOPPED)
    )
    assert [s.text for s in extract] == [
        "Open the project and go to Project settings > Notifications > Slack.",
        "Click Add channel and pick the channel.",
        "Type /invite @Plotwise in a private channel first.",
    ]


def test_the_page_title_matches_every_section_and_so_chooses_none() -> None:
    # "slack" is in the page's title, which every section of it shares: the intro is not chosen for it
    assert section_extract("how do I use slack?", (INTRO,)) == []


def test_no_heading_naming_the_subject_no_extract() -> None:
    assert section_extract("how do I set one task as blocking another?", (INTRO, POST, STOPPED)) == []


def test_only_the_best_three_passages_may_give_the_section() -> None:
    far = section(9, "Import from Trello", ["Open Import and pick Trello."], 0.3)
    assert section_extract("how do I import from trello?", (INTRO, POST, STOPPED, far)) == []
    assert [s.text for s in section_extract("how do I import from trello?", (INTRO, far))] == [
        "Open Import and pick Trello."
    ]


def test_an_extract_is_short() -> None:
    steps = [f"Step {n}: do the {n}th thing with the export file now." for n in range(1, 20)]
    extract = section_extract("how do I export a project?", (section(4, "Export a project", steps, 0.7),))
    assert len(extract) == MAX_SENTENCES and [s.position for s in extract] == list(range(MAX_SENTENCES))


async def test_the_writer_answers_an_open_question_with_the_extract_each_sentence_cited() -> None:
    question = "how do I get task updates from a project posted into a slack channel?"
    evidence = PartEvidence(question, (INTRO, POST, STOPPED), True)
    context = (INTRO.passage, POST.passage, STOPPED.passage)
    draft = await ExtractiveSynthesizer(answer_threshold=0.6).synthesise(
        SynthesisRequest(question, (evidence,), context, 1)
    )
    assert [(s.text, s.citations) for s in draft.sentences] == [(s.text, (2,)) for s in POST.sentences]
    # a question asking for a value is answered as before: the best sentence
    value = "How many channels can a project post to?"
    draft = await ExtractiveSynthesizer(answer_threshold=0.6).synthesise(
        SynthesisRequest(value, (PartEvidence(value, (INTRO, POST, STOPPED), True),), context, 1)
    )
    assert [s.citations for s in draft.sentences] == [(1,)]
    # an open question no section heading names is left unanswered (a person is offered instead)
    other = "how do I set one task as blocking another?"
    draft = await ExtractiveSynthesizer(answer_threshold=0.6).synthesise(
        SynthesisRequest(other, (PartEvidence(other, (INTRO, POST, STOPPED), True),), context, 1)
    )
    assert draft.sentences == () and draft.unanswered_parts == (0,)
    # and with sections off, an open question is answered as before
    off = await ExtractiveSynthesizer(answer_threshold=0.6, sections=False).synthesise(
        SynthesisRequest(question, (evidence,), context, 1)
    )
    assert [s.citations for s in off.sentences] == [(1,)]


async def test_text_without_sections_answers_an_open_question_by_its_best_sentence() -> None:
    # a SQuAD paragraph or a page of one heading has no section to quote: an open question about it
    # is answered like any other, not left unanswered for want of a heading
    plain = section(5, "", ["Rotating the keys weekly is done by the on-call engineer from the admin page."], 0.9)
    question = "how does the on-call engineer rotate the keys?"
    assert not has_sections((INTRO, plain)) and has_sections((INTRO, POST))
    draft = await ExtractiveSynthesizer(answer_threshold=0.6).synthesise(
        SynthesisRequest(question, (PartEvidence(question, (plain, INTRO), True),), (plain.passage, INTRO.passage), 1)
    )
    assert [(s.text, s.citations) for s in draft.sentences] == [(plain.sentences[0].text, (1,))]
