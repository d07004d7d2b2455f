"""Fake language models for the fake OpenAI-compatible server (`tests.fakes.openai_server.FakeOpenAI.responder`):
a writer that reads the numbered passages of Candor's prompt and writes a scripted answer from them,
and a judge that reads the sentence and its evidence.

    fake.responder = Models(writer=writes(copy("16 weeks")), judge=judges(unless="18 weeks"))

`HallucinatingWriter` answers any question from the prompt alone (`answer_from`: the passage sentences
sharing most words with each part) and plants a recorded hallucination in every n-th draft:

    writer = HallucinatingWriter(every=3, avoid=handbook_text)
    fake.responder = Models(writer)   # ... then writer.planted: the kind, sentence and marker of each
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.fakes.openai_server import ChatRequest

_PASSAGE = re.compile(r"^\[(\d+)\] [^\n]*\n(.*?)(?=\n\n\[\d+\] |\Z)", re.DOTALL | re.MULTILINE)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def passages(request: ChatRequest) -> dict[int, str]:
    """Passage number → text, as the writer's prompt lists them."""
    user = request.user
    listed = user.split("Passages:\n", 1)[-1]
    return {int(m.group(1)): m.group(2).strip() for m in _PASSAGE.finditer(listed)}


def find(request: ChatRequest, phrase: str) -> tuple[int, str]:
    """The first passage (number) holding `phrase`, and the sentence of it that does."""
    for number, text in passages(request).items():
        for sentence in _SENTENCE.findall(text):
            if phrase in sentence:
                return number, sentence.strip(" -*\t")
    raise AssertionError(f"no passage of the prompt says {phrase!r}: {list(passages(request).values())[:3]}")


Sentence = Callable[[ChatRequest], dict[str, Any]]


def copy(phrase: str, *, part: int = 1) -> Sentence:
    """The passage sentence holding `phrase`, cited correctly."""

    def make(request: ChatRequest) -> dict[str, Any]:
        number, sentence = find(request, phrase)
        return {"text": sentence, "citations": [number], "part": part}

    return make


def altered(phrase: str, old: str, new: str, *, part: int = 1) -> Sentence:
    """The passage sentence holding `phrase` with `old` replaced by `new` (a hallucinated value), cited."""

    def make(request: ChatRequest) -> dict[str, Any]:
        number, sentence = find(request, phrase)
        return {"text": sentence.replace(old, new), "citations": [number], "part": part}

    return make


def stated(text: str, *, citing: str | None = None, citations: Sequence[int] = (), part: int = 1) -> Sentence:
    """`text` as written, citing the passage holding `citing` (or the given numbers, real or not)."""

    def make(request: ChatRequest) -> dict[str, Any]:
        cited = [find(request, citing)[0]] if citing is not None else list(citations)
        return {"text": text, "citations": cited, "part": part}

    return make


def miscited(text: str, *, holding: str, part: int = 1) -> Sentence:
    """`text` as written, citing a passage of the prompt other than the one holding `holding` (a small
    model's mis-citation among the passages it was shown)."""

    def make(request: ChatRequest) -> dict[str, Any]:
        right = find(request, holding)[0]
        wrong = next(n for n in passages(request) if n != right)
        return {"text": text, "citations": [wrong], "part": part}

    return make


Note = Callable[[ChatRequest], dict[str, Any]]


def disagreement(*stated: tuple[str, str]) -> Note:
    """A conflict note: each (value, phrase) pair cites the passage holding `phrase`."""

    def make(request: ChatRequest) -> dict[str, Any]:
        values = [value for value, _ in stated]
        return {
            "note": f"The passages disagree: {' vs '.join(values)}.",
            "values": values,
            "citations": [find(request, phrase)[0] for _, phrase in stated],
        }

    return make


def writes(
    *sentences: Sentence, abstained: bool = False, unanswered: Sequence[int] = (), conflicts: Sequence[Note] = ()
) -> Callable[..., Any]:
    """A writer answering every request with these sentences (and conflict notes)."""

    def reply(request: ChatRequest) -> dict[str, Any]:
        return {
            "sentences": [make(request) for make in sentences],
            "abstained": abstained,
            "unanswered_parts": list(unanswered),
            "conflicts": [make(request) for make in conflicts],
        }

    return reply


def judges(*, unless: Sequence[str] = ()) -> Callable[[ChatRequest], dict[str, Any]]:
    """A judge supporting every sentence except those containing one of `unless`."""

    def reply(request: ChatRequest) -> dict[str, Any]:
        sentence = request.user.split("Sentence: ", 1)[-1].split("\n\nEvidence:", 1)[0]
        bad = next((u for u in unless if u in sentence), None)
        if bad is not None:
            return {"supported": False, "reason": f"the evidence does not say {bad}"}
        return {"supported": True, "reason": "the evidence states it"}

    return reply


@dataclass
class Models:
    """One fake server, two models: the request's model name picks the writer or the judge."""

    writer: Callable[[ChatRequest], Any]
    judge: Callable[[ChatRequest], Any] | None = None
    compare: Callable[[ChatRequest], Any] | None = None
    """Answers the self-consistency comparison ("First answer: ... Other answer 1: ...")."""
    seen: list[str] = field(default_factory=list)

    def __call__(self, request: ChatRequest) -> Any:
        self.seen.append(request.model or "")
        if request.user.startswith("First answer: "):
            if self.compare is None:
                raise AssertionError("a comparison was asked but none is scripted")
            return self.compare(request)
        if "Sentence: " in request.user and "Evidence:" in request.user:
            if self.judge is None:
                raise AssertionError("the judge was asked but none is scripted")
            return self.judge(request)
        return self.writer(request)


# --- a writer that answers from the prompt, and hallucinates on a schedule ----------------------------

Kind = Literal["number", "invented", "name", "citation"]
KINDS: tuple[Kind, ...] = ("number", "invented", "name", "citation")

_LISTED = re.compile(r"^\[(\d+)\] ([^\n]*)\n(.*?)(?=\n\n\[\d+\] |\Z)", re.DOTALL | re.MULTILINE)
_PART = re.compile(r"^(\d+)\. (.+)$", re.MULTILINE)
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$£\"'(])")
_MARKUP = re.compile(r"^\s*(?:[-*•+]\s+|\d+[.)]\s+|#+\s*|>\s+)")
_TOKEN = re.compile(r"[a-z0-9]+")
_NAMED = re.compile(r"(?<=\s)(?:[A-Z]+-?\d+[A-Z]?|[A-Z][a-z]+)(?:\s(?:[A-Z]+-?\d+[A-Z]?|[A-Z][a-z]+))*(?![\w-])")
"""Names and codes in a question part, its first word and acronyms (CEO, SSO) aside: "Beacon Ultra", "NW-900"."""
_AMOUNT = re.compile(r"(?<![\w\-/:.,])([$£]?)(\d{1,3}(?:,\d{3})+|\d+)(?![\w:/]|[.,]\d)((?:-|\s)[A-Za-z]+)?")
_MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september"}
_MONTHS |= {"october", "november", "december"}
_NAME_GROUPS = (("Starter", "Team", "Business"), ("Beacon Pro", "Beacon"), ("NW-200X", "NW-200"))
"""The handbook's plans, products and collectors: a name is swapped for the next of its group."""
_STOP_WORDS = """a an the and or but if of to in on at by for with from into as is are was were be been do does did
can could will would should may might must i me my we our you your they their it its this that these those there here
what which who when where why how much many long often soon get got any anything some per also about up out over not
no each every all than then so just"""
_STOP = frozenset(_STOP_WORDS.split())
INVENTED = (
    "Employees also receive a free annual gym membership worth ${amount}.",
    "Employees may also bring their dogs to the office on Fridays.",
    "Northwind Labs also reimburses up to ${amount} a year for home broadband upgrades.",
    "This also applies to contractors and interns from their first week.",
)
"""Sentences no handbook states, planted in turn (an amount is made unique per planting)."""


@dataclass(frozen=True, slots=True)
class Listed:
    """One numbered passage of the writer's prompt."""

    number: int
    source: str
    text: str

    @property
    def sentences(self) -> list[str]:
        """Its prose sentences as a model would copy them: no list markers or Markdown, no table rows."""
        out: list[str] = []
        for line in self.text.splitlines():
            if line.lstrip().startswith(("|", "<")):
                continue
            line = _MARKUP.sub("", line).replace("**", "").replace("`", "").strip()
            out.extend(s.strip() for s in _SPLIT.split(line) if len(s.split()) >= 4 and not s.rstrip().endswith(":"))
        return out


def listed(request: ChatRequest) -> list[Listed]:
    """The prompt's passages with their number and source ("[n] title | source | effective date")."""
    rows = []
    for m in _LISTED.finditer(request.user.split("Passages:\n", 1)[-1]):
        fields = m.group(2).split(" | ")
        source = fields[-2] if fields[-1].startswith("effective ") and len(fields) > 2 else fields[-1]
        rows.append(Listed(int(m.group(1)), source, m.group(3).strip()))
    return rows


def question_parts(request: ChatRequest) -> list[str]:
    """The numbered question parts of the prompt (the question itself when none are listed)."""
    user = request.user
    section = user.split("Parts:\n", 1)[-1].split("\n\nPassages:", 1)[0] if "Parts:\n" in user else ""
    return [m.group(2) for m in _PART.finditer(section)] or [asked(request)]


def asked(request: ChatRequest) -> str:
    return request.user.split("Question: ", 1)[-1].split("\n", 1)[0]


def words(text: str) -> set[str]:
    """Content words, lower-cased, a plural "s" dropped: what the fake matches a part against."""
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in _TOKEN.findall(text.lower())
    } - _STOP


def plain(text: str) -> str:
    return " ".join(re.sub(r"[*_`~]", "", text).lower().split())


def mentions(text: str, marker: str) -> bool:
    """`marker` occurs in `text` as a whole (Markdown, case and spacing aside): "$600" is not in "$6000"."""
    needle = re.escape(plain(marker).rstrip(". "))
    return re.search(rf"(?<![\w$£.,-]){needle}(?![\w]|[.,]\d)", plain(text)) is not None


def answer_from(request: ChatRequest, *, min_share: float = 0.4) -> dict[str, Any]:
    """A grounded reply: per part, the passage sentence sharing two and `min_share` of the part's words (the
    rarer in the prompt the better), and the sentence after it when that shares two, cited. A part is
    unanswered when no sentence does, or when it names something no passage mentions (the "Platinum plan")."""
    rows = listed(request)
    pool = [(row, i, words(s)) for row in rows for i, s in enumerate(row.sentences)]
    spread = Counter(w for *_, found in pool for w in found)
    sentences: list[dict[str, Any]] = []
    unanswered: list[int] = []
    for index, part in enumerate(question_parts(request), 1):
        wanted = words(part)
        named = _NAMED.findall(part)
        enough = [c for c in pool if len(wanted & c[2]) >= max(2, min_share * len(wanted))]
        if not enough or any(not any(mentions(row.text, name) for row in rows) for name in named):
            unanswered.append(index)
            continue
        row, i, _ = max(enough, key=lambda c: (sum(1 / spread[w] for w in wanted & c[2]), -c[0].number, -c[1]))
        chosen = [row.sentences[i]]
        if i + 1 < len(row.sentences) and len(wanted & words(row.sentences[i + 1])) >= 2:
            chosen.append(row.sentences[i + 1])
        sentences.extend({"text": s, "citations": [row.number], "part": index} for s in chosen)
    return {"sentences": sentences, "abstained": not sentences, "unanswered_parts": unanswered, "conflicts": []}


@dataclass(frozen=True, slots=True)
class Planted:
    """One hallucination written into a draft."""

    kind: Kind
    request: int
    """The writer request (1-based) whose draft carries it."""
    question: str
    text: str
    """The planted sentence as drafted."""
    marker: str
    """What no delivered answer may contain: the changed value, the invented amount or sentence, the sentence
    with the swapped name; for a moved citation, the (true) sentence, delivered only if it cites `wrong_source`."""
    original: str = ""
    """The passage sentence it was made from ("" for an invented one)."""
    wrong_source: str | None = None
    """A moved citation: the source of the unrelated passage it cites."""


class HallucinatingWriter:
    """`fake.responder` for the writer: grounded replies (`answer_from`), and in every `every`-th request a
    planted hallucination, recorded in `planted`. The kinds take turns from `first`; a draft that does not
    allow the kind whose turn it is (no number to change, no name to swap) gets the next kind it allows (an
    invented sentence always fits). Planted values and sentences occur neither in the prompt nor in `avoid`."""

    def __init__(self, *, every: int = 3, avoid: str = "", first: Kind = "number") -> None:
        if every < 1:
            raise ValueError("every must be >= 1")
        self.every = every
        self.avoid = avoid
        self.first = KINDS.index(first)
        self.requests = 0
        self.planted: list[Planted] = []

    def __call__(self, request: ChatRequest) -> dict[str, Any]:
        self.requests += 1
        reply = answer_from(request)
        if self.requests % self.every:
            return reply
        start = (self.first + len(self.planted)) % len(KINDS)
        for kind in KINDS[start:] + KINDS[:start]:
            planted = getattr(self, f"_{kind}")(request, reply)
            if planted is not None:
                self.planted.append(planted)
                break
        return reply

    def _novel(self, request: ChatRequest, marker: str) -> bool:
        return not any(mentions(text, marker) for text in (request.user, self.avoid))

    def _made(self, kind: Kind, request: ChatRequest, text: str, marker: str, **more: Any) -> Planted:
        return Planted(kind, self.requests, asked(request), text, marker, **more)

    def _number(self, request: ChatRequest, reply: dict[str, Any]) -> Planted | None:
        """A value of a copied sentence changed: 16 weeks → 18 weeks, $500 → $600, 31 March → 28 March."""
        for sentence in reply["sentences"]:
            for m in _AMOUNT.finditer(sentence["text"]):
                old = int(m.group(2).replace(",", ""))
                after = m.group(3) or ""
                for new in _changed(old, after):
                    shown = f"{new:,}" if "," in m.group(2) else str(new)
                    marker = f"{m.group(1)}{shown}{after}"
                    if self._novel(request, marker):
                        original = sentence["text"]
                        sentence["text"] = original[: m.start(2)] + shown + original[m.end(2) :]
                        return self._made("number", request, sentence["text"], marker, original=original)
        return None

    def _invented(self, request: ChatRequest, reply: dict[str, Any]) -> Planted | None:
        """A sentence no passage states, citing the passage closest to the part it pretends to answer."""
        rows = listed(request)
        if not rows:
            return None
        parts = question_parts(request)
        part = reply["unanswered_parts"][0] if reply["unanswered_parts"] else reply["sentences"][0]["part"]
        wanted = words(parts[part - 1]) if 0 < part <= len(parts) else set()
        cited = max(rows, key=lambda row: (len(wanted & words(row.text)), -row.number))
        text, marker = self._invention(request)
        reply["sentences"].append({"text": text, "citations": [cited.number], "part": part})
        reply["unanswered_parts"] = [p for p in reply["unanswered_parts"] if p != part]
        reply["abstained"] = False
        return self._made("invented", request, text, marker)

    def _invention(self, request: ChatRequest) -> tuple[str, str]:
        """The next of `INVENTED` in turn, and its marker: its amount (unique to this planting), or itself."""
        turn = sum(p.kind == "invented" for p in self.planted)
        for template in (INVENTED[(turn + i) % len(INVENTED)] for i in range(len(INVENTED))):
            if "{amount}" not in template:
                if self._novel(request, template):
                    return template, template
                continue
            for amount in range(710 + 20 * len(self.planted), 10_000):
                if self._novel(request, f"${amount:,}"):
                    return template.format(amount=f"{amount:,}"), f"${amount:,}"
        raise AssertionError("every invented sentence is in the prompt or in `avoid`")

    def _name(self, request: ChatRequest, reply: dict[str, Any]) -> Planted | None:
        """A plan, product or collector name of a copied sentence swapped for another of the handbook's."""
        for sentence in reply["sentences"]:
            for group in _NAME_GROUPS:
                present = [name for name in group if _named(name).search(sentence["text"])]
                if len(present) != 1:
                    continue
                other = group[(group.index(present[0]) + 1) % len(group)]
                text = _named(present[0]).sub(other, sentence["text"], count=1)
                if self._novel(request, text):
                    original, sentence["text"] = sentence["text"], text
                    return self._made("name", request, text, text, original=original)
        return None

    def _citation(self, request: ChatRequest, reply: dict[str, Any]) -> Planted | None:
        """A copied sentence cited to the passage of another source that shares fewest words with it."""
        rows = {row.number: row for row in listed(request)}
        for sentence in reply["sentences"]:
            source = rows[sentence["citations"][0]].source
            others = [r for r in rows.values() if r.source != source and plain(sentence["text"]) not in plain(r.text)]
            if not others:
                continue
            have = words(sentence["text"])
            wrong = min(others, key=lambda r: (len(have & words(r.text)), -r.number))
            sentence["citations"] = [wrong.number]
            return self._made("citation", request, sentence["text"], sentence["text"], wrong_source=wrong.source)
        return None


def _changed(old: int, after: str) -> list[int]:
    """Plausible wrong values for `old`, most plausible first (never `old`, never negative)."""
    if after.strip().lower() in _MONTHS:  # a day of the month
        first = old - 3 if old > 3 else old + 2
    elif 1900 <= old <= 2100:  # a year
        first = old + 2
    else:
        first = old + 2 if old < 100 else old + 10 ** (len(str(old)) - 1)
    return [first, *(old + step for step in (1, 3, 4, 5, 6, 7, 8, 9, 11, 13))]


def _named(name: str) -> re.Pattern[str]:
    """`name` as a whole name: "Beacon" is not in "Beacon Pro", "NW-200" not in "NW-200X"."""
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-]|\s(?:Pro|Ultra|Plus)\b)")


def compares(*same: bool, differing: Sequence[str] = ()) -> Callable[[ChatRequest], dict[str, Any]]:
    """A judge comparing resampled answers: `same[i]` for the i-th other answer."""

    def reply(request: ChatRequest) -> dict[str, Any]:
        return {"samples": [{"same_facts": s, "differing": [] if s else list(differing)} for s in same]}

    return reply
