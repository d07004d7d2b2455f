"""Multi-hop questions by bridge retrieval: take the bridging name from the first hop's evidence.

Two shapes are read, both without a model:

- a description in place of a name: "the plan that includes single sign-on" → a first-hop
  sentence that says most of the description and names a plan ("... is available only on the
  Business plan") gives "the Business plan";
- a name linked to another: "customers on the Team plan" → a first-hop sentence naming the Team
  plan with a linking verb and another name ("The Team plan includes ... the Beacon product")
  gives "Beacon".

The question is rewritten with the bridging name and asked again; the bridging sentence is
cited in the answer, so the reader sees both hops.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from rag.model.evidence import Checked, Draft, DraftSentence, PartEvidence, Ranked, ScoredSentence
from rag.model.types import Passage
from rag.text.facts import clean_sentence, content_words
from rag.text.names import fold, mentions, names, new_names
from rag.text.quotable import readable

_RELATIVE = re.compile(
    r"\bthe (\w+) (?:that|which|with) (.+?)(?=\s+(?:cost|costs|is|are|do|does|have|has|keep|keeps|get|gets)\b|[?,]|$)",
    re.IGNORECASE,
)
_LINK = re.compile(r"\b(?:includes?|comes? with|uses?|is part of|contains?|provides?|bundles?)\b", re.IGNORECASE)
MIN_DESCRIPTION_COVERAGE = 0.6


@dataclass(frozen=True, slots=True)
class Bridge:
    question: str
    """The question with the bridging name in place."""
    name: str
    sentence: ScoredSentence
    """The first-hop sentence that links the two."""


def describes(question: str) -> bool:
    """Whether the question points at something by a description ("the plan that includes X")."""
    return _RELATIVE.search(question) is not None


def find_bridge(question: str, ranked: Sequence[Ranked]) -> Bridge | None:
    sentences = [s for r in ranked for s in r.sentences]
    return _by_description(question, sentences) or _by_link(question, sentences)


def _by_description(question: str, sentences: Sequence[ScoredSentence]) -> Bridge | None:
    m = _RELATIVE.search(question)
    if m is None:
        return None
    head, description = m.group(1), m.group(2)
    wanted = content_words(description)
    if not wanted:
        return None
    named_head = re.compile(rf"\b([A-Z][\w-]*(?: [A-Z][\w-]*)*) {re.escape(head)}s?\b")
    for s in sorted(sentences, key=lambda s: -s.score):
        if len(wanted & content_words(s.text)) / len(wanted) < MIN_DESCRIPTION_COVERAGE or not readable(s.text):
            continue  # the linking sentence is quoted: a whole one
        found = named_head.search(s.text)
        if found and found.group(1).lower() not in ("the", "a", "each", "every"):
            name = f"{found.group(1)} {head}"
            return Bridge(question[: m.start()] + f"the {name}" + question[m.end() :], name, s)
    return None


def _by_link(question: str, sentences: Sequence[ScoredSentence]) -> Bridge | None:
    asked = names(question)
    if not asked:
        return None
    for s in sorted(sentences, key=lambda s: -s.score):
        link = _LINK.search(s.text)
        if not link or not s.text[: link.start()].strip() or not readable(s.text):
            continue  # "Use the Tervane app ..." instructs; "If you want to use the API:" leads in
        for name in sorted(asked):
            if not mentions(s.text, name):
                continue
            others = sorted(new_names(s.text, question), key=lambda n: (-len(n.split()), n))
            others = [o for o in others if not _kin(o, name) and not _LINK.fullmatch(o)]
            if not others:
                continue
            phrase = re.compile(rf"\b(?:the )?{re.escape(name)}(?: plan| tier| product)?\b")
            rewritten = phrase.sub(others[0], question, count=1)
            if rewritten != question:
                return Bridge(rewritten, others[0], s)
    return None


def _kin(other: str, name: str) -> bool:
    """The same name grown or a sibling of it, not another thing: "Tervane Systems" of "Tervane",
    "Care+ Standard" of "Care+ Premium"."""
    return bool(set(fold(other).split()) & set(fold(name).split()))


@dataclass(frozen=True, slots=True)
class Bridged:
    bridge: Bridge
    evidence: PartEvidence
    """The second hop's evidence, the linking sentence ranked last."""


def with_bridges(draft: Draft, bridges: Mapping[int, Bridged], context: Sequence[Passage]) -> Draft:
    """The draft with each bridged part's linking sentence cited ahead of its answer."""
    numbers = {p.chunk_id: n for n, p in enumerate(context, 1)}
    sentences: list[DraftSentence] = []
    for s in draft.sentences:
        bridged = bridges.get(s.part)
        if bridged is not None and not any(x.part == s.part and x.origin is bridged.bridge.sentence for x in sentences):
            link = bridged.bridge.sentence
            sentences.append(DraftSentence(clean_sentence(link.text), (numbers[link.passage.chunk_id],), s.part, link))
        sentences.append(s)
    return replace(draft, sentences=tuple(sentences))


def without_lone_bridges(
    checked: Sequence[Checked], draft: Draft, bridges: Mapping[int, Bridged]
) -> tuple[Checked, ...]:
    """A linking sentence is delivered only with the answer it leads to: when the critic dropped
    that answer, the link alone would read as an answer to a question it does not answer."""
    links = {
        i for i, s in enumerate(draft.sentences) if s.part in bridges and s.origin is bridges[s.part].bridge.sentence
    }
    answered = {c.part for c in checked if c.supported and c.origin_index not in links}
    return tuple(c for c in checked if c.origin_index not in links or c.part in answered)
