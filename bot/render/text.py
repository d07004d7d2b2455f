"""Plain-text renderers for the terminal: an answer (`candor ask`) and an eval summary (`candor eval`).

Pure functions from data to text, tested by asserting on the returned string.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.render.wording import source_date
from rag.model.answers import Answer

_ROUTE_LABEL = {"answered": "answered", "low_confidence": "LOW CONFIDENCE", "abstained": "abstained"}


def render_text(answer: Answer) -> str:
    lines = [answer.text, ""]
    if answer.sources:
        lines.append("Sources:")
        for s in answer.sources:
            date = f", {source_date(s)}" if source_date(s) else ""
            where = s.url or s.document
            heading = f" > {s.heading}" if s.heading and s.heading != s.title else ""
            lines.append(f"  [{s.n}] {s.title}{heading}{date}")
            lines.append(f"      {where}")
    if answer.rewritten_question:
        lines.append(f"(read as: {answer.rewritten_question})")
    total = answer.timings_ms.get("total", 0.0)
    lines.append(f"route: {_ROUTE_LABEL[answer.route]} · {total:.0f} ms · trace {answer.trace_id}")
    return "\n".join(lines)


def _rate(value: Mapping[str, Any]) -> str:
    if not value.get("of"):
        return "n/a"
    return f"{value['n']}/{value['of']} ({100 * value['rate']:.0f}%)"


_SUMMARY_ROWS = (
    ("hit@1 (retrieval)", "hit@1"),
    ("hit@5 (retrieval)", "hit@5"),
    ("hit@1 (after rerank)", "rerank_hit@1"),
    ("hit@5 (after rerank)", "rerank_hit@5"),
    ("abstained on unanswerable", "abstention_on_unanswerable"),
    ("wrong abstention on answerable", "wrong_abstention_on_answerable"),
    ("keywords present (answered, answerable)", "keyword_accuracy"),
    ("multi-part split and answered right", "parts_correct"),
    ("conflicts flagged (recall)", "conflict_flag_recall"),
    ("conflicts resolved to the right source", "conflict_resolved_correctly"),
    ("false conflict flags", "false_conflict_rate"),
    ("every sentence cited, citations exist", "citations_valid"),
    ("restricted leaks (asked without access)", "restricted_leaks"),
    ("draft sentences the critic dropped", "critic_dropped_share"),
)


def render_summary(summary: Mapping[str, Any], per_question: Sequence[Mapping[str, Any]]) -> str:
    routes = summary["routes"]
    lines = [
        f"{summary['questions']} questions: "
        + ", ".join(f"{route} {_rate(routes[route])}" for route in ("answered", "low_confidence", "abstained")),
        "",
    ]
    width = max(len(label) for label, _ in _SUMMARY_ROWS)
    lines.extend(f"{label:<{width}}  {_rate(summary.get(key, {}))}" for label, key in _SUMMARY_ROWS)
    latency = summary["latency_ms"]
    lines.append(f"{'latency p50 / p95':<{width}}  {latency['p50']} / {latency['p95']} ms")
    lines.extend(_usage_lines(summary.get("usage"), width))
    lines.extend(["", "by tag:"])
    for tag, t in summary["by_tag"].items():
        lines.append(
            f"  {tag:<16} {t['questions']:>3} q · answered {t['answered']} · low {t['low_confidence']}"
            f" · abstained {t['abstained']} · keywords {_rate(t['keywords_ok'])}"
        )
    misses = [q for q in per_question if _missed(q)]
    if misses:
        lines.extend(["", "to look at:"])
        lines.extend(f"  {q['id']}: {_why(q)}" for q in misses)
    return "\n".join(lines)


def _usage_lines(usage: Mapping[str, Any] | None, width: int) -> list[str]:
    """Tokens and cost per answer, or a plain statement that no model was asked (never zeros as if measured)."""
    if usage is None:
        return []
    if not usage["model_calls"]:
        return [f"{'model calls':<{width}}  no model calls (offline stages)"]
    tokens_in, tokens_out, cost = usage["prompt_tokens"], usage["completion_tokens"], usage["cost"]
    lines = [
        f"{'model calls':<{width}}  {usage['model_calls']} for {usage['answers']} answers",
        f"{'tokens in / out per answer':<{width}}  {tokens_in['per_answer']:.1f} / {tokens_out['per_answer']:.1f}"
        f" (total {tokens_in['total']} / {tokens_out['total']})",
    ]
    if cost["total"] is None:
        unpriced = f"{usage['unpriced_calls']} of {usage['model_calls']} calls"
        lines.append(f"{'cost per answer':<{width}}  unknown: {unpriced} to models CANDOR_LLM_COSTS does not price")
    else:
        lines.append(f"{'cost per answer':<{width}}  {cost['per_answer']:.6f} (total {cost['total']:.6f})")
    return lines


def _missed(q: Mapping[str, Any]) -> bool:
    return bool(_why(q))


def _why(q: Mapping[str, Any]) -> str:
    reasons = []
    if q["answerable"] and q["route"] == "abstained":
        reasons.append("abstained on an answerable question")
    if not q["answerable"] and q["route"] != "abstained":
        reasons.append(f"{q['route']} an unanswerable question")
    if q["keywords_ok"] is False:
        reasons.append("keywords missing")
    if q["conflict_ok"] is False:
        reasons.append("conflict not flagged or resolved wrongly")
    if q["parts_ok"] is False:
        reasons.append("parts wrong")
    if q["restricted_leak"]:
        reasons.append("RESTRICTED LEAK")
    if not q["citations_ok"]:
        reasons.append("citation missing or dangling")
    return "; ".join(reasons)
