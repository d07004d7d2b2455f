"""The sampled measures on the report page (`bot.render.report_html`): their headline cards and charts, in words.

Pure functions of the report object (`rag.insights.report.build`, `rag.insights.report.audit_measures`),
returning text and chart data; `bot.render.report_html` puts them in the page. Each measure says what it is:

- the hallucination rate, stratified by day: the weighted rate with the counts it comes from, its
  interval, the share of delivered sentences the days sampled hold, and the verifier;
- wrong abstentions: the people's labelled rate is the headline when there are labels; the relaxed
  re-check's count is named for what it is, "abstentions that relaxed retrieval finds possibly
  answerable (upper estimate: flags N/M correct abstentions on <set>)", with no interval.

Not measured or not independent is said so with its reason, never shown as a zero or a bare rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.render.report_text import RELAXED, relaxed_estimate, relaxed_label
from bot.render.svg_charts import Series, format_value

HALLUCINATION = "hallucination_rate"
ABSTENTION = "wrong_abstention"
SAMPLED = {HALLUCINATION: ("Hallucination rate", "sentences"), ABSTENTION: ("Wrong abstentions", "abstentions")}
"""The sampled measures: their title, and what their sample is of."""
Rows = Sequence[tuple[str, Mapping[str, Any]]]


def rate_text(value: Mapping[str, Any] | None) -> str:
    """`7/8 (88%)`: a share always with its counts; `-` when there is nothing to divide by."""
    if not isinstance(value, Mapping) or not value.get("of") or value.get("rate") is None:
        return "-"
    return f"{value['n']}/{value['of']} ({format_value(value['rate'], percent=True)})"


def measure_text(measure: Mapping[str, Any] | None, unit: str = "") -> tuple[str, str]:
    """A sampled measure's headline and its explanation: counts, interval, verifier and method when
    measured; "not measured" / "not independent" with the reason otherwise (never a bare or a zero
    rate). A rate stratified by day (it has a `coverage`) reads "3.8%, from 4/110": the weighted rate,
    then the counts it was weighted from. The shape is `rag.insights.report.audit_measures`'s; any
    key may be missing."""
    measure = measure or {}
    status, reason = measure.get("status"), str(measure.get("reason") or "")
    size = measure.get("sample_size", measure.get("of"))
    counted = rate_text({"n": measure.get("n"), "of": size, "rate": measure.get("rate")})
    measured, interval = status == "measured" and counted != "-", measure.get("interval") or {}
    cover = measure.get("coverage") if measured else None
    details = [f"sample of {size} {unit}".rstrip() if measured else reason]
    if cover:
        details.insert(0, "weighted by day")
    if measured and interval.get("low") is not None and interval.get("high") is not None:
        level = format_value(interval.get("confidence") or 0.95, percent=True)
        low, high = (format_value(interval[k], percent=True) for k in ("low", "high"))
        details.append(f"{level} interval {low} to {high}")
    if cover:
        details.append(f"the days sampled hold {rate_text(cover)} of the delivered sentences")
    if status == "not_independent" and rate_text(measure.get("agreement")) != "-":
        details.append(f"it agreed with the gate on {rate_text(measure.get('agreement'))}")
    verifier = measure.get("verifier")
    if verifier:
        details.append("verifier: " + (", ".join(map(str, verifier)) if isinstance(verifier, list) else str(verifier)))
    if measure.get("kind") == "upper_estimate" and measured:
        details.append(relaxed_estimate(measure))
    if measure.get("method") and measured and not cover:
        details.append(f"method: {measure['method']}")
    if measure.get("not_judged"):
        details.append(f"{measure['not_judged']} could not be judged")
    if cover:
        headline = f"{format_value(measure.get('rate'), percent=True)}, from {measure.get('n')}/{size}"
    else:
        headline = counted if measured else "not independent" if status == "not_independent" else "not measured"
    return headline, "; ".join(d for d in details if d)


def _people(period: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    return (period.get("human") or {}).get(key) or {}


def sampled_cards(total: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The headline cards (title, value, note): the hallucination rate with the people's beside it;
    wrong abstentions led by the people's labels when there are any, else the relaxed re-check's
    count under its own name."""
    headline, why = measure_text(total.get(HALLUCINATION), "sentences")
    people = _people(total, HALLUCINATION)
    if people.get("status") == "measured":
        why += f"; people's labels: {measure_text(people, 'sentences')[0]}"
    cards = [("Hallucination rate", headline, why)]
    relaxed, labelled = total.get(ABSTENTION) or {}, _people(total, ABSTENTION)
    flagged = f"{relaxed_label(relaxed)}: {measure_text(relaxed, 'abstentions')[0]}"
    if labelled.get("status") == "measured":
        value, note = measure_text(labelled, "abstentions")
        cards.append(("Wrong abstentions (people's labels)", value, f"{note}; {flagged}"))
    elif relaxed.get("status") == "measured":
        value, note = measure_text(relaxed, "abstentions re-checked")
        note += "; not a wrong-abstention rate; people's labels: not measured"
        cards.append((RELAXED[0].upper() + RELAXED[1:], value, note))
    else:
        cards.append(("Wrong abstentions", *measure_text(relaxed, "abstentions")))
    return cards


@dataclass(frozen=True, slots=True)
class SampledChart:
    """One sampled measure over the periods: its lines, the caption, and the table of its numbers."""

    title: str
    chart: str
    """The chart's own title (its SVG <title>)."""
    caption: str
    series: list[Series]
    headers: list[str]
    rows: list[list[str]]
    headline: str
    """The window's value and its explanation, for when nothing was measured in any period."""
    why: str

    @property
    def drawn(self) -> bool:
        return any(v is not None for s in self.series for v in s.values)


def _series(name: str, measures: Sequence[Mapping[str, Any]], unit: str) -> Series:
    measured = [m if m.get("status") == "measured" else {} for m in measures]
    intervals = [m.get("interval") or {} for m in measured]
    return Series(
        name,
        [m.get("rate") for m in measured],
        [measure_text(m, unit)[0] for m in measured],
        low=[i.get("low") for i in intervals] if any(intervals) else None,
        high=[i.get("high") for i in intervals] if any(intervals) else None,
    )


def sampled_chart(key: str, charted: Rows, table: Rows) -> SampledChart:
    """The hallucination rate by the verifier and by people; or wrong abstentions by people (with their
    interval) beside the relaxed re-check's count (an upper estimate, no interval)."""
    title, unit = SAMPLED[key]
    headline, why = measure_text(table[-1][1].get(key), unit)
    if key == HALLUCINATION:
        series = [
            _series("verifier (sampled)", [p.get(key) or {} for _, p in charted], unit),
            _series("people (labelled)", [_people(p, key) for _, p in charted], unit),
        ]
        rows = [[name, *measure_text(p.get(key), unit), *measure_text(_people(p, key) or None, unit)]
                for name, p in table]  # fmt: skip
        caption = f"{title} (sampled re-verification, weighted by day; whiskers: the interval)"
        headers = ["period", "verifier", "how", "people", "how"]
        return SampledChart(title, f"{title} with its interval", caption, series, headers, rows, headline, why)
    label = relaxed_label(table[-1][1].get(key) or {})
    series = [
        _series("people (labelled)", [_people(p, key) for _, p in charted], unit),
        _series("relaxed re-check (upper estimate)", [p.get(key) or {} for _, p in charted], unit),
    ]
    rows = [[name, *measure_text(_people(p, key) or None, unit), *measure_text(p.get(key), unit)]
            for name, p in table]  # fmt: skip
    headers = ["period", "people", "how", "relaxed re-check (upper estimate)", "how"]
    caption = f"{title}: people's labels (whiskers: the interval) and {label}"
    if _people(table[-1][1], key).get("status") == "measured":
        headline, why = measure_text(_people(table[-1][1], key), unit)
    chart = f"{title}: people's labels with their interval, and the relaxed re-check (an upper estimate)"
    return SampledChart(title, chart, caption, series, headers, rows, headline, why)
