"""Teams' built-in feedback (`feedbackLoopEnabled`): the ``message/submitAction`` invoke read into a
rating and an optional comment."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rag.model.answers import Rating

_RATINGS: dict[str, Rating] = {"like": "up", "dislike": "down"}


def feedback_from_invoke(value: Mapping[str, Any]) -> tuple[Rating, str | None]:
    """The rating and the optional comment of Teams' feedback invoke (``message/submitAction``).

    `value` is the invoke activity's ``value``: ``{"actionName": "feedback", "actionValue": {"reaction":
    "like" | "dislike", "feedback": '{"feedbackText": "..."}'}}``. The ``feedback`` may also come as an
    object, or as plain text. Anything else raises `ValueError`.
    """
    if not isinstance(value, Mapping):
        raise ValueError(f"feedback invoke value must be an object, got {type(value).__name__}")
    if value.get("actionName") != "feedback":
        raise ValueError(f"not a feedback invoke: actionName is {value.get('actionName')!r}, expected 'feedback'")
    action = value.get("actionValue")
    if not isinstance(action, Mapping):
        raise ValueError("feedback invoke has no actionValue object")
    reaction = action.get("reaction")
    rating = _RATINGS.get(reaction) if isinstance(reaction, str) else None
    if rating is None:
        raise ValueError(f"feedback reaction must be 'like' or 'dislike', got {reaction!r}")
    return rating, _feedback_text(action.get("feedback"))


def _feedback_text(feedback: object) -> str | None:
    if feedback is None:
        return None
    if isinstance(feedback, str):
        if not feedback.strip():
            return None
        try:
            parsed = json.loads(feedback)
        except json.JSONDecodeError:
            return feedback.strip()  # plain text rather than the documented JSON: keep what was written
        if not isinstance(parsed, Mapping):
            return feedback.strip()
        feedback = parsed
    if not isinstance(feedback, Mapping):
        raise ValueError(f"feedback must be a JSON string or an object, got {type(feedback).__name__}")
    text = feedback.get("feedbackText")
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"feedbackText must be a string, got {type(text).__name__}")
    return text.strip() or None
