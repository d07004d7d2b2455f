#!/usr/bin/env python3
"""Validate golden.yaml against the documents in docs/.

Checks:
  * golden.yaml parses and is a list of entries with the required fields, unique ids
  * every source stem names an existing file in docs/
  * every keyword is an exact (case-sensitive) substring of at least one listed source
    AND of the reference answer
  * for multi-part entries, the union of the parts' keywords equals the entry's keywords
  * conflict values: preferred occurs in preferred_source, stale occurs in stale_source,
    both sources exist, and the preferred value is not in the stale document (and vice versa)
  * unanswerable entries have answer null, no sources and no keywords
  * required_access matches the access groups of the listed sources; restricted-only answers
    carry required_access
  * document-level sanity: 14-18 docs, word counts, front matter on Markdown files
  * tag counts against the minimums in the brief
Exit code 0 when everything passes.
"""
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DOCS = HERE / "docs"
GOLDEN = HERE / "golden.yaml"

REQUIRED = ["id", "question", "answerable", "answer", "sources", "keywords", "tags"]
KNOWN_TAGS = {"answerable", "faq", "table", "code", "lookalike", "conflict", "multi-part",
              "multi-hop", "restricted", "unanswerable", "false-premise"}
MINIMUMS = {"answerable": 16, "faq": 3, "table": 4, "code": 4, "lookalike": 4, "conflict": 5,
            "multi-part": 5, "multi-hop": 2, "restricted": 2, "unanswerable": 5, "false-premise": 4}

errors = []


def err(msg):
    errors.append(msg)


def load_docs():
    docs = {}
    for p in sorted(DOCS.iterdir()):
        if p.is_file() and p.suffix in (".md", ".html", ".txt"):
            if p.stem in docs:
                err(f"duplicate document stem {p.stem}")
            docs[p.stem] = p
    return docs


def front_matter(text):
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if not m:
        return None
    return yaml.safe_load(m.group(1))


def word_count(path, text):
    if path.suffix == ".html":
        text = re.sub(r"<[^>]+>", " ", text)
    return len(text.split())


def main():
    docs = load_docs()
    texts = {stem: p.read_text(encoding="utf-8") for stem, p in docs.items()}
    access = {}

    # ---- documents
    if not 14 <= len(docs) <= 18:
        err(f"expected 14-18 documents, found {len(docs)}")
    non_md = [s for s, p in docs.items() if p.suffix != ".md"]
    if len(non_md) * 4 > len(docs):
        err(f"too many non-Markdown documents: {non_md}")
    for stem, p in docs.items():
        t = texts[stem]
        wc = word_count(p, t)
        if not 300 <= wc <= 1500:
            err(f"{p.name}: {wc} words (expected 300-1500)")
        if p.suffix == ".md":
            fm = front_matter(t)
            if not isinstance(fm, dict):
                err(f"{p.name}: missing or invalid YAML front matter")
                continue
            for k in ("title", "effective_date", "authority"):
                if k not in fm:
                    err(f"{p.name}: front matter lacks {k}")
            if not (isinstance(fm.get("authority"), int) and 1 <= fm["authority"] <= 5):
                err(f"{p.name}: authority must be an int 1..5")
            if "access" in fm:
                if not (isinstance(fm["access"], list) and fm["access"]):
                    err(f"{p.name}: access must be a non-empty list")
                access[stem] = set(fm["access"])
        else:
            if re.match(r"^---\n", t):
                err(f"{p.name}: non-Markdown file must not have front matter")
            if not re.search(r"(Last updated|Posted)[^\n]*\d{4}", t):
                err(f"{p.name}: no date given in the text")

    # ---- golden
    try:
        entries = yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        print(f"golden.yaml does not parse: {e}")
        return 1
    if not isinstance(entries, list):
        print("golden.yaml must be a YAML list")
        return 1
    if not 42 <= len(entries) <= 50:
        err(f"expected 42-50 entries, found {len(entries)}")

    ids = Counter()
    tag_counts = Counter()
    for i, e in enumerate(entries):
        where = f"entry {i} ({e.get('id', '?') if isinstance(e, dict) else '?'})"
        if not isinstance(e, dict):
            err(f"{where}: not a mapping")
            continue
        for k in REQUIRED:
            if k not in e:
                err(f"{where}: missing field {k}")
        ids[e.get("id")] += 1
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", str(e.get("id"))):
            err(f"{where}: id is not kebab-case")
        tags = e.get("tags") or []
        for t in tags:
            if t not in KNOWN_TAGS:
                err(f"{where}: unknown tag {t}")
        tag_counts.update(set(tags))
        sources = e.get("sources") or []
        keywords = e.get("keywords") or []
        answer = e.get("answer")

        for s in sources:
            if s not in docs:
                err(f"{where}: source stem '{s}' does not exist in docs/")

        if e.get("answerable") is False:
            if answer is not None or sources or keywords:
                err(f"{where}: unanswerable entry must have answer null, sources [] and keywords []")
            if "answerable" in tags:
                err(f"{where}: unanswerable entry tagged 'answerable'")
            if not ({"unanswerable", "false-premise"} & set(tags)):
                err(f"{where}: unanswerable entry lacks unanswerable/false-premise tag")
            continue
        if e.get("answerable") is not True:
            err(f"{where}: answerable must be true or false")
            continue
        if not isinstance(answer, str) or not answer.strip():
            err(f"{where}: answerable entry needs an answer")
            answer = ""
        if not sources:
            err(f"{where}: answerable entry needs sources")
        if not keywords:
            err(f"{where}: answerable entry needs keywords")

        for kw in keywords:
            if not isinstance(kw, str) or not kw:
                err(f"{where}: bad keyword {kw!r}")
                continue
            if not any(kw in texts[s] for s in sources if s in texts):
                err(f"{where}: keyword {kw!r} not found in any listed source {sources}")
            if kw not in answer:
                err(f"{where}: keyword {kw!r} not in the reference answer")

        # multi-hop: each source should contribute at least one keyword
        if "multi-hop" in tags:
            if len(sources) < 2:
                err(f"{where}: multi-hop entry needs at least two sources")
            for s in sources:
                if s in texts and not any(kw in texts[s] for kw in keywords):
                    err(f"{where}: multi-hop source {s} contains none of the keywords")

        # parts
        parts = e.get("parts")
        if "multi-part" in tags and not parts:
            err(f"{where}: multi-part entry without parts")
        if parts:
            union = set()
            for j, p in enumerate(parts):
                if not isinstance(p, dict) or "text" not in p or "keywords" not in p:
                    err(f"{where}: part {j} needs text and keywords")
                    continue
                if p.get("answerable") is not True:
                    err(f"{where}: part {j} answerable should be true")
                union.update(p["keywords"])
            if union != set(keywords):
                err(f"{where}: parts' keywords {sorted(union)} != entry keywords {sorted(set(keywords))}")

        # conflict
        c = e.get("conflict")
        if "conflict" in tags and not c:
            err(f"{where}: tagged conflict but no conflict field")
        if c:
            for k in ("preferred", "stale", "preferred_source", "stale_source"):
                if k not in c:
                    err(f"{where}: conflict lacks {k}")
            ps, ss = c.get("preferred_source"), c.get("stale_source")
            if ps not in texts or ss not in texts:
                err(f"{where}: conflict sources must exist ({ps}, {ss})")
            else:
                if c["preferred"] not in texts[ps]:
                    err(f"{where}: preferred {c['preferred']!r} not in {ps}")
                if c["stale"] not in texts[ss]:
                    err(f"{where}: stale {c['stale']!r} not in {ss}")
                if c["stale"] in texts[ps]:
                    err(f"{where}: stale value {c['stale']!r} also occurs in preferred source {ps}")
                if ps not in sources:
                    err(f"{where}: preferred_source {ps} not among sources")
                if ss in sources:
                    err(f"{where}: stale_source {ss} should not be listed as a source")
            if "conflict" not in tags:
                err(f"{where}: has conflict field but no conflict tag")

        # access
        src_groups = [access.get(s) for s in sources]
        req = set(e.get("required_access") or [])
        if req:
            if "restricted" not in tags:
                err(f"{where}: required_access without restricted tag")
            if not any(g and req <= g for g in src_groups):
                err(f"{where}: required_access {sorted(req)} does not match source access {src_groups}")
        else:
            if "restricted" in tags:
                err(f"{where}: restricted tag without required_access")
            if sources and all(g for g in src_groups):
                err(f"{where}: all sources are restricted but no required_access given")

    for k, n in ids.items():
        if n > 1:
            err(f"duplicate id {k}")

    for tag, minimum in MINIMUMS.items():
        if tag_counts[tag] < minimum:
            err(f"tag {tag}: {tag_counts[tag]} < required {minimum}")

    # conflicts: at least one in a table and one in a list (checked on the preferred source text)
    def in_table(e):
        c = e["conflict"]
        t = texts[c["preferred_source"]]
        return any(c["preferred"] in line and line.strip().startswith("|") for line in t.splitlines())

    def in_list(e):
        c = e["conflict"]
        t = texts[c["preferred_source"]]
        return any(c["preferred"] in line and re.match(r"\s*([-*]|\d+\.)\s", line) for line in t.splitlines())

    conflicts = [e for e in entries if isinstance(e, dict) and e.get("conflict")
                 and e["conflict"].get("preferred_source") in texts]
    if not any(in_table(e) for e in conflicts):
        err("no conflict whose preferred value is in a table")
    if not any(in_list(e) for e in conflicts):
        err("no conflict whose preferred value is in a list")

    print(f"{len(docs)} documents, {len(entries)} golden entries")
    print("tag counts: " + ", ".join(f"{t}={tag_counts[t]}" for t in sorted(tag_counts)))
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for m in errors:
            print("  - " + m)
        return 1
    print("OK: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
