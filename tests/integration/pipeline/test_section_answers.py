"""Open questions through the whole offline pipeline (issue 40, item 3): the section that answers
them, quoted and cited, or no answer; a value question is answered as before."""

from __future__ import annotations

from pathlib import Path

from rag.model.answers import Question
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase

GUIDE = """# Exporting your data

Plotwise keeps your projects for as long as your workspace exists. Exports are free on every plan.

## Export a project to CSV

1. Open the project and click the three dots next to its name.
2. Choose Export > CSV and pick the fields to include.
3. Click Download: the file holds one row per task, with its status and assignee.

## Delete a workspace

Only the Owner can delete a workspace. Deleted workspaces are kept for 30 days, then erased.

## Storage limits

Each workspace can store 100 GB of attachments on the Team plan.
"""


async def test_an_open_question_gets_its_section_and_a_value_question_one_sentence(
    candor: Candor, kb: KnowledgeBase, docs: Path
) -> None:
    (docs / "export.md").write_text(GUIDE)
    assert (await candor.ingestor().ingest([docs], kb=kb)).added == 1
    scope = AccessScope(frozenset(), frozenset([kb.name]))

    how = await candor.answer(Question("how do I export my project to a CSV file?", scope=scope))
    assert how.route == "answered", how.text
    assert [s.text for s in how.sentences] == [
        "Open the project and click the three dots next to its name.",
        "Choose Export > CSV and pick the fields to include.",
        "Click Download: the file holds one row per task, with its status and assignee.",
    ]
    assert all(s.citations == (1,) for s in how.sentences) and how.sources[0].document.endswith("export.md")

    value = await candor.answer(Question("How many days are deleted workspaces kept?", scope=scope))
    assert value.route == "answered" and "30 days" in value.text and len(value.sentences) == 1, value.text

    nothing = await candor.answer(Question("how do I import my boards from Trello?", scope=scope))
    assert nothing.route == "abstained", nothing.text
