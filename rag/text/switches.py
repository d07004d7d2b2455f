"""Rule families switched off to measure what each does (`CANDOR_RULES_OFF`; issue 40's ablation
table in docs/answering.md). Not for production.

The step-level families (bridge, premise, relevance) are left out of the flow when off
(rag/pipeline/flow.py). The text rules below them are pure functions called from several stages,
so the answerer sets the answer's switched-off families here once (`rules_off`), and each family's
entry point asks `off(name)` and, when it is, says what it would say of text it cannot read:

- `swaps` (rag/text/swaps.py): no sentence is about another case by a swapped word;
- `polarity` (rag/text/polarity.py): no question's "not" is missed;
- `measures` (rag/text/measures.py): a question asks for no measure in particular;
- `answers` and `fills` (rag/pipeline/answer_values.py): two sources answering the question with
  different values are no conflict (`differing_answers`), nor is one sentence with another answer
  filled in (`differing_fills`);
- `quotable` (rag/text/quotable.py): every sentence of four words is quotable, none is page
  furniture or about the page;
- `codes` (rag/text/names.py): a text names no product code ("KW-B3 Lite");
- `relevance-quantity`, `relevance-date`, `relevance-place`, `relevance-address`
  (rag/pipeline/relevance.py): a part asking for that kind of value is answered by any supported
  sentence, as a "who" or "how do I" part is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_OFF: ContextVar[frozenset[str]] = ContextVar("candor_rules_off", default=frozenset())


def off(family: str) -> bool:
    return family in _OFF.get()


@contextmanager
def rules_off(families: frozenset[str]) -> Iterator[None]:
    """The families switched off for what runs inside (one answer; its tasks inherit them)."""
    token = _OFF.set(families)
    try:
        yield
    finally:
        _OFF.reset(token)
