"""Does the answer address what was asked, or only the topic around it?

"Is there free parking at the Leeds office?" retrieves the Leeds office's opening hours: a true,
well-cited sentence about the right subject that says nothing about parking. The critic passes it
(every word is in its evidence) and the rerank score is high (four of five key words match), so the
pipeline needs its own check that the asked-about thing is in the answer.

The check, per answered part:

1. Candidate words: the content words of the part's question sentences (in "I left my laptop on
   the train. How soon do I have to report it?" the first sentence sets the scene, the second
   asks) that neither the answer's sentences nor their passages' titles and headings contain
   (crude stems, so "parking" meets "park"), leaving out a word that only modifies a covered word
   next to it ("phone extension" answered by "extension 4357" is answered).
2. For each candidate, the shift: cos(part, answer) - cos(part without the word, answer). An answer
   that speaks of the word, or of a synonym of it ("holiday" answered by "annual leave"), fits the
   part better with the word than without it: the shift is positive or near zero. An answer that
   ignores the word fits the part better once the word is gone: the shift is clearly negative.
3. A word whose shift is below -`threshold` is unaddressed, and so is the part.

The threshold is calibrated by benchmarks/calibrate.py, and every candidate's shift is logged with
the completeness gate, so it can be recalibrated from the gate log alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag.model.ports import Embedder
from rag.text.facts import STOP_WORDS, content_words, values

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class FocusWord:
    word: str
    shift: float
    """cos(part, answer) - cos(part without the word, answer); negative: the answer ignores it."""

    def as_json(self) -> dict[str, object]:
        return {"word": self.word, "shift": round(self.shift, 4)}


@dataclass(frozen=True, slots=True)
class Focus:
    """The focus check of one answered part."""

    words: tuple[FocusWord, ...]
    """Every candidate word with its shift, lowest shift first."""
    threshold: float

    @property
    def unaddressed(self) -> tuple[FocusWord, ...]:
        return tuple(w for w in self.words if w.shift < -self.threshold)

    @property
    def addressed(self) -> bool:
        return not self.unaddressed

    def as_json(self) -> dict[str, object]:
        """What the completeness gate logs for the part (the focus threshold is calibrated from it)."""
        return {
            "focus": [w.as_json() for w in self.words],
            "focus_shift": round(self.least_shift, 4),
            "unaddressed": [w.word for w in self.unaddressed],
        }

    @property
    def least_shift(self) -> float:
        """The most negative shift (1.0 when there was no candidate): what the threshold gates."""
        return min((w.shift for w in self.words), default=1.0)


def candidates(part: str, covered_text: str, common: frozenset[str] = frozenset()) -> list[str]:
    """The part's content words the answer (with its titles and headings) does not contain, minus
    words that only modify a covered word right after them, and words the corpus uses everywhere
    (`common`: their full-text lexemes; "Tervane" in Tervane's own manuals names no subject)."""
    covered = content_words(covered_text)
    stated = values(covered_text)
    currencies = {v.kind.removeprefix("money") for v in stated if v.kind.startswith("money")}
    kinds = {v.kind for v in stated}
    tokens = _WORD.findall(asked(part))
    out: list[str] = []
    for i, token in enumerate(tokens):
        stems = _stems(token)
        if not stems or stems <= covered or token.lower() in out or _is_common(token, common):
            continue
        if _CURRENCY_WORDS.get(token.lower().rstrip("s")) in currencies:
            continue  # "in euros" is answered by "49 EUR" and "€59"
        if _KIND_WORDS.get(token.lower().rstrip("s")) in kinds:
            continue  # "what times" is answered by "06:00 to 22:00", "what percentage" by "12%"
        following = _stems(tokens[i + 1]) if i + 1 < len(tokens) else set()
        if following and following <= covered:
            continue  # "phone extension": the head noun is answered, the modifier rides along
        out.append(token.lower())
    return out


_CURRENCY_WORDS = {"euro": "€", "dollar": "$", "pound": "£", "sterling": "£"}
_KIND_WORDS = {"time": "time", "date": "date", "percentage": "percent", "percent": "percent"}
"""Question words that name the kind of value asked: a value of that kind addresses them."""


def asked(part: str) -> str:
    """The sentences of the part that ask (end in "?"); the whole part when none or all do."""
    sentences = [s.strip() for s in _SENTENCE.split(part.strip()) if s.strip()]
    questions = [s for s in sentences if s.endswith("?")]
    return " ".join(questions) if questions else part


def without(part: str, word: str) -> str:
    """The part with every occurrence of `word` (any case) taken out."""
    text = re.sub(rf"(?i)\b{re.escape(word)}\b", " ", part)
    return re.sub(r"\s+", " ", text).strip()


class FocusCheck:
    """Finds the question words an answer does not address (see the module docstring)."""

    def __init__(self, embedder: Embedder, *, threshold: float) -> None:
        self.embedder = embedder
        self.threshold = threshold

    async def check(
        self, part: str, sentences: Sequence[str], context: Sequence[str], common: frozenset[str] = frozenset()
    ) -> Focus:
        answer = " ".join(sentences)
        words = candidates(part, " ".join([answer, *context]), common)
        if not words or not answer:
            return Focus((), self.threshold)
        vectors = await self.embedder.embed([part, *(without(part, w) for w in words), answer])
        rows = np.asarray(vectors, dtype=np.float32)
        rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        target = rows[-1]
        base = float(rows[0] @ target)
        shifts = [FocusWord(w, base - float(rows[i + 1] @ target)) for i, w in enumerate(words)]
        return Focus(tuple(sorted(shifts, key=lambda f: f.shift)), self.threshold)


COMMON_SHARE = 0.2
"""A word in at least this share of the corpus's chunks is everywhere: no answer need address it."""


def common_lexemes(term_frequency: Mapping[str, float] | None) -> frozenset[str]:
    """The query's lexemes found in at least `COMMON_SHARE` of the chunks."""
    return frozenset(lexeme for lexeme, share in (term_frequency or {}).items() if share >= COMMON_SHARE)


def _is_common(token: str, common: frozenset[str]) -> bool:
    """The token is one of the `common` lexemes (a stemmer's prefix of it: "tervan" of "Tervane",
    "polici" of "policy")."""
    word = token.lower()
    return any(word.startswith(lexeme) or (len(lexeme) >= 4 and word.startswith(lexeme[:-1])) for lexeme in common)


def _stems(token: str) -> set[str]:
    word = token.lower().split("'")[0]  # "what's" → "what", "doctor's" → "doctor"
    if word in STOP_WORDS or len(word) < 2:
        return set()
    return content_words(word)
