"""Does the answer state what was asked? A part's supported sentences must hold the kind of value
the part asks for (rag/pipeline/understand.py, `answer_type`): an amount, count or duration for
"how many / how much / how long", a date for "when", a person for "who", a place for "which city /
where is ... based". "Acme is a hybrid company." is true, cited and about the subject, and it is no
answer to "Which office does the design team work from?": delivering it would look checked while
saying nothing. Such a part is unanswered, and the completeness note says so.

Yes/no, procedure and other questions have no value to check: any supported sentence may answer them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag.pipeline.understand import answer_type
from rag.text.facts import values
from rag.text.names import new_names, people

CHECKED_KINDS = frozenset({"quantity", "date", "place"})
"""Person is not checked: "who approves leave?" is answered by "your manager" as often as by a name."""
_WHEN = re.compile(
    r"\b(?:1\d{3}|20\d{2}|\d{3})\b(?!\s*(?:%|percent|people|users|km|miles))|\b\d{2,4}s\b"
    r"|\b\d+(?:st|nd|rd|th)\s+(?:century|centuries|millennium)\b|\bcentur(?:y|ies)\b|\bdecades?\b"
    r"|\byears?\s+(?:ago|before|after|later|earlier)\b|\b(?:War|Era|Age|Dynasty|Period|Revolution)\b"
    r"|\b(?:spring|summer|autumn|fall|winter|yesterday|today|tomorrow|weekly|monthly|daily|annually)\b"
    r"|\b(?:january|february|march|april|may|june|july|august|september|october|november|december)\b",
    re.IGNORECASE,
)
"""What answers "when": a year, a century, a decade, "years ago", an era or war, a season, a month."""


_COUNT_WORD = re.compile(  # not "one": "combined in one mesh" counts nothing
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
    r"|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundreds?|thousands?"
    r"|millions?|billions?|dozens?|half|double|twice|several)\b",
    re.IGNORECASE,
)


def states(wanted: str, sentence: str, question: str = "") -> bool:
    """Whether `sentence` holds a value of the kind `wanted` (answer types outside CHECKED_KINDS: always)."""
    if wanted == "quantity":
        return any(v.kind != "date" for v in values(sentence)) or bool(_COUNT_WORD.search(sentence))
    if wanted == "date":
        return any(v.kind in ("date", "time") for v in values(sentence)) or bool(_WHEN.search(sentence))
    if wanted == "person":
        return bool(people(sentence) - people(question))
    if wanted == "place":
        return bool(new_names(sentence, question))
    return True


@dataclass(frozen=True, slots=True)
class Relevance:
    """One part's check: the kind of answer it asks for, and whether its answer states one."""

    wanted: str
    stated: bool

    def as_json(self) -> dict[str, Any]:
        return {"wanted": self.wanted, "stated": self.stated}


def relevance(part: str, sentences: Sequence[str]) -> Relevance:
    wanted = answer_type(part)
    return Relevance(wanted, wanted not in CHECKED_KINDS or any(states(wanted, s, part) for s in sentences))
