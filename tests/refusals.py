"""The refusals the adapter tests ask for, one per gate or writer that refuses: each question (or, for
the model-written kinds, the fake model's script on `LOST`) with the reason its "Ask a person"
offer carries (`bot.render.handoff.handoff_reason`). Questions are about the sample handbook."""

from __future__ import annotations

from tests.fakes.writers import copy, stated, writes

RESTRICTED_QUESTION = "What is the salary band for an L3 Senior Software Engineer?"
"""Answered only where hr-confidential may be read; elsewhere refused without a hint that it exists."""
STIPEND = "How much is the home office stipend?"
PARENTAL = "How much paid parental leave does the primary carer get?"
LOST = "What happens if I lose my laptop?"
"""One the extractive writer does not answer: with a model writing (and the defaults), the model does."""

REFUSALS = {  # the offline pipeline's refusals
    "I don't know": ("Where do I store my bicycle at the office?", "abstained"),
    "premise challenged": ("How much does the Platinum plan cost per user per month?", "abstained"),
    "no access here": (RESTRICTED_QUESTION, "abstained"),
    "a part unanswered": (
        "What is the monthly price of the Business plan, and do you offer a discount for nonprofit organisations?",
        "asked",
    ),
}
UNSUPPORTED = (
    stated("Managers must report a lost laptop within 30 days.", citing="within 24 hours"),
    stated("A lost laptop is replaced within 40 days.", citing="within 24 hours"),
)
MODEL_REFUSALS = {  # what a model-backed writer (on the fake OpenAI server) does with `LOST`
    "the model declines": (writes(abstained=True), "abstained"),
    "every claim unsupported": (writes(*UNSUPPORTED), "abstained"),
    "low confidence": (writes(copy("within 24 hours"), *UNSUPPORTED), "low_confidence"),
}
