"""The report's sampled measures, from the audit rows (`candor audit answers`, migration 0008): pure functions.

- `hallucination_rate`: docs/design.md's, from re-verified delivered sentences. Only rows whose verifier
  is independent of that trace's gate count, one judgement per delivered sentence (the query keeps
  the latest judged one; `verifier` lists whose were counted). When only the gate's own verifier
  re-checked a window, the rate is withheld (`not_independent`) and what is shown instead is how
  often it agreed with the gate (it called the delivered sentence supported, as the gate did).
- `wrong_abstention`: abstentions and unanswered parts re-checked by relaxed retrieval
  (`rag.insights.relaxed`): "possibly answerable" is an upper estimate (`kind`), shown with how often the
  re-check flags a *correct* abstention (`false_alarms`, measured by benchmarks/relaxed_recheck.py on
  its report set) and with no interval, since an interval of a biased estimate would read as precision.
- `human`: the same two from labels people gave (`candor audit answers --import`).

Audits are sampled at different rates on different days (a run of 50 answers on a quiet day and on a
busy one), so the rates of sentences are stratified by UTC day (`stratified`): each day's unsupported
share among its judged sentences, weighted by the sentences that day delivered. `n` and `sample_size`
stay the raw counts. The interval of a stratified rate is `stratified_interval`; a plain share's (the
people's wrong abstentions) is the Wilson score interval (`wilson_interval`). Both are a few lines of
the standard library (`statistics.NormalDist`); no statistics package is worth a dependency for them.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

CONFIDENCE = 0.95
DIGITS = 4
NOT_MEASURED_HALLUCINATION = "no verifier independent of the gate has re-checked a sample of delivered answers yet"
NOT_MEASURED_ABSTENTION = "no abstention has been re-checked against the documents or labelled by a person yet"
RELAXED = "relaxed retrieval"
UPPER_ESTIMATE = "upper_estimate"
STRATIFIED = "stratified by day, weighted by delivered sentences"
REPORT_SET = "sample/golden.yaml"
"""The set benchmarks/relaxed_recheck.py reports the re-check on (never used to choose its threshold)."""
PSEUDO = 2
"""Successes and failures added to each day's counts for its interval (Agresti and Coull's 'add two')."""


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


@dataclass(frozen=True, slots=True)
class Stratum:
    """One UTC day of a period: the sentences it delivered, and of those sampled, how many were
    judged and how many of them unsupported."""

    delivered: int
    judged: int
    unsupported: int

    @property
    def weight(self) -> int:
        # A day always delivered at least what was judged of it; should the rows ever disagree, the
        # judged count is the better floor than a zero weight.
        return max(self.delivered, self.judged)


def _judged(strata: Iterable[Stratum]) -> list[Stratum]:
    return [s for s in strata if s.judged > 0]


def stratified(strata: Sequence[Stratum]) -> float | None:
    """Σ W_d·p_d over the days with a judged sentence: p_d the day's unsupported share among its judged
    sentences, W_d its delivered sentences over those of all such days. A day with nothing judged is
    left out (its share is unknown), so the estimate is of the days judged (see `coverage`). With a
    single day it is that day's plain share. None when nothing was judged."""
    days = _judged(strata)
    total = sum(s.weight for s in days)
    if not total:
        return None
    return sum(s.weight / total * s.unsupported / s.judged for s in days)


def stratified_interval(strata: Sequence[Stratum], confidence: float = CONFIDENCE) -> dict[str, Any] | None:
    """A 95% interval for `stratified`: Σ W_d·p̃_d ± z·sqrt(Σ W_d²·p̃_d(1−p̃_d)/ñ_d), with each day's
    share adjusted as Agresti and Coull adjust one proportion (p̃_d = (u_d + 2)/(n_d + 4), ñ_d = n_d + 4),
    and clipped to [0, 1].

    Why this and not a bootstrap over answers: the adjustment keeps the interval honest where audits
    usually are, at 0 unsupported and on days with one or two answers judged, where a bootstrap has
    no spread to resample and would report [0%, 0%]; it is also deterministic and can be checked by
    hand. What it does not model: sentences of one answer are not independent (an answer the writer
    got wrong tends to be wrong in several sentences), so the interval is somewhat too narrow when
    unsupported sentences cluster in a few answers. With one day it is the Agresti–Coull interval."""
    days = _judged(strata)
    total = sum(s.weight for s in days)
    if not total:
        return None
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    centre = variance = 0.0
    for s in days:
        weight, size = s.weight / total, s.judged + 2 * PSEUDO
        adjusted = (s.unsupported + PSEUDO) / size
        centre += weight * adjusted
        variance += weight * weight * adjusted * (1 - adjusted) / size
    half = z * math.sqrt(variance)
    return {
        "low": round(max(0.0, centre - half), DIGITS),
        "high": round(min(1.0, centre + half), DIGITS),
        "confidence": confidence,
        "method": "stratified agresti-coull",
    }


def coverage(strata: Sequence[Stratum]) -> dict[str, Any]:
    """The delivered sentences of the days with a judged sentence, over all the period delivered."""
    covered = sum(s.weight for s in _judged(strata))
    delivered = sum(s.weight for s in strata)
    return {"n": covered, "of": delivered, "rate": _share(covered, delivered)}


def strata(
    rows: Iterable[Mapping[str, Any]], delivered: Mapping[Any, int], judged: str, unsupported: str
) -> list[Stratum]:
    """A stratum per day: every day that delivered sentences, and any day a row judged. Rows are keyed by
    their `utc_day` (rows without one form a single stratum, as for a summary row)."""
    counts: dict[Hashable, list[int]] = {day: [0, 0] for day in delivered}
    for row in rows:
        seen = counts.setdefault(row.get("utc_day"), [0, 0])
        seen[0] += _int(row, judged)
        seen[1] += _int(row, unsupported)
    return [Stratum(int(delivered.get(day) or 0), n, u) for day, (n, u) in counts.items()]


def _share(n: int, of: int) -> float | None:
    return round(n / of, DIGITS) if of else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def _int(row: Mapping[str, Any] | None, column: str) -> int:
    return int((row or {}).get(column) or 0)


def _sum(rows: Iterable[Mapping[str, Any]], column: str) -> int:
    return sum(_int(row, column) for row in rows)


def _names(rows: Sequence[Mapping[str, Any]], column: str = "verifiers") -> str | list[str] | None:
    """One verifier's name, or the sorted list when several."""
    names = sorted({str(name) for row in rows for name in row.get(column) or ()})
    if not names:
        return None
    return names[0] if len(names) == 1 else names


def hallucination_rate(rows: Sequence[Mapping[str, Any]], delivered: Mapping[Any, int] | None = None) -> dict[str, Any]:
    """From one period's audit-sentence rows (a row per day and independence, `AUDIT_SENTENCES`) and the
    sentences each day of the period delivered: the rate stratified by day over the independent
    judgements; the gate's own verifier's agreement when only it re-checked."""
    independent = [row for row in rows if row.get("independent")]
    own = [row for row in rows if row.get("independent") is False]
    judged, unsupported = _sum(independent, "judged"), _sum(independent, "unsupported")
    base: dict[str, Any] = {
        "status": "not_measured",
        "rate": None,
        "n": 0,
        "sample_size": 0,
        "answers": 0,
        "not_judged": _sum(independent, "not_judged"),
        "verifier": None,
        "interval": None,
        "method": STRATIFIED,
        "coverage": None,
        "agreement": None,
        "reason": NOT_MEASURED_HALLUCINATION,
    }
    if judged:
        days = strata(independent, delivered or {}, "judged", "unsupported")
        return {
            **base,
            "status": "measured",
            "rate": _round(stratified(days)),
            "n": unsupported,
            "sample_size": judged,
            "answers": _sum(independent, "answers"),
            "verifier": _names(independent),
            "interval": stratified_interval(days),
            "coverage": coverage(days),
            "reason": None,
        }
    own_judged = _sum(own, "judged")
    if own_judged:
        agreed = own_judged - _sum(own, "unsupported")
        names = _names(own)
        named = ", ".join(names) if isinstance(names, list) else names
        return {
            **base,
            "status": "not_independent",
            "n": None,
            "sample_size": own_judged,
            "answers": _sum(own, "answers"),
            "not_judged": _sum(own, "not_judged"),
            "verifier": names,
            "agreement": {"n": agreed, "of": own_judged, "rate": _share(agreed, own_judged)},
            "reason": f"the only verifier that re-checked answers is the gate's own ({named}): "
            "its rate would not be independent",
        }
    if base["not_judged"]:
        names = _names(independent, "tried")
        base["verifier"] = names
        base["reason"] = f"the independent verifier ({names}) could not judge any of the sentences it was given"
    return base


def false_alarms(record: Mapping[str, Any], threshold: float | None) -> dict[str, Any] | None:
    """How often the relaxed re-check flags a *correct* abstention as possibly answerable, as
    benchmarks/relaxed_recheck.py measured it on its report set (`REPORT_SET`) at the threshold it chose
    (`record` is its entry in rag/calibration.json; `report_check.golden` there counts the set's
    unanswerable questions and those labelled true_gap; `golden_parts` the same per part of its
    multi-part questions). None when that benchmark has not been run."""
    checked = record.get("report_check")
    if not isinstance(checked, Mapping):
        return None
    questions = _flagged(checked.get("golden"))
    if questions is None:
        return None
    parts = _flagged(checked.get("golden_parts"))
    return {**questions, "set": REPORT_SET, "threshold": threshold, "date": record.get("date"), "parts": parts}


def _flagged(tally: Any) -> dict[str, Any] | None:
    """Unanswerable items not labelled true_gap, over the unanswerable items."""
    if not isinstance(tally, Mapping) or not _int(tally, "unanswerable"):
        return None
    of = _int(tally, "unanswerable")
    n = of - _int(tally, "unanswerable_true_gap")
    return {"n": n, "of": of, "rate": _share(n, of)}


def wrong_abstention(row: Mapping[str, Any] | None, alarms: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """From one period's abstention re-checks: possibly answerable over re-checked, an upper estimate of
    wrong abstentions (`kind`), beside how often the re-check flags a correct abstention (`alarms`,
    `false_alarms`). No interval: it would measure the sampling error of a biased count."""
    checked, possible = _int(row, "checked"), _int(row, "possibly_answerable")
    return {
        "status": "measured" if checked else "not_measured",
        "kind": UPPER_ESTIMATE,
        "rate": _share(possible, checked),
        "n": possible,
        "sample_size": checked,
        "method": RELAXED,
        "false_alarms": None if alarms is None else dict(alarms),
        "reason": None if checked else NOT_MEASURED_ABSTENTION,
    }


def human(rows: Sequence[Mapping[str, Any]], delivered: Mapping[Any, int] | None = None) -> dict[str, Any]:
    """From one period's human labels (a row per day, `HUMAN_LABELS`): unsupported over labelled sentences
    (stratified by day as the verifier's rate is), wrong over labelled abstentions (a plain share)."""
    sentences, unsupported = _sum(rows, "sentences"), _sum(rows, "unsupported")
    abstentions, wrong = _sum(rows, "abstentions"), _sum(rows, "wrong")
    days = strata(rows, delivered or {}, "sentences", "unsupported")
    return {
        "hallucination_rate": {
            "status": "measured" if sentences else "not_measured",
            "rate": _round(stratified(days)),
            "n": unsupported,
            "sample_size": sentences,
            "labelled_answers": _sum(rows, "labelled_answers"),
            "partly": _sum(rows, "partly"),
            "interval": stratified_interval(days),
            "method": STRATIFIED,
            "coverage": coverage(days) if sentences else None,
        },
        "wrong_abstention": {
            "status": "measured" if abstentions else "not_measured",
            "rate": _share(wrong, abstentions),
            "n": wrong,
            "sample_size": abstentions,
            "interval": wilson_interval(wrong, abstentions),
        },
    }
