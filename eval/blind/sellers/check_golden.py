#!/usr/bin/env python3
"""Check golden.yaml against docs/: YAML parses, source stems exist, every keyword
(and every part keyword) is an exact substring of at least one of the entry's sources,
plus basic shape checks. Exit code 0 when everything passes."""
import collections
import pathlib
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
DOCS = HERE / "docs"

def main() -> int:
    errors = []
    entries = yaml.safe_load((HERE / "golden.yaml").read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        print("golden.yaml must be a list")
        return 1
    texts = {}
    for p in DOCS.iterdir():
        if p.is_file():
            if p.stem in texts:
                errors.append(f"duplicate stem in docs/: {p.stem}")
            texts[p.stem] = p.read_text(encoding="utf-8")
    required = {"id", "question", "answerable", "answer", "sources", "keywords", "tags"}
    ids = set()
    tags = collections.Counter()
    for e in entries:
        eid = e.get("id", "<no id>")
        missing = required - set(e)
        if missing:
            errors.append(f"{eid}: missing fields {sorted(missing)}")
        if eid in ids:
            errors.append(f"{eid}: duplicate id")
        ids.add(eid)
        srcs = e.get("sources") or []
        for s in srcs:
            if s not in texts:
                errors.append(f"{eid}: source stem not found: {s}")
        pool = [texts[s] for s in srcs if s in texts]

        def check_kw(kws, where):
            for k in kws or []:
                if not isinstance(k, str) or not k:
                    errors.append(f"{eid}{where}: bad keyword {k!r}")
                elif not any(k in t for t in pool):
                    errors.append(f"{eid}{where}: keyword not in sources: {k!r}")

        check_kw(e.get("keywords"), "")
        if e.get("answerable"):
            if not srcs or not e.get("keywords") or not e.get("answer"):
                errors.append(f"{eid}: answerable entry needs sources, keywords and answer")
        else:
            if srcs or e.get("keywords") or e.get("answer") is not None:
                errors.append(f"{eid}: unanswerable entry must have answer null, [] sources/keywords")
        parts = e.get("parts")
        if parts:
            union = set()
            for i, p in enumerate(parts):
                check_kw(p.get("keywords"), f" part {i + 1}")
                union.update(p.get("keywords") or [])
            if union != set(e.get("keywords") or []):
                errors.append(f"{eid}: keywords != union of parts' keywords")
        c = e.get("conflict")
        if c:
            for side in ("preferred", "stale"):
                src = c.get(f"{side}_source")
                if src not in texts:
                    errors.append(f"{eid}: conflict {side}_source not found: {src}")
                elif c.get(side) not in texts[src]:
                    errors.append(f"{eid}: conflict {side} value {c.get(side)!r} not in {src}")
        if "restricted" in (e.get("tags") or []) and not e.get("required_access"):
            errors.append(f"{eid}: restricted entry without required_access")
        tags.update(e.get("tags") or [])
    for err in errors:
        print("ERROR:", err)
    print(f"{len(entries)} entries, {len(texts)} docs")
    for t, n in sorted(tags.items()):
        print(f"  {t}: {n}")
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 1 if errors else 0

if __name__ == "__main__":
    sys.exit(main())
