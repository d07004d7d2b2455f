"""Words as the swap, polarity and copy checks read them (rag/text/swaps.py, polarity.py,
copies.py): tokens with crude stems ("What" and "which" are "the", so "What Bantu explorer" lines
up with "The Portuguese explorer"), numbers said in words ("four hundred", "eighth", "2.4
billion"), opposites (a general English list, not one corpus's: "high"/"low", "monthly"/"annual";
a comparative's adjective, an irregular verb's base form, a negative prefix), and names (every
word capitalised, short joining words between; an abbreviation or initials the same name)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from rag.text.facts import NUMBER_WORDS, STOP_WORDS, content_words

_PAIRS = (
    "high low|higher lower|highest lowest|major minor|open closed|opened closed|gain lose|gained lost|gains losses"
    "|north south|east west|northern southern|eastern western|northeast southwest|northwest southeast"
    "|expensive cheap|most least|more less|more fewer|maximum minimum|last first|before after"
    "|earlier later|early late|increase decrease|increased decreased|rise fall|rose fell|temporary permanent"
    "|temporarily permanently|public private|old new|older newer|oldest newest|large small|larger smaller"
    "|largest smallest|big small|bigger smaller|long short|longer shorter|longest shortest|strong weak"
    "|stronger weaker|lesser greater|less greater|success failure|win lose|won lost|accept reject|accepted rejected"
    "|allow forbid|allowed forbidden|allowed banned|legal illegal|male female|men women|man woman|boys girls|boy girl"
    "|internal external|inner outer|upper lower|positive negative|hot cold|warm cold|wet dry|full empty"
    "|rich poor|best worst|better worse|inside outside|import export|imports exports|imported exported"
    "|buy sell|bought sold|start end|started ended|begin end|began ended|entry exit|arrival departure"
    "|inbound outbound|incoming outgoing|upload download|uploads downloads|push pull|above below|top bottom"
    "|fast slow|faster slower|fastest slowest|ancient modern|urban rural|domestic foreign|domestic international"
    "|national international|primary secondary|civilian military|same different|common rare|true false"
    "|include exclude|included excluded|support oppose|supported opposed|friend enemy|allies enemies"
    "|simple complex|easy difficult|adopt reject|adopted rejected|approve reject|approved rejected"
    "|increase reduce|increased reduced|rise decline|appear disappear|add remove|added removed|allow prohibit"
    "|allowed prohibited|direct indirect|dead alive|death birth|died born|husband wife"
    "|father mother|son daughter|brother sister|king queen|prince princess|monthly annual|monthly yearly"
    "|daily weekly|weekly monthly|paid free|paid unpaid|online offline|enabled disabled|enable disable"
    "|encrypted unencrypted|required optional|mandatory optional|minimum maximum|lowest highest|cheapest dearest"
    "|cheapest priciest|winter summer|spring autumn|spring fall|morning evening|day night|weekday weekend"
    "|weekdays weekends|present absent|senior junior|full-time part-time|employee contractor|employees contractors"
)


OPPOSITES: dict[str, frozenset[str]] = {}
"""Each word's opposites: a general English list, not one corpus's ("high"/"low", "monthly"/"annual")."""


for _pair in _PAIRS.split("|"):
    _a, _b = _pair.split()
    OPPOSITES[_a] = OPPOSITES.get(_a, frozenset()) | {_b}
    OPPOSITES[_b] = OPPOSITES.get(_b, frozenset()) | {_a}


_NEGATIVE_PREFIXES = ("un", "in", "im", "il", "ir", "non", "non-", "dis")


DASHES = re.compile(r"[‐‑‒–—]")


_TOKEN = re.compile(r"[^\W_](?:[\w'’.,-]*[^\W_])?")


_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
}


_SCALES = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}


_DIGITS = re.compile(r"(\d+(?:,\d{3})*(?:\.\d+)?)(?:st|nd|rd|th)?")


_DETERMINERS = frozenset({"a", "an", "the", "what", "which"})
"""One word to the alignment: "What Bantu explorer ...?" lines up with "The Portuguese explorer ..."."""


def stems(tokens: Sequence[str]) -> list[str]:
    return [stem(token) for token in tokens]


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    word = token.lower().removesuffix("'s").removesuffix("’s")
    if word in _DETERMINERS:
        return "the"
    if any(c.isdigit() for c in word):
        return word  # a code or a number is itself: "RT-9" is not "RT-9i"
    found = content_words(word)
    return min(found) if found else word


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A text's words and their stems (a question is read against every candidate sentence)."""
    found = tuple(_TOKEN.findall(DASHES.sub("-", text)))
    return found, tuple(stem(t) for t in found)


def amount(tokens: Sequence[str]) -> float | None:
    """The number a short stretch states ("four hundred", "2.4 billion", "eighth", "three-way"), or None."""
    total: float | None = None
    for token in tokens:
        word = token.lower().split("-")[0]
        digits = _DIGITS.fullmatch(word)
        if digits:
            total = (total or 0.0) + float(digits.group(1).replace(",", ""))
        elif word in _SCALES:  # "four hundred" is 400, "a hundred" 100
            total = (total or 1.0) * _SCALES[word]
        elif word in NUMBER_WORDS:
            total = (total or 0.0) + NUMBER_WORDS[word]
        elif word in _ORDINALS:
            total = (total or 0.0) + _ORDINALS[word]
    return total


_LEMMAS = {
    "won": "win",
    "winning": "win",
    "wins": "win",
    "lost": "lose",
    "losing": "lose",
    "loses": "lose",
    "rose": "rise",
    "risen": "rise",
    "rising": "rise",
    "rises": "rise",
    "fell": "fall",
    "fallen": "fall",
    "falling": "fall",
    "falls": "fall",
    "bought": "buy",
    "sold": "sell",
    "began": "begin",
    "begun": "begin",
}
"""Irregular verb forms: "lose" and "won" are opposites as "lose" and "win" are."""


def listed_opposite(a: str, b: str) -> bool:
    """Opposites by `OPPOSITES`, a comparative's adjective or an irregular verb's base form."""
    if b in OPPOSITES.get(a, ()) or _base(b) in OPPOSITES.get(_base(a), ()):
        return True
    return _LEMMAS.get(b, b) in OPPOSITES.get(_LEMMAS.get(a, a), ())


def opposite(a: str, b: str) -> bool:
    if listed_opposite(a, b):
        return True
    return any(x == prefix + y and len(y) >= 4 for x, y in ((a, b), (b, a)) for prefix in _NEGATIVE_PREFIXES)


def _base(word: str) -> str:
    """A comparative's or superlative's adjective ("cheapest" -> "cheap", "weaker" -> "weak")."""
    for suffix in ("est", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def is_name(text: str) -> bool:
    """A stretch that is a name: every word capitalised and not a stop word ("Ankara's
    Gençlerbirliği", "Miami, Florida")."""
    tokens = _TOKEN.findall(text)
    return bool(tokens) and named(tokens)


def named(tokens: Sequence[str]) -> bool:
    """A name: its first and last words capitalised and not stop words, those between capitalised
    or short joining words ("Bantu", "NX-6 Pro", "Slim the Mobster", "House of Habsburg"; not "The")."""
    if not tokens or not all(_capitalised(t) for t in (tokens[0], tokens[-1])):
        return False
    return all(_capitalised(t) or t.lower() in _NAME_JOINS for t in tokens[1:-1])


_NAME_JOINS = frozenset({"the", "of", "de", "la", "le", "van", "von", "der", "du", "and", "y", "da"})


def _capitalised(token: str) -> bool:
    return token[0].isupper() and token.lower() not in STOP_WORDS


def same_name(ours: Sequence[str], theirs: Sequence[str]) -> bool:
    """The same name, or one a short abbreviation of the other: "St" of "Saint", "RIBA" of "Royal
    Institute" (initials)."""
    short, long = sorted((_joined(ours), _joined(theirs)), key=len)
    if short == long:
        return True
    for a, b in ((ours, theirs), (theirs, ours)):
        initials = "".join(t[0].lower() for t in a)
        if len(a) > 1 and any(t.lower().startswith(initials) for t in b):
            return True
    if not short or len(short) > 4 or short[0] != long[0]:
        return False
    rest = iter(long)
    return all(letter in rest for letter in short)


def _joined(tokens: Sequence[str]) -> str:
    """A name's letters and digits: "Congo-Ocean" is "Congo Ocean"."""
    return re.sub(r"[^a-z0-9]", "", "".join(stems(tokens)))
