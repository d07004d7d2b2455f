"""Export a sentence-transformers model to ONNX (optionally int8) once, locally, and load it.

The export is written under `<CANDOR_HOME>/models/` next to a copy of the model's files (the
packaged model lives in site-packages, which is not ours to write). A file lock makes a second
process wait for the first one's export instead of racing it. Nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fasteners

log = logging.getLogger(__name__)


def _quantization_target() -> str:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        flags = ""
    if "avx512_vnni" in flags:
        return "avx512_vnni"
    if "avx512f" in flags:
        return "avx512"
    if "avx2" in flags:
        return "avx2"
    return "arm64"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    noisy = [logging.getLogger(name) for name in ("sentence_transformers", "optimum", "transformers")]
    levels = [logger.level for logger in noisy]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for logger in noisy:
            logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for logger, level in zip(noisy, levels, strict=True):
                logger.setLevel(level)


def load_onnx_model(model_path: str, *, quantized: bool, cache_dir: Path | None) -> Any:
    from sentence_transformers import SentenceTransformer

    source = Path(model_path)
    if cache_dir is None or not source.is_dir():
        return SentenceTransformer(model_path, device="cpu", backend="onnx")
    digest = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]
    target = cache_dir / f"{source.name}-{digest}-onnx"
    target_name = f"model_qint8_{_quantization_target()}.onnx" if quantized else "model.onnx"
    cache_dir.mkdir(parents=True, exist_ok=True)
    with fasteners.InterProcessLock(str(cache_dir / ".export.lock")):
        if not (target / "onnx" / target_name).exists():
            log.info("exporting embedder to ONNX", extra={"model": model_path, "target": str(target)})
            shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("onnx"))
            with _quiet():  # the exporter's tracer warnings and "saving is recommended" advice
                model = SentenceTransformer(str(target), device="cpu", backend="onnx")
                if not (target / "onnx" / "model.onnx").exists():
                    model.save_pretrained(str(target))
                if quantized:
                    from sentence_transformers import export_dynamic_quantized_onnx_model

                    export_dynamic_quantized_onnx_model(model, _quantization_target(), str(target))
            log.info("exported embedder to ONNX", extra={"target": str(target / "onnx" / target_name)})
    return SentenceTransformer(
        str(target), device="cpu", backend="onnx", model_kwargs={"file_name": f"onnx/{target_name}"}
    )
