"""Does a sentence say what the question asks about, or the same thing about something else?

"What term was applied to any priest *temporarily* assigned to a church?" retrieves "The term
cardinal at one time applied to any priest *permanently* assigned ... to a church.": nearly every
word matches, the rerank score is high, and quoting it answers a question nobody asked. The
sentence is about the opposite case. So is "the *eighth* century" answered from "the *ninth*
century", "a *three*-way distinction" from "a four-way distinction", "very *high* turnout" from
"very low turnout", and "the *maximum* credit" from "the minimum credit".

`swapped(question, sentence)` looks, for each short stretch of the question the sentence does not
say, for the same two words around it in the sentence (crude stems, in any order of the rest:
"Who signs off the maximum budget?" meets "The minimum budget is signed off by ..."), one of them
more than a stop word, and for what the sentence has between them instead:

- numbers that differ ("six" and "seven", "eighth" and "ninth", "2.4 million" and "2.4 billion",
  "three-way" and "four-way"), or
- opposites: a pair of `OPPOSITES` ("high"/"low", "open"/"closed", "north"/"south",
  "temporarily"/"permanently", "most expensive"/"cheapest") or a word and its negative
  ("efficient"/"inefficient", "aspirated"/"unaspirated"), or
- names: "What *Bantu* explorer reached the mouth of the Congo?" answered by "The Portuguese
  explorer Diogo Cão reached the mouth of the Congo.", the hotel cap in Europe by the one in Asia, or
- two names trading places: "the *South African* government ... to Congolese farmers" answered by
  "the Congolese government ... to South African farmers" (the one stretch the question's word may
  be elsewhere in the sentence for).

An opposite counts wherever it stands too, without the two words around it, when the question's
word is nowhere in the sentence and the sentence's opposite is nowhere in the question: "What
election did Sassou *lose*?" against "Sassou also *won* the following presidential election"
(irregular forms read as their verb: "won" is "win"). Only the listed opposites: a negative prefix
away from its place is often a reworded clause ("all agree" against "might disagree about").

So does a year the question gives when the sentence gives another and not it ("a deal in 1948"
against "in 1950 ... made a deal").

The question's word must not be in the sentence beside the same words: "the ninth century, not
the eighth" is about both. Said elsewhere it is another use of the word ("becoming *more*
prevalent, and stability is *less* of an issue" still swaps "less prevalent"), except a name.
A stretch holding the question word ("who", "how many") is the answer's slot, not a swap.

`reversed_polarity(question, sentence)`: a question negated ("Which see does *not* have a
bishop?") and a sentence that negates nothing and makes no exception ("Each see has its own
bishop.") answers the opposite question; so does one that says the negated word itself
un-negated, whatever else it negates ("What canon does not *require* ...?" against "Canon 351
*requires* ..., and those who are not bishops ...").

Yes/no questions are not checked by the callers: "Is the office open on Sundays?" is answered by
"The office is closed on Sundays."

`filled_differently(a, b)` is the same alignment between two sources' sentences: two copies of one
sentence with another answer filled in ("... based in Miami, Florida." against "... based in
Anchorage, Alaska."), which rag/pipeline/contradictions.py reports as a conflict.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from rag.text.claims import negated
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
_QUESTION_WORDS = frozenset(["what", "which", "who", "whom", "whose", "when", "where", "why", "how"])
_DASHES = re.compile(r"[‐‑‒–—]")
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
_MAX_STRETCH = 3
"""Longer differing stretches are rewordings, not one word swapped for another."""
_QUESTION_NEGATION = re.compile(r"\b(?:not|never|no|none|nothing|nobody|without)\b|n't\b", re.I)
_CONDITION = re.compile(r"\b(?:if|unless|when|whenever|whether|once|in case)\b[^,;?]*", re.I)
"""A condition's negation is not the question's: "what page size if I don't pass limit?" asks for one."""
_EXCEPTIONS = re.compile(
    r"\b(?:except(?:ion|ions|ed)?|only|lacks?|lacking|fails?|failed|unable|absent)\b|\bnon-[a-z]", re.I
)
"""What answers a negated question without a "not": an exception, a lack, a failure, a "non-" word."""


@dataclass(frozen=True, slots=True)
class Swap:
    """Where the sentence says something else than the question asks about."""

    kind: str
    """"number", "opposite", "name" or "role" (two names trading places)."""
    asked: str
    """The question's words ("temporarily")."""
    stated: str
    """The sentence's words in their place ("permanently")."""

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "asked": self.asked, "stated": self.stated}


def swapped(question: str, sentence: str) -> Swap | None:
    """The shortest stretch of the question the sentence swaps for a different number or an
    opposite, between the same two words on either side (see the module docstring), or None."""
    (asked, ours_stems), (stated, their_stems) = _tokens(question), _tokens(sentence)
    said = set(their_stems)
    found: list[tuple[int, Swap]] = []
    after: dict[str, list[int]] = {}  # a word's stem -> where the sentence goes on after it
    for j, stem in enumerate(their_stems[:-1]):
        after.setdefault(stem, []).append(j + 1)
    for i in range(len(asked)):
        for k in range(1, _MAX_STRETCH + 1):
            if i + k > len(asked):
                break
            ours = asked[i : i + k]
            if any(t.lower() in _QUESTION_WORDS for t in ours):
                break  # the answer's slot: "who" is replaced by the name that answers it
            # the sentence says the question's word beside the same words: it speaks of both ("the
            # ninth century, not the eighth"), unless two names trade places ("the South African
            # government ... to Congolese farmers"); said elsewhere, it may be another use of the
            # word ("less of an issue" is no "less prevalent"), but a name said elsewhere is there
            content = [n for n in range(i, i + k) if asked[n].lower() not in STOP_WORDS]
            beside = any(_beside(ours_stems, i, k, their_stems, ours_stems[n], said) for n in content)
            elsewhere = any(ours_stems[n] in said for n in content)
            for theirs in _between(ours_stems, i, k, their_stems, stated, after):
                kind = _traded(ours, theirs, ours_stems, their_stems) if elsewhere else None
                if kind is None and not beside:
                    kind = _kind(ours, theirs)
                    kind = None if elsewhere and kind == "name" else kind
                if kind is not None:
                    found.append((k + len(theirs), Swap(kind, " ".join(ours), " ".join(theirs))))
            if beside:
                break
    if found:
        return min(found, key=lambda f: f[0])[1]  # "eighth", not "as the eighth"
    return (
        _opposite_anywhere(asked, stated, said, set(ours_stems))
        or _another_year(asked, stated)
        or _another_count(asked, ours_stems, stated, their_stems)
    )


def _beside(ours: Sequence[str], i: int, k: int, theirs: Sequence[str], stem: str, said: set[str]) -> bool:
    """The sentence says `stem` (a word of the stretch `ours[i:i+k]`) next to a word the stretch has
    beside it in the question, or the stretch has no neighbour of more than a stop word."""
    if stem not in said:
        return False
    neighbours = {w for w in (ours[i - 1] if i > 0 else "", ours[i + k] if i + k < len(ours) else "") if w}
    if not neighbours - STOP_WORDS:
        return True
    at = [j for j, s in enumerate(theirs) if s == stem]
    return any({theirs[j - 1] if j > 0 else "", theirs[j + 1] if j + 1 < len(theirs) else ""} & neighbours for j in at)


def _number_start(tokens: Sequence[str], end: int) -> int:
    """Where the number ending before `end` starts: "four hundred", not "hundred" (`end` when none)."""
    start = end
    while start > 0 and end - start < _MAX_STRETCH and _amount(tokens[start - 1 : start]) is not None:
        start -= 1
    return start


def _another_count(
    asked: Sequence[str], ours: Sequence[str], stated: Sequence[str], theirs: Sequence[str]
) -> Swap | None:
    """A count of something the question gives and the sentence gives another count of, before the
    same word, more than a stop word: "Which *two* short-wave stations ...?" against "about *one*
    short-wave and ten FM stations"."""
    for i in range(len(asked) - 1):
        first = _number_start(asked, i + 1)
        number = _amount(asked[first : i + 1]) if first <= i else None
        right = ours[i + 1]
        if number is None or right in STOP_WORDS or any(t in theirs for t in ours[first : i + 1]):
            continue
        for j in range(1, len(theirs)):
            start = _number_start(stated, j)
            other = _amount(stated[start:j]) if theirs[j] == right and start < j else None
            if other is not None and other != number:
                return Swap("number", asked[i], " ".join(stated[start:j]))
    return None


_YEAR = re.compile(r"1[0-9]{3}|20[0-9]{2}")


def _another_year(asked: Sequence[str], stated: Sequence[str]) -> Swap | None:
    """A year the question gives and the sentence does not, while the sentence gives another:
    "What deal did Wasserman make in 1948?" against "in 1950 MCA agent Lew Wasserman made a deal"."""
    ours = {t for t in asked if _YEAR.fullmatch(t)}
    theirs = [t for t in stated if _YEAR.fullmatch(t)]
    if not ours or ours & set(theirs) or not theirs:
        return None
    return Swap("number", sorted(ours)[0], theirs[0])


def _opposite_anywhere(asked: Sequence[str], stated: Sequence[str], said: set[str], ours: set[str]) -> Swap | None:
    """A word of the question the sentence says nowhere, whose opposite the sentence says and the
    question does not, wherever each stands: "What election did Sassou *lose*?" against "Sassou
    also *won* the following presidential election"."""
    for word in asked:
        low = word.lower()
        if low in STOP_WORDS or _stem(word) in said:
            continue
        for other in stated:
            if _stem(other) not in ours and _listed_opposite(low, other.lower()):
                return Swap("opposite", word, other)
    return None


def _between(
    ours: Sequence[str], i: int, k: int, theirs: Sequence[str], stated: Sequence[str], after: dict[str, list[int]]
) -> list[Sequence[str]]:
    """What the sentence has where the question has its stretch `ours[i:i+k]`: between the same
    two words, one of them more than a stop word; at the question's end ("... opened to men?"),
    after the same two words, one of them more than a stop word; at its start ("Late papermakers
    added ...?"), before the same word, more than a stop word."""
    if i == 0:
        right = ours[k] if k < len(ours) else ""
        if not right or right in STOP_WORDS:
            return []
        return [stated[j - m : j] for j, stem in enumerate(theirs) if stem == right for m in range(1, min(j, k) + 1)]
    left = ours[i - 1]
    if i + k < len(ours):
        right = ours[i + k]
        if left in STOP_WORDS and right in STOP_WORDS:
            return []  # "the eighth century" is anchored by "century", "of the" anchors nothing
        return [
            stated[j : j + m]
            for j in after.get(left, ())
            for m in range(1, _MAX_STRETCH + 1)
            if j + m < len(theirs) and theirs[j + m] == right
        ]
    if i < 2 or (left in STOP_WORDS and ours[i - 2] in STOP_WORDS):
        return []
    return [stated[j : j + k] for j in after.get(left, ()) if j >= 2 and theirs[j - 2] == ours[i - 2]]


def reversed_polarity(question: str, sentence: str) -> bool:
    """A negated question ("Which see does not have a bishop?") answered by a sentence that negates
    nothing and names no exception, lack or failure ("Each see has its own bishop."). One negation
    in the main clause only: "can't survive without" is not negated, nor is a condition's "if I
    don't"."""
    main_clause = _CONDITION.sub(" ", re.sub(r"(?i)\bnot only\b", " ", question))
    negations = _QUESTION_NEGATION.findall(main_clause)
    asks_negated = len(negations) == 1 and negations[0].lower() in ("not", "n't", "never")  # "can't ... without": no
    if not asks_negated or _EXCEPTIONS.search(sentence):
        return False
    return not negated(sentence) or _affirms(_negated_verb(main_clause), sentence)


_NEGATED_VERB = re.compile(
    r"(?:\bnot|\bnever|n't)\s+(?:(?:be|been|have|always|usually|necessarily)\s+)?([a-z]{3,})", re.IGNORECASE
)


def _negated_verb(question: str) -> str | None:
    """The word the question negates: "does not *require*", "wasn't *opened*"."""
    found = _NEGATED_VERB.search(question)
    return found.group(1) if found else None


def _affirms(word: str | None, sentence: str) -> bool:
    """The sentence says the negated word itself, un-negated ("canon 351 *requires* that ..."),
    whatever else it negates ("... those who are not already bishops")."""
    if word is None or word.lower() in STOP_WORDS:
        return False
    tokens, stems = _tokens(sentence)
    stem = _stem(word)
    for i, s in enumerate(stems):
        before = tokens[max(0, i - 3) : i]
        if s == stem and not any(_QUESTION_NEGATION.fullmatch(t) or t.lower().endswith("n't") for t in before):
            return True
    return False


def _kind(ours: Sequence[str], theirs: Sequence[str]) -> str | None:
    a, b = _amount(ours), _amount(theirs)
    if a is not None and b is not None and a != b:
        return "number"
    if any(_opposite(x.lower(), y.lower()) for x in ours for y in theirs):
        return "opposite"
    if _named(ours) and _named(theirs) and not _same_name(ours, theirs):
        return "name"
    return None


def _joined(tokens: Sequence[str]) -> str:
    """A name's letters and digits: "Congo-Ocean" is "Congo Ocean"."""
    return re.sub(r"[^a-z0-9]", "", "".join(_stems(tokens)))


def is_name(text: str) -> bool:
    """A stretch that is a name: every word capitalised and not a stop word ("Ankara's
    Gençlerbirliği", "Miami, Florida")."""
    tokens = _TOKEN.findall(text)
    return bool(tokens) and _named(tokens)


def _same_name(ours: Sequence[str], theirs: Sequence[str]) -> bool:
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


def _traded(ours: Sequence[str], theirs: Sequence[str], question: Sequence[str], sentence: Sequence[str]) -> str | None:
    """ "role" when two names trade places: the question names A before B, the sentence B before A,
    and has B where the question has A ("the South African government ... to Congolese farmers"
    against "the Congolese government ... to South African farmers")."""
    if not (_named(ours) and _named(theirs)) or _same_name(ours, theirs):
        return None
    a, b = _stems(ours)[0], _stems(theirs)[0]
    if a not in question or b not in question or a not in sentence or b not in sentence:
        return None
    before_in_question = question.index(a) < question.index(b)
    before_in_sentence = sentence.index(a) < sentence.index(b)
    return "role" if before_in_question != before_in_sentence else None


def _named(tokens: Sequence[str]) -> bool:
    """A name: its first and last words capitalised and not stop words, those between capitalised
    or short joining words ("Bantu", "NX-6 Pro", "Slim the Mobster", "House of Habsburg"; not "The")."""
    if not tokens or not all(_capitalised(t) for t in (tokens[0], tokens[-1])):
        return False
    return all(_capitalised(t) or t.lower() in _NAME_JOINS for t in tokens[1:-1])


_NAME_JOINS = frozenset({"the", "of", "de", "la", "le", "van", "von", "der", "du", "and", "y", "da"})


def _capitalised(token: str) -> bool:
    return token[0].isupper() and token.lower() not in STOP_WORDS


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


def _listed_opposite(a: str, b: str) -> bool:
    """Opposites by `OPPOSITES`, a comparative's adjective or an irregular verb's base form."""
    if b in OPPOSITES.get(a, ()) or _base(b) in OPPOSITES.get(_base(a), ()):
        return True
    return _LEMMAS.get(b, b) in OPPOSITES.get(_LEMMAS.get(a, a), ())


def _opposite(a: str, b: str) -> bool:
    if _listed_opposite(a, b):
        return True
    return any(x == prefix + y and len(y) >= 4 for x, y in ((a, b), (b, a)) for prefix in _NEGATIVE_PREFIXES)


def _base(word: str) -> str:
    """A comparative's or superlative's adjective ("cheapest" -> "cheap", "weaker" -> "weak")."""
    for suffix in ("est", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _amount(tokens: Sequence[str]) -> float | None:
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


_DETERMINERS = frozenset({"a", "an", "the", "what", "which"})
"""One word to the alignment: "What Bantu explorer ...?" lines up with "The Portuguese explorer ..."."""


def _stems(tokens: Sequence[str]) -> list[str]:
    return [_stem(token) for token in tokens]


@lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    word = token.lower().removesuffix("'s").removesuffix("’s")
    if word in _DETERMINERS:
        return "the"
    if any(c.isdigit() for c in word):
        return word  # a code or a number is itself: "RT-9" is not "RT-9i"
    stems = content_words(word)
    return min(stems) if stems else word


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A text's words and their stems (a question is read against every candidate sentence)."""
    tokens = tuple(_TOKEN.findall(_DASHES.sub("-", text)))
    return tokens, tuple(_stem(t) for t in tokens)


_MAX_FILL = 6
"""The longest stretch two copies of a sentence may differ by ("Miami, Florida"/"Anchorage, Alaska")."""
_MIN_SHARED = 0.6
"""The share of the longer sentence's words the two must have in common, in order."""


def filled_differently(a: str, b: str) -> tuple[str, str] | None:
    """Two copies of one sentence that differ in one stretch only, or None: "Airways International
    was an airline based in Miami, Florida." and "... based in Anchorage, Alaska." give ("Miami,
    Florida", "Anchorage, Alaska"). Most words in common, in the same order, at least four of them
    more than stop words; one stretch of at most six words different on each side, or the same
    stretch for the same other one wherever they differ (a title's name and the sentence's)."""
    (ours, ours_stems), (theirs, their_stems) = _tokens(a), _tokens(b)
    longer = max(len(ours), len(theirs))
    common = set(ours_stems) & set(their_stems)
    if min(len(ours), len(theirs)) < _MIN_SHARED * longer or len(common - STOP_WORDS) < 4:
        return None  # cheap first: too few words in common to be copies
    if len(common) < _MIN_SHARED * max(len(set(ours_stems)), len(set(their_stems))) - _MAX_FILL:
        return None
    opcodes = difflib.SequenceMatcher(None, ours_stems, their_stems, autojunk=False).get_opcodes()
    if opcodes and opcodes[0][0] in ("insert", "delete"):
        opcodes = opcodes[1:]  # a title or a lead-in before the sentence proper
    if opcodes and opcodes[-1][0] in ("insert", "delete"):
        opcodes = opcodes[:-1]  # a clause added at the end
    differing = [op for op in opcodes if op[0] != "equal"]
    if not differing or any(op[0] != "replace" for op in differing):
        return None
    fills = {(tuple(ours_stems[i1:i2]), tuple(their_stems[j1:j2])) for _, i1, i2, j1, j2 in differing}
    if len(fills) != 1:
        return None  # the same fill wherever they differ: "(Jay-Z album) ... rapper Jay-Z" against "Slim the Mobster"
    _, i1, i2, j1, j2 = differing[0]
    if i2 - i1 > _MAX_FILL or j2 - j1 > _MAX_FILL:
        return None
    shared = [ours_stems[i] for tag, x1, x2, _, _ in opcodes if tag == "equal" for i in range(x1, x2)]
    if len(shared) < _MIN_SHARED * max(len(ours), len(theirs)) or sum(w not in STOP_WORDS for w in shared) < 4:
        return None
    return _surface(a, ours[i1:i2]), _surface(b, theirs[j1:j2])


def _surface(text: str, tokens: Sequence[str]) -> str:
    """The stretch as the text writes it, punctuation inside it kept ("Miami, Florida")."""
    pattern = r"\W+".join(re.escape(t) for t in tokens)
    found = re.search(pattern, _DASHES.sub("-", text))
    return found.group(0) if found else " ".join(tokens)
