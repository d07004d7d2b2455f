"""Splitting one message into the questions it asks: one part per question, each standing alone.

"When did Tervane stop selling the RT-9, and when did it stop getting security patches?" is two
parts, the second saying "RT-9" for "it"; "How much do the Team and Business plans cost?" is one
part per plan; "What are the price, user limit and retention of the Team plan?" one per attribute.
What the message says before it asks ("We're on Team+ in the EU.") is said to every part. A later
part that leans on the first through a pronoun it cannot resolve keeps the message whole.
"""

from __future__ import annotations

import re

from rag.text.names import codes, mentions, names

_WH = (
    r"(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|will|would|should"
    r"|may|must|has|have)"
)
_ASKS = re.compile(rf"^\s*{_WH}\b", re.IGNORECASE)


def reads_as_question(text: str) -> bool:
    """A question mark, or a question word first ("how do I ...", "is there ...")."""
    return "?" in text or bool(_ASKS.match(text))


_PART_BREAK = re.compile(
    rf"(?:,\s*|;\s*|\s+)(?:and|also|plus)\s+(?=(?:(?:for|in|at|by|to|from|until|since|with)\s+)?{_WH}\b)",
    re.IGNORECASE,
)
"""Where a second ask starts: "..., and how many ...", "... and for how many years ..."."""
PRONOUN = re.compile(r"\b(?:it|its|they|them|their|that one|this one|those|these)\b", re.IGNORECASE)
"""A pronoun: a part saying one leans on what was said before it."""


def split_parts(text: str) -> tuple[str, ...]:
    """Several questions in one message → one part each; a single question stays whole.

    Splits at question marks and at "and"/"also" before a question word; then a part asking about
    several named things that share a head noun ("the Team and Business plans") becomes one part
    per thing, and a part asking for a list of attributes ("the price, the user limit and the
    retention of the Team plan") one part per attribute. One thing with "and" in its name ("Beacon
    and Compass", "terms and conditions") and comparisons ("the difference between ...") stay whole.
    What the message says before it asks ("We're on Team+ in the EU.") is said to every part.
    """
    preamble, asked = said_before_asking(text)
    parts = _split(asked)
    if len(parts) < 2:
        return (text,)
    return tuple(f"{preamble} {part}" if preamble else part for part in parts)


_SENTENCE_END = re.compile(r"(?<=[.!])\s+(?=[A-Z])")


def said_before_asking(text: str) -> tuple[str, str]:
    """(the statements before the first question, the rest): "I'm in Perth. What's the fee ...?"."""
    sentences = _SENTENCE_END.split(text.strip())
    said = 0
    while said < len(sentences) - 1 and not reads_as_question(sentences[said]):
        said += 1
    return " ".join(sentences[:said]), " ".join(sentences[said:])


def _split(text: str) -> tuple[str, ...]:
    pieces = [p.strip() for p in re.split(r"(?<=\?)\s+", text) if p.strip()]
    parts: list[str] = []
    for piece in pieces:
        for sub in _PART_BREAK.split(piece):
            sub = sub.strip(" ,;")
            if len(re.findall(r"[\w'-]+", sub)) >= 3:
                parts.append(_as_question(sub))
    if len(parts) > 1:
        parts = [
            parts[0],
            *(_named_as_before(_that_one(_standalone(p, parts[0]), parts[0]), parts[0]) for p in parts[1:]),
        ]
    if any(PRONOUN.search(p) for p in parts[1:]):
        return (text,)  # "..., and do I need a card to start it?": the later part leans on the first
    parts = [each for part in parts for each in (_by_named_thing(part) or _by_attribute(part) or [part])]
    return tuple(parts) if len(parts) > 1 else (text,)


def _standalone(part: str, first: str) -> str:
    """A later part that says "it" of the thing the first part names by a code or a name ("How big
    is the battery in the RT-9i and how many hours will it run?") says it by name."""
    if not re.search(r"\b(?:it|its)\b", part) or re.search(_THEY, part, re.IGNORECASE) or part.count(" it") > 1:
        return part
    found = sorted(codes(first)) or sorted(
        n
        for n in names(first) - names(part)
        if re.search(rf"{re.escape(n)}\s+(?:{_KINDS})\b", first) or not _placed(n, first)
    )
    if len(found) != 1:
        return part
    thing = found[0]
    part = re.sub(r"\bits\b", f"{thing}'s", part)
    return re.sub(r"\bit\b", thing, part)


def _placed(name: str, text: str) -> bool:
    """`name` said as a place in `text`: "in the US", "at Brennick Junction"."""
    return re.search(rf"\b(?:in|at|from|to|near)\s+(?:the\s+)?{re.escape(name)}\b", text) is not None


def _that_one(part: str, first: str) -> str:
    """A later part saying "that station" or "this plan" of the one thing of that kind the first
    part names says its name: "From when will the RE-7 stop at Brennick Junction, and how many
    parking spaces does that station have?" asks of Brennick Junction. A place is a name after
    "at", "in", "from" or "to"; a product or plan a code, or a name elsewhere."""
    found = _THAT_ONE.search(part)
    if found is None:
        return part
    placed = {n for n in names(first) if _placed(n, first)}
    candidates = sorted(placed) if found["place"] else (sorted(codes(first)) or sorted(names(first) - placed))
    if len(candidates) != 1:
        return part
    name = candidates[0]
    kind = found["place"] or found["thing"]
    said = re.search(rf"{re.escape(name)}\s+{re.escape(kind)}\b", first, re.IGNORECASE)
    return f"{part[: found.start()]}{said.group(0) if said else name}{part[found.end() :]}"


_THAT_ONE = re.compile(
    r"\b(?:that|this|the same)\s+(?:(?P<place>station|stop|office|branch|site|city|town|place|location|depot"
    r"|store|shop|centre|center|building)|(?P<thing>plan|product|model|device|router|camera|card|pass|ticket"
    r"|service|app|version))\b",
    re.IGNORECASE,
)


def _named_as_before(part: str, first: str) -> str:
    """A later part saying a noun the first part gave a name to says the name too: "How long do I
    have to claim an SLA credit, and what's the maximum credit I can get?" asks of the SLA credit.
    Both sides are noun phrases after a determiner ("an SLA credit", "the maximum credit"): "did
    Acme stop" names no stop."""
    for found in _NAMED_NOUN.finditer(first):
        name, noun = found.group("name"), found.group("noun")
        if mentions(part, name):
            continue
        phrase = re.compile(rf"\b({_DETERMINER}\s+(?:[a-z]+\s+)?)({re.escape(noun)})\b")
        part = phrase.sub(rf"\g<1>{_escaped(name)} \g<2>", part, count=1)
    return part


def _escaped(text: str) -> str:
    """`text` as a literal in a replacement template."""
    return text.replace("\\", "\\\\")


_DETERMINER = r"(?:the|a|an|your|our|my|its|their|this|that)"
_NAMED_NOUN = re.compile(rf"\b{_DETERMINER}\s+(?P<name>(?:[A-Z][\w+-]*)(?:\s+[A-Z][\w+-]*)*)\s+(?P<noun>[a-z]{{3,}})\b")


_KINDS = r"plans?|products?|models?|routers?|cameras?|devices?|services?|apps?|tiers?|editions?|versions?"


_THEY = r"\b(?:they|them|their|that one|this one|those|these)\b"
_NAME = r"[A-Z][\w-]*(?:\s+[A-Z0-9][\w-]*)*"
_SHARED_HEAD = re.compile(
    rf"\b(?P<items>{_NAME}(?:\s*,\s*{_NAME})*,?\s+(?:and|or)\s+{_NAME})\s+(?P<head>[a-z]{{3,}}s)\b"
)
_COMPARING = re.compile(r"\b(?:between|compare[ds]?|comparison|difference|versus|vs\.?|both|either|neither)\b", re.I)
_ITEM_SEPARATOR = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")
_SINGULAR_VERB = {"do": "does", "are": "is", "have": "has", "were": "was"}


def _by_named_thing(part: str) -> list[str] | None:
    """ "How much do the Team and Business plans cost?" → one question per plan."""
    if _COMPARING.search(part):
        return None
    found = _SHARED_HEAD.search(part)
    if found is None or found.start() == 0:
        return None  # a capitalised first word is the start of the sentence, not a name
    items = [i for i in _ITEM_SEPARATOR.split(found["items"]) if i]
    if len(items) < 2:
        return None
    before = _singular_verb(part[: found.start()])
    after = part[found.end() :]
    head = _singular(found["head"])
    return [_as_question(f"{before}{item} {head}{after}") for item in items]


_ATTRIBUTES = re.compile(
    r"^(?P<frame>(?:what|which)\s+(?:is|are|was|were)\s+)(?P<items>.+?)"
    r"(?P<tail>\s+(?:of|for|on|in|with)\s+[^,]+?)?\?$",
    re.IGNORECASE,
)
_DETERMINER_START = re.compile(r"^(?:the|a|an|its|their|your|my|our)\s", re.IGNORECASE)


def _by_attribute(part: str) -> list[str] | None:
    """ "What are the price, the user limit and the retention of the Team plan?" → one per attribute.

    A list counts when it has commas ("the price, user limit and retention") or when the second
    item has its own determiner ("the price and the user limit"); "the terms and conditions" shares
    one determiner and stays one thing."""
    found = _ATTRIBUTES.match(part)
    if found is None or _COMPARING.search(part):
        return None
    tail = found["tail"] or ""
    if re.search(r"\b(?:and|or)\b", tail):
        return None
    items = [i.strip() for i in _ITEM_SEPARATOR.split(found["items"]) if i.strip()]
    has_comma = "," in found["items"]
    if len(items) < 2 or any(len(i.split()) > 5 for i in items):
        return None
    if any(re.fullmatch(_NAME, i) for i in items[1:]):
        return None  # "the population of Sandusky Township, Ohio": a place and its region, one name
    if not has_comma and not (len(items) == 2 and _DETERMINER_START.match(items[1])):
        return None
    first_determiner = _DETERMINER_START.match(items[0])
    frame = _singular_verb(found["frame"])
    out = []
    for item in items:
        if first_determiner and not _DETERMINER_START.match(item):
            item = f"{first_determiner.group(0)}{item}"
        out.append(_as_question(f"{frame}{item}{tail}"))
    return out


def _singular_verb(prefix: str) -> str:
    """ "How much do the " → "How much does the ": the verb agrees with one thing now."""
    return re.sub(
        r"\b(do|are|have|were)(\s+(?:the\s+)?)$",
        lambda m: _SINGULAR_VERB[m.group(1).lower()] + m.group(2),
        prefix,
        flags=re.IGNORECASE,
    )


def _singular(noun: str) -> str:
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    if noun.endswith(("sses", "ches", "shes", "xes")):
        return noun[:-2]
    return noun[:-1]


def _as_question(text: str) -> str:
    text = text[0].upper() + text[1:]
    return text if text.endswith("?") else text.rstrip(".!") + "?"
