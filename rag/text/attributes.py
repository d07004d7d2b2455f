"""Which attribute of a subject a value is given for: sick leave is not holiday, an extended warranty
is not the standard one, the minimum firmware is not the current one, days in the office are not
days off.

Two sources disagree only when both give a value for the same attribute of the same thing
(rag/pipeline/contradictions.py). A value's clause names its attribute with a word of one of these
families; two clauses naming different attributes, or one naming an attribute the other does not,
state two facts, not one fact twice. When unsure, there is no conflict note: a false note tells the
reader the documents are unreliable when they are not.
"""

from __future__ import annotations

import re

from rag.text.names import codes, names

_ATTRIBUTES: dict[str, str] = {
    # kinds of leave
    "sick": "sick leave",
    "sickness": "sick leave",
    "illness": "sick leave",
    "holiday": "holiday",
    "holidays": "holiday",
    "vacation": "holiday",
    "annual leave": "holiday",
    "paid time off": "holiday",
    "pto": "holiday",
    "parental": "parental leave",
    "maternity": "parental leave",
    "paternity": "parental leave",
    "adoption": "parental leave",
    "bereavement": "bereavement leave",
    "compassionate": "bereavement leave",
    "unpaid": "unpaid",
    "study leave": "study leave",
    # where work is done
    "in the office": "office",
    "on-site": "office",
    "onsite": "office",
    "remote": "remote",
    "remotely": "remote",
    "from home": "remote",
    "abroad": "abroad",
    "another country": "abroad",
    # which of a product's terms
    "extended": "extended",
    "standard": "standard",
    # which version
    "minimum": "minimum",
    "at least": "minimum",
    "or later": "minimum",
    "or newer": "minimum",
    "requires": "minimum",
    "required": "minimum",
    "current": "current",
    "latest": "current",
    "newest": "current",
}
_WORD = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _ATTRIBUTES), key=len, reverse=True)) + r")\b", re.I)


def attributes(text: str) -> frozenset[str]:
    """The attributes `text` names ("12 days of paid sick leave": sick leave), not counting words of
    a name or code ("Care+ Standard" is a product, not the standard terms of one)."""
    for name in sorted(names(text) | codes(text), key=len, reverse=True):
        text = text.replace(name, " ")
    return frozenset(_ATTRIBUTES[m.group(1).lower()] for m in _WORD.finditer(text))


def same_attribute(a: str, b: str) -> bool:
    """Both texts give their value for the same attribute: they name the same ones (or neither names any)."""
    return attributes(a) == attributes(b)
