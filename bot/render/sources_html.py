"""The dashboard's sources pages, as pure functions of the core's data (`rag.model.sources`).

`sources_page`: one row per source (kind, knowledge base, who may read it in words, its last run:
start, duration, outcome, counts, error in full; its next scheduled run and the documents it holds
now), a marked row for a source that has never run, cannot start, or whose last run failed or
skipped documents, and a Sync now button per configured source. `source_page`: one source, its last
run's skipped documents with their reasons and its latest runs. While a run is in progress the page
reloads itself every few seconds (a meta refresh: no script), so its progress shows.

Server-rendered HTML without scripts, in the report page's style; every value is escaped
(`html.escape`), and a URL becomes a link only when it is a plain http(s) URL. The shell, the
navigation and the small formatters are shared with `bot.render.documents_html`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from html import escape
from urllib.parse import quote, urlencode

from bot.render.report_html import STYLE
from rag.model.sources import SourceStatus, SyncRun

REFRESH_SECONDS = 2
NAV = (
    ("/dashboard", "Report"),
    ("/dashboard/review", "Review answers"),
    ("/dashboard/answers", "Curated answers"),
    ("/dashboard/sources", "Sources"),
    ("/dashboard/knowledge-bases", "Knowledge bases"),
)
EXTRA_STYLE = (
    "tr.marked td:first-child{border-left:4px solid #b42318}.warn{color:#b42318;font-weight:600}"
    ".ok{color:#1a7f37}.running{color:#0b5394;font-weight:600}pre{white-space:pre-wrap;margin:0;font:inherit}"
    "form.inline{display:inline;margin:0}nav a{margin-right:12px}td{vertical-align:top}"
    ".chunk{border-left:3px solid #ddd;padding:2px 12px;margin:10px 0}.chunk p{white-space:pre-wrap;margin:4px 0}"
    ".muted{color:#555}"
)
_LINKABLE = re.compile(r"https?://[^\s\x00-\x1f\x7f\"'<>\\`]+", re.IGNORECASE)


def shell(title: str, body: str, *, refresh: bool = False) -> str:
    """A whole page: the dashboard's navigation, `title` as its heading, then `body`."""
    again = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if refresh else ""
    nav = " ".join(f'<a href="{href}">{escape(label)}</a>' for href, label in NAV)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
        f'<meta name="viewport" content="width=device-width">{again}<title>Candor: {escape(title)}</title>'
        f"<style>{STYLE}{EXTRA_STYLE}</style></head>\n<body><nav>{nav}</nav><h1>{escape(title)}</h1>{body}"
        "</body></html>\n"
    )


def when(moment: datetime | None) -> str:
    return "—" if moment is None else escape(f"{moment:%Y-%m-%d %H:%M:%S %Z}".strip())


def took(duration: timedelta | None) -> str:
    if duration is None:
        return ""
    seconds = duration.total_seconds()
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def groups(names: Sequence[str]) -> str:
    return escape(", ".join(names)) if names else "everyone (public)"


def link(url: str | None, text: str) -> str:
    """`text` (escaped), a link to `url` when it is a plain http(s) URL."""
    if url is None or not _LINKABLE.fullmatch(url.strip()):
        return escape(text)
    return f'<a href="{escape(url.strip(), quote=True)}" rel="noopener noreferrer">{escape(text)}</a>'


def note(message: str | None, *, alert: bool = False) -> str:
    if not message:
        return ""
    role = "alert" if alert else "status"
    return f'<p class="note" role="{role}">{escape(message[:300])}</p>'


def source_path(status: SourceStatus) -> str:
    return f"/dashboard/sources/{quote(status.name, safe='')}?" + urlencode({"kb": status.knowledge_base})


def documents_path(kb: str, **extra: str) -> str:
    return "/dashboard/documents?" + urlencode({"kb": kb, **{k: v for k, v in extra.items() if v}})


def _documents_link(status: SourceStatus) -> str:
    path = documents_path(status.knowledge_base, source=status.name)
    return f'<a href="{escape(path, quote=True)}">{status.documents}</a>'


def sources_page(sources: Sequence[SourceStatus], *, message: str | None = None, problem: str | None = None) -> str:
    """Every source in a table; `problem` when the sources file could not be read."""
    if problem:
        body = note(problem, alert=True)
    elif not sources:
        body = '<p class="empty">No sources: set CANDOR_SOURCES to the sources file (docs/sources.md).</p>'
    else:
        head = (
            "<tr><th>Source</th><th>Kind</th><th>Knowledge base</th><th>Who may read it</th><th>Last run</th>"
            "<th>Added</th><th>Updated</th><th>Unchanged</th><th>Deleted</th><th>Skipped</th><th>Fetched</th>"
            "<th>Last error</th><th>Next run</th><th>Documents</th><th></th></tr>"
        )
        rows = "".join(_source_row(status) for status in sources)
        body = f'<table id="sources">{head}{rows}</table>'
    intro = (
        '<p class="window">Each source of the sources file, what its last run did and what it holds now. '
        "A marked row has never run, cannot start, or its last run failed or skipped documents. "
        'Sync now runs a source at once in this server. <a href="/dashboard/knowledge-bases">Knowledge bases</a></p>'
    )
    return shell("Sources", intro + note(message) + body, refresh=_running(s.last_run for s in sources))


def source_page(status: SourceStatus, runs: Sequence[SyncRun], *, message: str | None = None) -> str:
    """One source: what it is, its last run in full, its latest runs."""
    facts = [
        ("Kind", escape(status.kind)),
        (
            "Knowledge base",
            f'<a href="{escape(documents_path(status.knowledge_base), quote=True)}">'
            f"{escape(status.knowledge_base)}</a>",
        ),
        ("Who may read it", escape(status.access)),
        ("Documents it holds now", _documents_link(status)),
        ("Last complete run", when(status.last_success_at)),
        ("Next scheduled run", when(status.next_run_at) if status.next_run_at else "not known (no schedule recorded)"),
    ]
    if status.problem:
        facts.append(("Cannot start", f'<span class="warn">{escape(status.problem)}</span>'))
    if status.warnings:
        facts.append(("Marked", f'<span class="warn">{escape("; ".join(status.warnings))}</span>'))
    listed = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts)
    parts = [note(message), f'<table class="facts">{listed}</table>', _sync_button(status)]
    last = status.last_run
    if last is not None:
        parts.append(f'<h2>Last run</h2><p id="last-run">{_outcome(last)}</p>')
        if last.error:
            parts.append(f'<p>Error:</p><pre class="warn" id="last-error">{escape(last.error)}</pre>')
        if last.note:
            parts.append(f"<p>{escape(last.note)}</p>")
        if last.skipped_items:
            items = "".join(f"<li>{escape(doc)}: {escape(why)}</li>" for doc, why in last.skipped_items)
            more = f" (the first {len(last.skipped_items)})" if last.skipped > len(last.skipped_items) else ""
            parts.append(f"<h3>Skipped documents{more}</h3><ul>{items}</ul>")
    if runs:
        head = (
            "<tr><th>Started</th><th>By</th><th>Took</th><th>Outcome</th><th>Added</th><th>Updated</th>"
            "<th>Unchanged</th><th>Deleted</th><th>Skipped</th><th>Fetched</th><th>Error</th></tr>"
        )
        rows = "".join(
            f"<tr><td>{when(r.started_at)}</td><td>{escape(r.trigger)}<br><small>{escape(r.owner)}</small></td>"
            f"<td>{took(r.duration)}</td><td>{_status(r)}</td>{_counts(r)}"
            f"<td><pre>{escape(r.error or '')}</pre></td></tr>"
            for r in runs
        )
        parts.append(f'<h2>Latest runs</h2><table id="runs">{head}{rows}</table>')
    return shell(f"Source {status.name}", "".join(parts), refresh=_running([last]))


def _source_row(status: SourceStatus) -> str:
    run = status.last_run
    warnings = status.warnings
    mark = f'<br><span class="warn">{escape("; ".join(warnings))}</span>' if warnings else ""
    name = f'<a href="{escape(source_path(status), quote=True)}">{escape(status.name)}</a>{mark}'
    kb = f'<a href="{escape(documents_path(status.knowledge_base), quote=True)}">{escape(status.knowledge_base)}</a>'
    if run is None:
        last, counts, error = "never run", "<td></td>" * 6, status.problem or ""
    else:
        last = f"{when(run.started_at)}<br>{_status(run)}" + (f", {took(run.duration)}" if run.duration else "")
        counts, error = _counts(run), run.error or status.problem or _first_skipped(run)
    next_run = when(status.next_run_at) if status.next_run_at else "not known"
    documents = _documents_link(status)
    return (
        f'<tr class="{"marked" if warnings else "fine"}" data-source="{escape(status.name, quote=True)}">'
        f"<td>{name}</td><td>{escape(status.kind)}</td><td>{kb}</td><td>{escape(status.access)}</td>"
        f'<td class="last-run">{last}</td>{counts}<td class="error"><pre>{escape(error)}</pre></td>'
        f"<td>{next_run}</td><td>{documents}</td><td>{_sync_button(status)}</td></tr>"
    )


def _sync_button(status: SourceStatus) -> str:
    if not status.configured:
        return ""
    action = f"/dashboard/sources/{quote(status.name, safe='')}/sync"
    running = status.last_run is not None and status.last_run.status == "running"
    disabled = " disabled" if running else ""
    return (
        f'<form class="inline" method="post" action="{escape(action, quote=True)}">'
        f'<input type="hidden" name="kb" value="{escape(status.knowledge_base, quote=True)}">'
        f'<button type="submit" name="sync" value="{escape(status.name, quote=True)}"{disabled}>'
        "Sync now</button></form>"
    )


def _status(run: SyncRun) -> str:
    if run.status == "running":
        progress = f": {run.visited} of {run.known} documents" if run.known else ": listing"
        return f'<span class="running">running{progress}</span>'
    if run.status == "succeeded":
        partial = "" if run.complete else " (stopped at its budget)"
        skipped = f', <span class="warn">{run.skipped} skipped</span>' if run.skipped else ""
        return f'<span class="ok">succeeded</span>{partial}{skipped}'
    return f'<span class="warn">{escape(run.status)}</span>'


def _outcome(run: SyncRun) -> str:
    by = f"{escape(run.trigger)} on {escape(run.owner)}"
    took_ = f", took {took(run.duration)}" if run.duration else ""
    counts = (
        f"{run.added} added, {run.updated} updated, {run.unchanged} unchanged, {run.deleted} deleted, "
        f"{run.skipped} skipped; {run.fetched} fetched in full"
    )
    return f"Started {when(run.started_at)} by {by}{took_}: {_status(run)}. {counts}."


def _counts(run: SyncRun) -> str:
    values = (run.added, run.updated, run.unchanged, run.deleted, run.skipped, run.fetched)
    names = ("added", "updated", "unchanged", "deleted", "skipped", "fetched")
    return "".join(f'<td class="num {name}">{value}</td>' for name, value in zip(names, values, strict=True))


def _first_skipped(run: SyncRun) -> str:
    if not run.skipped_items:
        return ""
    document, reason = run.skipped_items[0]
    more = f" (and {run.skipped - 1} more)" if run.skipped > 1 else ""
    return f"skipped {document}: {reason}{more}"


def _running(runs: Iterable[SyncRun | None]) -> bool:
    return any(run is not None and run.status == "running" for run in runs)
