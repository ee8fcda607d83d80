# Solutions to the exercises of notebook 3 (03_training.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (backbone, warm_start, windows,
# DTYPE, collection, train_topics, valid_topics, qrels, candidates, options, history, model, work,
# test). Exercises 1 and 3 train for an epoch on a few queries (under a minute each).

# %% Exercise 1: the listwise loss with 3 negatives
few = train_topics.head(16)
one_epoch = dict(epochs=1, top_k=4, lr=3e-5, head_lr=5e-4, queries_per_step=4, warmup=0.1, seed=42,
                 attention_dropout=0.0)
listwise = MaxP(warm_start, dtype=DTYPE, **windows)
listwise_history = listwise.fit(few, qrels, candidates, loss="listwise", negatives=3, **one_epoch)
print("losses:", listwise_history["loss"].round(2).tolist(), f"- chance: ln 4 = {np.log(4):.2f}")
# Softmax cross-entropy over the positive and 3 negatives: equal scores give each document
# probability 1/4, so the loss is -ln(1/4) = ln 4 = 1.39 when the model is no better than chance.
# Started from the warm start, the losses are already below it.
assert listwise_history["loss"].mean() < np.log(4)

# %% Exercise 2: resume with other options
try:
    MaxP(warm_start, dtype=DTYPE, **windows).fit(train_topics, qrels, candidates, **{**options, "lr": 1e-4})
    raise AssertionError("fit should have refused")
except ValueError as error:
    print("refused:", error)
# fit refuses: the checkpoints were written with lr=3e-5. Going on with another learning rate
# would silently mix two runs, and the result would match neither setting. A new run needs a new
# checkpoint_dir.

# %% Exercise 3: load the checkpoint fit kept, and go on training it
steps = sorted(p.name for p in (work / "maxp-run").iterdir() if p.name.startswith("step-"))
print("checkpoints:", steps)  # fit keeps the two newest
assert len(steps) == 2 and steps[-1] == f"step-{len(history):06d}", "the newest is the last step's"
restored = LongDocReranker.from_pretrained(work / "maxp-run" / steps[-1], dtype=DTYPE)
sample = candidates(valid_topics.head(2))
np.testing.assert_allclose(restored(sample)["score"], model(sample)["score"], rtol=1e-4, atol=1e-5)
continued = restored.fit(valid_topics, qrels, candidates, checkpoint_dir=work / "maxp-continued",
                         **{**one_epoch, "queries_per_step": 2})
print(continued[["step", "loss"]])
# The newest checkpoint is the trained model itself (same scores); the one before it is kept in
# case the newest is damaged. Older steps are deleted: to keep one, copy its directory while
# training runs (a `callback` can do it). Training
# on the validation queries leaves nothing to validate on: in a real study you would continue on
# new training data.

# %% Exercise 4: easy negatives, the documents of another query
qids = list(few["qid"])
next_query = dict(zip(qids[1:] + qids[:1], qids))  # the documents of query k+1 become query k's
hard_candidates = candidates(few)
other = hard_candidates.assign(qid=lambda frame: frame["qid"].map(next_query)).drop(columns="query").merge(
    few[["qid", "query"]], on="qid")
answer_documents = set(qrels.loc[qrels["label"] > 0, "docno"])
positives = hard_candidates[hard_candidates["docno"].isin(answer_documents)]
start = MaxP(warm_start, dtype=DTYPE, **windows)


def margins(negatives):
    """Per query: the relevant document's score minus the best negative's, as the warm start scores them."""
    negatives = negatives[~negatives[["qid", "docno"]].apply(tuple, axis=1).isin(set(zip(positives["qid"], positives["docno"])))]
    best_negative = start(negatives).groupby("qid")["score"].max()
    return (start(positives).set_index("qid")["score"] - best_negative).dropna()


kinds = {"hard (same query)": hard_candidates,
         "easy (another query's non-relevant documents)": other[~other["docno"].isin(answer_documents)],
         "another query's answer document": other[other["docno"].isin(answer_documents)]}
margin = {kind: margins(negatives) for kind, negatives in kinds.items()}
for kind, values in margin.items():
    print(f"{kind}: relevant document ahead on {(values > 0).mean():.0%} of {len(values)} queries, "
          f"by {values.mean():+.3f} on average")
hard, easy, other_answer = (values.mean() for values in margin.values())
assert other_answer < min(hard, easy) - 0.04 and abs(other_answer) < 0.05
assert abs(hard - easy) < 0.04  # about the same margin
assert 0.3 <= (margin["another query's answer document"] > 0).mean() <= 0.7  # about half of the queries
# For this warm start, another query's non-relevant documents are no easier than the hard negatives
# (about the same margin), and another query's answer document is a tie: the relevant document is
# ahead on about half of the queries. Its passage training only ever contrasted answers with text
# about the same entity, so it learned what an answer looks like (a dense block of sentences on one
# attribute), not whose answer it is. So the pairs that leave it the most to learn are the answers
# of other queries: training on them would teach it to check the entity and the attribute. Which
# negatives are "easy" depends on what the model already knows; measure it as here rather than
# assume it.

# %% Exercise 5: FirstP over the warm start, query by query on the validation queries
from pyterrier_longdoc import FirstP

firstp = FirstP(warm_start, dtype=DTYPE)
validation = pt.Experiment([(candidates >> firstp)(valid_topics), (candidates >> model)(valid_topics)],
                           valid_topics, qrels, [RR], names=["FirstP", "MaxP"], perquery=True)
by_query = validation.pivot_table(index="qid", columns="name", values="value").join(
    valid_topics.set_index("qid")[["query", "position"]])
print(by_query)
means = by_query.groupby("position")[["FirstP", "MaxP"]].mean()
print(means.round(3))
assert means.loc["far", "FirstP"] <= means.loc["far", "MaxP"] - 0.3 and means.loc["near", "FirstP"] >= 0.6
# FirstP reads the first 477 document tokens: on the far validation queries the answer lies beyond
# them, so FirstP can only guess, however long it trains (notebook 4). With 5 queries per group,
# only a gap this large can be read from the table.
