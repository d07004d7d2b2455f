"""Tiny sentence-transformers bi-encoders built at test time, for the plumbing of the ONNX runner.

Each is a BERT with hidden size 32 and 2 layers on the WordPiece vocabulary of
`tests/tiny_cross_encoders.py`, saved with its pooling (and, where asked, a Dense layer) the way a
team saves its own model. Their vectors mean nothing: the tests compare two ways of computing
them, never their quality.
"""

from __future__ import annotations

from pathlib import Path

from tests.tiny_cross_encoders import PUNCTUATION, SPECIAL, WORDS


def build_embedder(folder: Path, *, pooling: str = "mean", dense: int | None = None, seed: int = 0) -> Path:
    """Save a tiny bi-encoder in `folder`: Transformer → Pooling(`pooling`) → [Dense(`dense`)] → Normalize."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    base = folder / "base"
    base.mkdir(parents=True, exist_ok=True)
    vocab = base / "vocab.txt"
    vocab.write_text("\n".join([*SPECIAL, *WORDS, *PUNCTUATION, *"0123456789"]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True, model_max_length=64)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        initializer_range=0.5,
    )
    torch.manual_seed(seed)
    BertModel(config).eval().save_pretrained(base)
    tokenizer.save_pretrained(base)
    modules: list[torch.nn.Module] = [models.Transformer(str(base), max_seq_length=64)]
    modules.append(models.Pooling(32, pooling_mode=pooling))
    if dense is not None:
        modules.append(models.Dense(32, dense))
    modules.append(models.Normalize())
    SentenceTransformer(modules=modules, device="cpu").save(str(folder / "model"))
    return folder / "model"
