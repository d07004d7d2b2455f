"""docs/local-model.md names real settings, and its table of time limits says what rag/config/models.py does."""

from __future__ import annotations

import re

from pydantic import AliasChoices

from rag.config import LOCAL_ANSWER_BUDGET, LOCAL_LLM_TIMEOUT, Settings
from tests.conftest import REPO

PAGE = (REPO / "docs" / "local-model.md").read_text(encoding="utf-8")


def variables() -> set[str]:
    names: set[str] = set()
    for info in Settings.model_fields.values():
        if isinstance(info.validation_alias, AliasChoices):
            names.update(str(choice) for choice in info.validation_alias.choices)
    return names


def test_every_setting_the_page_names_exists() -> None:
    named = set(re.findall(r"\b(?:CANDOR|OPENAI)_[A-Z_]+\b", PAGE)) - {"CANDOR_MODEL_CACHE"}  # the script's
    assert named and named <= variables(), named - variables()


def test_the_time_limits_table_matches_the_settings() -> None:
    rows = {row[0].strip("` "): row for row in (line.split("|")[1:-1] for line in PAGE.splitlines()) if row}
    fields = {
        "CANDOR_LLM_TIMEOUT": ("llm_timeout", LOCAL_LLM_TIMEOUT),
        "CANDOR_ANSWER_BUDGET_SECONDS": ("answer_budget", LOCAL_ANSWER_BUDGET),
    }
    for variable, (field, local) in fields.items():
        hosted = Settings.model_fields[field].default
        assert [float(cell) for cell in rows[variable][2:4]] == [hosted, local], variable


def test_the_measurements_have_their_place() -> None:
    section = PAGE.split("## Measured quality and speed", 1)[1]
    assert "benchmarks/model_answers.py" in section
