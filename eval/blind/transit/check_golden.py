#!/usr/bin/env python3
"""Check golden.yaml against docs/: YAML parses, sources exist, keywords are exact substrings."""
import collections, pathlib, re, sys
import yaml

root = pathlib.Path(__file__).parent
docs = {p.stem: p.read_text(encoding="utf-8") for p in (root / "docs").iterdir() if p.is_file()}
data = yaml.safe_load((root / "golden.yaml").read_text(encoding="utf-8"))
errors = []

# documents: front matter for .md, word counts
for p in sorted((root / "docs").iterdir()):
    text = p.read_text(encoding="utf-8")
    words = len(re.sub(r"<[^>]+>", " ", text).split())
    if not 300 <= words <= 1500:
        errors.append(f"{p.name}: {words} words")
    if p.suffix == ".md":
        m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
        if not m:
            errors.append(f"{p.name}: no front matter"); continue
        fm = yaml.safe_load(m.group(1))
        for k in ("title", "effective_date", "authority"):
            if k not in fm:
                errors.append(f"{p.name}: front matter lacks {k}")
        if not 1 <= int(fm.get("authority", 0)) <= 5:
            errors.append(f"{p.name}: bad authority")
restricted = {}
for stem, text in docs.items():
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if m:
        fm = yaml.safe_load(m.group(1))
        if fm.get("access"):
            restricted[stem] = fm["access"]

ids = set()
tags = collections.Counter()
for e in data:
    i = e.get("id")
    if i in ids:
        errors.append(f"duplicate id {i}")
    ids.add(i)
    for k in ("id", "question", "answerable", "answer", "sources", "keywords", "tags"):
        if k not in e:
            errors.append(f"{i}: missing {k}")
    tags.update(e["tags"])
    srcs = e["sources"]
    for s in srcs:
        if s not in docs:
            errors.append(f"{i}: unknown source {s}")
    if not e["answerable"]:
        if e["answer"] is not None or srcs or e["keywords"]:
            errors.append(f"{i}: unanswerable entry must have null answer, no sources/keywords")
        continue
    if not srcs or not e["keywords"]:
        errors.append(f"{i}: answerable entry needs sources and keywords")
    for kw in e["keywords"]:
        if not any(kw in docs[s] for s in srcs if s in docs):
            errors.append(f"{i}: keyword {kw!r} not in sources {srcs}")
    if "parts" in e:
        union = set()
        for part in e["parts"]:
            union.update(part["keywords"])
            for kw in part["keywords"]:
                if not any(kw in docs[s] for s in srcs if s in docs):
                    errors.append(f"{i}: part keyword {kw!r} not in sources")
        if union != set(e["keywords"]):
            errors.append(f"{i}: keywords != union of parts' keywords")
    if "multi-part" in e["tags"] and "parts" not in e:
        errors.append(f"{i}: multi-part without parts")
    if "conflict" in e:
        c = e["conflict"]
        if c["preferred"] not in docs[c["preferred_source"]]:
            errors.append(f"{i}: preferred value not in preferred_source")
        if c["stale"] not in docs[c["stale_source"]]:
            errors.append(f"{i}: stale value not in stale_source")
        if c["preferred"] not in e["keywords"]:
            errors.append(f"{i}: preferred value not among keywords")
        for s in (c["preferred_source"], c["stale_source"]):
            if s not in srcs:
                errors.append(f"{i}: conflict source {s} not in sources")
    if "conflict" in e["tags"] and "conflict" not in e:
        errors.append(f"{i}: conflict tag without conflict field")
    # restricted consistency
    needs = [s for s in srcs if s in restricted]
    if needs and len(needs) == len(srcs):
        if not e.get("required_access"):
            errors.append(f"{i}: answer only in restricted doc but no required_access")
    if e.get("required_access") and "restricted" not in e["tags"]:
        errors.append(f"{i}: required_access without restricted tag")
    # answer should mention each keyword (sanity check of reference answers)
    for kw in e["keywords"]:
        if kw.lower() not in (e["answer"] or "").lower():
            print(f"note: {i}: reference answer does not contain keyword {kw!r}")

print(f"{len(data)} questions, {len(docs)} documents")
for t, n in sorted(tags.items()):
    print(f"  {t}: {n}")
print("  plain (only 'answerable'):", sum(1 for e in data if e["tags"] == ["answerable"]))
if errors:
    print("ERRORS:"); [print("  " + x) for x in errors]; sys.exit(1)
print("OK")
