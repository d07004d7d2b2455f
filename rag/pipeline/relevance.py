"""Does the answer state what was asked? A part's supported sentences must hold the kind of value
the part asks for (rag/pipeline/understand.py, `answer_type`): an amount, count or duration for
"how many / how much / how long", a date or time for "when", a place for "which city / where is
... based". "Acme is a hybrid company." is true, cited and about the subject, and it is no
answer to "Which office does the design team work from?": delivering it would look checked while
saying nothing. Such a part is unanswered, and the completeness note says so.

An amount or a date counts in a clause about what the question names: "On Team+ you get a first
reply within 8 working hours, and Enterprise customers have a dedicated line" states no reply time
for Enterprise, nor does a clause saying none of the question's words ("...; events can be
replayed for up to 7 days" for how long a webhook may take to answer). A place is a name in a
place's position ("based in Dublin", "Reno, Nevada", "Repair centre: Tilburg"), not any name the
question lacks.

Person, yes/no, procedure and other questions have no value to check: any supported sentence may
answer them ("who approves leave?" is answered by "your line manager" as often as by a name).

Whatever the kind, a sentence about another case than the one asked answers nothing
(rag/text/swaps.py, polarity.py): "permanently assigned" for "temporarily assigned", the ninth
century for the eighth, "Each see has its own bishop." for "Which see does not have one?".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag.pipeline.understand import answer_type
from rag.text.facts import content_words, network_addresses, values
from rag.text.measures import answers_measure, asked_measure, counts_measure
from rag.text.names import codes, mentions, names
from rag.text.polarity import reversed_polarity
from rag.text.swaps import swapped
from rag.text.switches import off

CHECKED_KINDS = frozenset({"quantity", "date", "place", "address"})
_NOT_AMOUNTS = frozenset({"date", "address", "version"})
"""Person is not checked: "who approves leave?" is answered by "your manager" as often as by a name."""
FROM_EVENT = re.compile(
    r"\bwithin\s+(?:\w+\s+){0,2}(?:days?|weeks?|months?|hours?|years?|minutes?)\b"
    r"|\b(?:days?|weeks?|months?|hours?|years?)\s+(?:of|after|before|from|following)\b",
    re.IGNORECASE,
)
"""A time counted from an event: "within 28 days", "14 days after delivery" (a deadline's answer)."""
_WHEN = re.compile(
    r"\b(?:1\d{3}|20\d{2}|\d{3})\b(?!\s*(?:%|percent|people|users|km|miles))|\b\d{2,4}s\b"
    r"|\b\d+(?:st|nd|rd|th)\s+(?:century|centuries|millennium)\b|\bcentur(?:y|ies)\b|\bdecades?\b"
    r"|\byears?\s+(?:ago|before|after|later|earlier)\b|\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\bnoon\b|\bmidnight\b"
    r"|\b(?:spring|summer|autumn|fall|winter|yesterday|today|tomorrow|tonight|weekends?|weekdays?)\b"
    r"|\b(?:hourly|nightly|daily|weekly|fortnightly|monthly|quarterly|annually|yearly)\b"
    r"|\b(?:each|every|per|next|last|first)\s+(?:day|week|month|quarter|year|morning|evening|night)\b"
    r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b"
    r"|\bday of (?:the|each|every)\b"
    rf"|{FROM_EVENT.pattern}",
    re.IGNORECASE,
)
_NAMED_WHEN = re.compile(
    r"\b(?:War|Era|Dynasty|Revolution)\b|\b(?:January|February|March|April|May|June|July|August|September"
    r"|October|November|December)\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d"
)
"""What answers "when": a year, a century, a decade, "years ago", a time of day, a season, a weekday,
"each month", "nightly", a time from an event ("within 28 days", "14 days after delivery");
`_NAMED_WHEN`: a named war or era and a month, capitalised or beside a day ("you may cancel" is no
date)."""


_COUNT_WORD = re.compile(  # not "one": "combined in one mesh" counts nothing
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
    r"|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundreds?|thousands?"
    r"|millions?|billions?|dozens?|half|double|twice|several)\b",
    re.IGNORECASE,
)


_FREQUENCY = re.compile(
    r"\b(?:hourly|nightly|daily|weekly|fortnightly|monthly|quarterly|annually|yearly|once|twice)\b"
    r"|\b(?:each|every)\s+(?:hour|day|night|week|month|quarter|year)\b",
    re.IGNORECASE,
)


def states(wanted: str, sentence: str, question: str = "") -> bool:
    """Whether `sentence` holds a value of the kind `wanted` (answer types outside CHECKED_KINDS:
    always). A value counts only in a clause about what the question names (`_about_another`)."""
    if wanted in ("quantity", "date"):
        clauses = _PROSE_BREAK.split(sentence) if _ROW.match(sentence) else _CLAUSE_BREAK.split(sentence)
        own = [c for c in clauses if not _about_another(c, sentence, question)]
        if len(clauses) > 1:  # a clause saying none of the question's words is about something else
            asked = content_words(question)
            own = [c for c in own if content_words(c) & asked]
        return any(_states(wanted, c, question) for c in own)
    return _states(wanted, sentence, question)


_PROSE_BREAK = re.compile(r",\s+(?:and|but|while|whereas)\s+|\s+(?:whereas|while)\s+")
_CLAUSE_BREAK = re.compile(rf";\s+|{_PROSE_BREAK.pattern}")
_ROW = re.compile(r"^[^:;]{1,40}:\s+[^;]+;")
"""A table row read with its header ("Plan: Team+; Uptime commitment: 99.9%"): its cells are all
about the row's first one, so they are not clauses of their own."""


def _about_another(clause: str, sentence: str, question: str) -> bool:
    """A clause naming another thing and not the question's, in a sentence that names the
    question's elsewhere: "On Team+ you get a first reply within 8 hours, and Enterprise customers
    have a dedicated line" says nothing of Enterprise's reply time."""
    asked = names(question) | codes(question)
    if not asked or not any(mentions(sentence, n) for n in asked):
        return False
    if any(mentions(clause, n) for n in asked):
        return False
    return any(not mentions(question, n) for n in names(clause) | codes(clause))


def _states(wanted: str, sentence: str, question: str) -> bool:
    if wanted == "quantity":
        in_codes = " ".join(codes(sentence))  # the 9 of "RT-9" counts nothing
        given = {v.key for v in values(question)}  # "uptime was 99.5%: what credit?" asks for another
        # a date, an address or a version is no amount: "14 Wharf Street" says nothing of "how much"
        # and a measure is no other measure: "10 miles northwest of" gives no population
        measure = asked_measure(question)
        stated = [
            v
            for v in values(sentence)
            if v.kind not in _NOT_AMOUNTS
            and v.surface not in in_codes
            and v.key not in given
            and answers_measure(measure, v, sentence)
        ]
        counted = any(counts_measure(measure, sentence[m.end() :]) for m in _COUNT_WORD.finditer(sentence))
        often = "how often" in question.lower() and bool(_FREQUENCY.search(sentence))
        return bool(stated) or counted or often
    if wanted == "date":
        dated = any(v.kind in ("date", "time") for v in values(sentence))
        return dated or bool(_WHEN.search(sentence) or _NAMED_WHEN.search(sentence))
    if wanted == "address":  # "Always call the base URL for your region." gives none
        return bool(network_addresses(sentence))
    if wanted == "place":  # a name the question does not say, not the sentence's first word ("Acme is ...")
        _, colon, value = sentence.partition(": ")
        if colon and value.strip().rstrip(".") in network_addresses(value):
            return False  # "US base URL: https://us.api.example" gives an address, not a place
        return any(not mentions(question, n) and _placed(sentence, n) for n in names(sentence))
    return True


_LOCATIVE = re.compile(
    r"\b(?:in|at|from|near|to|into|across|throughout|around|outside|inside|within|via|towards?"
    r"|based|located|headquartered|situated)\s+(?:(?:the|a|an|its|their|our|and)\s+)?$",
    re.IGNORECASE,
)
_PLACE_KEY = re.compile(
    r"\b(?:region|location|office|offices|centre|center|city|town|country|countries|address|headquarters"
    r"|hq|site|campus|based|hub|hubs|venue|where|place|state|province)\b[^:;]{0,20}:[^:;]*$",
    re.IGNORECASE,
)
"""A place's key before the name, in the same cell: "Repair centre: Tilburg", "Support hubs: Dublin and Austin"."""
_REGION_AFTER = re.compile(r",\s+[A-Z][a-z]")
_TOWN_BEFORE = re.compile(r"\b[A-Z][\w.'-]*,\s+$")


def _placed(sentence: str, name: str) -> bool:
    """A name in a place's position: after a locative word ("based in Dublin", "from the
    Netherlands"), as a town and its region ("Reno, Nevada"), or as the value of a place's key
    ("Repair centre: Tilburg"). "This SLA is part of the agreement between Brightloom Labs Ltd.
    and customers" names no place."""
    for found in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", sentence):
        before, after = sentence[: found.start()], sentence[found.end() :]
        if _LOCATIVE.search(before) or _PLACE_KEY.search(before):
            return True
        if _REGION_AFTER.match(after) or _TOWN_BEFORE.search(before):
            return True
    return False


def another_case(question: str, sentence: str) -> bool:
    """The sentence says the same thing of another case than the question asks about (`why_another_case`)."""
    return why_another_case(question, sentence) is not None


def why_another_case(question: str, sentence: str) -> str | None:
    """How the sentence is about another case than the question asks about, or None: a different
    number, an opposite, another name, two names trading places ("opposite: 'temporarily' ->
    'permanently'"), or nothing of the question's "not" (rag/text/swaps.py, polarity.py). A yes/no question is
    answered by exactly that ("Is it open on Sundays?" - "It is closed on Sundays.")."""
    if answer_type(question) == "yesno":
        return None
    swap = swapped(question, sentence)
    if swap is not None:
        return f"{swap.kind}: {swap.asked!r} -> {swap.stated!r}"
    if reversed_polarity(question, sentence):
        return "polarity: the question's 'not' is not in the sentence"
    return None


@dataclass(frozen=True, slots=True)
class Relevance:
    """One part's check: the kind of answer it asks for, and whether its answer states one."""

    wanted: str
    stated: bool
    other_cases: tuple[tuple[str, str], ...] = ()
    """(sentence, why) for each sentence left out as being about another case than the one asked."""

    def as_json(self) -> dict[str, Any]:
        return {
            "wanted": self.wanted,
            "stated": self.stated,
            "other_cases": [{"sentence": s, "why": why} for s, why in self.other_cases],
        }


def relevance(part: str, sentences: Sequence[str]) -> Relevance:
    """Whether the part's sentences, those about another case left out, state what it asks for."""
    wanted = answer_type(part)
    why = {s: why_another_case(part, s) for s in sentences}
    own = [s for s in sentences if why[s] is None]
    checked = wanted in CHECKED_KINDS and not off(f"relevance-{wanted}")  # switched off: as for "who"
    stated = bool(own) and (not checked or any(states(wanted, s, part) for s in own))
    return Relevance(wanted, stated, tuple((s, w) for s, w in why.items() if w is not None))
