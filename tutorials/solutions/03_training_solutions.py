# Solutions to the exercises of notebook 3 (03_training.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (backbone, collection,
# train_topics, valid_topics, qrels, candidates, options, history, work, test). Exercises 1 and 3-5
# train for an epoch or more (about 20 seconds each).

# %% Exercise 1: the listwise loss with 3 negatives
one_epoch = dict(epochs=1, top_k=6, lr=1e-4, head_lr=2e-3, queries_per_step=4, warmup=0.1, seed=42)
listwise = MaxP(backbone)
listwise_history = listwise.fit(train_topics, qrels, candidates, loss="listwise", negatives=3, **one_epoch)
print("losses:", listwise_history["loss"].round(2).tolist(), f"- chance: ln 4 = {np.log(4):.2f}")
# Softmax cross-entropy over the positive and 3 negatives: equal scores give each document
# probability 1/4, so the loss is -ln(1/4) = ln 4 = 1.39 when the model is no better than chance.

# %% Exercise 2: resume with other options
try:
    MaxP(backbone).fit(train_topics, qrels, candidates, **{**options, "lr": 3e-4})
except ValueError as error:
    print("refused:", error)
# fit refuses: the checkpoints were written with lr=1e-4. Going on with another learning rate
# would silently mix two runs, and the result would match neither setting. A new run needs a new
# checkpoint_dir.

# %% Exercise 3: load a checkpoint and go on training it
steps = sorted(p.name for p in (work / "maxp-run").iterdir() if p.name.startswith("step-"))
print("checkpoints:", steps)
restored = LongDocReranker.from_pretrained(work / "maxp-run" / steps[-1])
continued = restored.fit(valid_topics, qrels, candidates, checkpoint_dir=work / "maxp-continued",
                       **{**one_epoch, "queries_per_step": 2})
print(continued[["step", "loss"]])
# (Training on the validation queries leaves nothing to validate on: in a real study you would
# continue on new training data.)

# %% Exercise 4: easy negatives, the documents of another query
qids = list(train_topics["qid"])
next_query = dict(zip(qids[1:] + qids[:1], qids))  # the documents of query k+1 become query k's
easy_candidates = candidates(train_topics).assign(qid=lambda frame: frame["qid"].map(next_query))
easy = MaxP(backbone)
easy_history = easy.fit(train_topics, qrels, easy_candidates, text=collection.get_text(), **one_epoch)
hard = MaxP(backbone)
hard_history = hard.fit(train_topics, qrels, candidates, **one_epoch)
print("easy negatives:", easy_history["loss"].round(2).tolist())
print("hard negatives:", hard_history["loss"].round(2).tolist())
# Documents of another query do not even mention the query's entity: they teach a model to match
# the entity, which every candidate at test time does, not to find the answer among documents that
# all talk about it. In one epoch neither loss moves much, but on the test queries the model trained
# on easy negatives does worse. With longer training the easy loss falls to 0 fast while the model
# stays poor at the real task: hard negatives are what teach it.
for name, trained in (("easy", easy), ("hard", hard)):
    run = (candidates >> trained)(test.topics)
    print(name, pt.Experiment([run], test.topics, test.qrels, [RR], names=[name], round=3).to_string(index=False))

# %% Exercise 5: FirstP with the same options
from pyterrier_longdoc import FirstP

firstp = FirstP(backbone)
firstp_history = firstp.fit(train_topics, qrels, candidates, **{**options, "checkpoint_dir": work / "firstp-run"})
validation = {name: h.dropna(subset=["RR@10"]).set_index("epoch")["RR@10"]
              for name, h in (("MaxP", history), ("FirstP", firstp_history))}
print(pd.DataFrame(validation))
per_query = pt.Experiment([(candidates >> firstp)(valid_topics)], valid_topics, qrels, [RR], names=["FirstP"],
                          perquery=True)
print(per_query.merge(valid_topics, on="qid")[["qid", "query", "position", "value"]])
# FirstP reads the first 477 document tokens: on the far validation queries the answer lies beyond
# them, so FirstP can only guess, however long it trains (notebook 4).
