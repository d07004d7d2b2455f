"""`candor report --html` and `/dashboard`: the report object as one self-contained HTML page.

`render_html` is a pure function of the object `candor report --json` prints (`rag.insights.report.build`), like
`bot.render.report_text`, so the page, the text and the JSON cannot disagree. The page makes no request of
its own: inline CSS, charts as inline SVG (`bot.render.svg_charts`), no script, no font, no image file; its
own Content-Security-Policy says so to the browser. Every string from the data (titles, documents,
knowledge bases, reasons, names) is escaped: they are user content. Every rate is shown with its
counts ("7/8 (88%)"), and every chart has its numbers in a table beside it.

Measures that nothing has measured (`hallucination_rate`, `wrong_abstention`) say "not measured" or
"not independent" with their reason; they are charted only where a sample was measured. Their cards
and charts are put into words by `bot.render.report_cards`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from bot.render.report_cards import SAMPLED, rate_text, sampled_cards, sampled_chart
from bot.render.svg_charts import Series, bar_chart, format_value, line_chart, stacked_bars
from rag import write_private

ROUTES = {"answered": "answered", "low_confidence": "low confidence", "abstained": "abstained"}
EVAL_METRICS = {
    "keyword_accuracy": "keyword accuracy",
    "abstention_on_unanswerable": "abstained on unanswerable",
    "wrong_abstention_on_answerable": "wrong abstention on answerable",
}
NO_ANSWERS = "No answers in this window."
NOT_ENOUGH = "Not enough periods for a trend"
DOCS = "docs/reporting.md"
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
body{font:15px/1.45 system-ui,sans-serif;color:#1a1a1a;background:#fff;margin:0 auto;max-width:1180px;padding:24px}
h1{margin:0 0 4px}h2{margin:36px 0 8px;border-bottom:2px solid #ddd;padding-bottom:4px}
.window{color:#444;margin:0 0 16px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(210px,1fr));gap:10px}
.card{border:1px solid #ccc;border-radius:8px;padding:10px 12px}.card b{display:block;font-size:22px}
.card small,.reason{color:#555}.note{background:#fff4d6;border-left:4px solid #b07d00;padding:8px 12px}
.empty{font-size:20px;background:#eef3f8;border-left:4px solid #0072B2;padding:16px}
figure{margin:18px 0}figcaption{font-weight:600;margin-bottom:4px}svg.chart{max-width:100%;height:auto}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f2f2f2}td.num{text-align:right}summary{cursor:pointer;color:#0b5394}
"""


def render_html(report: Mapping[str, Any], *, review_url: str | None = None, sources_url: str | None = None) -> str:
    """The whole page: the window and headline numbers, trend charts, tables, how each number is counted;
    on the dashboard (`review_url`), a link to the review queue whose labels feed the people's rates,
    and (`sources_url`) to the synced sources, knowledge bases and documents."""
    window, total = report["window"], report["total"]
    sections = [_header(window, total)]
    if review_url is not None:
        sections.append(
            f'<p class="review"><a href="{escape(review_url, quote=True)}">Review answers</a>: label a sample of '
            "answers sentence by sentence; the labels count in the people's rates below at once.</p>"
        )
    if sources_url is not None:
        sections.append(
            f'<p class="review"><a href="{escape(sources_url, quote=True)}">Sources</a>: what each synced source '
            "last did, the knowledge bases and their documents, and Sync now.</p>"
        )
    if not total.get("questions"):
        sections.append(f'<p class="empty">{NO_ANSWERS} Nothing was asked in it; stored eval runs follow.</p>')
    else:
        sections.extend(_answers_sections(report))
    sections.append(_eval_runs(report.get("eval_runs") or []))
    sections.append(_how_counted())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="referrer" content="no-referrer"><meta name="viewport" content="width=device-width">'
        f"<title>{escape(_heading(window))}</title><style>{STYLE}</style></head>\n<body>"
        + "\n".join(sections)
        + "</body></html>\n"
    )


def write_html(path: Path, page: str) -> Path:
    """Write `page` to `path` atomically (`rag.write_private`), so a reader never sees half a
    page; the file gets the usual permissions (0666 less the umask): it holds counts and document
    names, no question or passage, and is made to be shared. `FileWriteError` when it cannot."""
    return write_private(path, page, mode=None)


# --- words and numbers ------------------------------------------------------------------------------


def _share(value: Mapping[str, Any] | None) -> float | None:
    return value.get("rate") if isinstance(value, Mapping) and value.get("of") else None


def _heading(window: Mapping[str, Any]) -> str:
    since, until = (datetime.fromisoformat(window[k]).strftime("%Y-%m-%d %H:%M") for k in ("since", "until"))
    return f"Candor report: {since} to {until} UTC"


def _scope(window: Mapping[str, Any]) -> str:
    kb = window.get("knowledge_base")
    by = f", a row per {window['by']}" if window.get("by") else ""
    return (f"knowledge base {kb}" if kb else "all knowledge bases") + by


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f'<th scope="col">{escape(str(h))}</th>' for h in headers)
    body = "".join("<tr>" + "".join(_cell(j, c) for j, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(column: int, value: Any) -> str:
    if column == 0:
        return f'<th scope="row">{escape(str(value))}</th>'
    numeric = isinstance(value, int | float) or (isinstance(value, str) and value[:1].isdigit())
    return f"<td{' class=num' if numeric else ''}>{escape(str(value))}</td>"


def _figure(caption: str, svg: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return (
        f"<figure><figcaption>{escape(caption)}</figcaption>{svg}"
        f"<details><summary>The numbers: {escape(caption)}</summary>{_table(headers, rows)}</details></figure>"
    )


def _section(title: str, *parts: str) -> str:
    return f"<section><h2>{escape(title)}</h2>{''.join(parts)}</section>"


# --- the sections ----------------------------------------------------------------------------------


def _header(window: Mapping[str, Any], total: Mapping[str, Any]) -> str:
    cards = [("Questions", str(total.get("questions", 0)), "answers made in the window")]
    for route, label in ROUTES.items():
        cards.append((label.capitalize(), rate_text(total.get("routes", {}).get(route)), "of the questions"))
    cards.extend(sampled_cards(total))
    up = sum(f.get("up", {}).get("n", 0) for f in total.get("feedback", {}).values())
    down = sum(f.get("down", {}).get("n", 0) for f in total.get("feedback", {}).values())
    cards.append(("Feedback", f"👍 {up} up · 👎 {down} down", f"{up + down} votes, by route below"))
    shown = "".join(
        f'<div class="card">{escape(title)}<b>{escape(value)}</b><small>{escape(note)}</small></div>'
        for title, value, note in cards
    )
    return (
        f"<header><h1>{escape(_heading(window))}</h1>"
        f'<p class="window">{escape(_scope(window))}</p><div class="cards">{shown}</div></header>'
    )


Rows = Sequence[tuple[str, Mapping[str, Any]]]


def _answers_sections(report: Mapping[str, Any]) -> list[str]:
    window, total, periods = report["window"], report["total"], report.get("periods") or []
    label = "week of {}" if window.get("by") == "week" else "{}"
    table: Rows = [*((label.format(p["start"]), p) for p in periods), ("total", total)]
    charted: Rows = [(str(p["start"]), p) for p in periods] if len(periods) >= 2 else [("total", total)]
    note = (
        ""
        if len(periods) >= 2
        else f'<p class="note">{NOT_ENOUGH}: {len(periods)} period(s) with answers'
        f"{'' if window.get('by') else ' (no --by day or week)'}; the charts show the window's totals.</p>"
    )
    return [
        _section("Trends", note, _routes(charted, table), _gates(charted, table), _conflicts(charted, table)),
        _section("Sampled measures", *(_sampled(key, charted, table) for key in SAMPLED)),
        _section("Feedback", _feedback(total, table)),
        _section("Latency and cost", _latency(total, charted, table), _usage(charted, table)),
        _section("Sources and platforms", _documents(total.get("top_documents") or []), _platforms(table)),
    ]


def _categories(rows: Rows) -> list[str]:
    return [name for name, _ in rows]


def _rates(name: str, rows: Rows, pick: Any) -> Series:
    values = [pick(p) for _, p in rows]
    return Series(name, [_share(v) for v in values], [rate_text(v) for v in values])


def _routes(charted: Rows, table: Rows) -> str:
    series = [
        Series(label, [_share(p["routes"][r]) for _, p in charted], [str(p["routes"][r]["n"]) for _, p in charted])
        for r, label in ROUTES.items()
    ]
    svg = stacked_bars("Route shares per period (counts in the bars)", _categories(charted), series, y_label="share")
    rows = [[name, p["questions"], *(rate_text(p["routes"][r]) for r in ROUTES)] for name, p in table]
    return _figure("How questions were answered", svg, ["period", "questions", *ROUTES.values()], rows)


def _gates(charted: Rows, table: Rows) -> str:
    series = [
        _rates("first pass rejected", charted, lambda p: p["first_pass"]["rejected"]),
        _rates("draft sentences dropped", charted, lambda p: p["gate_dropped_sentences"]),
    ]
    svg = line_chart("Faithfulness gate: first-pass rejections and dropped sentences", _categories(charted), series,
                     percent=True, y_label="share")  # fmt: skip
    headers = ["period", "first pass rejected", "retried", "resolved by the retry", "draft sentences dropped"]
    rows = [
        [name, rate_text(p["first_pass"]["rejected"]), p["first_pass"]["retried"],
         rate_text(p["first_pass"]["resolved"]), rate_text(p["gate_dropped_sentences"])]
        for name, p in table
    ]  # fmt: skip
    return _figure("The gate's own view: first-pass rejections and the critic's drops", svg, headers, rows)


def _conflicts(charted: Rows, table: Rows) -> str:
    series = [_rates("conflict flagged", charted, lambda p: p["conflicts"])]
    svg = line_chart("Delivered answers flagging a conflict", _categories(charted), series, percent=True)
    rows = [[name, rate_text(p["conflicts"])] for name, p in table]
    return _figure("Conflict flags (over delivered answers)", svg, ["period", "conflict flagged"], rows)


def _sampled(key: str, charted: Rows, table: Rows) -> str:
    """A sampled measure and, per period, the people's labels (`bot.render.report_cards`)."""
    chart = sampled_chart(key, charted, table)
    if not chart.drawn:
        return (
            f"<h3>{escape(chart.title)}: {escape(chart.headline)}</h3><p class=reason>{escape(chart.why)}</p>"
            f"<details><summary>The numbers: {escape(chart.title)}</summary>"
            f"{_table(chart.headers, chart.rows)}</details>"
        )
    svg = line_chart(chart.chart, _categories(charted), chart.series, percent=True, y_label="share")
    return _figure(chart.caption, svg, chart.headers, chart.rows)


def _feedback(total: Mapping[str, Any], table: Rows) -> str:
    feedback = total.get("feedback", {})
    series = [
        Series(f"votes {w}", [feedback[r][w]["n"] for r in ROUTES], [rate_text(feedback[r][w]) for r in ROUTES])
        for w in ("up", "down")
    ]
    svg = bar_chart("Votes by the route of the answer voted on", list(ROUTES.values()), series, y_label="votes")

    def votes(f: Mapping[str, Any]) -> str:
        return f"{f['up']['n']} up, {f['down']['n']} down of {f['votes']}" if f["votes"] else "-"

    rows = [[name, *(votes(p["feedback"][r]) for r in ROUTES)] for name, p in table]
    note = "A 👎 on an abstention says the asker expected an answer (a gap or a wrong abstention), not a wrong one."
    return (
        _figure("Votes up (👍) and down (👎) by route (whole window)", svg, ["period", *ROUTES.values()], rows)
        + f"<p>{note}</p>"
    )


def _latency(total: Mapping[str, Any], charted: Rows, table: Rows) -> str:
    stages = total.get("latency_ms") or {}
    series = [Series(q, [stages[s][q] for s in stages]) for q in ("p50", "p95")]
    bars = bar_chart("Latency per stage, whole window (ms)", list(stages), series, y_label="ms")
    rows = [[s, v["n"], format_value(v["p50"]), format_value(v["p95"])] for s, v in stages.items()]
    out = _figure("Latency p50 / p95 per stage (ms, whole window)", bars, ["stage", "answers", "p50", "p95"], rows)
    if len(charted) < 2:
        return out
    trend = [
        Series(f"total {q}", [(p.get("latency_ms") or {}).get("total", {}).get(q) for _, p in charted])
        for q in ("p50", "p95")
    ]
    svg = line_chart("Total latency per period (ms)", _categories(charted), trend, y_label="ms")
    per = [[n, *(format_value((p.get("latency_ms") or {}).get("total", {}).get(q)) for q in ("p50", "p95"))]
           for n, p in table]  # fmt: skip
    return out + _figure("Total latency per period (ms)", svg, ["period", "p50", "p95"], per)


def _usage(charted: Rows, table: Rows) -> str:
    if not any(p["usage"]["model_calls"] for _, p in table):
        return "<p><b>Model usage:</b> no model calls (offline stages).</p>"

    def per(p: Mapping[str, Any], key: str) -> float | None:
        value = p["usage"][key]["per_answer"]
        return None if value is None else float(value)

    tokens = [Series(f"{w} tokens", [per(p, f"{w}_tokens") for _, p in charted]) for w in ("prompt", "completion")]
    cost = [Series("cost", [per(p, "cost") for _, p in charted])]
    headers = ["period", "answers", "model calls", "unpriced calls", "tokens in / out per answer", "cost per answer"]
    rows = [
        [n, u["answers"], u["model_calls"], u["unpriced_calls"],
         f"{format_value(u['prompt_tokens']['per_answer'])} / {format_value(u['completion_tokens']['per_answer'])}",
         "unknown (unpriced calls)" if u["cost"]["total"] is None else format_value(u["cost"]["per_answer"])]
        for n, u in ((n, p["usage"]) for n, p in table)
    ]  # fmt: skip
    names = _categories(charted)
    return _figure("Tokens per answer", line_chart("Tokens per answer", names, tokens), headers, rows) + _figure(
        "Cost per answer (gaps: unpriced calls)", line_chart("Cost per answer", names, cost), headers, rows
    )


def _documents(documents: Sequence[Mapping[str, Any]]) -> str:
    if not documents:
        return "<h3>Top cited documents</h3><p>None cited.</p>"
    rows = [[d["answers"], d.get("title") or "", d["document"], d.get("knowledge_base") or "(deleted)"]
            for d in documents]  # fmt: skip
    return "<h3>Top cited documents (answers citing each)</h3>" + _table(
        ["answers", "title", "document", "knowledge base"], rows
    )


def _platforms(table: Rows) -> str:
    names = list(table[-1][1].get("platforms") or {})
    rows = [[n, *(rate_text(p["platforms"].get(name)) for name in names)] for n, p in table]
    return "<h3>Platforms (share of the questions)</h3>" + _table(["period", *names], rows)


def _eval_runs(runs: Sequence[Mapping[str, Any]]) -> str:
    if not runs:
        return _section("Stored eval runs (candor eval)", "<p>None in this window.</p>")
    names = [f"#{run['id']} {str(run['created_at'])[:10]}" for run in runs]
    series = [
        Series(label, [_share(r.get(k)) for r in runs], [rate_text(r.get(k)) for r in runs])
        for k, label in EVAL_METRICS.items()
    ]
    svg = line_chart("Eval runs: key metrics per run", names, series, percent=True, y_label="share")
    headers = ["run", "golden", "knowledge base", "questions", "answered", *EVAL_METRICS.values()]
    rows = [
        [name, r.get("golden") or "", r.get("knowledge_base") or "(all)",
         "-" if r.get("questions") is None else r["questions"], rate_text(r.get("answered")),
         *(rate_text(r.get(k)) for k in EVAL_METRICS)]
        for name, r in zip(names, runs, strict=True)
    ]  # fmt: skip
    return _section("Stored eval runs (candor eval)", _figure("Key metrics per eval run", svg, headers, rows))


def _how_counted() -> str:
    return _section(
        "How each number is counted",
        f"<p>Every definition (the window, <code>--kb</code>, each measure and what it is over) is in "
        f"<code>{DOCS}</code> in the Candor repository. In short: rates are shown with their counts; "
        "the gate's own view (first-pass rejections, dropped sentences) is not the hallucination rate, "
        "which only a verifier independent of the gate, on a sample, or people's labels measure.</p>",
    )
