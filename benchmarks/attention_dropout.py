"""A training step with and without attention dropout, side by side (``attention_dropout=0.0``).

PyTorch's fused attention kernels on the CPU take no dropout, so a BERT-style encoder trained
with its own attention dropout (0.1) falls back to computing every attention matrix in full.
This times one training step (forward and backward of the packaged MiniLM, one torch thread) at
the shapes the recipe trains at: 8 x 512 tokens (FirstP's document stage) and 16 x 256 (the
passage stage), the two rates interleaved in one process, and prints the median of each and
their ratio. Writes ``attention-dropout-<date>.txt`` and ``.json`` into ``--results``.

    python benchmarks/attention_dropout.py            # 5 interleaved rounds per shape
    python benchmarks/attention_dropout.py --quick    # tiny random BERT, 2 rounds: a smoke run
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import (  # noqa: E402
    finish_run,
    interleaved,
    median,
    minilm_path,
    run_header,
    set_threads,
    silence_loading,
    table,
    write_tiny_bert,
)

SHAPES = ((8, 512), (16, 256))


def training_step(model, batch):
    import torch

    def step():
        model.zero_grad(set_to_none=True)
        model(input_ids=batch, attention_mask=torch.ones_like(batch)).logits.sum().backward()
    return step


def measure(folder: str, shapes, reps: int) -> list[dict]:
    """Per shape: the median seconds of a training step with the model's attention dropout and with 0."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from pyterrier_longdoc.engine.backbone import training_attention_dropout

    silence_loading()
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1, attn_implementation="sdpa")
    model.train()
    own = model.config.attention_probs_dropout_prob
    rows = []
    for batch_size, tokens in shapes:
        batch = torch.randint(1000, 2000, (batch_size, tokens))
        step = training_step(model, batch)

        def without(model=model, step=step):
            with training_attention_dropout(model, 0.0):
                step()
        step(), without()  # warm-up
        times = interleaved({"own": step, "zero": without}, reps)
        rows.append({"shape": f"{batch_size} x {tokens}", "own_rate": own, "seconds_own": median(times["own"]),
                     "seconds_zero": median(times["zero"]), "ratio": median(times["own"]) / median(times["zero"])})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny random BERT, small shapes, 2 rounds")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args(argv)
    started = time.time()
    threads = set_threads(1)
    if args.quick:
        import tempfile

        folder = str(write_tiny_bert(Path(tempfile.mkdtemp()) / "tiny", attention_dropout=0.1))
        shapes, reps = ((2, 64),), 2
    else:
        folder, shapes, reps = minilm_path(), SHAPES, args.reps
    rows = measure(folder, shapes, reps)
    header = f"{run_header(threads)}; {reps} interleaved rounds"
    text = table(["shape (batch x tokens)", "attention dropout", "step s (own rate)", "step s (0)", "own / 0"],
                 [[r["shape"], r["own_rate"], round(r["seconds_own"], 2), round(r["seconds_zero"], 2),
                   f"{r['ratio']:.2f}x"] for r in rows],
                 title="Training step, forward and backward, the model's attention dropout against 0")
    took = f"took {time.time() - started:.0f} s"
    return finish_run(None if args.quick else args.results, "attention-dropout", ".txt", header, text, rows, took)


if __name__ == "__main__":
    sys.exit(main())
