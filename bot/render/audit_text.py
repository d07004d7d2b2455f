"""The conflict audit as text for a terminal: a pure function of the audit, no database, no printing.

Each document pair reads top-down: the two documents (numbered [1] and [2], the preferred one
first), which one is newer and which an answer prefers, then every value they disagree on with
the sentence each comes from, so the reader can fix or retire the outdated page without opening
either.
"""

from __future__ import annotations

from rag import AuditedDocument, ConflictAudit, ConflictPair, Difference

INDENT = "   "


def render_conflict_audit(audit: ConflictAudit) -> str:
    """The whole audit: a summary line, then one block per document pair."""
    summary = (
        f'Conflict audit of knowledge base "{audit.knowledge_base}": {audit.documents} documents, '
        f"{audit.chunks} chunks; {audit.chunk_pairs} close chunk pairs and {audit.sentence_pairs} "
        "sentence pairs compared."
    )
    if not audit.pairs:
        return f"{summary}\nNo two documents give different values for the same thing.\n"
    count = len(audit.pairs)
    verb = "pairs disagree" if count != 1 else "pair disagrees"
    lines = [summary, f"{count} document {verb}:", ""]
    for number, pair in enumerate(audit.pairs, 1):
        lines.extend(render_pair(number, pair))
        lines.append("")
    return "\n".join(lines)


def render_pair(number: int, pair: ConflictPair) -> list[str]:
    """One document pair: its documents, the newer and preferred side, and each difference."""
    lines = [f"{number}. {pair.first.title}  vs  {pair.second.title}"]
    lines.extend(_document(1, pair.first))
    lines.extend(_document(2, pair.second))
    lines.append(f"{INDENT}newer: {_newer(pair)}")
    preferred = f"[1] {pair.first.title}" if pair.preferred == "first" else "neither"
    lines.append(f"{INDENT}preferred: {preferred}: {pair.reason}")
    for difference in pair.differences:
        lines.extend(_difference(difference))
    return lines


def _document(n: int, document: AuditedDocument) -> list[str]:
    where = document.source + (f"  <{document.url}>" if document.url and document.url != document.source else "")
    facts = "no effective date"
    if document.effective_date:
        facts = f"effective {document.effective_date.isoformat()}"
        if document.date_source:
            facts += f" (from {document.date_source.replace('_', ' ')})"
    facts += f", authority {document.authority}"
    if document.access_groups:
        facts += f", access: {', '.join(document.access_groups)}"
    return [f"{INDENT}[{n}] {document.title}: {where}", f"{INDENT}    {facts}"]


def _newer(pair: ConflictPair) -> str:
    if pair.newer == "first":
        return f"[1] {pair.first.title}"
    if pair.newer == "second":
        return f"[2] {pair.second.title}"
    return "undated (cannot tell)" if pair.newer == "undated" else "same date"


def _difference(difference: Difference) -> list[str]:
    return [
        f"{INDENT}- {difference.subject} ({difference.attribute}): "
        f"{difference.first.value} [1] vs {difference.second.value} [2]",
        f'{INDENT}    [1] "{difference.first.sentence}"  ({difference.first.heading})',
        f'{INDENT}    [2] "{difference.second.sentence}"  ({difference.second.heading})',
    ]
