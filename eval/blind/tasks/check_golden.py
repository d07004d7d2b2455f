#!/usr/bin/env python3
"""Sanity checks for golden.yaml against docs/.

Checks: YAML parses; exactly 50 entries with unique ids and the required fields; every source stem
exists in docs/; every keyword (and every part keyword) is an exact substring of the raw text of at
least one listed source; the whole entry's keywords equal the union of its parts' keywords;
unanswerable entries have null answer and empty sources/keywords; conflict fields name real docs
and the stale value appears in the stale source; required_access matches the sources' access
groups; tag minimums from the brief; document word counts and front matter.
"""
import collections
import pathlib
import re
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
DOCS = HERE / "docs"
errors = []


def err(msg):
    errors.append(msg)


# ---- documents -----------------------------------------------------------
docs = {}
access = {}
for p in sorted(DOCS.iterdir()):
    if p.suffix not in (".md", ".html", ".txt"):
        err(f"unexpected file type: {p.name}")
        continue
    text = p.read_text(encoding="utf-8")
    docs[p.stem] = text
    access[p.stem] = []
    if p.suffix == ".md":
        m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
        if not m:
            err(f"{p.name}: missing front matter")
            continue
        fm = yaml.safe_load(m.group(1))
        for k in ("title", "effective_date", "authority"):
            if k not in fm:
                err(f"{p.name}: front matter lacks {k}")
        if not (1 <= int(fm.get("authority", 0)) <= 5):
            err(f"{p.name}: authority out of range")
        access[p.stem] = fm.get("access") or []
    words = len(re.sub(r"<[^>]+>", " ", text).split())
    if not 300 <= words <= 1500:
        err(f"{p.name}: {words} words (want 300-1500)")

n_docs = len(docs)
n_non_md = sum(1 for p in DOCS.iterdir() if p.suffix != ".md")
if not 14 <= n_docs <= 18:
    err(f"{n_docs} documents (want 14-18)")
if n_non_md > n_docs / 4:
    err(f"{n_non_md} non-Markdown documents (max a quarter of {n_docs})")

# ---- golden --------------------------------------------------------------
golden = yaml.safe_load((HERE / "golden.yaml").read_text(encoding="utf-8"))
if not isinstance(golden, list):
    sys.exit("golden.yaml is not a list")
if len(golden) != 50:
    err(f"{len(golden)} questions (want exactly 50)")

ids = [e.get("id") for e in golden]
for i, c in collections.Counter(ids).items():
    if c > 1:
        err(f"duplicate id {i}")

REQUIRED = ("id", "question", "answerable", "answer", "sources", "keywords", "tags")
KNOWN_TAGS = {"answerable", "faq", "table", "code", "lookalike", "conflict", "multi-part",
              "multi-hop", "restricted", "unanswerable", "false-premise", "open"}


def in_sources(kw, sources):
    return any(kw in docs.get(s, "") for s in sources)


tag_count = collections.Counter()
for e in golden:
    eid = e.get("id")
    for k in REQUIRED:
        if k not in e:
            err(f"{eid}: missing field {k}")
    tags = e.get("tags", [])
    tag_count.update(tags)
    for t in tags:
        if t not in KNOWN_TAGS:
            err(f"{eid}: unknown tag {t}")
    srcs = e.get("sources", [])
    kws = e.get("keywords", [])
    for s in srcs:
        if s not in docs:
            err(f"{eid}: source {s} does not exist")
    if e.get("answerable"):
        if not e.get("answer"):
            err(f"{eid}: answerable but no answer")
        if not srcs or not kws:
            err(f"{eid}: answerable but no sources/keywords")
        if "answerable" not in tags:
            err(f"{eid}: answerable but not tagged answerable")
        for kw in kws:
            if not in_sources(kw, srcs):
                err(f"{eid}: keyword {kw!r} not found in {srcs}")
    else:
        if e.get("answer") is not None or srcs or kws:
            err(f"{eid}: not answerable but answer/sources/keywords set")
        if not ({"unanswerable", "false-premise"} & set(tags)):
            err(f"{eid}: not answerable but not tagged unanswerable/false-premise")
        if "answerable" in tags:
            err(f"{eid}: not answerable but tagged answerable")
    if "open" in tags and not ({"answerable", "unanswerable"} & set(tags)):
        err(f"{eid}: open without answerable/unanswerable")
    # parts
    parts = e.get("parts")
    if "multi-part" in tags and (not parts or len(parts) < 2):
        err(f"{eid}: multi-part without >=2 parts")
    if parts:
        union = []
        for pt in parts:
            for k in ("text", "answerable", "keywords"):
                if k not in pt:
                    err(f"{eid}: part lacks {k}")
            for kw in pt.get("keywords", []):
                if not in_sources(kw, srcs):
                    err(f"{eid}: part keyword {kw!r} not found in {srcs}")
                union.append(kw)
        if set(union) != set(kws):
            err(f"{eid}: keywords {kws} != union of parts {union}")
    # conflict
    c = e.get("conflict")
    if "conflict" in tags and not c:
        err(f"{eid}: tagged conflict without conflict field")
    if c:
        for k in ("preferred", "stale", "preferred_source", "stale_source"):
            if k not in c:
                err(f"{eid}: conflict lacks {k}")
        ps, ss = c.get("preferred_source"), c.get("stale_source")
        if ps not in docs or ss not in docs:
            err(f"{eid}: conflict sources missing: {ps}, {ss}")
        else:
            if c["stale"] not in docs[ss]:
                err(f"{eid}: stale value {c['stale']!r} not in {ss}")
            if ps not in srcs:
                err(f"{eid}: preferred_source {ps} not among sources")
    # access
    needed = sorted({g for s in srcs for g in access.get(s, [])})
    ra = e.get("required_access")
    if "restricted" in tags:
        if not ra:
            err(f"{eid}: restricted without required_access")
        if not needed:
            err(f"{eid}: restricted but no source is restricted")
    if ra and set(ra) - set(needed):
        err(f"{eid}: required_access {ra} not matching source access {needed}")
    if needed and not ra:
        # all sources restricted -> must declare access
        if all(access.get(s) for s in srcs):
            err(f"{eid}: only restricted sources but no required_access")

MINIMUMS = {"answerable": 16, "faq": 3, "table": 4, "code": 4, "lookalike": 4, "conflict": 5,
            "multi-part": 5, "multi-hop": 2, "restricted": 2, "unanswerable": 5,
            "false-premise": 4, "open": 25}
for t, n in MINIMUMS.items():
    if tag_count[t] < n:
        err(f"tag {t}: {tag_count[t]} (want >= {n})")
open_unans = sum(1 for e in golden if {"open", "unanswerable"} <= set(e.get("tags", [])))
if open_unans < 2:
    err(f"only {open_unans} open+unanswerable questions")

print(f"documents: {n_docs} ({n_non_md} non-Markdown)")
print(f"questions: {len(golden)}")
for t in sorted(tag_count):
    print(f"  {t:14s} {tag_count[t]}")
print(f"  open+unanswerable {open_unans}")
if errors:
    print("\nERRORS:")
    for m in errors:
        print(" -", m)
    sys.exit(1)
print("\nOK")
