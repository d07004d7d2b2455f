"""The report's sampled measures, from the audit rows (`candor audit answers`, migration 0008): pure functions.

- `hallucination_rate`: DESIGN.md's, from re-verified delivered sentences. Only rows whose verifier
  is independent of that trace's gate count; the latest judgement per sentence and verifier (a
  sentence two independent verifiers judged counts once for each). When only the gate's own
  verifier re-checked a window, the rate is withheld (`not_independent`) and what is shown instead
  is how often it agreed with the gate (it called the delivered sentence supported, as the gate did).
- `wrong_abstention`: abstentions and unanswered parts re-checked by relaxed retrieval
  (`rag.relaxed`); "possibly answerable" is an upper estimate, since relaxed retrieval finding a
  close sentence is not proof that it answers the question.
- `human`: the same two from labels people gave (`candor audit answers --import`).

Every measured rate has its counts and a 95% Wilson score interval (`wilson_interval`), which stays
inside [0, 1] and behaves at 0/n and n/n where the normal approximation does not. It is a few lines
of the standard library (`statistics.NormalDist`); no statistics package is worth a dependency for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

CONFIDENCE = 0.95
DIGITS = 4
NOT_MEASURED_HALLUCINATION = "no verifier independent of the gate has re-checked a sample of delivered answers yet"
NOT_MEASURED_ABSTENTION = "no abstention has been re-checked against the documents or labelled by a person yet"
RELAXED = "relaxed retrieval"


def wilson_interval(n: int, of: int, confidence: float = CONFIDENCE) -> dict[str, Any] | None:
    """The Wilson score interval of the proportion n/of; None when there is nothing to divide by."""
    if of <= 0:
        return None
    if not 0 <= n <= of or not 0.0 < confidence < 1.0:
        raise ValueError(f"need 0 <= n <= of and 0 < confidence < 1, got {n}/{of} at {confidence}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    share = n / of
    spread = z * z / of
    centre = (share + spread / 2) / (1 + spread)
    half = z * math.sqrt(share * (1 - share) / of + spread / (4 * of)) / (1 + spread)
    return {
        "low": round(max(0.0, centre - half), DIGITS),
        "high": round(min(1.0, centre + half), DIGITS),
        "confidence": confidence,
        "method": "wilson",
    }


def _share(n: int, of: int) -> float | None:
    return round(n / of, DIGITS) if of else None


def _int(row: Mapping[str, Any] | None, column: str) -> int:
    return int((row or {}).get(column) or 0)


def _names(rows: Sequence[Mapping[str, Any]]) -> str | list[str] | None:
    """One verifier's name, or the sorted list when several judged."""
    names = sorted({str(name) for row in rows for name in row.get("verifiers") or ()})
    if not names:
        return None
    return names[0] if len(names) == 1 else names


def hallucination_rate(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """From one period's audit-sentence rows: one row for the independent judgements, one for the rest."""
    independent = [row for row in rows if row.get("independent")]
    own = [row for row in rows if row.get("independent") is False]
    judged, unsupported = _int(_first(independent), "judged"), _int(_first(independent), "unsupported")
    base: dict[str, Any] = {
        "status": "not_measured",
        "rate": None,
        "n": 0,
        "sample_size": 0,
        "answers": 0,
        "not_judged": _int(_first(independent), "not_judged"),
        "verifier": None,
        "interval": None,
        "agreement": None,
        "reason": NOT_MEASURED_HALLUCINATION,
    }
    if judged:
        return {
            **base,
            "status": "measured",
            "rate": _share(unsupported, judged),
            "n": unsupported,
            "sample_size": judged,
            "answers": _int(_first(independent), "answers"),
            "verifier": _names(independent),
            "interval": wilson_interval(unsupported, judged),
            "reason": None,
        }
    own_judged = _int(_first(own), "judged")
    if own_judged:
        agreed = own_judged - _int(_first(own), "unsupported")
        names = _names(own)
        named = ", ".join(names) if isinstance(names, list) else names
        return {
            **base,
            "status": "not_independent",
            "n": None,
            "sample_size": own_judged,
            "answers": _int(_first(own), "answers"),
            "not_judged": _int(_first(own), "not_judged"),
            "verifier": names,
            "agreement": {"n": agreed, "of": own_judged, "rate": _share(agreed, own_judged)},
            "reason": f"the only verifier that re-checked answers is the gate's own ({named}): "
            "its rate would not be independent",
        }
    if base["not_judged"]:
        names = _names(independent)
        base["verifier"] = names
        base["reason"] = f"the independent verifier ({names}) could not judge any of the sentences it was given"
    return base


def wrong_abstention(row: Mapping[str, Any] | None) -> dict[str, Any]:
    """From one period's abstention re-checks: possibly answerable over re-checked (an upper estimate)."""
    checked, possible = _int(row, "checked"), _int(row, "possibly_answerable")
    if not checked:
        return {
            "status": "not_measured",
            "rate": None,
            "n": 0,
            "sample_size": 0,
            "interval": None,
            "method": RELAXED,
            "reason": NOT_MEASURED_ABSTENTION,
        }
    return {
        "status": "measured",
        "rate": _share(possible, checked),
        "n": possible,
        "sample_size": checked,
        "interval": wilson_interval(possible, checked),
        "method": RELAXED,
        "reason": None,
    }


def human(row: Mapping[str, Any] | None) -> dict[str, Any]:
    """From one period's human labels: unsupported over labelled sentences, wrong over labelled abstentions."""
    sentences, unsupported = _int(row, "sentences"), _int(row, "unsupported")
    abstentions, wrong = _int(row, "abstentions"), _int(row, "wrong")
    return {
        "hallucination_rate": {
            "status": "measured" if sentences else "not_measured",
            "rate": _share(unsupported, sentences),
            "n": unsupported,
            "sample_size": sentences,
            "labelled_answers": _int(row, "labelled_answers"),
            "interval": wilson_interval(unsupported, sentences),
        },
        "wrong_abstention": {
            "status": "measured" if abstentions else "not_measured",
            "rate": _share(wrong, abstentions),
            "n": wrong,
            "sample_size": abstentions,
            "interval": wilson_interval(wrong, abstentions),
        },
    }


def _first(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    return rows[0] if rows else None
