"""The CPU runtimes a user who wants speed picks for a cross-encoder: ONNX Runtime (fp32 with its
graph optimisations, and int8 dynamic quantisation) and OpenVINO, on the very cross-encoder
``LongDocReranker.save_cross_encoder`` writes, scoring the same (query, window) pairs.

sentence-transformers reaches them through ``CrossEncoder(..., backend="onnx" | "openvino")``,
which needs ``optimum-onnx`` / ``optimum-intel``; with transformers 5 those cannot be installed
(``optimum-onnx`` pins transformers < 4.58, ``optimum-intel`` replaces torch), so the model is
exported here with ``torch.onnx.export`` (the exporter optimum calls too) and run by the same
runtimes: ONNX Runtime with all graph optimisations (what optimum's O1-O3 levels configure),
``onnxruntime.quantization.quantize_dynamic`` (optimum's ``avx512_vnni`` int8 config is dynamic
quantisation of the MatMuls as well), and OpenVINO reading the ONNX file. Batches are made as
``CrossEncoder.predict`` makes them (pairs sorted by length, padded per batch).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def export_onnx(cross_encoder_dir: str | Path, out: str | Path) -> Path:
    """The ``*ForSequenceClassification`` model of ``cross_encoder_dir`` as an ONNX file with
    dynamic batch and sequence axes (inputs ``input_ids, attention_mask, token_type_ids``,
    output ``logits``)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    out = Path(out)
    model = AutoModelForSequenceClassification.from_pretrained(str(cross_encoder_dir), attn_implementation="eager")
    model.eval()
    example = {name: torch.ones((2, 16), dtype=torch.long) for name in INPUTS}
    example["token_type_ids"] = torch.zeros((2, 16), dtype=torch.long)
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=512)
    shapes = {name: {0: batch, 1: length} for name in INPUTS}
    with torch.inference_mode():
        torch.onnx.export(model, (), str(out), kwargs=example, input_names=list(INPUTS), output_names=["logits"],
                          dynamic_shapes=shapes, dynamo=True, external_data=False)
    return out


def ort_session(path: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    return lambda feeds: session.run(["logits"], {k: v for k, v in feeds.items() if k in names})[0]


def quantize_int8(path: Path, out: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(path), str(out), weight_type=QuantType.QInt8)
    return out


def openvino_model(path: Path, threads: int):
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                     "INFERENCE_PRECISION_HINT": "f32"})
    names = {i.get_any_name() for i in compiled.inputs}
    request = compiled.create_infer_request()

    def run(feeds):
        result = request.infer({k: v for k, v in feeds.items() if k in names})
        return next(iter(result.values()))
    return run


def predict(run: Callable[[dict], np.ndarray], tokenizer, pairs: list[tuple[str, str]], batch_size: int) -> np.ndarray:
    """Scores of ``pairs``, batched as ``CrossEncoder.predict`` batches them (longest text first)."""
    order = np.argsort([-len(q) - len(d) for q, d in pairs], kind="stable")
    scores = np.empty(len(pairs), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        index = order[start:start + batch_size]
        feeds = tokenizer([pairs[i][0] for i in index], [pairs[i][1] for i in index], padding=True, truncation=True,
                          max_length=512, return_tensors="np")
        feeds = {k: v.astype(np.int64) for k, v in feeds.items()}
        if "token_type_ids" not in feeds:
            feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
        scores[index] = run(feeds)[:, -1]
    return scores


def peers(cross_encoder_dir: str | Path, workdir: str | Path, threads: int) -> tuple[dict[str, Callable], dict[str, str]]:
    """``{name: run(feeds) -> logits}`` of every peer that could be built here, and
    ``{name: error}`` of those that could not."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    runs, errors = {}, {}
    try:
        fp32 = export_onnx(cross_encoder_dir, workdir / "model.onnx")
    except Exception as error:  # noqa: BLE001 - reported in the table
        return {}, {"onnx export": f"{type(error).__name__}: {error}"[:120]}
    builders = {
        "onnxruntime fp32": lambda: ort_session(fp32, threads),
        "onnxruntime int8": lambda: ort_session(quantize_int8(fp32, workdir / "model-int8.onnx"), threads),
        "openvino fp32": lambda: openvino_model(fp32, threads),
    }
    for name, build in builders.items():
        try:
            runs[name] = build()
        except Exception as error:  # noqa: BLE001 - e.g. openvino not installed
            errors[name] = f"{type(error).__name__}: {error}"[:120]
    return runs, errors
