"""`scripts/check_readme.py`: the README's length, links, anchors and commands hold, and a README
that drifts from the repository is caught, each way it can."""

from __future__ import annotations

import importlib.util
import re
import shutil
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


# --- following the README (scripts/follow_readme.py, `check_readme.py --run`) -------------------


def _follower() -> ModuleType:
    spec = importlib.util.spec_from_file_location("follow_readme", REPO / "scripts" / "follow_readme.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["follow_readme"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


follow_readme = _follower()
STEPS = """# Title

```sh
make demo     # creates .venv # and more
make test     # installs, runs pytest (runs this README too)
```

Prose with `candor ask "not run"`.

```text
candor ingest PATH... [--kb NAME]
```

```sh
make demo TORCH_INDEX=https://example.org/cpu   # (instead of make demo, on other machines)
# a comment line
.venv/bin/candor ask "Is #1 kept?" \\
    --kb mydocs   # a continued line
SLACK_BOT_TOKEN=xoxb-... .venv/bin/candor serve   # needs: slack-credentials
.venv/bin/candor teams package --app-id <app id>  # needs: teams-credentials
.venv/bin/candor serve   # needs: a-pony
```
"""


def test_steps_are_the_sh_lines_in_order_with_their_markers() -> None:
    found = [(s.line, s.command, s.skip) for s in follow_readme.steps(STEPS)]
    assert found == [
        (4, "make demo", None),
        (5, "make test", "runs this README too, so running it here would recurse"),
        (
            15,
            "make demo TORCH_INDEX=https://example.org/cpu",
            "an alternative: instead of make demo, on other machines",
        ),
        (17, '.venv/bin/candor ask "Is #1 kept?" --kb mydocs', None),
        (19, "SLACK_BOT_TOKEN=xoxb-... .venv/bin/candor serve", "needs slack credentials"),
        (20, ".venv/bin/candor teams package --app-id <app id>", "needs teams credentials"),
        (21, ".venv/bin/candor serve", None),  # only the markers the README's convention names skip
    ]


def test_the_placeholder_becomes_the_folder_of_your_documents(tmp_path: Path) -> None:
    docs = tmp_path / "my docs"
    line = ".venv/bin/candor ingest path/to/your/docs --kb mydocs"
    assert follow_readme.substituted(line, docs) == f".venv/bin/candor ingest '{docs}' --kb mydocs"


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (["candor ask 'Q?' --kb mydocs"], "no ```sh line ingests path/to/your/docs"),
        (["candor ingest path/to/your/docs --kb mydocs", "candor ask 'Q?'"], "no ```sh line asks a question"),
        (
            ["candor ingest path/to/your/docs --kb mydocs", "candor ask 'Q?' --kb mydocs  # needs: slack-credentials"],
            "no ```sh line asks a question",
        ),
        (["candor ingest path/to/your/docs", "candor ask 'Q?'"], None),
    ],
)
def test_the_readme_must_ask_a_question_of_your_documents(lines: list[str], problem: str | None) -> None:
    found = follow_readme.own_question_problems(follow_readme.steps("```sh\n" + "\n".join(lines) + "\n```\n"))
    assert found == [] if problem is None else (len(found) == 1 and problem in found[0]), found


def _run(tmp_path: Path, block: str) -> tuple[list[str], str]:
    """Follow a README of one ```sh block (shell commands only, no Candor) in `tmp_path` as the repository."""
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n\n```sh\n" + block + "```\n", encoding="utf-8")
    run = follow_readme.Run(tmp_path, readme, tmp_path / "run" / "home", tmp_path / "run" / "docs", timeout=30)
    shutil.rmtree(tmp_path / "run", ignore_errors=True)
    follow_readme.prepare(run)
    try:
        run.follow(follow_readme.steps(readme.read_text(encoding="utf-8")))
    except follow_readme.RunFailed as exc:
        return [str(exc)], ""
    return [], ""


def test_steps_run_in_order_in_the_repository_with_a_fresh_home(tmp_path: Path) -> None:
    block = 'echo "$CANDOR_HOME|${CANDOR_KB-unset}|$HF_HUB_OFFLINE" > seen   # in the repository root\n'
    block += "cat path/to/your/docs/new-starters.md >> seen\n"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CANDOR_KB", "mine")
        found, _ = _run(tmp_path, block)
    assert found == []
    seen = (tmp_path / "seen").read_text(encoding="utf-8").splitlines()
    assert seen[0] == f"{tmp_path / 'run' / 'home'}|unset|1"
    assert seen[1] == f"# {follow_readme.YOUR_TITLE}"


def test_an_unmarked_failing_line_fails_the_run_there(tmp_path: Path) -> None:
    block = "true\nfalse   # needs: slack-credentials\necho broken; exit 3\ntouch after\n"
    found, _ = _run(tmp_path, block)
    assert len(found) == 1 and found[0].startswith("README.md line 6: `echo broken; exit 3` exited with status 3"), (
        found
    )
    assert "broken" in found[0]
    assert not (tmp_path / "after").exists()


def test_an_answer_about_your_documents_must_cite_them(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "candor"
    fake.write_text('#!/bin/sh\n[ "$1" = ask ] && echo "$ANSWER"\nexit 0\n', encoding="utf-8")
    fake.chmod(0o755)
    block = "bin/candor ingest path/to/your/docs --kb mine\nbin/candor ask 'How many days?' --kb mine\n"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ANSWER", "22 days [1]. Sources: [1] Leave for new starters")
        assert _run(tmp_path, block)[0] == []
        patch.setenv("ANSWER", "22 days. Sources: none")
        found = _run(tmp_path, block)[0]
        assert len(found) == 1 and "line 5" in found[0] and "cites nothing" in found[0], found
        patch.setenv("ANSWER", "22 days [1]. Sources: [1] The handbook")
        found = _run(tmp_path, block)[0]
        assert len(found) == 1 and "no source is new-starters.md" in found[0], found
