"""Scale-out: training in 2 processes (gloo on CPU), inference on several devices and under .parallel()."""
import json
import socket

import numpy as np
import pandas as pd
import pytest
import torch
import torch.multiprocessing as mp

import pyterrier_longdoc as pl
from test_training import SETTINGS, toy_task

OPTIONS = dict(epochs=2, queries_per_step=4, queries_per_forward=1, lr=1e-3, head_lr=1e-2, seed=5)


def new_model(tiny_bert):
    torch.manual_seed(0)
    return pl.ParadeAttn(tiny_bert, window=12, stride=6, **SETTINGS)


def train_in_process(rank, world, port, tiny_bert, out):
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                         world_size=world)
    try:
        torch.manual_seed(rank)  # a different fresh head in each process: fit must share rank 0's
        model = pl.ParadeAttn(tiny_bert, window=12, stride=6, **SETTINGS)
        if rank == 0:
            model.model.load_state_dict(new_model(tiny_bert).model.state_dict())
        history = model.fit(*toy_task(), **OPTIONS)
        with open(f"{out}.{rank}", "w") as f:
            json.dump({"loss": history["loss"].tolist(), "scores": model(frame())["score"].tolist()}, f)
    finally:
        torch.distributed.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_train_like_one_with_the_same_global_batch(tiny_bert, tmp_path):
    single = new_model(tiny_bert)
    expected = single.fit(*toy_task(), **OPTIONS)["loss"].tolist()
    out = str(tmp_path / "result")
    mp.spawn(train_in_process, args=(2, free_port(), tiny_bert, out), nprocs=2, join=True)
    results = [json.load(open(f"{out}.{rank}")) for rank in (0, 1)]
    for result in results:
        np.testing.assert_allclose(result["loss"], expected, rtol=1e-4, atol=1e-5)
    assert results[0]["scores"] == results[1]["scores"]  # the processes hold the same model
    # Weights whose gradient is zero but for rounding (the head's bias under a pairwise loss,
    # attention key biases) move by rounding noise that Adam scales up to the learning rate;
    # they shift every score alike, so compare the scores up to that shift.
    distributed, alone = np.array(results[0]["scores"]), single(frame())["score"].values
    np.testing.assert_allclose(distributed - distributed.mean(), alone - alone.mean(), atol=1e-3)


def frame(n=24):
    return pd.DataFrame({"qid": [str(i % 4) for i in range(n)], "query": ["red cat"] * n,
                         "docno": [f"d{i}" for i in range(n)], "text": ["the red cat sat " * (i + 1) for i in range(n)]})


def test_several_devices_give_the_same_scores(tiny_bert):
    model = new_model(tiny_bert)
    expected = model(frame())["score"].values
    model.devices = [torch.device("cpu"), torch.device("cpu")]  # CPU stand-ins for two GPUs
    model.batch_size = 3
    np.testing.assert_allclose(model(frame())["score"].values, expected, atol=1e-6)
    # the copies follow the weights: after a change, they are rebuilt
    with torch.no_grad():
        model.model.aggregator.head.classifier.bias += 1.0  # the score's own bias
    np.testing.assert_allclose(model(frame())["score"].values, expected + 1.0, atol=1e-5)


def test_int8_inference_agrees_with_fp32_rankings(tiny_bert, tmp_path):
    from conftest import WORDS

    rng = np.random.default_rng(0)
    varied = frame().assign(text=[" ".join(rng.choice(WORDS, size=rng.integers(5, 60))) for _ in range(24)])
    new_model(tiny_bert).save_pretrained(tmp_path / "m")
    fp32 = pl.ParadeAttn(tmp_path / "m")(varied)
    int8 = pl.ParadeAttn(tmp_path / "m", dtype="int8")(varied)
    from scipy.stats import kendalltau

    taus = [kendalltau(fp32[fp32.qid == q]["score"], int8[int8.qid == q]["score"]).statistic for q in "0123"]
    # a random tiny model is far more sensitive to rounding than a trained one: benchmarks/run.py
    # measures the agreement that matters, MiniLM's (target Kendall tau >= 0.99)
    assert np.mean(taus) >= 0.8
    assert not (fp32["score"].values == int8["score"].values).all()  # it did run quantized
    with pytest.raises(ValueError, match="CPU only"):
        pl.ParadeAttn(tmp_path / "m", dtype="int8", device="meta")


def test_parallel_gives_the_same_scores(tiny_bert):
    model = new_model(tiny_bert)
    expected = model(frame()).sort_values("docno")["score"].values
    with pytest.warns(UserWarning, match="experimental"):
        parallel = model.parallel(2)
    np.testing.assert_allclose(parallel(frame()).sort_values("docno")["score"].values, expected, atol=1e-6)
