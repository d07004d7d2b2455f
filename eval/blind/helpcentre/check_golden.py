#!/usr/bin/env python3
"""Sanity checks for golden.yaml and docs/ in this folder.

Run: python3 check_golden.py
"""
import collections
import datetime
import html
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "docs")
GOLDEN = os.path.join(HERE, "golden.yaml")

MINIMUMS = {
    "answerable": 16, "faq": 3, "table": 4, "code": 4, "lookalike": 4,
    "conflict": 5, "multi-part": 5, "multi-hop": 2, "restricted": 2,
    "unanswerable": 5, "false-premise": 4, "open": 17,
}
KNOWN_TAGS = set(MINIMUMS)
EXPECTED_QUESTIONS = 50

errors = []
warnings = []


def err(msg):
    errors.append(msg)


def load_docs():
    docs = {}
    meta = {}
    for name in sorted(os.listdir(DOCS)):
        path = os.path.join(DOCS, name)
        stem, ext = os.path.splitext(name)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        docs[stem] = text
        meta[stem] = {"ext": ext}
        if ext == ".md":
            m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
            if not m:
                err(f"{name}: missing YAML front matter")
                continue
            fm = yaml.safe_load(m.group(1))
            for key in ("title", "effective_date", "authority"):
                if key not in fm:
                    err(f"{name}: front matter lacks {key}")
            if not isinstance(fm.get("effective_date"), datetime.date):
                err(f"{name}: effective_date is not an ISO date")
            if fm.get("authority") not in (1, 2, 3, 4, 5):
                err(f"{name}: authority must be 1..5")
            meta[stem].update(fm)
        elif ext in (".html", ".txt"):
            if text.startswith("---"):
                err(f"{name}: non-markdown file should not have front matter")
            if not re.search(r"(Last updated|Posted) \d{1,2} \w+ \d{4}", text):
                err(f"{name}: no date in text")
        else:
            err(f"{name}: unexpected extension")
    return docs, meta


def plain_words(text, ext):
    if ext == ".html":
        text = re.sub(r"<[^>]+>", " ", text)
        text = html.unescape(text)
    return len(re.findall(r"\w+", text))


def main():
    docs, meta = load_docs()
    n = len(docs)
    if not 14 <= n <= 18:
        err(f"docs/ has {n} documents, expected 14-18")
    non_md = [s for s in docs if meta[s]["ext"] != ".md"]
    if len(non_md) > n / 4:
        err(f"too many non-markdown docs: {len(non_md)} of {n}")
    for stem, text in docs.items():
        wc = plain_words(text, meta[stem]["ext"])
        if not 300 <= wc <= 1500:
            err(f"{stem}: {wc} words, expected 300-1500")
    restricted_docs = {s: m.get("access") for s, m in meta.items() if m.get("access")}

    with open(GOLDEN, encoding="utf-8") as fh:
        golden = yaml.safe_load(fh)
    if not isinstance(golden, list):
        err("golden.yaml is not a list")
        golden = []
    if len(golden) != EXPECTED_QUESTIONS:
        err(f"golden.yaml has {len(golden)} questions, expected {EXPECTED_QUESTIONS}")

    ids = collections.Counter(q.get("id") for q in golden)
    for i, c in ids.items():
        if c > 1:
            err(f"duplicate id {i}")

    tag_counts = collections.Counter()
    for q in golden:
        qid = q.get("id", "?")
        for key in ("id", "question", "answerable", "answer", "sources", "keywords", "tags"):
            if key not in q:
                err(f"{qid}: missing {key}")
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", str(qid)):
            err(f"{qid}: id is not kebab-case")
        tags = q.get("tags", [])
        for t in tags:
            if t not in KNOWN_TAGS:
                err(f"{qid}: unknown tag {t}")
        tag_counts.update(tags)
        sources = q.get("sources", [])
        for s in sources:
            if s not in docs:
                err(f"{qid}: source {s} does not exist")
        kws = q.get("keywords", [])
        if q.get("answerable"):
            if not q.get("answer"):
                err(f"{qid}: answerable but no answer")
            if not sources or not kws:
                err(f"{qid}: answerable but sources/keywords empty")
            if "answerable" not in tags:
                err(f"{qid}: answerable but not tagged answerable")
            for kw in kws:
                if not any(kw in docs.get(s, "") for s in sources):
                    err(f"{qid}: keyword {kw!r} not an exact substring of any source")
        else:
            if q.get("answer") is not None or sources or kws:
                err(f"{qid}: unanswerable but has answer/sources/keywords")
            if "answerable" in tags:
                err(f"{qid}: unanswerable but tagged answerable")
            if not ({"unanswerable", "false-premise"} & set(tags)):
                err(f"{qid}: unanswerable without unanswerable/false-premise tag")

        # restricted
        needs = sorted({g for s in sources for g in (restricted_docs.get(s) or [])})
        if "restricted" in tags:
            if not q.get("required_access"):
                err(f"{qid}: restricted but no required_access")
            if not needs:
                err(f"{qid}: restricted but no source is access-restricted")
        if q.get("required_access") and sorted(q["required_access"]) != needs:
            err(f"{qid}: required_access {q['required_access']} != source groups {needs}")
        if needs and "restricted" not in tags:
            # answer only in restricted docs?
            public = [s for s in sources if s not in restricted_docs]
            if not public:
                err(f"{qid}: sources all restricted but not tagged restricted")

        # multi-part
        parts = q.get("parts")
        if "multi-part" in tags:
            if not parts or len(parts) < 2:
                err(f"{qid}: multi-part needs >=2 parts")
        if parts:
            union = []
            for p in parts:
                for key in ("text", "answerable", "keywords"):
                    if key not in p:
                        err(f"{qid}: part lacks {key}")
                for kw in p.get("keywords", []):
                    if kw not in union:
                        union.append(kw)
                    if not any(kw in docs.get(s, "") for s in sources):
                        err(f"{qid}: part keyword {kw!r} not in sources")
            if set(union) != set(kws):
                err(f"{qid}: keywords {kws} != union of parts {union}")

        # multi-hop
        if "multi-hop" in tags and len(sources) < 2:
            err(f"{qid}: multi-hop needs >=2 sources")

        # conflict
        c = q.get("conflict")
        if "conflict" in tags:
            if not c:
                err(f"{qid}: conflict tag without conflict field")
        if c:
            for key in ("preferred", "stale", "preferred_source", "stale_source"):
                if key not in c:
                    err(f"{qid}: conflict lacks {key}")
            ps, ss = c.get("preferred_source"), c.get("stale_source")
            for s in (ps, ss):
                if s not in docs:
                    err(f"{qid}: conflict source {s} missing")
            if ps in docs and c.get("preferred") not in docs[ps]:
                err(f"{qid}: preferred {c.get('preferred')!r} not in {ps}")
            if ss in docs and c.get("stale") not in docs[ss]:
                err(f"{qid}: stale {c.get('stale')!r} not in {ss}")
            if ps in meta and ss in meta:
                if str(meta[ps].get("effective_date", "9999")) <= str(meta[ss].get("effective_date", "0000")) and meta[ps]["ext"] == meta[ss]["ext"] == ".md":
                    err(f"{qid}: preferred source is not newer than stale source")
            if ps not in sources:
                err(f"{qid}: preferred_source not among sources")

    # false-premise / unanswerable probes: the thing must not exist in the docs
    all_text = "\n".join(docs.values())
    for probe in ["Vela S9", "T3-Pro", "Family plan", "lifetime warranty", "S7 Max+",
                  "decibel", "Pet Mode >", "Settings > Away Assist"]:
        if probe.lower() in all_text.lower():
            err(f"probe {probe!r} unexpectedly found in docs")
    if re.search(r"\d\s?dB\b", all_text):  # a noise figure (case-sensitive)
        err("a dB noise figure was found in docs")

    for tag, minimum in MINIMUMS.items():
        if tag_counts[tag] < minimum:
            err(f"tag {tag}: {tag_counts[tag]} < minimum {minimum}")

    print(f"documents: {n} ({len(non_md)} non-markdown), restricted: {sorted(restricted_docs)}")
    print(f"questions: {len(golden)}")
    for tag in sorted(tag_counts):
        print(f"  {tag:14s} {tag_counts[tag]:3d}  (min {MINIMUMS.get(tag, '-')})")
    for stem, text in docs.items():
        print(f"  words {stem:40s} {plain_words(text, meta[stem]['ext'])}")
    for w in warnings:
        print("WARNING:", w)
    if errors:
        for e in errors:
            print("ERROR:", e)
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
