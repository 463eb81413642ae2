"""``stockade convert-classifier``: a transformers sequence-classification checkpoint -> a ``model_path``
directory the guardrails classification check runs with onnxruntime (no torch at inference).

Needs ``stockade-guardrails[torch]`` (torch, transformers, onnx) where it runs, once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

CLASSES = ("benign", "injection", "jailbreak", "malicious")


def parse_labels(pairs: list[str]) -> dict[str, str]:
    """``LABEL=class`` pairs; a bad one is a usage error naming it."""
    out: dict[str, str] = {}
    for pair in pairs:
        label, sep, cls = pair.partition("=")
        if not sep or not label or cls not in CLASSES:
            raise typer.BadParameter(f"{pair!r}: expected LABEL=CLASS with CLASS one of {', '.join(CLASSES)}")
        out[label] = cls
    return out


def convert_classifier(
    source: Annotated[Path, typer.Argument(help="Checkpoint directory (save_pretrained layout).")],
    out: Annotated[Path, typer.Argument(help="Directory to write (created).")],
    int8: Annotated[
        bool, typer.Option("--int8/--fp32", help="Quantise the weights to int8 (smaller, faster on CPU).")
    ] = False,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            help="LABEL=CLASS for a model label the defaults do not know (BENIGN/INJECTION/JAILBREAK, "
            "SAFE/INJECTION, LABEL_0/LABEL_1 are known); repeat it.",
        ),
    ] = None,
) -> None:
    """Convert a transformers sequence-classification checkpoint (Prompt Guard 2, ProtectAI v2, PIGuard...)
    to ONNX and write its label map; use the result as guardrails.checks.classification.model_path."""
    from stockade.guardrails.checks.classification.hf_export import convert_checkpoint
    from stockade.guardrails.errors import GuardrailError

    try:
        result = convert_checkpoint(source, out, int8=int8, label_map=parse_labels(label or []))
    except GuardrailError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {result.out} ({'int8' if result.int8 else 'fp32'})")
    for name, cls in result.labels.items():
        typer.echo(f"  {name} -> {cls}")
    typer.echo(f"largest probability difference to the checkpoint: {result.max_prob_diff:.2e}")
