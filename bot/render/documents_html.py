"""The dashboard's knowledge bases and documents pages, as pure functions of `rag.model.sources`.

`knowledge_bases_page`: each base's documents and chunks, the groups that read each share of it,
its newest and oldest effective dates, its live curated answers and the sources that fill it.
`documents_page`: a base's documents, searched by title, path or URL, a page at a time.
`document_page`: one document's facts, its chunks as Candor reads them (the text that is searched
and cited: page furniture, navigation and footers were removed when it was stored) and the answers
that cited it lately. Operators see every document's text, restricted ones included, as with
`candor report`: these pages are behind the admin token.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from urllib.parse import quote, urlencode

from bot.render.sources_html import documents_path, groups, link, shell, when
from rag.model.sources import DocumentPage, DocumentSearch, DocumentSummary, KnowledgeBaseStatus

DOCUMENTS = "/dashboard/documents"


def document_path(document_id: int) -> str:
    return f"{DOCUMENTS}/{document_id}"


def knowledge_bases_page(bases: Sequence[KnowledgeBaseStatus]) -> str:
    if not bases:
        return shell("Knowledge bases", '<p class="empty">No knowledge base yet: ingest or sync documents.</p>')
    head = (
        "<tr><th>Knowledge base</th><th>Documents</th><th>Chunks</th><th>Who reads which share</th>"
        "<th>Newest</th><th>Oldest</th><th>Curated answers</th><th>Synced sources</th></tr>"
    )
    rows = "".join(_base_row(base) for base in bases)
    intro = (
        "<p class=\"window\">Effective dates are the documents' own (front matter, text, or the file's time). "
        "Each share lists the access groups whose members may read those documents; public documents are "
        "everyone's.</p>"
    )
    return shell("Knowledge bases", f'{intro}<table id="knowledge-bases">{head}{rows}</table>')


def _base_row(base: KnowledgeBaseStatus) -> str:
    shares = "".join(
        f"<li>{groups(share.groups)}: {share.documents} documents, {share.chunks} chunks</li>" for share in base.shares
    )
    sources = ", ".join(escape(name) for name in base.sources) or "—"
    name = f'<a href="{escape(documents_path(base.name), quote=True)}">{escape(base.name)}</a>'
    return (
        f'<tr data-kb="{escape(base.name, quote=True)}"><td>{name}</td><td class="num">{base.documents}</td>'
        f'<td class="num">{base.chunks}</td><td><ul>{shares}</ul></td><td>{_date(base.newest)}</td>'
        f'<td>{_date(base.oldest)}</td><td class="num">{base.curated}</td><td>{sources}</td></tr>'
    )


def documents_page(found: DocumentSearch) -> str:
    kb = found.knowledge_base
    source = f'<input type="hidden" name="source" value="{escape(found.source, quote=True)}">' if found.source else ""
    form = (
        f'<form method="get" action="{DOCUMENTS}" role="search"><input type="hidden" name="kb" '
        f'value="{escape(kb, quote=True)}">{source}<label>Title or URL contains '
        f'<input type="search" name="q" value="{escape(found.query, quote=True)}"></label> '
        '<button type="submit">Search</button></form>'
    )
    scope = f" from source {escape(found.source)}" if found.source else ""
    matched = f' matching "{escape(found.query)}"' if found.query else ""
    pages = max(1, -(-found.total // found.per_page))
    summary = f'<p class="window" id="found">{found.total} documents{scope}{matched}; page {found.page} of {pages}.</p>'
    if not found.documents:
        listing = '<p class="empty">No document matches.</p>'
    else:
        head = (
            "<tr><th>Title</th><th>Link</th><th>Source</th><th>Effective date</th><th>Access groups</th>"
            "<th>Last synced</th><th>Chunks</th></tr>"
        )
        listing = f'<table id="documents">{head}{"".join(_document_row(d) for d in found.documents)}</table>'
    return shell(f"Documents of {kb}", form + summary + listing + _pager(found, pages))


def _document_row(doc: DocumentSummary) -> str:
    title = f'<a href="{document_path(doc.id)}">{escape(doc.title or doc.document)}</a>'
    return (
        f'<tr data-document="{doc.id}"><td>{title}</td><td>{link(doc.url, doc.url or doc.document)}</td>'
        f"<td>{_origin(doc)}</td><td>{_date(doc.effective_date)}</td><td>{groups(doc.access_groups)}</td>"
        f'<td>{when(doc.synced_at) if doc.synced_at else "—"}</td><td class="num">{doc.chunks}</td></tr>'
    )


def _pager(found: DocumentSearch, pages: int) -> str:
    def at(page: int) -> str:
        query = {"kb": found.knowledge_base, "q": found.query, "source": found.source or "", "page": str(page)}
        return escape(f"{DOCUMENTS}?{urlencode({k: v for k, v in query.items() if v})}", quote=True)

    links = []
    if found.page > 1:
        links.append(f'<a href="{at(found.page - 1)}" rel="prev">Previous</a>')
    if found.page < pages:
        links.append(f'<a href="{at(found.page + 1)}" rel="next">Next</a>')
    return f"<p>{' · '.join(links)}</p>" if links else ""


def document_page(page: DocumentPage) -> str:
    doc = page.document
    restricted = (
        ' <span class="warn">restricted: shown here because you are the admin; the bot shows it only to '
        "these groups</span>"
        if doc.access_groups
        else ""
    )
    facts = [
        (
            "Knowledge base",
            f'<a href="{escape(documents_path(doc.knowledge_base), quote=True)}">{escape(doc.knowledge_base)}</a>',
        ),
        ("Path or URL", link(doc.url or doc.document, doc.document)),
        ("Source", _origin(doc)),
        ("Effective date", _date(doc.effective_date)),
        ("Access groups", groups(doc.access_groups) + restricted),
        ("Stored", when(doc.stored_at)),
        ("Last synced", when(doc.synced_at) if doc.synced_at else "—"),
        ("Format", escape(page.format)),
        ("Chunks", str(len(page.chunks))),
    ]
    listed = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts)
    chunks = (
        "".join(
            f'<section class="chunk" data-position="{c.position}">'
            f"<h3>{c.position + 1}. {escape(c.heading or '(no heading)')}</h3><p>{escape(c.text)}</p></section>"
            for c in page.chunks
        )
        or '<p class="empty">No chunks: nothing of it is searched.</p>'
    )
    if page.cited_by:
        items = "".join(
            f'<li><a href="/dashboard/traces/{escape(a.trace_id, quote=True)}">{when(a.created_at)}</a> '
            f"({escape(a.route)}): {escape(a.question or '(question removed)')}</li>"
            for a in page.cited_by
        )
        cited = f'<ul id="cited-by">{items}</ul>'
    else:
        cited = f'<p id="cited-by">No answer cited it in the last {page.cited_days} days.</p>'
    body = (
        f'<table class="facts">{listed}</table><h2>Answers that cited it in the last {page.cited_days} days</h2>'
        f'{cited}<h2>Its text as Candor reads it</h2><p class="muted">Chunk by chunk, with the heading each is '
        f"filed under: what search finds and answers cite (navigation, headers and footers were removed "
        f'when it was stored).</p><div id="chunks">{chunks}</div>'
    )
    return shell(doc.title or doc.document, body)


def _origin(doc: DocumentSummary) -> str:
    if not doc.synced_by:
        return "files or curated (not synced)"
    path = f"/dashboard/sources/{quote(doc.synced_by, safe='')}?" + urlencode({"kb": doc.knowledge_base})
    return f'<a href="{escape(path, quote=True)}">{escape(doc.synced_by)}</a>'


def _date(value: object) -> str:
    return "—" if value is None else escape(str(value))
