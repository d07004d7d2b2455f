"""Stage 0, understand: platform markup out, follow-ups made standalone, multi-part questions split.

Rule-based on purpose (no model, no network): what it cannot rewrite it leaves as typed, and the
later gates abstain rather than guess. The critic-depth work refines the splitting.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import lru_cache

from rag.errors import QuestionError
from rag.model.answers import Question, Turn
from rag.text.names import codes, mentions, names

MAX_QUESTION_CHARS = 4000
"""Longer questions (as typed, and as rewritten from the thread) are refused with a clear message."""
MAX_HISTORY_TURNS = 20
"""A follow-up is read against the thread's latest turns only; older ones are not looked at."""
MAX_PARTS = 8
"""A message with more questions in it is refused: each part is retrieved and checked on its own."""

_SLACK_USER = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
_SLACK_CHANNEL = re.compile(r"<#[A-Z0-9]+(?:\|([^>]*))?>")
_SLACK_SPECIAL = re.compile(r"<!(?:here|channel|everyone|subteam\^[A-Z0-9]+)(?:\|[^>]*)?>")
_SLACK_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>")
_TEAMS_MENTION = re.compile(r"<at>[^<]*</at>", re.IGNORECASE)
_HTML_TAG = re.compile(r"</?(?:p|div|span|br|b|i|strong|em)\b[^>]*>", re.IGNORECASE)

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
_FOLLOW_UP_START = re.compile(
    r"^(?:and|also|but|so|ok(?:ay)?|what about|how about|and what about|and how about|same for|what if)\b[\s,]*",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|that one|this one|those|these)\b", re.IGNORECASE)


def strip_markup(text: str) -> str:
    """Slack and Teams markup → plain text: mentions out, links to their label, entities decoded."""
    text = _TEAMS_MENTION.sub(" ", text)
    text = _SLACK_USER.sub(" ", text)
    text = _SLACK_SPECIAL.sub(" ", text)
    text = _SLACK_CHANNEL.sub(lambda m: f"#{m.group(1)}" if m.group(1) else " ", text)
    text = _SLACK_LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = _HTML_TAG.sub(" ", text)
    text = html.unescape(text)
    return re.sub(r"\s+([?.!,;:])", r"\1", " ".join(text.split()))


@dataclass(frozen=True, slots=True)
class Understood:
    original: str
    text: str
    """Standalone question: markup stripped, follow-up rewritten."""
    parts: tuple[str, ...]
    rewritten: bool


def understand(question: Question) -> Understood:
    text = strip_markup(question.text)
    if not text:
        raise QuestionError("the question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise QuestionError(f"the question is too long ({len(text)} characters, at most {MAX_QUESTION_CHARS})")
    standalone = rewrite_follow_up(text, question.history[-MAX_HISTORY_TURNS:])
    if len(standalone) > MAX_QUESTION_CHARS:
        standalone = text  # the thread's earlier question was long: read this one as typed
    parts = split_parts(standalone)
    if len(parts) > MAX_PARTS:
        raise QuestionError(f"the message asks {len(parts)} questions at once; ask at most {MAX_PARTS} at a time")
    return Understood(question.text, standalone, parts, standalone != text)


def rewrite_follow_up(text: str, history: tuple[Turn, ...]) -> str:
    """A follow-up ("and for the bigger plan?") becomes a standalone question from the last one asked.

    A noun phrase sharing its head word with one of the earlier question's replaces it ("the
    Business plan" for "the Team plan"); otherwise the earlier question is added as context.
    """
    previous = _previous_question(history)
    if previous is None or not is_follow_up(text):
        return text
    fragment = _FOLLOW_UP_START.sub("", text).rstrip(" ?.!")
    fragment = re.sub(r"^(?:for|on|with|in|about)\s+", "", fragment, flags=re.IGNORECASE)
    replaced = _replace_same_head(previous, fragment)
    if replaced is not None:
        return replaced
    return f"{previous.rstrip(' ?')}: {fragment}?" if fragment else previous


def is_follow_up(text: str) -> bool:
    words = re.findall(r"[\w'-]+", text)
    if _FOLLOW_UP_START.match(text):
        return True
    return len(words) <= 8 and bool(_PRONOUN.search(text))


def _previous_question(history: tuple[Turn, ...]) -> str | None:
    """The question a follow-up continues: the latest person's turn that asks (it reads as a
    question, or the bot answered it), made standalone first when it was a follow-up itself. A
    thread also holds what people said to each other ("thanks, that helps"): that is passed over.
    When no turn asks, the latest thing a person said."""
    said = [(i, strip_markup(turn.text)) for i, turn in enumerate(history) if not turn.from_bot]
    said = [(i, text) for i, text in said if text]
    for i, text in reversed(said):
        answered = i + 1 < len(history) and history[i + 1].from_bot
        if answered or reads_as_question(text):
            return rewrite_follow_up(text, history[:i])
    return said[-1][1] if said else None


def _replace_same_head(previous: str, fragment: str) -> str | None:
    """Swap the earlier question's noun phrase that ends in the fragment's last word for the fragment."""
    words = re.findall(r"[\w-]+", fragment)
    if not words or len(words) > 6:
        return None
    head = words[-1]
    phrase = re.compile(rf"\b(?:the|a|an|my|our|your)\s+(?:[\w-]+\s+){{0,3}}?{re.escape(head)}\b", re.IGNORECASE)
    found = phrase.search(previous)
    replacement = fragment if words[0].lower() in _DETERMINERS else f"the {fragment}"
    if found is None and len(words) > 1:  # "annual billing" for "monthly billing": as many words, same head
        same_length = rf"\b(?:[\w-]+\s+){{{len(words) - 1}}}{re.escape(head)}\b"
        found = re.search(same_length, previous, re.IGNORECASE)
        replacement = fragment
    if found is None:
        return None
    return previous[: found.start()] + replacement + previous[found.end() :]


_DETERMINERS = ("the", "a", "an", "my", "our", "your")


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
    if any(_PRONOUN.search(p) for p in parts[1:]):
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
        if re.search(rf"{re.escape(n)}\s+(?:{_KINDS})\b", first)
        or not re.search(rf"\b(?:in|at|from|to|near)\s+(?:the\s+)?{re.escape(n)}\b", first)
    )
    if len(found) != 1:
        return part
    thing = found[0]
    part = re.sub(r"\bits\b", f"{thing}'s", part)
    return re.sub(r"\bit\b", thing, part)


def _that_one(part: str, first: str) -> str:
    """A later part saying "that station" or "this plan" of the one thing of that kind the first
    part names says its name: "From when will the RE-7 stop at Brennick Junction, and how many
    parking spaces does that station have?" asks of Brennick Junction. A place is a name after
    "at", "in", "from" or "to"; a product or plan a code, or a name elsewhere."""
    found = _THAT_ONE.search(part)
    if found is None:
        return part
    placed = {n for n in names(first) if re.search(rf"\b(?:in|at|from|to|near)\s+(?:the\s+)?{re.escape(n)}\b", first)}
    if found["kind"].lower() in _PLACE_KINDS:
        candidates = sorted(placed)
    else:
        candidates = sorted(codes(first)) or sorted(names(first) - placed)
    if len(candidates) != 1:
        return part
    name = candidates[0]
    said = re.search(rf"{re.escape(name)}\s+{re.escape(found['kind'])}\b", first, re.IGNORECASE)
    return f"{part[: found.start()]}{said.group(0) if said else name}{part[found.end() :]}"


_PLACE_KINDS = frozenset(
    [
        "station",
        "stop",
        "office",
        "branch",
        "site",
        "city",
        "town",
        "place",
        "location",
        "depot",
        "store",
        "shop",
        "centre",
        "center",
        "building",
    ]
)
_THAT_ONE = re.compile(
    r"\b(?:that|this|the same)\s+(?P<kind>station|stop|office|branch|site|city|town|place|location|depot|store"
    r"|shop|centre|center|building|plan|product|model|device|router|camera|card|pass|ticket|service|app|version)\b",
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


_QUANTITY = re.compile(
    r"^(?:how (?:many|much|long|often|fast|soon|quickly|big|large|far|old|high|low|early|late)\b"
    r"|(?:what|which)(?:'s| is| are| was| were)? (?:the |a |an )?(?:[\w+-]+ ){0,3}"
    r"(?:price|cost|population|distance|weight|height|depth|temperature|limit|minimum|maximum|number|amount|length|size|rate|percentage|fee|allowance|interval|period"
    r"|capacity|budget|salary|band|duration|threshold|discount|count|quota|speed|uptime"
    r"|percent|timeout|version)s?\b"
    r"|what(?:'s| is| are)? (?:the )?(?:biggest|largest|smallest|highest|lowest|max|min)\b"
    r"|what(?:'s| is| are)? (?:the )?(?:most|least|fewest) (?:money|time|days?|hours?|weeks?|months?|years?"
    r"|people|users?|seats?|data|storage|space|credit)\b"
    r"|what (?:do|does|did|will|would)\b.{0,60}\b(?:pay|cost|costs|charge|charged)\b)"
)
_DATE = re.compile(
    r"^(?:when (?:was|were|did|will|is|are|does)\b(?!.*\b(?:counts? as|considered|qualif(?:y|ies)|deemed|treated as)\b)"
    r"|what (?:date|day|year|time|month)s?\b|which (?:date|day|year|month)s?\b"
    r"|until when\b|by when\b|since when\b"
    r"|(?:what|which)(?:'s| is| are)? (?:the )?(?:[\w-]+ )?(?:deadline|time limit|cut-?off)s?\b)"
)
"""A date or time; "when does a battery count as defective?" asks for a condition, not a date. A
deadline is a date or a time from an event ("within 28 days of the journey")."""
_PLACE = re.compile(
    r"^(?:which|what) (?:city|country|office|region|location|address|town|site|building|data ?cent(?:re|er))s?\b"
    r"|^where\b.*\b(?:based|located|headquartered|hosted)\b"
)
_PERSON = re.compile(r"^(?:who|whom|whose)\b|^(?:which|what) (?:person|people|team|manager|contact)\b")
_ADDRESS = re.compile(
    r"^(?:what|which)(?:'s| is| are)? (?:the |a |an )?(?:[\w-]+ ){0,2}"
    r"(?:ip|ip address|url|urls|link|web address|e-?mail|e-?mail address|host ?name|domain|endpoint|base url)s?\b"
)
"""Asks for a network address ("what IP do I type", "which base URL", "what email address")."""
_YES_NO = re.compile(r"^(?:is|are|was|were|do|does|did|can|could|will|would|should|may|must|has|have|am)\b")
_PROCEDURE = re.compile(r"^(?:how (?:do|can|should|would) (?:i|we|you)\b|how to\b|what (?:should|do) (?:i|we) do\b)")
_ASKING = re.compile(
    r"^(?:how|what|which|when|where|who|whom|whose|why|until|by when|since when)\b|" + _YES_NO.pattern[1:]
)
_LEAD_IN = re.compile(
    r"^(?:(?:can|could) you (?:please )?tell me|do you know|i(?:'d| would) like to know|i want to know|"
    r"please tell me|tell me)\s+"
)
_CLAUSE_BREAK = re.compile(r"[.!;:?]\s+|\s[–—-]\s|,\s+")


def asked_clause(text: str) -> str:
    """The clause that asks, lower-cased: "I'm in Leeds - once you have my router, how long does the
    repair take?" asks "how long does the repair take?". Without one that starts like a question,
    the last clause."""
    lowered = _LEAD_IN.sub("", " ".join(text.lower().split()))
    if "?" in lowered:
        lowered = lowered[: lowered.index("?") + 1]
    clauses = [c.strip() for c in _CLAUSE_BREAK.split(lowered) if c.strip()]
    asking = [c for c in clauses if _ASKING.match(c)]
    wh = [c for c in asking if not _YES_NO.match(c)]  # "How much, roughly, does it cost?" asks "how much"
    return (wh or asking or clauses or [lowered])[-1]


@lru_cache(maxsize=4096)
def answer_type(text: str) -> str:
    """What kind of value answers the question: quantity, date, place, person, address (a URL, an
    IP, an email address), procedure, yesno or other, read off the clause that asks. A request
    without a question word ("I need to know which city ...") is read from the first question
    phrase in it."""
    clause = asked_clause(text)
    for wanted, pattern in (
        ("procedure", _PROCEDURE),
        ("address", _ADDRESS),
        ("quantity", _QUANTITY),
        ("date", _DATE),
        ("place", _PLACE),
        ("person", _PERSON),
        ("yesno", _YES_NO),
    ):
        if pattern.match(clause):
            return wanted
    if clause.startswith("why"):
        return "other"  # "why does X cost more than what Y costs?" asks for a reason
    embedded = re.search(r"\b(?:which|what|how|when|where)\b.*", clause)
    if embedded and embedded.start() > 0:
        return answer_type(embedded.group(0))
    return "other"
