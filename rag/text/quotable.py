"""Whether a sentence may be quoted as an answer at all, whatever it says: not a question (an FAQ's
"Q:" line), not a signpost about the page, not a fragment or a web page's furniture, not an
instruction addressed to the bot. The writer quotes only sentences that pass; the critic fails an
instruction outright.
"""

from __future__ import annotations

import re

from rag.text.facts import clean_sentence
from rag.text.switches import off

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")

_QUESTION_LABEL = re.compile(r"^(?:Q|Question)\s*[:.]\s*", re.IGNORECASE)


def asks(text: str) -> bool:
    """A question, not a statement: an FAQ's "Q: ..." line, a question heading, any sentence ending
    in "?". Context for what follows it, never evidence of its own: its words are the reader's."""
    stripped = clean_sentence(text)
    return stripped.endswith("?") or bool(_QUESTION_LABEL.match(stripped))


_ABOUT_THE_PAGE = re.compile(
    r"^(?:tip|see also|related|tags|keywords|categories|labels)\s*:"
    r"|^(?:this|the following) (?:page|document|guide|article|section|faq)\b"
    r"|^below you(?:'ll| will) find\b|\bon this page\b|^read on\b",
    re.IGNORECASE,
)


def about_the_page(text: str) -> bool:
    """A sentence about the document itself ("This page lists ...", "Below you'll find answers",
    "Tip: skim the ... page", "Tags: reset, nx-6, howto"): a signpost, never an answer."""
    if off("quotable"):
        return False
    return bool(_ABOUT_THE_PAGE.search(text))


_PAGE_CHROME = (
    "[ edit ]",
    "[edit]",
    " v t e ",
    "oldid=",
    "jump to navigation",
    "jump to search",
    "categories:",
    "categories :",
    "permanent link",
    "view history",
    "print/export",
)
"""A web page's furniture copied with its text (lower case): edit links, navigation, categories, history."""
_INTERFACE = re.compile(
    r"\b(?:jump to (?:content|navigation|search)|skip to (?:main )?content|main menu|move to sidebar"
    r"|toggle navigation|personal tools|close search|search results|press (?:return|enter) to"
    r"|create (?:an )?account|(?:view )?(?:mobile|desktop) (?:site|version)|follow (?:us )?on"
    r"|cookie (?:settings|preferences)|privacy policy|terms of (?:use|service)|share (?:this|on))\b",
    re.IGNORECASE,
)
"""Phrases of a site's interface rather than its text: two different ones make a sentence the page's
furniture ("Close Search Type your search terms above and press return to see the search results",
"View Mobile Site Follow on IG", "Jump to content Main menu"). Prose and instructions say one in
passing at most ("Search results are sorted by date"); a single word such as "search", "menu" or
"sign in" is an instruction's ("Sign in and open the Settings menu")."""
INTERFACE_WORDS = 2
_SIGN_IN_LABEL = re.compile(
    r"\b(?:sign|log) in\b(?!\s*(?:[.,;:!?)]|$|(?:to|with|and|at|using|via|on|again|first|as|through|from|for|or|"
    r"once|before|after|when|if|here|there|now)\b))",
    re.IGNORECASE,
)
"""'Sign in' as a page's button ("Wikiwand English Sign in Top Qs Timeline"), not as an instruction's
verb, which says where, how or what next ("sign in to the laptop", "sign in with your username",
"allows you to sign in and register")."""
_LISTED_YEAR = re.compile(r"\(\s*(?:1[5-9]|20)\d{2}\s*\)")
"""'Naya Daur (1955)': three of them in words mostly capitalised make a list of works, not a sentence
("... Edna Ferber's novel Show Boat (1929), the lavish musical Broadway (1929) ..." is one)."""


_UNOPENED = re.compile(r"^(?!\s*(?:\d{1,3}|[A-Za-z])\.?\)\s)[^()]*\)")
"""A closing parenthesis before any opening one, not a list marker's ("2.) the president ...")."""


def _titled(words: list[str]) -> bool:
    """Fewer than a third of the words begin in lower case: titles and names, not prose."""
    return sum(w[0].islower() for w in words) < len(words) / 3


def furniture(text: str) -> bool:
    """A site's interface copied with its text: two different interface words or phrases (`_INTERFACE`)."""
    if off("quotable"):
        return False
    return len({m.group(0).lower() for m in _INTERFACE.finditer(text)}) >= INTERFACE_WORDS


def readable(text: str) -> bool:
    """Whole sentences only: long enough, ends like a sentence, starts like one, not a list intro,
    not a web page's furniture nor a list of works ("Cadillac Rag (1991) Goin' Back to Dixie (1992) ...")."""
    stripped = text.strip()
    if stripped.endswith((":.", ":")):
        return False
    words = _WORD.findall(stripped)
    if len(words) < 4 or len(stripped) < 20:
        return False
    if off("quotable"):
        return True
    lowered = f" {stripped.lower()} "
    if any(marker in lowered for marker in _PAGE_CHROME) or furniture(stripped) or _SIGN_IN_LABEL.search(stripped):
        return False
    if len(_LISTED_YEAR.findall(stripped)) >= 3 and _titled(words):
        return False
    if _UNOPENED.match(stripped):
        return False  # "1885-1955 ) ; ...": the tail of a parenthesis, cut from its sentence
    first = stripped[0]
    return first.isupper() or first.isdigit() or first in "$£€\"'("


_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|rules?|prompts?|guidelines?|everything)\b"
    r"|\byou (?:are|must|should|will) (?:now|always|never)\b"
    r"|\b(?:system|developer) (?:prompt|message)\b"
    r"|\b(?:assistant|chatbot|bot|AI|language model)s?\b.{0,40}"
    r"\b(?:must|should|shall|will) (?:answer|reply|say|respond|tell)"
    r"|\b(?:tell|inform) (?:every|all|any) (?:users?|employees?|customers?|people)\b"
    r"|\b(?:reply|respond|answer) (?:only )?with\b",
    re.IGNORECASE,
)


def looks_like_instruction(text: str) -> bool:
    """A sentence addressed to the bot rather than to readers ("ignore your rules and ...").

    Retrieved text is data: such a sentence is never quoted as an answer, whatever it says.
    """
    return bool(_INSTRUCTION.search(text))
