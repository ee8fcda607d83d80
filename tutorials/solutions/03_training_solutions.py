# Solutions to the exercises of notebook 3 (03_training.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (backbone, windows, DTYPE,
# collection, train_topics, valid_topics, qrels, candidates, options, history, model, zero_shot,
# test_candidates, groups, work). Exercises 1 and 3 train for an epoch on a few queries (seconds each).

# %% Exercise 1: the library's listwise loss with 3 negatives, unscaled
few = train_topics.head(16)
one_epoch = dict(epochs=1, top_k=5, lr=2e-5, queries_per_step=4, warmup=0.1, seed=42, attention_dropout=0.0)
listwise = BiEncoderMaxP(backbone, dtype=DTYPE, **windows)
listwise_history = listwise.fit(few, qrels, candidates, loss="listwise", negatives=3, **one_epoch)
print("losses per query:", listwise_history["loss"].round(3).tolist(), f"- chance: ln 4 = {np.log(4):.3f}")
# Softmax cross-entropy over the positive and 3 negatives: equal scores give each document
# probability 1/4, so the loss is -ln(1/4) = ln 4 = 1.386 per query when the model is no better than
# chance. The library's "listwise" loss takes the scores as they are, and a bi-encoder's scores are
# cosine similarities that differ by hundredths between the candidates of a query: the softmax is
# nearly flat, the loss stays within a few hundredths of ln 4 and its gradients are small. That is
# why the notebook scales the cosines by 20 first, as sentence-transformers' contrastive losses do.
assert abs(listwise_history["loss"].mean() - np.log(4)) < 0.1

# %% Exercise 2: resume with other options
try:
    BiEncoderMaxP(backbone, dtype=DTYPE, **windows).fit(train_topics, qrels, candidates, **{**options, "lr": 1e-4})
    raise AssertionError("fit should have refused")
except ValueError as error:
    print("refused:", error)
# fit refuses: the checkpoints were written with lr=2e-5. Going on with another learning rate
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
# With model selection, fit rewrites the newest checkpoint with the model it ended with (the
# selected one), so it scores like the trained model; the one before it is kept in case the newest
# is damaged. Older steps are deleted: to keep one, copy its directory while training runs (a
# `callback` can do it). Training on the validation queries leaves nothing to validate on: in a
# real study you would continue on new training data.

# %% Exercise 4: easy negatives, the documents of another query
qids = list(few["qid"])
next_query = dict(zip(qids[1:] + qids[:1], qids))  # the documents of query k+1 become query k's
hard_candidates = candidates(few)
other = hard_candidates.assign(qid=lambda frame: frame["qid"].map(next_query)).drop(columns="query").merge(
    few[["qid", "query"]], on="qid")
answer_documents = set(qrels.loc[qrels["label"] > 0, "docno"])
positives = hard_candidates[hard_candidates["docno"].isin(answer_documents)]
start = BiEncoderMaxP(backbone, dtype=DTYPE, **windows)


def margins(negatives):
    """Per query: the relevant document's score minus the best negative's, as the zero-shot model scores them."""
    negatives = negatives[~negatives["docno"].isin(answer_documents)]
    best_negative = start(negatives).groupby("qid")["score"].max()
    return (start(positives).set_index("qid")["score"] - best_negative).dropna()


margin = {"hard (the query's own candidates)": margins(hard_candidates),
          "easy (another query's non-relevant documents)": margins(other)}
for kind, values in margin.items():
    print(f"{kind}: relevant document ahead on {(values > 0).mean():.0%} of {len(values)} queries, "
          f"by {values.mean():+.3f} on average")
hard, easy = (values.mean() for values in margin.values())
assert abs(easy - hard) < 0.05 and (margin["easy (another query's non-relevant documents)"] > 0).mean() < 0.75
# For this zero-shot one-layer model, documents about another entity are hardly easier than the
# query's own candidates: about the same margin, and the relevant document is ahead of the best of
# them on well under three queries in four. One layer of MiniLM embeds a window much like an average
# of its words, and every document of this collection is full of answer-shaped passages about some
# entity and attribute: the model matches the query's words only loosely. So both kinds of negative
# leave it something to learn; which negatives are "easy" depends on what the model already knows,
# so measure it, as here, rather than assume it.

# %% Exercise 5: the zero-shot start's query controls, beside the fine-tuned model's
start_controls = query_controls(zero_shot, test_candidates, qrels, groups={g: s.topics["qid"] for g, s in groups.items()})
both = pd.concat({"zero-shot": start_controls, "fine-tuned": controls}, names=["model", None]).droplevel(1)
print(both.round(3))
for group in groups:
    print(f"zero-shot MaxP, {group} queries: reads the query: {reads_the_query(start_controls[start_controls['group'] == group])}")
real = both[both["ranking"] == "real query"].set_index("group", append=True)["RR"]
print("real query RR, fine-tuned minus zero-shot:", (real["fine-tuned"] - real["zero-shot"]).round(3).to_dict())
# (the zero-shot model kept its documents' window embeddings from section 6, so its controls cost
# only the queries'). Both read the query: each control falls to about a random order, well below
# the real query. Fine-tuning raised the real query's RR (on average over the two groups: section 6's
# gain) while the controls stay near a random order: what it learned is tied to the query, not to
# the shape or the place of an answer.
assert all(reads_the_query(start_controls[start_controls["group"] == group]) for group in groups)
assert (real["fine-tuned"] - real["zero-shot"]).mean() > 0
