"""`candor answers` as its own process: keep, list, show, edit, expire and remove curated answers, and
`candor ask` answering from one with its author cited."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.cli import run_cli

QUESTION = "Who waters the plants in the Porto office?"
ANSWER = "The plants in the Porto office are watered by the facilities team every Tuesday."


async def test_a_curated_answer_is_kept_answered_with_edited_expired_and_removed(
    candor: Candor, kb: KnowledgeBase, tmp_path: Path
) -> None:
    added = run_cli(
        candor, tmp_path, "answers", "add", "--kb", kb.name, "--question", QUESTION, "--answer", ANSWER,
        "--author", "Rui Costa", "--expires", "90d", "--json",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    kept = json.loads(added.stdout)
    assert kept["author_name"] == "Rui Costa" and kept["searchable"] and kept["expires_at"] is not None

    asked = run_cli(candor, tmp_path, "ask", "--kb", kb.name, QUESTION)
    assert asked.returncode == 0, asked.stderr
    assert "every Tuesday" in asked.stdout
    assert f"answered by Rui Costa on {datetime.now(UTC).date().isoformat()}" in asked.stdout

    listed = run_cli(candor, tmp_path, "answers", "list")
    assert f"#{kept['id']} live · {kb.name} · Rui Costa" in listed.stdout and QUESTION in listed.stdout

    edited = run_cli(candor, tmp_path, "answers", "edit", str(kept["id"]), "--answer", "-", "--no-expiry", "--json",
                     input_text="The plants in the Porto office are watered by Marta on Fridays.")  # fmt: skip
    assert edited.returncode == 0, edited.stderr
    assert json.loads(edited.stdout)["expires_at"] is None
    assert "Marta on Fridays" in run_cli(candor, tmp_path, "ask", "--kb", kb.name, QUESTION).stdout

    assert run_cli(candor, tmp_path, "answers", "expire", str(kept["id"])).returncode == 0
    after = run_cli(candor, tmp_path, "ask", "--kb", kb.name, QUESTION)
    assert "Marta" not in after.stdout and "I don't know" in after.stdout
    assert f"#{kept['id']}" not in run_cli(candor, tmp_path, "answers", "list").stdout
    assert f"#{kept['id']} expired" in run_cli(candor, tmp_path, "answers", "list", "--all").stdout

    assert run_cli(candor, tmp_path, "answers", "remove", str(kept["id"])).returncode == 0
    gone = run_cli(candor, tmp_path, "answers", "show", str(kept["id"]))
    assert gone.returncode == 1 and f"no curated answer {kept['id']}" in gone.stderr


async def test_bad_curated_answer_commands_say_what_is_wrong(candor: Candor, kb: KnowledgeBase, tmp_path: Path) -> None:
    past = run_cli(candor, tmp_path, "answers", "add", "--question", QUESTION, "--answer", ANSWER, "--expires",
                   "2001-01-01")  # fmt: skip
    assert past.returncode == 2 and "in the past" in past.stderr
    missing = run_cli(candor, tmp_path, "answers", "add", "--question", QUESTION)
    assert missing.returncode == 2 and "give the answer" in missing.stderr
    blank = run_cli(candor, tmp_path, "answers", "add", "--kb", kb.name, "--question", " ", "--answer", ANSWER)
    assert blank.returncode == 1 and "needs the question" in blank.stderr
    unknown = run_cli(candor, tmp_path, "answers", "expire", "999999")
    assert unknown.returncode == 1 and "no curated answer 999999" in unknown.stderr
