"""The runtime: the core's parts built from the settings (`wiring`: `open_candor`, once per
process) and the `Candor` that holds them, whose methods are the commands `bot/` calls (`candor`).
Both are reached as `rag.runtime.X`; `bot/` reaches them only through the facade (`rag`).
"""

from rag.runtime.candor import Candor, EvalRun
from rag.runtime.wiring import build_answerer, open_candor, prepare_embedder, sentence_source

__all__ = ["Candor", "EvalRun", "build_answerer", "open_candor", "prepare_embedder", "sentence_source"]
