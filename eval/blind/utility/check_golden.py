#!/usr/bin/env python3
"""Validate golden.yaml against the documents in docs/.

Checks:
  * golden.yaml parses and is a list of entries with the required fields;
  * ids are unique kebab-case; tags come from the known set;
  * every source stem exists in docs/;
  * answerable entries: non-empty sources and keywords; every keyword is an exact substring
    of at least one listed source AND of the reference answer;
  * unanswerable / false-premise entries: answer null, sources [] and keywords [];
  * parts: each part's keywords are substrings of a source and of the answer, and the union of
    the parts' keywords equals the entry's keywords;
  * conflict: preferred value occurs in preferred_source, stale value in stale_source,
    preferred_source is among the sources, and the preferred document is newer;
  * required_access: some listed source carries that access group; restricted-only answers
    declare required_access;
  * document sanity: front matter of .md files, word counts, number of docs, share of non-md;
  * minimum counts per tag from the brief.
Exit status is 0 when everything passes, 1 otherwise.
"""
import datetime
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent
DOCS = ROOT / "docs"
GOLDEN = ROOT / "golden.yaml"

KNOWN_TAGS = {"answerable", "faq", "table", "code", "lookalike", "conflict", "multi-part",
              "multi-hop", "restricted", "unanswerable", "false-premise"}
MIN_TAGS = {"answerable": 16, "faq": 3, "table": 4, "code": 4, "lookalike": 4, "conflict": 5,
            "multi-part": 5, "multi-hop": 2, "restricted": 2, "unanswerable": 5,
            "false-premise": 4}
REQUIRED = ["id", "question", "answerable", "answer", "sources", "keywords", "tags"]

errors = []


def err(msg):
    errors.append(msg)


def load_docs():
    docs = {}
    for p in sorted(DOCS.iterdir()):
        if p.suffix not in {".md", ".html", ".txt"}:
            err(f"unexpected file in docs/: {p.name}")
            continue
        text = p.read_text(encoding="utf-8")
        meta = {}
        if p.suffix == ".md":
            m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
            if not m:
                err(f"{p.name}: missing YAML front matter")
            else:
                meta = yaml.safe_load(m.group(1)) or {}
                for key in ("title", "effective_date", "authority"):
                    if key not in meta:
                        err(f"{p.name}: front matter lacks {key}")
                if not isinstance(meta.get("effective_date"), datetime.date):
                    err(f"{p.name}: effective_date is not an ISO date")
                if meta.get("authority") not in {1, 2, 3, 4, 5}:
                    err(f"{p.name}: authority must be 1..5")
                if "access" in meta and not isinstance(meta["access"], list):
                    err(f"{p.name}: access must be a list")
        else:
            if "<" in text and p.suffix == ".html":
                words_text = re.sub(r"<[^>]+>", " ", text)
            else:
                words_text = text
            if not re.search(r"(Last updated|correct at the time of going to print|Spring 20\d\d)", text):
                err(f"{p.name}: no date given in the text")
        plain = re.sub(r"<[^>]+>", " ", text) if p.suffix == ".html" else text
        words = len(re.findall(r"[A-Za-z0-9£€%][\w'’.,£€%:/-]*", plain))
        if not 300 <= words <= 1500:
            err(f"{p.name}: {words} words (want 300-1500)")
        docs[p.stem] = {"text": text, "meta": meta, "suffix": p.suffix, "words": words}
    n = len(docs)
    if not 14 <= n <= 18:
        err(f"{n} documents (want 14-18)")
    non_md = sum(1 for d in docs.values() if d["suffix"] != ".md")
    if non_md > n / 4:
        err(f"{non_md} non-Markdown documents is more than a quarter of {n}")
    return docs


def doc_date(doc):
    d = doc["meta"].get("effective_date")
    if isinstance(d, datetime.date):
        return d
    m = re.search(r"(20\d\d)", doc["text"])  # html/txt: first year mentioned in text
    return datetime.date(int(m.group(1)), 1, 1) if m else None


def main():
    docs = load_docs()
    try:
        golden = yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        print(f"YAML parse error: {e}")
        return 1
    if not isinstance(golden, list):
        print("golden.yaml must be a list")
        return 1
    if not 42 <= len(golden) <= 50:
        err(f"{len(golden)} entries (want 42-50)")

    ids = Counter()
    tag_counts = Counter()
    for e in golden:
        eid = e.get("id", "<no id>")
        ids[eid] += 1
        for f in REQUIRED:
            if f not in e:
                err(f"{eid}: missing field {f}")
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", str(eid)):
            err(f"{eid}: id is not kebab-case")
        tags = e.get("tags") or []
        for t in tags:
            if t not in KNOWN_TAGS:
                err(f"{eid}: unknown tag {t}")
        tag_counts.update(set(tags))
        sources = e.get("sources") or []
        keywords = e.get("keywords") or []
        answer = e.get("answer")
        for s in sources:
            if s not in docs:
                err(f"{eid}: source stem '{s}' does not exist in docs/")

        if e.get("answerable") is True:
            if "answerable" not in tags:
                err(f"{eid}: answerable entry lacks the 'answerable' tag")
            if not sources or not keywords:
                err(f"{eid}: answerable entry needs sources and keywords")
            if not isinstance(answer, str) or not answer.strip():
                err(f"{eid}: answerable entry needs an answer")
                answer = ""
            for k in keywords:
                if not any(k in docs[s]["text"] for s in sources if s in docs):
                    err(f"{eid}: keyword {k!r} not found in any listed source")
                if k not in answer:
                    err(f"{eid}: keyword {k!r} not in the reference answer")
        elif e.get("answerable") is False:
            if answer is not None or sources or keywords:
                err(f"{eid}: unanswerable entry must have answer null, sources [] and keywords []")
            if not ({"unanswerable", "false-premise"} & set(tags)):
                err(f"{eid}: unanswerable entry needs tag unanswerable or false-premise")
            if "answerable" in tags:
                err(f"{eid}: unanswerable entry carries the 'answerable' tag")
        else:
            err(f"{eid}: answerable must be true or false")

        parts = e.get("parts")
        if "multi-part" in tags and not parts:
            err(f"{eid}: multi-part entry without parts")
        if parts:
            if len(parts) < 2:
                err(f"{eid}: parts should have at least two asks")
            union = set()
            for i, p in enumerate(parts):
                for f in ("text", "answerable", "keywords"):
                    if f not in p:
                        err(f"{eid}: part {i} missing {f}")
                for k in p.get("keywords") or []:
                    union.add(k)
                    if not any(k in docs[s]["text"] for s in sources if s in docs):
                        err(f"{eid}: part {i} keyword {k!r} not in any listed source")
                    if isinstance(answer, str) and k not in answer:
                        err(f"{eid}: part {i} keyword {k!r} not in the reference answer")
            if union != set(keywords):
                err(f"{eid}: union of parts' keywords {sorted(union)} != keywords {sorted(keywords)}")

        c = e.get("conflict")
        if "conflict" in tags and not c:
            err(f"{eid}: conflict tag without conflict field")
        if c:
            for f in ("preferred", "stale", "preferred_source", "stale_source"):
                if f not in c:
                    err(f"{eid}: conflict missing {f}")
            ps, ss = c.get("preferred_source"), c.get("stale_source")
            if ps not in docs or ss not in docs:
                err(f"{eid}: conflict source stem missing")
            else:
                if c["preferred"] not in docs[ps]["text"]:
                    err(f"{eid}: preferred value {c['preferred']!r} not in {ps}")
                if c["stale"] not in docs[ss]["text"]:
                    err(f"{eid}: stale value {c['stale']!r} not in {ss}")
                if c["preferred"] == c["stale"]:
                    err(f"{eid}: preferred and stale values are identical")
                dp, ds = doc_date(docs[ps]), doc_date(docs[ss])
                if dp and ds and not dp > ds:
                    err(f"{eid}: preferred source {ps} ({dp}) is not newer than {ss} ({ds})")
            if ps not in sources:
                err(f"{eid}: preferred_source {ps} not among sources")

        ra = e.get("required_access")
        restricted_sources = [s for s in sources if s in docs and docs[s]["meta"].get("access")]
        if ra:
            groups = {g for s in sources if s in docs for g in docs[s]["meta"].get("access") or []}
            for g in ra:
                if g not in groups:
                    err(f"{eid}: required_access {g} matches no listed source")
            if "restricted" not in tags:
                err(f"{eid}: required_access without the restricted tag")
        elif restricted_sources and len(restricted_sources) == len(sources):
            err(f"{eid}: answer only in restricted docs but no required_access")
        if "restricted" in tags and not ra:
            err(f"{eid}: restricted tag without required_access")

    for i, n in ids.items():
        if n > 1:
            err(f"duplicate id {i}")
    for t, n in MIN_TAGS.items():
        if tag_counts[t] < n:
            err(f"tag {t}: {tag_counts[t]} entries (want at least {n})")

    print(f"{len(docs)} documents, {len(golden)} golden entries")
    for stem, d in docs.items():
        acc = d["meta"].get("access")
        print(f"  {stem}{d['suffix']}: {d['words']} words" + (f", access {acc}" if acc else ""))
    print("tag counts:")
    for t in sorted(KNOWN_TAGS):
        print(f"  {t}: {tag_counts[t]}")
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for m in errors:
            print("  - " + m)
        return 1
    print("\nOK: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
