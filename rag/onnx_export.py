"""Export a sentence-transformers model to ONNX (optionally int8) once, locally, and load it.

The export is written under `<CANDOR_HOME>/models/` next to a copy of the model's files (the
packaged model lives in site-packages, which is not ours to write). Once exported, the copied
weights and, for int8, the float export are deleted: the ONNX file holds the weights, and keeping
them made every home ~200 MB instead of ~25 MB. A file lock makes a second process wait for the
first one's export instead of racing it. Nothing is downloaded. The exported file runs on
`rag.onnx_runner.OnnxRunner` (faster on this machine) unless the model's layout needs
sentence-transformers' own `encode`.
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

from rag.onnx_runner import OnnxRunner

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


_WEIGHTS = ("model.safetensors", "pytorch_model.bin")


def _drop_export_inputs(target: Path, *, quantized: bool) -> None:
    """Delete what only the export needed: the copied torch weights and, after an int8 export, the
    float one it was made from. A later export of the float variant copies the weights again."""
    for name in _WEIGHTS:
        (target / name).unlink(missing_ok=True)
    if quantized:
        (target / "onnx" / "model.onnx").unlink(missing_ok=True)


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
        exporting = not (target / "onnx" / target_name).exists()
        if exporting:
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
        # the weights go on every load (a cache an older version left kept them); the float file
        # only right after the int8 export made from it, so that switching variants stays cheap
        _drop_export_inputs(target, quantized=quantized and exporting)
        # Loaded under the lock: an int8 export deletes the float file another process may want.
        model = SentenceTransformer(
            str(target), device="cpu", backend="onnx", model_kwargs={"file_name": f"onnx/{target_name}"}
        )
        runner = OnnxRunner.for_model(model, target / "onnx" / target_name)
        return model if runner is None else runner
