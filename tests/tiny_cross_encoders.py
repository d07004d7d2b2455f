"""Tiny cross-encoders built at test time, for the plumbing of `rag/backends/cross_encoders.py`.

Each is a BERT with hidden size 32, 2 layers and 2 heads, a WordPiece vocabulary written from the
short word list below, and a sequence-classification head, saved with its tokenizer the way a team
saves a real model. Their scores mean nothing: they prove loading, batching, label mapping,
ordering by score and threading, never quality (Candor's quality figures are for the offline
default). Where a test needs to know a score in advance, the classifier's weights are zeroed and
its bias set, so every pair gets exactly the bias as logits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_WORD_LIST = """
a about access actually add admins adoption after all an and annual any are at be beacon before
billing birth business by can canteen carers carried check choose closed collector company costs
day days does during each employee employees every for forwards from full get gets growing has have
help how in includes inside interval into is it its keeps larger leave limit lunch many maximum may
memory minimum month monitoring monitors monthly must network next noon northwind of on one our
outbound paid parental pay pension per plan plans popular primary pro product receive remove results
right runs salary sales seconds secondary serves small spec specification start supports teams team
than that the their there this time to two unused up user users we weeks what when whenever which
who will with within year years you your
"""
WORDS = _WORD_LIST.split()

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PUNCTUATION = list(".,:;?!$%-*()'\"/")
NLI_LABELS = ("contradiction", "entailment", "neutral")


@dataclass(frozen=True, slots=True)
class TinyCrossEncoders:
    """Folders of saved tiny models, each named for what it is for."""

    reranker: Path
    """1 label, random weights (drawn wide enough that scores spread over 0..1)."""
    reranker_identity: Path
    """The same weights, saved with an Identity activation as the ms-marco rerankers are."""
    nli: Path
    """contradiction / entailment / neutral, random weights."""
    nli_sure: Path
    """entailment 0.7, contradiction 0.2, neutral 0.1 for every pair; labels as `NLI_LABELS`."""
    nli_sure_shuffled: Path
    """The same probabilities, labels in another order and case ("NEUTRAL", "ENTAILMENT", "CONTRADICTION")."""
    nli_doubtful: Path
    """entailment 0.2, contradiction 0.7, neutral 0.1 for every pair."""
    nli_certain: Path
    """entailment 0.98 for every pair."""
    fact_check_certain: Path
    """1 label, logit 4 (0.98 after the sigmoid) for every pair."""
    generic_labels: Path
    """3 labels named LABEL_0..LABEL_2: nothing says which one is entailment."""
    broken: Path
    """Loads, but its embeddings are smaller than its vocabulary: scoring most words fails."""


def build_all(root: Path) -> TinyCrossEncoders:
    shuffled = ("NEUTRAL", "ENTAILMENT", "CONTRADICTION")
    return TinyCrossEncoders(
        reranker=build(root / "tiny-reranker", labels=("LABEL_0",)),
        reranker_identity=build(root / "tiny-reranker-identity", labels=("LABEL_0",), identity_activation=True),
        nli=build(root / "tiny-nli", labels=NLI_LABELS, seed=1),
        nli_sure=build(root / "tiny-nli-sure", labels=NLI_LABELS, bias=_logits(NLI_LABELS, entailment=0.7)),
        nli_sure_shuffled=build(
            root / "tiny-nli-sure-shuffled", labels=shuffled, bias=_logits(shuffled, entailment=0.7)
        ),
        nli_doubtful=build(
            root / "tiny-nli-doubtful", labels=NLI_LABELS, bias=_logits(NLI_LABELS, entailment=0.2, contradiction=0.7)
        ),
        nli_certain=build(
            root / "tiny-nli-certain",
            labels=NLI_LABELS,
            bias=_logits(NLI_LABELS, entailment=0.98, contradiction=0.01, neutral=0.01),
        ),
        fact_check_certain=build(root / "tiny-fact-check", labels=("supported",), bias=(4.0,)),
        generic_labels=build(root / "tiny-generic-labels", labels=("LABEL_0", "LABEL_1", "LABEL_2")),
        broken=build(root / "tiny-broken", labels=("LABEL_0",), vocab_size=len(SPECIAL) + 2),
    )


def build(
    folder: Path,
    *,
    labels: Sequence[str],
    seed: int = 0,
    bias: Sequence[float] | None = None,
    identity_activation: bool = False,
    vocab_size: int | None = None,
) -> Path:
    """Save a tiny `BertForSequenceClassification` and its tokenizer in `folder`.

    Weights are drawn with a standard deviation of 0.5 (BERT's 0.02 is made for 768 dimensions: at 32
    every pair would score about the same). `bias`: zero the classifier's weights and use these
    logits for every pair. `vocab_size`: embeddings smaller than the vocabulary (a broken model)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join([*SPECIAL, *WORDS, *PUNCTUATION, *"0123456789"]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True, model_max_length=128)
    config = BertConfig(
        vocab_size=vocab_size or tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
        initializer_range=0.5,
    )
    if identity_activation:
        config.sentence_transformers = {"activation_fn": "torch.nn.modules.linear.Identity"}
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config).eval()
    with torch.no_grad():
        if bias is not None:
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor(list(bias)))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _logits(labels: Sequence[str], **probabilities: float) -> list[float]:
    """Logits whose softmax gives each named label its probability (the rest share what is left)."""
    named = {label.lower(): p for label, p in probabilities.items()}
    rest = [label for label in labels if label.lower() not in named]
    left = (1.0 - sum(named.values())) / len(rest) if rest else 0.0
    return [math.log(named.get(label.lower(), left)) for label in labels]
