#!/usr/bin/env python3
"""Sanity checks for golden.yaml against docs/ (run from anywhere)."""
import collections
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "docs")
errors = []


def err(msg):
    errors.append(msg)


# ---------------------------------------------------------------- documents
docs = {}      # stem -> full text
access = {}    # stem -> list of groups (or [])
for name in sorted(os.listdir(DOCS)):
    path = os.path.join(DOCS, name)
    stem, ext = os.path.splitext(name)
    text = open(path, encoding="utf-8").read()
    docs[stem] = text
    access[stem] = []
    if ext == ".md":
        m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
        if not m:
            err(f"{name}: missing front matter")
            continue
        fm = yaml.safe_load(m.group(1))
        for key in ("title", "effective_date", "authority"):
            if key not in fm:
                err(f"{name}: front matter lacks {key}")
        if not (1 <= int(fm.get("authority", 0)) <= 5):
            err(f"{name}: authority out of range")
        access[stem] = fm.get("access") or []
    elif ext not in (".html", ".txt"):
        err(f"{name}: unexpected extension")
    words = len(re.sub(r"<[^>]+>", " ", text).split())
    if not 300 <= words <= 1500:
        err(f"{name}: {words} words (want 300-1500)")

n_docs = len(docs)
n_non_md = sum(1 for n in os.listdir(DOCS) if not n.endswith(".md"))
if not 14 <= n_docs <= 18:
    err(f"{n_docs} documents (want 14-18)")
if n_non_md > n_docs / 4:
    err(f"{n_non_md} non-markdown documents (max a quarter)")

# ---------------------------------------------------------------- golden
with open(os.path.join(HERE, "golden.yaml"), encoding="utf-8") as fh:
    golden = yaml.safe_load(fh)

if not isinstance(golden, list):
    sys.exit("golden.yaml is not a list")
if len(golden) != 50:
    err(f"{len(golden)} questions (want exactly 50)")

ids = [q.get("id") for q in golden]
for dup, c in collections.Counter(ids).items():
    if c > 1:
        err(f"duplicate id {dup}")

tags = collections.Counter()
for q in golden:
    qid = q.get("id", "?")
    for key in ("id", "question", "answerable", "answer", "sources", "keywords", "tags"):
        if key not in q:
            err(f"{qid}: missing {key}")
    for t in q.get("tags", []):
        tags[t] += 1
    srcs = q.get("sources", [])
    kws = q.get("keywords", [])
    for s in srcs:
        if s not in docs:
            err(f"{qid}: unknown source {s}")
    if q.get("answerable"):
        if "answerable" not in q["tags"]:
            err(f"{qid}: answerable but no [answerable] tag")
        if not q.get("answer") or not srcs or not kws:
            err(f"{qid}: answerable needs answer, sources and keywords")
        for k in kws:
            if not any(k in docs.get(s, "") for s in srcs):
                err(f"{qid}: keyword {k!r} not found in sources {srcs}")
    else:
        if q.get("answer") is not None or srcs or kws:
            err(f"{qid}: unanswerable must have answer null, [] sources, [] keywords")
        if "answerable" in q["tags"]:
            err(f"{qid}: unanswerable but tagged answerable")
        if not ({"unanswerable", "false-premise"} & set(q["tags"])):
            err(f"{qid}: unanswerable without unanswerable/false-premise tag")

    # restricted
    restricted_srcs = [s for s in srcs if access.get(s)]
    if restricted_srcs:
        groups = sorted({g for s in restricted_srcs for g in access[s]})
        if sorted(q.get("required_access", [])) != groups:
            err(f"{qid}: required_access should be {groups}")
        if "restricted" not in q["tags"]:
            err(f"{qid}: uses restricted source but lacks [restricted] tag")
    elif "restricted" in q["tags"] or q.get("required_access"):
        err(f"{qid}: tagged restricted but no restricted source")

    # conflicts
    if "conflict" in q["tags"]:
        c = q.get("conflict")
        if not c:
            err(f"{qid}: conflict tag without conflict field")
        else:
            ps, ss = c.get("preferred_source"), c.get("stale_source")
            if ps not in docs or ss not in docs:
                err(f"{qid}: conflict sources unknown")
            else:
                if c["preferred"] not in docs[ps]:
                    err(f"{qid}: preferred {c['preferred']!r} not in {ps}")
                if c["stale"] not in docs[ss]:
                    err(f"{qid}: stale {c['stale']!r} not in {ss}")
                if c["stale"] in docs[ps]:
                    err(f"{qid}: stale value also appears in preferred source")
            if ps not in srcs:
                err(f"{qid}: preferred_source not in sources")
            if not any(c["preferred"] in k or k in c["preferred"] for k in kws):
                err(f"{qid}: no keyword matches the preferred value")
    elif q.get("conflict"):
        err(f"{qid}: conflict field without conflict tag")

    # multi-part
    if "multi-part" in q["tags"]:
        parts = q.get("parts") or []
        if len(parts) < 2:
            err(f"{qid}: multi-part needs >=2 parts")
        union = []
        for p in parts:
            for key in ("text", "answerable", "keywords"):
                if key not in p:
                    err(f"{qid}: part lacks {key}")
            for k in p.get("keywords", []):
                if k not in union:
                    union.append(k)
                if not any(k in docs.get(s, "") for s in srcs):
                    err(f"{qid}: part keyword {k!r} not in sources")
        if sorted(union) != sorted(kws):
            err(f"{qid}: keywords {kws} != union of parts {union}")
    elif q.get("parts"):
        err(f"{qid}: parts without multi-part tag")

    if "multi-hop" in q["tags"] and len(srcs) < 2:
        err(f"{qid}: multi-hop needs >=2 sources")
    if "multi-hop" in q["tags"]:
        # every source must contribute at least one keyword
        for s in srcs:
            if not any(k in docs[s] for k in kws):
                err(f"{qid}: multi-hop source {s} contributes no keyword")

# ---------------------------------------------------------------- premises that must NOT be in the docs
alltext = "\n".join(docs.values())
for term in ["Madrid", "7460", "MacBook Pro 16", "Gold", "attachment", "allowance"]:
    if term.lower() in alltext.lower():
        err(f"false-premise/unanswerable term {term!r} appears in docs")

# ---------------------------------------------------------------- minimum counts
minimum = {
    "answerable": 16, "faq": 3, "table": 4, "key-value": 1, "code": 4, "lookalike": 4,
    "conflict": 5, "multi-part": 5, "multi-hop": 2, "restricted": 2, "unanswerable": 5,
    "false-premise": 4, "open": 17,
}
for t, n in minimum.items():
    if tags[t] < n:
        err(f"tag {t}: {tags[t]} < {n}")
open_unans = sum(1 for q in golden if "open" in q["tags"] and not q["answerable"])
if open_unans < 2:
    err("need a few [open, unanswerable] questions")
conf = [q for q in golden if "conflict" in q["tags"]]
if not any("table" in q["tags"] for q in conf):
    err("no conflict in a table")
for q in golden:
    for key in q:
        if key not in {"id", "question", "answerable", "answer", "sources", "keywords",
                       "tags", "conflict", "parts", "required_access"}:
            err(f"{q['id']}: unexpected key {key}")

print(f"documents: {n_docs} ({n_non_md} non-markdown)")
print(f"questions: {len(golden)}")
for t, n in sorted(tags.items()):
    print(f"  {t:14s} {n}")
print(f"  open+unanswerable {open_unans}")
if errors:
    print("\nERRORS:")
    for e in errors:
        print("  -", e)
    sys.exit(1)
print("\nOK")
