"""The README, followed as a newcomer would (issue 39): `scripts/check_readme.py --run`.

Every shell line of the README runs in order from the repository root in a fresh `CANDOR_HOME` with
no `CANDOR_*` variable set: `make demo` (on this suite's .venv), ingesting a folder of "your own"
documents, asking them a question that must be answered with a citation of that folder's document,
searching them, and `candor serve` answering the chat page. Only the lines the README marks are
skipped (credentials, the alternative `TORCH_INDEX` line, `make test` itself).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_the_readme_does_what_it_says_from_a_fresh_home() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANDOR_")}
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "check_readme.py"), "--run", "--reuse-venv", "--timeout", "600"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    ran = re.findall(r"^README\.md line \d+: `([^`]*)`: ok \(\d+ s\)$", output, re.MULTILINE)
    skipped = re.findall(r"^README\.md line \d+: `([^`]*)`: skipped \(([^)]*)\)$", output, re.MULTILINE)
    assert ran[0] == "make demo", output
    assert any(line.startswith(".venv/bin/candor ingest path/to/your/docs") for line in ran), output
    assert any(line.startswith(".venv/bin/candor ask ") for line in ran), output
    assert any(line.startswith(".venv/bin/candor serve") for line in ran), output
    assert {reason for _, reason in skipped} <= {
        "needs slack credentials",
        "needs teams credentials",
        "runs this README too, so running it here would recurse",
        "an alternative: instead of make demo, on other machines",
    }, skipped
    assert "followed from a fresh home, every step did what it says" in output
