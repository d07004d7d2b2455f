#!/usr/bin/env python3
"""Fail unless a `make demo` log shows the demo answering: CI runs it after the demo (`.ci/run`).

The demo exits non-zero on an error already; this also catches a run that ends "successfully"
with nothing answered (every question abstained, say, because the embedder quietly changed).
Standard library only, so it runs before or without the virtual environment.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

EXPECTED = {
    "How many days of annual leave do full-time employees get?": "24 days",
    "What is the salary band for an L3 Senior Software Engineer?  [as hr-confidential]": "£58,000",
}
"""Questions the demo must answer, with a value the answer must hold."""


def problems(log: str) -> list[str]:
    found: list[str] = []
    answered = len(re.findall(r"^\s*route: answered", log, flags=re.MULTILINE))
    if answered == 0:
        found.append("no question was answered (no 'route: answered' line)")
    for question, value in EXPECTED.items():
        start = log.find(f"Q: {question}")
        if start < 0:
            found.append(f"the demo did not ask {question!r}")
            continue
        end = log.find("\n", log.find("route:", start))
        block = log[start : end if end >= 0 else None]
        if "route: answered" not in block:
            found.append(f"{question!r} was not answered")
        elif value not in block:
            found.append(f"the answer to {question!r} does not say {value!r}")
        elif "[1]" not in block:
            found.append(f"the answer to {question!r} cites nothing")
    if "Traceback" in log:
        found.append("a traceback was printed")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: check_demo.py DEMO_LOG", file=sys.stderr)
        return 2
    found = problems(Path(argv[1]).read_text(encoding="utf-8", errors="replace"))
    for problem in found:
        print(f"demo check failed: {problem}", file=sys.stderr)
    if not found:
        print("demo check passed: the demo answered, with citations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
