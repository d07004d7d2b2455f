"""`candor report`: what the gate log says about a window of answers, per day or week and in total.

`build_report(engine, window)` runs one query per measure (`rag.insights.report.queries`) in one
read-only snapshot and `assemble` turns their rows into the report: plain JSON data, the same
object `candor report --json` prints. Every rate comes with its counts (`{"n", "of", "rate"}`,
rate None when `of` is 0). The definitions are in docs/reporting.md; in short:

- questions: traces created in the window (UTC; `until` excluded); `--kb` keeps the traces whose
  stored scope names the knowledge base or that cite one of its documents.
- routes over questions; conflicts over delivered answers (answered + low confidence).
- first pass: attempt-1 `faithfulness` gates that failed, over those that ran; resolved: of those,
  the ones whose attempt-2 gate passed.
- gate_dropped_sentences: the gate's own view, the critic's drops (`stage = 'critic'`) over the
  sentences its faithfulness gates checked, every attempt included.
- hallucination_rate: docs/design.md's, from the sampled re-verifications `candor audit answers` stored,
  counted only where the audit's verifier is independent of the trace's gate (`not_independent`,
  with no rate, when only the gate's own re-checked; `not_measured` when none did), never from the
  gate's own drops, one judgement per delivered sentence, stratified by UTC day and weighted by the
  sentences each day delivered; wrong_abstention from the relaxed re-checks of abstentions, an upper
  estimate shown with its measured false alarms and no interval; `human` the same two from people's
  labels (`rag.insights.report.audit_measures`).
- feedback by the route of the answer voted on, in the answer's period.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.calibration import calibrated, calibration_record
from rag.errors import StoreError
from rag.insights.evaluation.run import COST_DIGITS, ROUTES, rate
from rag.insights.report import audit_measures
from rag.insights.report import queries as report_queries

By = Literal["day", "week"]

REPORT_FORMAT = 2
"""Bump when a key of the report changes meaning or goes away (adding keys does not bump it). 2: the
rates of sentences (`hallucination_rate`, `human.hallucination_rate`) are stratified by day, so
`rate` is no longer `n / sample_size`, and the interval's method changed; `wrong_abstention` lost its
`interval`."""
PLATFORMS = ("slack", "teams", "web", "cli", "eval")
STAGES = ("retrieve", "rerank", "synthesise", "critic", "focus", "consistency", "total", "log")
"""The order latency stages are listed in; any other stage a trace recorded follows, by name."""
TOP_DOCUMENTS = 10
EVAL_RUNS = 50
TOTAL = "total"

_DURATION = re.compile(r"^\s*(\d+)\s*([hdw])\s*$", re.IGNORECASE)
_UNIT = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
_LENGTH = {"day": timedelta(days=1), "week": timedelta(weeks=1)}


@dataclass(frozen=True, slots=True)
class Window:
    """The answers a report covers: created in [since, until), optionally of one knowledge base."""

    since: datetime
    until: datetime
    by: By | None = None
    knowledge_base: str | None = None

    def params(self) -> dict[str, Any]:
        return {"since": self.since, "until": self.until, "unit": self.by, "kb": self.knowledge_base}

    def as_json(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "by": self.by,
            "knowledge_base": self.knowledge_base,
            "timezone": "UTC",
        }


def parse_interval(value: str) -> float:
    """Seconds in `30s`, `30m`, `1h`, `1d`, `2w` (at least one second)."""
    found = re.fullmatch(r"\s*(\d+)\s*([smhdw])\s*", value, re.IGNORECASE)
    if found is None:
        raise ValueError(f"{value!r} is not an interval (30s, 30m, 1h, 1d)")
    seconds = int(found.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[found.group(2).lower()]
    if not 1 <= seconds <= 366 * 86400:
        raise ValueError(f"{value!r} is not between a second and a year")
    return float(seconds)


def parse_moment(value: str, now: datetime) -> datetime:
    """`7d`, `12h`, `2w` before `now`, or an ISO date (midnight UTC) or date-time (UTC unless it says)."""
    found = _DURATION.match(value)
    try:
        if found:  # a duration reaching back past year 1 overflows: as unreadable as any other
            return now - int(found.group(1)) * _UNIT[found.group(2).lower()]
        if len(value.strip()) == 10:
            day = date.fromisoformat(value.strip())
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(value.strip())
    except (ValueError, OverflowError):
        raise ValueError(f"{value!r} is neither a duration (7d, 12h, 2w) nor an ISO date (2026-11-01)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def report_window(
    since: str, until: str | None = None, *, by: By | None = None, kb: str | None = None, now: datetime | None = None
) -> Window:
    """The window of `candor report --since ... [--until ...]`; ValueError when it is empty or unreadable."""
    now = now or datetime.now(UTC)
    start = parse_moment(since, now)
    end = now if until is None else parse_moment(until, now)
    if start >= end:
        raise ValueError(f"the window is empty: {start.isoformat()} is not before {end.isoformat()}")
    return Window(start, end, by, kb)


async def build_report(engine: AsyncEngine, window: Window) -> dict[str, Any]:
    """The report of `window`, read from the gate log in one snapshot."""
    return assemble(window, await fetch(engine, window))


async def fetch(engine: AsyncEngine, window: Window) -> dict[str, list[dict[str, Any]]]:
    """Each measure's rows (a row per period and the total row), and the eval runs of the window."""
    params = window.params()
    measured: dict[str, list[dict[str, Any]]] = {}
    try:
        async with engine.connect() as conn:
            await conn.execution_options(isolation_level="REPEATABLE READ")
            async with conn.begin():
                for name, query in report_queries.MEASURES.items():
                    measured[name] = [dict(row._mapping) for row in await conn.execute(query, params)]
                runs = await conn.execute(report_queries.EVAL_RUNS, {**params, "limit": EVAL_RUNS})
                measured["eval_runs"] = [dict(row._mapping) for row in runs]
    except SQLAlchemyError as exc:
        raise StoreError(f"could not read the gate log for the report: {exc}") from exc
    return measured


# --- from rows to the report (pure) -------------------------------------------------------------


PeriodKey = date | str | None


def assemble(window: Window, measured: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """The report object: the window, one entry per period with answers (when grouped), the total,
    and the stored eval runs of the window."""
    daily = {name: measured.get(name, ()) for name in report_queries.DAILY}
    grouped = {name: _by_period(rows) for name, rows in measured.items() if name != "eval_runs" and name not in daily}
    seen = {str(row["platform"]) for row in measured.get("platforms", ())}
    platforms = (*PLATFORMS, *sorted(seen - set(PLATFORMS)))
    alarms = relaxed_false_alarms()
    keys = sorted(k for k in grouped.get("routes", {}) if isinstance(k, date)) if window.by else []
    periods = []
    for key in keys:
        assert isinstance(key, date) and window.by is not None
        bounds = {"start": key.isoformat(), "end": (key + _LENGTH[window.by]).isoformat()}
        periods.append({**bounds, **_period(grouped, daily, key, platforms, alarms)})
    total = {
        "start": window.since.isoformat(),
        "end": window.until.isoformat(),
        **_period(grouped, daily, TOTAL, platforms, alarms),
    }
    return {
        "report_format": REPORT_FORMAT,
        "window": window.as_json(),
        "periods": periods,
        "total": total,
        "eval_runs": [_eval_run(row) for row in measured.get("eval_runs", ())],
    }


def _by_period(rows: Iterable[Mapping[str, Any]]) -> dict[PeriodKey, list[Mapping[str, Any]]]:
    out: dict[PeriodKey, list[Mapping[str, Any]]] = {}
    for row in rows:
        key: PeriodKey = TOTAL if row["is_total"] else _day(row["period"])
        out.setdefault(key, []).append(row)
    return out


def _day(value: datetime | date | None) -> date | None:
    return value.date() if isinstance(value, datetime) else value


def _one(grouped: Mapping[str, Mapping[PeriodKey, Sequence[Mapping[str, Any]]]], name: str, key: PeriodKey) -> Any:
    rows = grouped.get(name, {}).get(key, ())
    return rows[0] if rows else {}


def _int(row: Mapping[str, Any], column: str) -> int:
    return int(row.get(column) or 0)


Grouped = Mapping[str, Mapping[PeriodKey, Sequence[Mapping[str, Any]]]]
Daily = Mapping[str, Sequence[Mapping[str, Any]]]


def _period(
    grouped: Grouped, daily: Daily, key: PeriodKey, platforms: Sequence[str], alarms: Mapping[str, Any] | None
) -> dict[str, Any]:
    routes = _one(grouped, "routes", key)
    gates = _one(grouped, "gates", key)
    questions = _int(routes, "questions")
    counts = {route: _int(routes, route) for route in ROUTES}
    rejected = _int(gates, "rejected")
    return {
        "questions": questions,
        "routes": {route: rate(counts[route], questions) for route in ROUTES},
        "first_pass": {
            "rejected": rate(rejected, _int(gates, "judged")),
            "retried": _int(gates, "retried"),
            "resolved": rate(_int(gates, "resolved"), rejected),
        },
        "gate_dropped_sentences": rate(_int(gates, "dropped"), _int(gates, "drafted")),
        **_sampled(grouped, daily, key, alarms),
        "conflicts": rate(_int(routes, "conflicted"), counts["answered"] + counts["low_confidence"]),
        "feedback": _feedback(grouped.get("feedback", {}).get(key, ()), counts),
        "latency_ms": _latency(grouped.get("latency", {}).get(key, ())),
        "usage": _usage(_one(grouped, "usage", key)),
        "platforms": _platforms(grouped.get("platforms", {}).get(key, ()), questions, platforms),
        "top_documents": _documents(grouped.get("documents", {}).get(key, ())),
    }


def _sampled(grouped: Grouped, daily: Daily, key: PeriodKey, alarms: Mapping[str, Any] | None) -> dict[str, Any]:
    """The sampled measures of a period (or the total): the rates of sentences from the days of the
    period, each weighted by the sentences it delivered (`rag.insights.report.audit_measures`)."""

    def days(name: str) -> list[Mapping[str, Any]]:
        rows = daily.get(name, ())
        return list(rows) if key == TOTAL else [r for r in rows if _day(r["period"]) == key]

    delivered: dict[date, int] = {}
    for row in days("delivered"):
        delivered[row["utc_day"]] = delivered.get(row["utc_day"], 0) + _int(row, "delivered")
    return {
        "hallucination_rate": audit_measures.hallucination_rate(days("audit_sentences"), delivered),
        "wrong_abstention": audit_measures.wrong_abstention(_one(grouped, "audit_abstentions", key), alarms),
        "human": audit_measures.human(days("human_labels"), delivered),
    }


def relaxed_false_alarms() -> dict[str, Any] | None:
    """The relaxed re-check's measured false alarms; benchmarks/relaxed_recheck.py writes them with the
    threshold they are of (`relaxed_threshold`)."""
    record = calibration_record("relaxed_recheck")
    return audit_measures.false_alarms(record, calibrated("relaxed_threshold", 0.0) if record else None)


def _feedback(rows: Sequence[Mapping[str, Any]], answers: Mapping[str, int]) -> dict[str, Any]:
    """Per route: answers, how many got a vote, the votes, and 👍 / 👎 as shares of the votes."""
    by_route = {row["route"]: row for row in rows}
    out = {}
    for route in ROUTES:
        row = by_route.get(route, {})
        votes = _int(row, "votes")
        out[route] = {
            "answers": answers[route],
            "rated": rate(_int(row, "rated"), answers[route]),
            "votes": votes,
            "up": rate(_int(row, "up"), votes),
            "down": rate(_int(row, "down"), votes),
        }
    return out


def _latency(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    def order(row: Mapping[str, Any]) -> tuple[int, str]:
        stage = str(row["stage"])
        return (STAGES.index(stage) if stage in STAGES else len(STAGES), stage)

    return {
        str(row["stage"]): {"n": _int(row, "n"), "p50": _ms(row["p50"]), "p95": _ms(row["p95"])}
        for row in sorted(rows, key=order)
    }


def _ms(value: float | None) -> float | None:
    return None if value is None else round(float(value), 1)


def _usage(row: Mapping[str, Any]) -> dict[str, Any]:
    """The shape of `candor eval`'s usage, over the answers whose totals were recorded (traces from
    before migration 0007 have none: `not_recorded`). Cost None when any call was unpriced."""
    answers, not_recorded = _int(row, "answers"), _int(row, "not_recorded")
    recorded = answers - not_recorded
    prompt, completion = _int(row, "prompt_tokens"), _int(row, "completion_tokens")
    cost = None if _int(row, "unpriced_answers") else round(float(row.get("priced_cost") or 0.0), COST_DIGITS)
    return {
        "answers": answers,
        "not_recorded": not_recorded,
        "model_calls": _int(row, "model_calls"),
        "unpriced_calls": _int(row, "unpriced_calls"),
        "prompt_tokens": {"total": prompt, "per_answer": _mean(prompt, recorded, 1)},
        "completion_tokens": {"total": completion, "per_answer": _mean(completion, recorded, 1)},
        "cost": {"total": cost, "per_answer": _mean(cost, recorded, COST_DIGITS)},
    }


def _mean(total: float | None, count: int, digits: int) -> float | None:
    return None if total is None or count <= 0 else round(total / count, digits)


def _platforms(rows: Sequence[Mapping[str, Any]], questions: int, names: Sequence[str]) -> dict[str, Any]:
    """The five platforms always, then any other seen in the window (`unknown`: none recorded), in every period."""
    counts = {str(row["platform"]): _int(row, "n") for row in rows}
    return {name: rate(counts.get(name, 0), questions) for name in names}


def _documents(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    ranked = sorted(rows, key=lambda r: (-_int(r, "answers"), str(r["document"]), str(r["knowledge_base"] or "")))
    return [
        {
            "document": row["document"],
            "title": row["title"],
            "knowledge_base": row["knowledge_base"],
            "answers": _int(row, "answers"),
        }
        for row in ranked[:TOP_DOCUMENTS]
    ]


EVAL_METRICS = (
    "abstention_on_unanswerable",
    "wrong_abstention_on_answerable",
    "keyword_accuracy",
    "conflict_flag_recall",
    "citations_valid",
    "restricted_leaks",
    "critic_dropped_share",
)
"""The `candor eval` summary rates a report lists per run (each `{"n", "of", "rate"}` as stored)."""


def _eval_run(row: Mapping[str, Any]) -> dict[str, Any]:
    summary = _mapping(row.get("summary"))
    created = row["created_at"]
    return {
        "id": int(row["id"]),
        "created_at": created.isoformat() if isinstance(created, datetime) else str(created),
        "golden": row["golden"],
        "knowledge_base": row["knowledge_base"],
        "questions": summary.get("questions"),
        "answered": _mapping(summary.get("routes")).get("answered"),
        **{metric: summary.get(metric) for metric in EVAL_METRICS},
        "latency_p50_ms": _mapping(summary.get("latency_ms")).get("p50"),
        "cost_per_answer": _mapping(_mapping(summary.get("usage")).get("cost")).get("per_answer"),
    }


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
