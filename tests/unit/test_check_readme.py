"""`scripts/check_readme.py`: the README's length, links, anchors and commands hold, and a README
that drifts from the repository is caught, each way it can."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "scripts" / "check_readme.py"


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_readme", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_readme = _checker()


def test_the_readme_holds() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr
    assert "links and commands hold" in done.stdout


def _problems(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## A heading\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(text, encoding="utf-8")
    found: list[str] = check_readme.problems(readme, REPO)
    return found


GOOD = """# Candor

See [the page](docs/page.md#a-heading), or [the top](docs/page.md) and [here](#candor).

```sh
make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu
.venv/bin/candor ingest path/to/docs --kb mydocs   # only what changed
candor audit answers --export FILE [--sample N] | --import FILE [--skip-invalid]
candor COMMAND --help
.venv/bin/python scripts/screenshot.py
```

People type `/candor question` in Slack; `SLACK_BOT_TOKEN=x .venv/bin/candor
serve --host 0.0.0.0` starts it.
"""


def test_a_readme_that_holds_has_no_problems(tmp_path: Path) -> None:
    assert _problems(tmp_path, GOOD) == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("[gone](docs/gone.md)", "link docs/gone.md: no such file"),
        ("[moved](docs/page.md#old-heading)", "link docs/page.md#old-heading: no heading with that anchor"),
        ("`candor answer QUESTION`", "`candor` has no command 'answer'"),
        ("`candor audit answer`", "`candor audit` has no command 'answer'"),
        ("`candor ask Q --knowledge-base x`", "`candor ask` has no option --knowledge-base"),
        ("`candor teams package --app ID`", "`candor teams package` has no option --app"),
        ("`make check`", "the Makefile has no target 'check'"),
        ("`.venv/bin/python scripts/nowhere.py`", "no such file scripts/nowhere.py"),
    ],
)
def test_each_kind_of_drift_is_caught(tmp_path: Path, line: str, problem: str) -> None:
    found = _problems(tmp_path, GOOD + "\n" + line + "\n")
    assert len(found) == 1 and problem in found[0], found


def test_a_long_readme_is_caught(tmp_path: Path) -> None:
    found = _problems(tmp_path, GOOD + "\nmore\n" * 250)
    assert len(found) == 1 and re.match(r"\d{3} lines: at most 250 ", found[0]), found
