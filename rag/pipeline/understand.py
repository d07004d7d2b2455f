"""Stage 0, understand: platform markup out, follow-ups made standalone, multi-part questions split
(rag/pipeline/parts.py), and the kind of answer each part asks for.

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
from rag.pipeline.parts import PRONOUN, reads_as_question, split_parts

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

_FOLLOW_UP_START = re.compile(
    r"^(?:and|also|but|so|ok(?:ay)?|what about|how about|and what about|and how about|same for|what if)\b[\s,]*",
    re.IGNORECASE,
)


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
    return len(words) <= 8 and bool(PRONOUN.search(text))


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
