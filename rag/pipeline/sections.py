"""Open questions answered by the section that answers them (issue 40, item 3).

"How do we hook up Okta SSO?", "my automations stopped mid month, what's going on?", "what are the
different user roles?": real support questions whose answer is a section (numbered steps, the
kinds of a thing, symptom and fix), not one sentence. The extractive writer answered them with the
single best-scored sentence, which mentions the subject and rarely answers ("For an overview of
triggers, conditions and actions, see About automations.").

For an open question (`is_open`), the writer instead quotes a short contiguous extract of one
section (`section_extract`): the leading sentences of the first of the reranker's three best
passages whose own section heading (the last step of its heading path) names a word of the
question's subject, in order, each cited. When the best passages have sections but none is named
the part is left unanswered (and a person offered), not answered with a stray sentence; when they
have no sections at all (`has_sections`), it is answered by its best sentence like any question. The critic and the
relevance gate judge an extract like any answer. Measured in docs/answering.md ("Open questions").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.model.evidence import Ranked, ScoredSentence
from rag.pipeline.relevance import CHECKED_KINDS
from rag.pipeline.understand import answer_type
from rag.text.facts import clean_sentence, content_words
from rag.text.quotable import about_the_page, asks, looks_like_instruction, readable

MAX_SENTENCES = 8
"""An extract holds at most this many sentences (a list of steps is one sentence a step)..."""
MAX_CHARACTERS = 900
"""... and at most this many characters, whichever comes first (at least one sentence)."""
SECTIONS_CONSIDERED = 3
"""Only the reranker's best few passages may give the section: a heading further down matches by
chance more often than it answers."""

_OPEN = re.compile(
    r"^(?:tell me (?:about|more about)\b|what (?:are|is) the (?:[\w-]+\s+){0,2}"
    r"(?:types?|kinds?|options?|ways?|roles?|steps?|levels?)\b|what (?:types?|kinds?|options?) of\b"
    r"|how (?:does|do|can|should) (?!much\b|many\b|long\b|often\b|far\b|big\b|old\b)\w+"
    r"|what (?:should|can) (?:i|we) do\b|why (?:is|are|does|do|did|can't|won't|isn't|aren't|doesn't)\b)",
    re.IGNORECASE,
)
_TROUBLE = re.compile(
    r"\b(?:keeps? (?:on )?\w+ing|stopped|won't|wont|doesn't|doesnt|isn't|isnt|aren't|can't|cant"
    r"|not (?:working|getting|showing)|fails?|failing|broken|errors?|stuck|missing)\b",
    re.IGNORECASE,
)
_GENERIC = content_words(
    "how do does can could should would what which why when where who tell about more get getting got make "
    "use using set up way ways thing things work working type types kind kinds option options different "
    "someone anyone our my your we i you it this that there fix help need want know another other else really "
    "keep keeps kept stop stopped going happen happening go goes possible able allowed still anymore"
)
"""Words that say the question is open, not what it is about: no heading is matched on them."""


def is_open(question: str) -> bool:
    """A how-to, "tell me about", "what are the kinds of", "why does" or troubleshooting question
    ("my rules keep failing, what should I do?"): one asking for an explanation, not a value."""
    text = clean_sentence(question).lower().strip()
    wanted = answer_type(text)
    if wanted in CHECKED_KINDS:  # "how long does Beacon keep check results?" asks for a value
        return False
    return wanted == "procedure" or bool(_OPEN.match(text)) or bool(_TROUBLE.search(text))


_NUMBERED = re.compile(r"\b[\w.-]*\d[\w.-]*\b")


def subject_words(text: str) -> set[str]:
    """What the text is about: its content words and its numbers and codes ("429", "v2.3")."""
    return (content_words(text) | {m.lower().strip(".-") for m in _NUMBERED.findall(text)}) - _GENERIC


def _section_heading(passage_heading: str) -> str:
    return passage_heading.rsplit(" > ", 1)[-1]


def has_sections(ranked: Sequence[Ranked]) -> bool:
    """Whether any of the best passages sits in a section of its own (a heading below the
    document's title). Text without sections (a SQuAD paragraph, a page of one heading) has no
    section to quote, so an open question about it is answered as any other, by its best sentence."""
    return any(_section_heading(e.passage.heading) != e.passage.heading for e in ranked[:SECTIONS_CONSIDERED])


def section_extract(question: str, ranked: Sequence[Ranked]) -> list[ScoredSentence]:
    """The leading sentences of the first of the best passages whose own section heading (not the
    document's title: every section of the page shares that) names part of the question's subject;
    empty when none does."""
    wanted = subject_words(question)
    for entry in ranked[:SECTIONS_CONSIDERED]:
        section = _section_heading(entry.passage.heading)
        if section == entry.passage.heading:
            continue
        extract = _leading(entry.sentences) if subject_words(section) & wanted else []
        if extract:
            return extract
    return []


def _leading(sentences: Sequence[ScoredSentence]) -> list[ScoredSentence]:
    """The passage's quotable sentences from its start, in order, within the extract's limits."""
    chosen: list[ScoredSentence] = []
    length = 0
    for s in sorted(sentences, key=lambda s: s.position):
        text = clean_sentence(s.text)
        if not readable(text) or asks(s.text) or about_the_page(s.text) or looks_like_instruction(s.text):
            continue
        if chosen and (len(chosen) >= MAX_SENTENCES or length + len(text) > MAX_CHARACTERS):
            break
        chosen.append(s)
        length += len(text)
    return chosen
