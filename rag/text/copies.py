"""Two sources' copies of one sentence with another answer filled in.

`filled_differently(a, b)` is the same alignment between two sources' sentences: two copies of one
sentence with another answer filled in ("... based in Miami, Florida." against "... based in
Anchorage, Alaska."), which rag/pipeline/contradictions.py reports as a conflict.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from rag.text.facts import STOP_WORDS
from rag.text.words import DASHES, tokens

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
    (ours, ours_stems), (theirs, their_stems) = tokens(a), tokens(b)
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
    found = re.search(pattern, DASHES.sub("-", text))
    return found.group(0) if found else " ".join(tokens)
