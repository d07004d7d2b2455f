"""`candor gaps` as text: the JSON of `rag.insights.gaps.find.find_gaps` in, lines out. Pure: no I/O, no core calls."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

LABELS = {"true_gap": "TRUE GAP", "possibly_answerable": "POSSIBLY ANSWERABLE"}
ROUTES = {"abstained": "abstained", "low_confidence": "low confidence", "answered": "unanswered part"}
NO_GAPS = "No unanswered questions in this window."
WIDTH = 160


def render_gaps(gaps: Mapping[str, Any]) -> str:
    """The whole report, one block per cluster, largest first."""
    lines = [_heading(gaps), ""]
    clusters = gaps["clusters"]
    if not clusters:
        lines.append(NO_GAPS if not gaps["items"] else f"No cluster of at least {gaps['min_size']} questions.")
    for cluster in clusters:
        lines += [*_cluster(cluster), ""]
    lines.append(_footer(gaps))
    return "\n".join(lines) + "\n"


def _heading(gaps: Mapping[str, Any]) -> str:
    window = gaps["window"]
    kb = f", knowledge base {window['knowledge_base']}" if window["knowledge_base"] else ""
    labels = gaps["labels"]
    return (
        f"Gaps {window['since'][:16]} to {window['until'][:16]} (UTC){kb}: {gaps['items']} unanswered questions "
        f"and parts, {len(gaps['clusters'])} clusters of {gaps['min_size']} or more "
        f"({labels['true_gap']} true gaps, {labels['possibly_answerable']} possibly answerable)"
    )


def _cluster(cluster: Mapping[str, Any]) -> list[str]:
    check = cluster["recheck"]
    routes = ", ".join(f"{ROUTES.get(r, r)} {n}" for r, n in cluster["routes"].items())
    head = (
        f"{cluster['id']}. {LABELS.get(cluster['label'], cluster['label'])}: {cluster['size']} asked ({routes}); "
        f"{check['possibly_answerable']}/{check['members_checked']} re-checked possibly answerable; "
        f"{cluster['first_seen'][:10]} to {cluster['last_seen'][:10]}"
    )
    lines = [head, f"   {_clip(cluster['representative']['text'])}"]
    for example in cluster["examples"]:
        times = f" x{example['count']}" if example["count"] > 1 else ""
        part = ", part" if example["part"] else ""
        route = ROUTES.get(example["route"], example["route"])
        when = example["created_at"][:10]
        lines.append(f"   - {_clip(example['text'])}{times}  ({when}, {route}{part}, trace {example['trace_id']})")
    lines += _evidence(cluster["evidence"], check["threshold"])
    follow = cluster.get("follow_up") or {}
    lines += _follow_up(follow)
    if cluster["label"] == "true_gap" and not follow.get("curated_answers"):
        asked = shlex.quote(" ".join(str(cluster["representative"]["text"]).split()))
        lines.append(f"   fill it: candor answers add --question {asked} --answer '...'")
    return lines


def _follow_up(follow: Mapping[str, Any]) -> list[str]:
    """The hand-offs and curated answers of a cluster, and how a curated answer changed its questions' fate."""
    lines = []
    handoffs = follow.get("handoffs") or []
    if handoffs:
        replied = [h for h in handoffs if h["status"] == "replied"]
        by = sorted({str(h["replied_by"]) for h in replied if h["replied_by"]})
        who = f", replied by {', '.join(by)}" if by else ""
        lines.append(f"   handed to a person: {len(handoffs)} ({len(replied)} replied{who})")
    for c in follow.get("curated_answers") or []:
        state = "" if c["live"] else ", expired"
        lines.append(
            f"   curated answer #{c['id']} by {c['author']} ({c['created_at'][:10]}{state}): since then answered "
            f"with it {c['answered_with_it']}x, unanswered {c['unanswered_after']}x (before: {c['unanswered_before']}x)"
        )
    return lines


def _evidence(evidence: Mapping[str, Any], threshold: float) -> list[str]:
    passages = evidence["passages"]
    if not passages:
        return ["   evidence: nothing found in the documents this asker could read"]
    compare = ">=" if evidence["score"] >= threshold else "<"
    score = f"{evidence['score']:.2f} {compare} threshold {threshold:.2f}"
    lines = [f"   best evidence ({score}), for: {_clip(evidence['question'])}"]
    for p in passages:
        where = " > ".join(x for x in (p["title"], p["heading"]) if x)
        lines.append(f"     {p['score']:.2f} {p['document']} ({where}): {_clip(p['sentence'])}")
    return lines


def _footer(gaps: Mapping[str, Any]) -> str:
    left = gaps["left_out"]
    capped = (
        f" Only the most recent {gaps['max_items']} were clustered ({gaps['traces_in_window']} traces with gaps)."
        if gaps["capped"]
        else ""
    )
    clustering = gaps["clustering"]
    return (
        f"{left['items']} questions in {left['clusters']} smaller clusters not shown. Clustered by "
        f"{clustering['method']} <= {clustering['distance']} ({clustering['embedder']}); re-checked with "
        f"{gaps['recheck']['shortlist']} passages, up to {gaps['recheck']['per_cluster_cap']} texts per cluster."
        + capped
    )


def _clip(text: str, width: int = WIDTH) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
