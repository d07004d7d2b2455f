"""The answer gates' thresholds (defaults from rag/calibration.json), the refusal and the access
policy."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings

from rag.calibration import calibrated
from rag.config.environment import _env
from rag.model.answers import DEFAULT_REFUSAL


class AnswerSettings(BaseSettings):
    """Answering: the gates, the refusal, who may read what."""

    # --- answering (gate thresholds default to the calibration in rag/calibration.json) ----
    retrieval_threshold: float = Field(
        default_factory=lambda: calibrated("retrieval_threshold", 0.3),
        ge=-1.0,
        le=1.0,
        validation_alias=_env("CANDOR_RETRIEVAL_THRESHOLD"),
    )
    """CANDOR_RETRIEVAL_THRESHOLD: abstain without generating when the best dense cosine is below."""
    answer_threshold: float = Field(
        default_factory=lambda: calibrated("answer_threshold", 0.5),
        ge=-1.0,
        le=1.0,
        validation_alias=_env("CANDOR_ANSWER_THRESHOLD"),
    )
    """CANDOR_ANSWER_THRESHOLD: a part is answered only by a sentence whose rerank score reaches this."""
    focus_threshold: float = Field(
        default_factory=lambda: calibrated("focus_threshold", 0.09),
        ge=0.0,
        le=2.0,
        validation_alias=_env("CANDOR_FOCUS_THRESHOLD"),
    )
    """CANDOR_FOCUS_THRESHOLD: a part is unanswered when its answer ignores one of its words by more
    than this (rag/pipeline/focus.py; 2 switches the check off)."""
    min_support: float = Field(0.6, gt=0.0, le=1.0, validation_alias=_env("CANDOR_MIN_SUPPORT"))
    """CANDOR_MIN_SUPPORT: the critic's support score a sentence needs (and the faithfulness gate's mean)."""
    shortlist: int = Field(20, ge=1, le=200, validation_alias=_env("CANDOR_SHORTLIST"))
    """CANDOR_SHORTLIST: passages retrieved and reranked per question part (doubled on retry)."""
    retry: bool = Field(True, validation_alias=_env("CANDOR_RETRY"))
    """CANDOR_RETRY: one more retrieval-synthesis cycle, with the parts' content words as queries and
    twice the shortlist, when the faithfulness gate fails."""
    rescue: bool = Field(True, validation_alias=_env("CANDOR_RESCUE"))
    """CANDOR_RESCUE: a sentence the critic rejects gets one re-retrieval of its own before it is
    dropped (rag/pipeline/rescue.py); logged in the `rescue` gate."""
    section_extracts: bool = Field(True, validation_alias=_env("CANDOR_SECTION_EXTRACTS"))
    """CANDOR_SECTION_EXTRACTS: an open question ("how do I ...", "what are the kinds of ...") is
    answered with the leading sentences of the section whose heading names its subject
    (rag/pipeline/sections.py). The offline writer leaves it unanswered when no section does (with
    a language model writing, the model answers it then: CANDOR_EXTRACTIVE_FIRST). Off: the writer
    answers open questions as any other."""
    extractive_first: bool = Field(True, validation_alias=_env("CANDOR_EXTRACTIVE_FIRST"))
    """CANDOR_EXTRACTIVE_FIRST: with a language model writing (CANDOR_WRITER, CANDOR_MODEL_ROLE=write), the extractive
    writer answers first, quoting the documents, and the model writes only when that answer is not
    delivered (abstained or low confidence); both are logged, the model's attempts numbered after.
    Off: the model writes every answer."""
    model_role: Literal["select", "write"] = Field("select", validation_alias=_env("CANDOR_MODEL_ROLE"))
    """CANDOR_MODEL_ROLE: what the language model of CANDOR_WRITER does. `select` (default): it
    names which of the quotable sentences at the answer threshold answer the question, and those
    are quoted as the documents write them (rag/pipeline/selection.py); none named is an
    abstention. `write`: it writes the answer from the passages, after the extractive writer
    (CANDOR_EXTRACTIVE_FIRST), and the critic checks its sentences. Measured in docs/answering.md:
    with a 1.5B model, selecting gave as many right answers as writing and fewer wrong ones."""
    rules_off: list[
        Literal[
            "bridge",
            "premise",
            "relevance",
            "swaps",
            "polarity",
            "measures",
            "quotable",
            "answers",
            "fills",
            "codes",
            "relevance-quantity",
            "relevance-date",
            "relevance-place",
            "relevance-address",
        ]
    ] = Field(default_factory=list, validation_alias=_env("CANDOR_RULES_OFF"))
    """CANDOR_RULES_OFF: rule families switched off, a JSON list, to measure what each does (issue 40's
    ablation table in docs/answering.md); not for production. `bridge`: no second hop for multi-hop
    questions; `premise`: names no passage mentions do not end the part; `relevance`: an answer need
    not state the kind of value asked (`relevance-quantity`, `relevance-date`, `relevance-place`,
    `relevance-address`: that kind only); `swaps`, `polarity`, `measures`, `quotable`, `answers`,
    `fills`, `codes`: the text rules of rag/text/switches.py. The focus gate, the rescue
    and section extracts have their own."""
    refusal: str = Field(DEFAULT_REFUSAL, min_length=1, validation_alias=_env("CANDOR_REFUSAL"))
    """CANDOR_REFUSAL: the one fixed phrase of an abstention (detected downstream: keep it fixed)."""
    access_policy: Path | None = Field(None, validation_alias=_env("CANDOR_ACCESS_POLICY"))
    """CANDOR_ACCESS_POLICY: YAML rules mapping platform, conversation and user to access groups and
    knowledge bases (rag/pipeline/access.py); every rule names its platform. Unset: public documents only."""
