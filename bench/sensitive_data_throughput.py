"""Throughput of the sensitive-data check on long texts, per kB, against its time budget (issue 29). By hand:

    .venv/bin/python bench/sensitive_data_throughput.py [--sizes 4,32,128] [--layers 12 --hidden 768]

No model can be downloaded here, so the model is a BERT token classifier of the size of the recommended one's
class (12 layers, hidden 768, 12 heads: BERT-base, the compute of piiranha's DeBERTa-v3-base within tens of
percent) with random weights and a WordPiece tokenizer trained on this repository's Markdown: the cost per
window is the architecture's, whatever the weights say. Texts are this repository's Markdown joined to each
size.

Printed per size: the check's time (``SensitiveDataCheck.run``: tokenize, windows, model, merge), seconds per kB
and kB/s; the baseline, measured in the same run on the same windows, is the transformers pipeline alone over
those windows (what the check wraps), with the ratio check / pipeline; and the check's default time budget for
that size (``timeout_s`` 5 s + ``timeout_per_kb_s`` 2 s per 1,024 characters) with its headroom (budget /
time taken; above 1 the check gives a verdict).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def corpus() -> str:
    files = sorted(
        p for p in REPO.glob("**/*.md") if ".venv" not in p.parts and "node_modules" not in p.parts
    )
    return "\n\n".join(p.read_text(errors="replace") for p in files)


def build_model(directory: Path, text: str, layers: int, hidden: int) -> str:
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(
        text.splitlines(), trainers.WordPieceTrainer(vocab_size=30522, special_tokens=specials)
    )
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    fast = transformers.BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )
    labels = ["O", "B-PERSON", "I-PERSON", "B-EMAIL", "I-EMAIL"]
    config = transformers.BertConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        intermediate_size=hidden * 4,
        max_position_embeddings=512,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    torch.manual_seed(0)
    model = transformers.BertForTokenClassification(config).eval()
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    return str(directory)


async def main(args: argparse.Namespace) -> None:
    import torch

    from stockade.guardrails.checks.base import CheckContext
    from stockade.guardrails.checks.config import SensitiveDataConfig, Stage
    from stockade.guardrails.checks.sensitive_data.chunking import token_windows
    from stockade.guardrails.checks.sensitive_data.model import _pipeline

    torch.set_num_threads(args.threads)
    text = corpus()
    with tempfile.TemporaryDirectory(prefix="bench-sensitive-") as tmp:
        model = build_model(Path(tmp), text, args.layers, args.hidden)
        from stockade.guardrails.checks.sensitive_data.check import SensitiveDataCheck

        cfg = SensitiveDataConfig(enabled=True, model=model)
        check = SensitiveDataCheck(cfg)
        await check.warmup()
        pipe, _ = _pipeline(model, "cpu")
        ctx = CheckContext(stage=Stage.INPUT)
        print(
            f"model: BERT token classifier, {args.layers} layers, hidden {args.hidden}, random weights; "
            f"windows of {cfg.chunk_tokens} tokens overlapping by {cfg.overlap_tokens}; torch threads "
            f"{args.threads}; load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
        per_kb: list[float] = []
        for kb in (int(s) for s in args.sizes.split(",")):
            sample = (text * (1 + kb * 1024 // len(text)))[: kb * 1024]
            start = time.perf_counter()
            result = await check.run(sample, ctx)
            took = time.perf_counter() - start
            enc = pipe.tokenizer(sample, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
            offsets = [tuple(o) for o in enc["offset_mapping"] if o[1] > o[0]]
            windows = token_windows(offsets, cfg.chunk_tokens, cfg.overlap_tokens)
            start = time.perf_counter()
            pipe([sample[a:b] for a, b in windows], batch_size=8)
            baseline = time.perf_counter() - start
            budget = check.timeout_for(sample, cfg.timeout_s)
            per_kb.append(took / kb)
            print(
                f"{kb:5d} kB ({len(offsets):,} tokens, {len(windows)} windows): check {took:7.2f} s = "
                f"{took / kb * 1e3:6.1f} ms/kB, {kb / took:6.2f} kB/s ({len(result.findings)} findings); "
                f"pipeline alone {baseline:7.2f} s; ratio check / pipeline {took / baseline:.2f}; "
                f"default budget {budget:.0f} s, headroom {budget / took:.1f}x"
            )
        print(
            f"median {statistics.median(per_kb) * 1e3:.1f} ms per kB; the default timeout_per_kb_s of "
            f"{cfg.timeout_per_kb_s:g} s is {cfg.timeout_per_kb_s / statistics.median(per_kb):.1f}x that; "
            f"load average after: {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="4,32,128", help="text sizes in kB, comma-separated")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    asyncio.run(main(parser.parse_args()))
