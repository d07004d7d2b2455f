#!/usr/bin/env python3
"""Sanity checks for golden.yaml against docs/."""
import collections, pathlib, re, sys, yaml

root = pathlib.Path(__file__).resolve().parent
docs = {p.stem: p for p in (root / "docs").iterdir() if p.is_file()}
texts = {s: p.read_text(encoding="utf-8") for s, p in docs.items()}
errors = []

# front matter of .md files
for s, p in docs.items():
    if p.suffix == ".md":
        t = texts[s]
        m = re.match(r"^---\n(.*?)\n---\n", t, re.S)
        if not m:
            errors.append(f"{s}: missing front matter"); continue
        fm = yaml.safe_load(m.group(1))
        for k in ("title", "effective_date", "authority"):
            if k not in fm:
                errors.append(f"{s}: front matter lacks {k}")
        if not (1 <= int(fm.get("authority", 0)) <= 5):
            errors.append(f"{s}: bad authority")
    words = len(re.sub(r"<[^>]+>", " ", texts[s]).split())
    if not 300 <= words <= 1500:
        errors.append(f"{s}: {words} words")

non_md = [s for s, p in docs.items() if p.suffix != ".md"]
if len(non_md) * 4 > len(docs):
    errors.append(f"too many non-md docs: {non_md}")

restricted = {s for s, p in docs.items() if p.suffix == ".md"
              and "access:" in texts[s].split("---")[1]}

data = yaml.safe_load((root / "golden.yaml").read_text(encoding="utf-8"))
assert isinstance(data, list)
ids = collections.Counter(e["id"] for e in data)
for i, n in ids.items():
    if n > 1: errors.append(f"duplicate id {i}")

tags = collections.Counter()
required = {"id", "question", "answerable", "answer", "sources", "keywords", "tags"}
for e in data:
    eid = e["id"]
    missing = required - set(e)
    if missing: errors.append(f"{eid}: missing {missing}")
    tags.update(e["tags"])
    srcs = e["sources"]
    for s in srcs:
        if s not in docs: errors.append(f"{eid}: unknown source {s}")
    def has(kw, sl):
        return any(kw in texts[s] for s in sl if s in texts)
    for kw in e["keywords"]:
        if not has(kw, srcs): errors.append(f"{eid}: keyword {kw!r} not in sources")
    if e["answerable"]:
        if not srcs or not e["keywords"] or not e["answer"]:
            errors.append(f"{eid}: answerable but empty answer/sources/keywords")
    else:
        if srcs or e["keywords"] or e["answer"] is not None:
            errors.append(f"{eid}: unanswerable but has answer/sources/keywords")
    if "parts" in e:
        union = set()
        for p in e["parts"]:
            union.update(p["keywords"])
            for kw in p["keywords"]:
                if not has(kw, srcs): errors.append(f"{eid}: part keyword {kw!r} not in sources")
        if union != set(e["keywords"]):
            errors.append(f"{eid}: keywords != union of parts")
    if "multi-part" in e["tags"] and "parts" not in e:
        errors.append(f"{eid}: multi-part without parts")
    if "conflict" in e:
        c = e["conflict"]
        if c["preferred_source"] not in srcs: errors.append(f"{eid}: preferred_source not in sources")
        if c["preferred"] not in texts[c["preferred_source"]]:
            errors.append(f"{eid}: preferred value not in preferred source")
        if c["stale"] not in texts[c["stale_source"]]:
            errors.append(f"{eid}: stale value not in stale source")
        if c["stale"] in texts[c["preferred_source"]]:
            print(f"note {eid}: stale string also occurs in preferred source")
    if "multi-hop" in e["tags"] and len(srcs) < 2:
        errors.append(f"{eid}: multi-hop with <2 sources")
    needs = any(s in restricted for s in srcs)
    if "restricted" in e["tags"] or needs:
        if not e.get("required_access"): errors.append(f"{eid}: restricted without required_access")
        if not all(s in restricted for s in srcs):
            print(f"note {eid}: mixes restricted and open sources")

print(f"{len(docs)} docs ({len(non_md)} non-md), {len(data)} questions")
for t, n in sorted(tags.items()): print(f"  {t}: {n}")
mins = {"answerable": 16, "faq": 3, "table": 4, "code": 4, "lookalike": 4, "conflict": 5,
        "multi-part": 5, "multi-hop": 2, "restricted": 2, "unanswerable": 5, "false-premise": 4}
for t, m in mins.items():
    if tags[t] < m: errors.append(f"tag {t}: {tags[t]} < {m}")
if not 42 <= len(data) <= 50: errors.append(f"{len(data)} questions")
if not 14 <= len(docs) <= 18: errors.append(f"{len(docs)} docs")
print("\n".join(errors) if errors else "OK")
sys.exit(1 if errors else 0)
