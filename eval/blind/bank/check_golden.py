#!/usr/bin/env python3
"""Check golden.yaml against docs/.

- the YAML parses and is a list of entries with the required fields
- every source stem exists in docs/
- every keyword (entry and parts) is an exact substring of at least one listed source
- unanswerable entries have no sources/keywords; multi-part keywords = union of parts
Prints counts per tag. Exit code 1 on any problem.
"""
import collections
import pathlib
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
DOCS = HERE / "docs"
REQUIRED = ["id", "question", "answerable", "answer", "sources", "keywords", "tags"]


def main() -> int:
    docs = {p.stem: p.read_text(encoding="utf-8") for p in DOCS.iterdir() if p.is_file()}
    data = yaml.safe_load((HERE / "golden.yaml").read_text(encoding="utf-8"))
    errors = []
    if not isinstance(data, list):
        print("golden.yaml is not a list")
        return 1

    ids = collections.Counter(e.get("id") for e in data)
    for i, n in ids.items():
        if n > 1:
            errors.append(f"duplicate id {i}")

    tags = collections.Counter()
    for e in data:
        eid = e.get("id", "?")
        for f in REQUIRED:
            if f not in e:
                errors.append(f"{eid}: missing field {f}")
        srcs = e.get("sources") or []
        for s in srcs:
            if s not in docs:
                errors.append(f"{eid}: source stem not found: {s}")
        texts = [docs[s] for s in srcs if s in docs]

        def check_kw(kws, where):
            for k in kws or []:
                if not any(k in t for t in texts):
                    errors.append(f"{eid}{where}: keyword not in sources: {k!r}")

        check_kw(e.get("keywords"), "")
        if e.get("answerable"):
            if not srcs or not e.get("keywords") or e.get("answer") is None:
                errors.append(f"{eid}: answerable but missing sources/keywords/answer")
        else:
            if srcs or e.get("keywords") or e.get("answer") is not None:
                errors.append(f"{eid}: unanswerable but has sources/keywords/answer")

        parts = e.get("parts")
        if parts:
            union = set()
            for j, p in enumerate(parts):
                check_kw(p.get("keywords"), f" part {j + 1}")
                union.update(p.get("keywords") or [])
                if "text" not in p or "answerable" not in p:
                    errors.append(f"{eid} part {j + 1}: missing text/answerable")
            if union != set(e.get("keywords") or []):
                errors.append(f"{eid}: keywords != union of parts' keywords")

        c = e.get("conflict")
        if c:
            for k in ("preferred", "stale", "preferred_source", "stale_source"):
                if k not in c:
                    errors.append(f"{eid}: conflict missing {k}")
            ps, ss = c.get("preferred_source"), c.get("stale_source")
            if ps not in docs or ss not in docs:
                errors.append(f"{eid}: conflict source stem not found")
            else:
                if c.get("preferred") not in docs[ps]:
                    errors.append(f"{eid}: preferred value not in {ps}")
                if c.get("stale") not in docs[ss]:
                    errors.append(f"{eid}: stale value not in {ss}")

        if "restricted" in (e.get("tags") or []) and not e.get("required_access"):
            errors.append(f"{eid}: restricted but no required_access")
        for t in e.get("tags") or []:
            tags[t] += 1

    print(f"{len(data)} entries, {len(docs)} documents")
    for t, n in sorted(tags.items()):
        print(f"  {t}: {n}")
    if errors:
        print("\nPROBLEMS:")
        for err in errors:
            print("  " + err)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
