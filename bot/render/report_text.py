"""`candor report` as text: readable tables from the report object (`rag.insights.report.build`), nothing else.

A pure function of the object `candor report --json` prints, so what a person reads and what a
script reads cannot disagree. Per-period rows for the headline measures; latency by stage and the
top cited documents over the whole window (per period they are in the JSON).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

NO_ANSWERS = "no answers in this period"
ROUTE_LABELS = {"answered": "answered", "low_confidence": "low confidence", "abstained": "abstained"}


def render_report(report: Mapping[str, Any]) -> str:
    window, total = report["window"], report["total"]
    lines = [_heading(window), ""]
    if not total["questions"]:
        lines.append(NO_ANSWERS + ".")
        lines.extend(_eval_runs(report["eval_runs"]))
        return "\n".join(lines).rstrip() + "\n"
    rows = [*((_label(p, window["by"]), p) for p in report["periods"]), ("total", total)]
    lines.extend(_answers(rows))
    lines.extend(_gates(rows))
    lines.extend(_sampled(rows))
    lines.extend(_feedback(rows))
    lines.extend(_latency(total["latency_ms"]))
    lines.extend(_usage(rows))
    lines.extend(_platforms(rows))
    lines.extend(_documents(total["top_documents"]))
    lines.extend(_eval_runs(report["eval_runs"]))
    return "\n".join(lines).rstrip() + "\n"


def _heading(window: Mapping[str, Any]) -> str:
    since, until = (datetime.fromisoformat(window[k]).strftime("%Y-%m-%d %H:%M") for k in ("since", "until"))
    scope = f"knowledge base {window['knowledge_base']}" if window["knowledge_base"] else "all knowledge bases"
    by = f", by {window['by']}" if window["by"] else ""
    return f"Candor report: {since} to {until} UTC, {scope}{by}"


def _label(period: Mapping[str, Any], by: str | None) -> str:
    return f"week of {period['start']}" if by == "week" else str(period["start"])


def _rate(value: Mapping[str, Any]) -> str:
    """`3/12 (25%)`; `-` when there is nothing to divide by."""
    if not value["of"]:
        return "-"
    return f"{value['n']}/{value['of']} ({100 * value['rate']:.0f}%)"


def _table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(f"{cell:<{width}}" for cell, width in zip(cells, widths, strict=True)).rstrip()

    return [title, line(headers), *(line(row) for row in rows), ""]


Rows = Sequence[tuple[str, Mapping[str, Any]]]


def _per_period(
    title: str, headers: Sequence[str], rows: Rows, cells: Callable[[Mapping[str, Any]], list[str]]
) -> list[str]:
    return _table(title, ["period", *headers], [[label, *cells(p)] for label, p in rows])


def _answers(rows: Rows) -> list[str]:
    return _per_period(
        "Answers",
        ["questions", *ROUTE_LABELS.values(), "conflict flagged"],
        rows,
        lambda p: [str(p["questions"]), *(_rate(p["routes"][r]) for r in ROUTE_LABELS), _rate(p["conflicts"])],
    )


def _gates(rows: Rows) -> list[str]:
    return _per_period(
        "Gates (the gate's own view)",
        ["first pass rejected", "retried", "resolved by the retry", "draft sentences the critic dropped"],
        rows,
        lambda p: [
            _rate(p["first_pass"]["rejected"]),
            str(p["first_pass"]["retried"]),
            _rate(p["first_pass"]["resolved"]),
            _rate(p["gate_dropped_sentences"]),
        ],
    )


def _sampled(rows: Rows) -> list[str]:
    """The sampled measures (`candor audit answers`), beside the people's labels: the window's line for
    each, and a row per period when there are periods. Not measured or not independent is said so,
    with the reason, never shown as a rate. The people's wrong abstentions lead when they exist; the
    relaxed re-check's count is named for what it is (an upper estimate, with its false alarms)."""
    total = rows[-1][1]
    human = total["human"]
    label = relaxed_label(total["wrong_abstention"])
    relaxed = f"{label[0].upper()}{label[1:]}: {_abstentions(total['wrong_abstention'])}"
    people = f"Wrong abstentions (human labels): {_labelled(human['wrong_abstention'], 'abstentions')}"
    abstentions = [people, relaxed] if human["wrong_abstention"]["status"] == "measured" else [relaxed, people]
    lines = [
        f"Hallucination rate (sampled re-verification): {_hallucination(total['hallucination_rate'])}",
        f"Hallucination rate (human labels): {_labelled(human['hallucination_rate'], 'sentences')}",
        *abstentions,
        "",
    ]
    if len(rows) < 2 or not any(_any_measured(p) for _, p in rows[:-1]):
        return lines
    table = _per_period(
        "Sampled measures per period",
        [
            "unsupported (verifier, by day)",
            "unsupported (people, by day)",
            "wrong abstentions (people)",
            "possibly answerable (relaxed, upper estimate)",
        ],
        rows,
        lambda p: [
            _cell(p["hallucination_rate"]),
            _cell(p["human"]["hallucination_rate"]),
            _cell(p["human"]["wrong_abstention"]),
            _flagged(p["wrong_abstention"]),
        ],
    )
    return [*lines, *table]


RELAXED = "abstentions that relaxed retrieval finds possibly answerable"
"""What the relaxed re-check counts (`wrong_abstention`): never to be read as a wrong-abstention rate."""


def relaxed_estimate(measure: Mapping[str, Any]) -> str:
    """`upper estimate: flags 7/9 correct abstentions on sample/golden.yaml` (its measured false alarms)."""
    alarms = measure.get("false_alarms")
    if not alarms:
        return "upper estimate: how often it flags a correct abstention is not measured"
    return f"upper estimate: flags {alarms['n']}/{alarms['of']} correct abstentions on {alarms['set']}"


def relaxed_label(measure: Mapping[str, Any]) -> str:
    """`abstentions that relaxed retrieval finds possibly answerable (upper estimate: flags 7/9 ...)`."""
    return f"{RELAXED} ({relaxed_estimate(measure)})"


def _any_measured(period: Mapping[str, Any]) -> bool:
    measures = (period["hallucination_rate"], period["wrong_abstention"], *period["human"].values())
    return any(m["status"] != "not_measured" for m in measures)


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _ci(measure: Mapping[str, Any]) -> str:
    """`95% CI 1.4–16.5%`."""
    interval = measure["interval"]
    level = f"{round(100 * interval['confidence'])}% CI"
    return f"{level} {100 * interval['low']:.1f}–{_percent(interval['high'])}"


def _counted(measure: Mapping[str, Any], unit: str) -> str:
    """A plain share: `2/40 sentences (5.0%, 95% CI 1.4–16.5%)`."""
    return f"{measure['n']}/{measure['sample_size']} {unit} ({_percent(measure['rate'])}, {_ci(measure)})"


def _weighted(measure: Mapping[str, Any], unit: str, judged: str = "judged") -> str:
    """A rate stratified by day with its counts beside it, and the share of the delivered sentences
    the days sampled hold: `5.3% (95% CI 1.2–12.0%) weighted by day, from 2/40 sentences judged (days
    holding 950/1000 delivered sentences)`."""
    cover = measure["coverage"]
    return (
        f"{_percent(measure['rate'])} ({_ci(measure)}) weighted by day, from {measure['n']}/"
        f"{measure['sample_size']} {unit} {judged} (days holding {cover['n']}/{cover['of']} delivered sentences)"
    )


def _verifier(measure: Mapping[str, Any]) -> str:
    name = measure["verifier"]
    return ", ".join(name) if isinstance(name, list) else str(name)


def _hallucination(measure: Mapping[str, Any]) -> str:
    if measure["status"] == "measured":
        not_judged = f"; {measure['not_judged']} not judged" if measure["not_judged"] else ""
        line = f"{_weighted(measure, 'sentences')} by {_verifier(measure)} on {measure['answers']} answers"
        return line + not_judged + "."
    if measure["status"] == "not_independent":
        agreement = measure["agreement"]
        agreed = f"{agreement['n']}/{agreement['of']}"
        return f"not independent: {measure['reason']} (it agreed with the gate on {agreed} delivered sentences)."
    return f"not measured ({measure['reason']})."


def _abstentions(measure: Mapping[str, Any]) -> str:
    if measure["status"] == "measured":
        return f"{measure['n']}/{measure['sample_size']} re-checked ({_percent(measure['rate'])}), no interval."
    return f"not measured ({measure['reason']})."


def _labelled(measure: Mapping[str, Any], unit: str) -> str:
    if measure["status"] != "measured":
        return "not measured (no labels imported)."
    if "labelled_answers" in measure:
        return f"{_weighted(measure, unit, 'labelled')} on {measure['labelled_answers']} answers."
    return f"{_counted(measure, unit)}."


def _cell(measure: Mapping[str, Any]) -> str:
    if measure["status"] == "measured" and measure.get("coverage"):
        return f"{_percent(measure['rate'])} ({measure['n']}/{measure['sample_size']} judged)"
    if measure["status"] == "measured":
        return f"{measure['n']}/{measure['sample_size']} ({_percent(measure['rate'])})"
    return "not independent" if measure["status"] == "not_independent" else "-"


def _flagged(measure: Mapping[str, Any]) -> str:
    return f"{measure['n']}/{measure['sample_size']} flagged" if measure["status"] == "measured" else "-"


def _votes(value: Mapping[str, Any]) -> str:
    if not value["votes"]:
        return "-"
    return f"{value['up']['n']} up, {value['down']['n']} down ({100 * value['down']['rate']:.0f}% down)"


def _feedback(rows: Rows) -> list[str]:
    table = _per_period(
        "Feedback (👍/👎 by the route of the answer voted on)",
        list(ROUTE_LABELS.values()),
        rows,
        lambda p: [_votes(p["feedback"][r]) for r in ROUTE_LABELS],
    )
    note = "A 👎 on an abstention says the asker expected an answer (a gap or a wrong abstention), not a wrong one."
    return [*table[:-1], note, ""]


def _latency(latency: Mapping[str, Any]) -> list[str]:
    rows = [[stage, str(v["n"]), _number(v["p50"]), _number(v["p95"])] for stage, v in latency.items()]
    return _table("Latency (ms, whole window)", ["stage", "answers", "p50", "p95"], rows)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _usage(rows: Rows) -> list[str]:
    if not any(p["usage"]["model_calls"] for _, p in rows):
        return ["Model usage: no model calls (offline stages)", ""]
    unrecorded = any(p["usage"]["not_recorded"] for _, p in rows)

    def cells(p: Mapping[str, Any]) -> list[str]:
        u = p["usage"]
        late = [str(u["not_recorded"])] if unrecorded else []
        if not u["model_calls"]:
            return [str(u["answers"]), "0", "no model calls", "-", *late]
        cost = u["cost"]["per_answer"]
        priced = "unknown (unpriced calls)" if u["cost"]["total"] is None else _number_or_dash(cost, 6)
        tokens = f"{_number(u['prompt_tokens']['per_answer'])} / {_number(u['completion_tokens']['per_answer'])}"
        return [str(u["answers"]), str(u["model_calls"]), tokens, priced, *late]

    headers = ["answers", "model calls", "tokens in / out per answer", "cost per answer"]
    # Traces from before model calls were recorded (migration 0007): their usage is unknown, not zero.
    return _per_period("Model usage", [*headers, *(["not recorded"] if unrecorded else [])], rows, cells)


def _number_or_dash(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _platforms(rows: Rows) -> list[str]:
    names = list(rows[-1][1]["platforms"])
    return _per_period("Platforms", names, rows, lambda p: [str(p["platforms"][n]["n"]) for n in names])


def _documents(documents: Sequence[Mapping[str, Any]]) -> list[str]:
    if not documents:
        return ["Top cited documents: none cited", ""]
    rows = [[str(d["answers"]), d["title"] or "", d["document"], d["knowledge_base"] or "(deleted)"] for d in documents]
    return _table("Top cited documents (answers citing each)", ["answers", "title", "document", "knowledge base"], rows)


def _eval_runs(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    if not runs:
        return ["Stored eval runs: none in this window", ""]
    headers = [
        "run",
        "date",
        "golden",
        "questions",
        "answered",
        "abstained on unanswerable",
        "wrong abstention",
        "keywords",
        "critic dropped",
    ]

    def rate_or_dash(value: Any) -> str:
        return _rate(value) if isinstance(value, Mapping) and "of" in value else "-"

    rows = [
        [
            str(run["id"]),
            run["created_at"][:10],
            run["golden"],
            str(run["questions"] if run["questions"] is not None else "-"),
            rate_or_dash(run["answered"]),
            rate_or_dash(run["abstention_on_unanswerable"]),
            rate_or_dash(run["wrong_abstention_on_answerable"]),
            rate_or_dash(run["keyword_accuracy"]),
            rate_or_dash(run["critic_dropped_share"]),
        ]
        for run in runs
    ]
    return _table("Stored eval runs (candor eval)", headers, rows)
