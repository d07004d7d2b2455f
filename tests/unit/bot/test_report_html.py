"""`bot.render.report_html.render_html` and `bot.render.svg_charts` on report objects built without a database.

The report objects come from `rag.insights.report.build.assemble` on the hand-written measure rows of
tests/unit/insights/test_report.py (so they have the real shape), then are edited by hand where a case needs
it: a hostile title, a measured hallucination rate with its interval, a verifier that is the gate's own.
"""

from __future__ import annotations

import copy
import os
import re
import stat
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.render.report_html import NO_ANSWERS, NOT_ENOUGH, render_html, write_html
from bot.render.svg_charts import NO_DATA, Series, bar_chart, format_value, line_chart, stacked_bars
from rag.insights.report import audit_measures
from rag.insights.report.build import Window, assemble
from tests.unit.insights.test_report import MONDAY, WEEK, measured, row

HOSTILE = '<script>alert("title")</script>'


def report() -> dict[str, Any]:
    return assemble(WEEK, measured())


def measured_rate(n: int, of: int, verifier: str = "openai:judge-model") -> dict[str, Any]:
    """A hallucination rate as `rag.insights.report.audit_measures` reports a measured one (Wilson
    interval included)."""
    row = {"independent": True, "judged": of, "unsupported": n, "answers": 10, "not_judged": 0, "verifiers": [verifier]}
    return audit_measures.hallucination_rate([row])


def interval_text(measure: dict[str, Any]) -> str:
    low, high = (format_value(measure["interval"][k], percent=True) for k in ("low", "high"))
    return f"{low} to {high}"


def cells(page: str) -> list[str]:
    """The text of every table cell and headline value."""
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<(?:td|b)[^>]*>(.*?)</(?:td|b)>", page)]


def test_data_strings_are_escaped_wherever_they_appear() -> None:
    hostile = report()
    hostile["window"]["knowledge_base"] = HOSTILE
    hostile["total"]["top_documents"][0].update(title=HOSTILE, document="<img src=x onerror=alert(1)>.md")
    hostile["total"]["top_documents"][1]["knowledge_base"] = "</td></table><script>x()</script>"
    hostile["total"]["hallucination_rate"]["reason"] = "<b onmouseover=alert(2)>why</b>"
    page = render_html(hostile)
    assert "<script" not in page and "<img" not in page and "<b onmouseover" not in page
    assert escape(HOSTILE) in page
    assert escape("<img src=x onerror=alert(1)>.md") in page
    assert escape("<b onmouseover=alert(2)>why</b>") in page


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_title_comes_out_as_text(title: str) -> None:
    hostile = report()
    hostile["total"]["top_documents"][0]["title"] = title
    page = render_html(hostile)
    assert escape(title) in page
    if any(ch in title for ch in "<>&\"'"):
        assert f"<td>{title}</td>" not in page


def test_rates_are_shown_with_their_counts_never_bare() -> None:
    page = render_html(report())
    assert "4/6 (67%)" in page, "answered, in total"
    assert "1/4 (25%)" in page, "abstained in the first week"
    assert "5/11 (45%)" in page, "draft sentences the critic dropped, in total"
    percentages = [c for c in cells(page) if "%" in c]
    assert percentages, "the tables show rates"
    for text in percentages:
        assert re.fullmatch(r"\d+/\d+ \(\d+(\.\d)?%\)", text), f"a rate without its counts: {text!r}"


def test_unmeasured_measures_say_so_with_their_reason() -> None:
    base = report()
    page = render_html(base)
    reason = base["total"]["hallucination_rate"]["reason"]
    assert "Hallucination rate: not measured" in page and escape(reason) in page
    assert escape(base["total"]["wrong_abstention"]["reason"]) in page
    card = re.search(r"Hallucination rate<b>(.*?)</b>", page)
    assert card is not None and card.group(1) == "not measured"
    assert 'class="interval"' not in page


def test_a_verifier_that_is_the_gates_own_is_not_independent() -> None:
    own = report()
    row = {"independent": False, "judged": 40, "unsupported": 2, "answers": 9, "verifiers": ["evidence"]}
    for period in [*own["periods"], own["total"]]:
        period["hallucination_rate"] = audit_measures.hallucination_rate([row])
    assert own["total"]["hallucination_rate"]["status"] == "not_independent"
    page = render_html(own)
    card = re.search(r"Hallucination rate<b>(.*?)</b><small>(.*?)</small>", page)
    assert card is not None and card.group(1) == "not independent"
    assert "the gate&#x27;s own (evidence)" in card.group(2), "the reason"
    assert "it agreed with the gate on 38/40 (95%)" in card.group(2)
    assert 'class="interval"' not in page, "a number that is not independent is not charted as the rate"


def test_measured_rates_are_drawn_with_their_interval_and_the_peoples_labels_beside_them() -> None:
    sampled = report()
    first, second = sampled["periods"]
    first["hallucination_rate"] = measured_rate(1, 50)
    second["hallucination_rate"] = measured_rate(3, 60, verifier="cross-encoder:nli")
    total = sampled["total"]["hallucination_rate"] = audit_measures.hallucination_rate(
        [{"independent": True, "judged": 110, "unsupported": 4, "verifiers": ["cross-encoder:nli", "openai:judge"]}]
    )
    labels = {"sentences": 20, "unsupported": 2, "labelled_answers": 8, "abstentions": 5, "wrong": 1}
    second["human"] = sampled["total"]["human"] = audit_measures.human([labels])
    alarms = {"n": 7, "of": 9, "rate": 0.7778, "set": "sample/golden.yaml"}
    relaxed = audit_measures.wrong_abstention({"checked": 12, "possibly_answerable": 3}, alarms)
    sampled["total"]["wrong_abstention"] = second["wrong_abstention"] = relaxed
    page = render_html(sampled)

    card = re.search(r"Hallucination rate<b>(.*?)</b><small>(.*?)</small>", page)
    assert card is not None and card.group(1) == "3.6%, from 4/110", "the weighted rate, then its counts"
    assert f"weighted by day; sample of 110 sentences; 95% interval {interval_text(total)}" in card.group(2)
    assert "the days sampled hold 110/110 (100%) of the delivered sentences" in card.group(2)
    assert "verifier: cross-encoder:nli, openai:judge" in card.group(2)
    assert "people&#x27;s labels: 10%, from 2/20" in card.group(2)
    card = re.search(r"Wrong abstentions \(people&#x27;s labels\)<b>(.*?)</b><small>(.*?)</small>", page)
    assert card is not None and card.group(1) == "1/5 (20%)", "people's labels lead when there are any"
    assert (
        "abstentions that relaxed retrieval finds possibly answerable (upper estimate: flags 7/9 correct "
        "abstentions on sample/golden.yaml): 3/12 (25%)"
    ) in card.group(2)

    chart = re.search(r"<svg[^>]*><title>Hallucination rate with its interval</title>.*?</svg>", page)
    assert chart is not None
    assert chart.group(0).count('class="interval"') == 3, "two periods by the verifier, one by people"
    assert "people (labelled)" in chart.group(0) and "10%, from 2/20" in chart.group(0)
    tooltip = (
        f"verifier (sampled), 2026-11-09: 5.0%, from 3/60 (interval {interval_text(second['hallucination_rate'])})"
    )
    assert escape(tooltip) in chart.group(0), "each point's tooltip carries its interval"
    title = "Wrong abstentions: people&#x27;s labels with their interval, and the relaxed re-check (an upper estimate)"
    people = re.search(rf"<svg[^>]*><title>{re.escape(title)}</title>.*?</svg>", page)
    assert people is not None and "1/5 (20%)" in people.group(0), "people's wrong abstentions, per period"
    assert people.group(0).count('class="interval"') == 1, "the relaxed re-check has no interval"
    assert "relaxed re-check (upper estimate), 2026-11-09: 3/12 (25%)" in people.group(0)


def test_without_labels_the_relaxed_recheck_is_named_for_what_it_counts() -> None:
    sampled = report()
    alarms = {"n": 7, "of": 9, "rate": 0.7778, "set": "sample/golden.yaml"}
    sampled["total"]["wrong_abstention"] = audit_measures.wrong_abstention(
        {"checked": 12, "possibly_answerable": 3}, alarms
    )
    page = render_html(sampled)
    assert "Wrong abstentions<b>" not in page, "no card reads it as a wrong-abstention rate"
    card = re.search(
        r"Abstentions that relaxed retrieval finds possibly answerable<b>(.*?)</b><small>(.*?)</small>", page
    )
    assert card is not None and card.group(1) == "3/12 (25%)"
    assert "upper estimate: flags 7/9 correct abstentions on sample/golden.yaml" in card.group(2)
    assert "not a wrong-abstention rate" in card.group(2) and "interval" not in card.group(2)


def test_the_page_requests_nothing_from_anywhere() -> None:
    sampled = report()
    sampled["total"]["hallucination_rate"] = measured_rate(4, 110)
    page = render_html(sampled)
    assert not re.search(r"(?:src|href)\s*=", page, re.IGNORECASE), "no src or href at all"
    assert not re.search(r"https?://|url\(|@import|<script|<link|<img|<iframe|<object", page, re.IGNORECASE)
    assert "default-src 'none'" in page, "and the page's own policy forbids it"


def test_every_chart_is_labelled_and_has_its_numbers_beside_it() -> None:
    page = render_html(report())
    charts = re.findall(r"<svg[^>]*>.*?</svg>", page)
    assert len(charts) >= 5
    for chart in charts:
        assert 'role="img"' in chart.split(">")[0] and re.match(r"<svg[^>]*><title>[^<]+</title>", chart)
    assert page.count("<figure>") == page.count("<details>") - 2, "each figure has a table (+2 unmeasured notes)"
    for figure in re.findall(r"<figure>.*?</figure>", page):
        assert "<svg" in figure and "<details><summary>" in figure and "<table>" in figure


def test_a_window_without_answers_says_so_plainly() -> None:
    empty = assemble(WEEK, {name: [] for name in measured()})
    page = render_html(empty)
    assert f'<p class="empty">{NO_ANSWERS}' in page
    assert "<svg" not in page and "Trends" not in page
    assert "None in this window." in page, "eval runs are still listed (none here)"
    assert re.search(r"Questions<b>0</b>", page)


def test_one_period_is_not_a_trend_but_the_totals_are_still_drawn() -> None:
    one = assemble(
        Window(WEEK.since, WEEK.until, "week"),
        measured(
            routes=[
                row(MONDAY, questions=6, answered=4, low_confidence=1, abstained=1, conflicted=1),
                row(None, questions=6, answered=4, low_confidence=1, abstained=1, conflicted=1),
            ]
        ),
    )
    assert len(one["periods"]) == 1
    page = render_html(one)
    assert NOT_ENOUGH in page
    routes = re.search(r"<svg[^>]*><title>Route shares per period.*?</svg>", page)
    assert routes is not None and ">total</text>" in routes.group(0)
    assert len(re.findall(r"<rect[^>]*><title>", routes.group(0))) == 3, "a segment per route"


def test_eval_runs_get_a_line_per_key_metric() -> None:
    rate = {"n": 3, "of": 4, "rate": 0.75}
    runs = [
        {"id": n, "created_at": datetime(2026, 11, n, tzinfo=UTC), "golden": "golden.yaml", "knowledge_base": "kb",
         "summary": {"questions": 4, "routes": {"answered": rate}, "keyword_accuracy": rate,
                     "abstention_on_unanswerable": {"n": n % 2, "of": 1, "rate": float(n % 2)},
                     "wrong_abstention_on_answerable": {"n": 0, "of": 3, "rate": 0.0}}}
        for n in (3, 4, 5)
    ]  # fmt: skip
    page = render_html(assemble(WEEK, measured(eval_runs=runs)))
    chart = re.search(r"<svg[^>]*><title>Eval runs: key metrics per run</title>.*?</svg>", page)
    assert chart is not None and chart.group(0).count("<polyline") == 3
    for label in ("keyword accuracy", "abstained on unanswerable", "wrong abstention on answerable"):
        assert label in chart.group(0)
    assert "#3 2026-11-03" in page and "3/4 (75%)" in page


def test_charts_break_lines_at_gaps_and_say_no_data() -> None:
    gapped = line_chart("gaps", ["a", "b", "c", "d", "e"], [Series("s", [0.1, 0.2, None, 0.3, 0.4])], percent=True)
    points = re.compile(r"<circle[^>]*><title>")  # the legend's marker has no tooltip
    assert gapped.count("<polyline") == 2 and len(points.findall(gapped)) == 4
    lone = line_chart("lone", ["a", "b", "c"], [Series("s", [0.1, None, 0.3])])
    assert "<polyline" not in lone and len(points.findall(lone)) == 2, "isolated points are still drawn"
    for nothing in (
        line_chart("none", ["a", "b"], [Series("s", [None, None])]),
        stacked_bars("none", ["a"], [Series("s", [None])]),
        bar_chart("none", [], []),
    ):
        assert NO_DATA in nothing and 'role="img"' in nothing and "<title>none</title>" in nothing
    bars = bar_chart("p", ["x", "<y>"], [Series("p50", [10.0, None]), Series("p95", [30.0, 5.0])])
    assert len(re.findall(r"<rect[^>]*><title>", bars)) == 3 and "&lt;y&gt;" in bars and "<y>" not in bars
    stacked = stacked_bars("s", ["a"], [Series("one", [0.25], ["1"]), Series("two", [0.75], ["3"])])
    assert ">1</text>" in stacked and ">3</text>" in stacked


def test_the_page_is_written_whole_with_ordinary_permissions(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old", encoding="utf-8")
    page = render_html(copy.deepcopy(report()))
    assert write_html(target, page) == target.resolve()
    assert target.read_text(encoding="utf-8") == page
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"], "no temporary file left behind"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
