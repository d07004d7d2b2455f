"""The one settings object. Nothing else in Candor reads the environment.

`Settings()` reads the variables (and a `.env` file in the working directory) once at start-up,
casts and checks them, and fails loudly naming the variable that is wrong. Secrets are `SecretStr`,
so they never appear in a log line or a repr. docs/configuration.md lists every variable.

`Settings` is composed of a section per concern, each a module here: storage (the data directory,
the database), search (embeddings, ingestion, retrieval), answering (the gates' thresholds, the
refusal, access), chat (Slack, Teams, hand-offs), models (the model-backed stages and their
endpoint), operators (the dashboard, limits, records, the chat page, exports, logs). environment
holds what they share and the few helpers that read `os.environ`; settings composes them.
"""

from rag.config.environment import model_library_environment, offline_model_environment, secrets_by_name
from rag.config.models import LOCAL_ANSWER_BUDGET, LOCAL_LLM_TIMEOUT
from rag.config.search import PACKAGED_MINILM
from rag.config.settings import ANSWER_SETTINGS, Settings, load_settings

__all__ = [
    "ANSWER_SETTINGS",
    "LOCAL_ANSWER_BUDGET",
    "LOCAL_LLM_TIMEOUT",
    "PACKAGED_MINILM",
    "Settings",
    "load_settings",
    "model_library_environment",
    "offline_model_environment",
    "secrets_by_name",
]
