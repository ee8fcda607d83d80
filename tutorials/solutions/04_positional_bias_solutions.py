# Solutions to the exercises of notebook 4 (04_positional_bias.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (collection, candidates,
# similarity, models, runs, experiment, passages, passage_qrels, far_topics, minilm). Nothing is trained; each
# cell takes up to a minute.

# %% Exercise 1: other aggregations of the window scores
for aggregation in ("sum", "mean", "kmaxavg"):
    ranker = LongDoc(similarity, aggregation=aggregation, window=100, stride=50)
    runs[f"LongDoc {aggregation}"] = (candidates >> ranker)(collection.topics)
print(experiment(collection.near()).to_string(index=False))
print(experiment(collection.far()).to_string(index=False))
# "max" and "kmaxavg" (the mean of the 3 best windows) keep the answering window's score; "mean"
# dilutes it among a dozen windows that answer nothing, and "sum" adds the scores of all windows,
# so it also rewards long documents. Every document of a query here talks about its entity, so the
# non-answering windows score alike in all of them and the aggregations that average them lose.

# %% Exercise 2: the far variant with first_tokens=256
far_256 = build_far_relevant(passages, far_topics, passage_qrels, tokenizer=minilm,
                             variant="far", first_tokens=256, max_doc_tokens=1024, negatives=3, seed=0)
short_first = LongDoc(similarity, aggregation="first", window=200, stride=200)
rankers = {**models, "FirstP, 200 words": short_first}
unlabelled = far_256.candidates.drop(columns=["label", "source"])
print(pt.Experiment([ranker(unlabelled) for ranker in rankers.values()], far_256.queries, far_256.qrels,
                    [RR], names=list(rankers), round=3).to_string(index=False))
# The relevant passage now starts anywhere from token 256 to near the end (1024 tokens). The FirstP
# of 200 words (about 230 tokens) never reads it; the FirstP of 400 words reads it only when it
# starts early, and then diluted in one embedding of 400 words: both stay near a random order of
# 4 candidates (RR 0.52). MaxP ranks every relevant document first, as before.

# %% Exercise 3: FirstP's window on the near queries
near = collection.near()
windows = {f"first {words} words": LongDoc(similarity, aggregation="first", window=words, stride=words)
           for words in (100, 200, 400)}
print(pt.Experiment([candidates >> ranker for ranker in windows.values()], near.topics, near.qrels, [RR],
                    names=list(windows), round=3).to_string(index=False))
# 100 words miss most near answers (they may start anywhere in the first 300 tokens); 200 words
# miss some; 400 words see them all, but dilute the answer among more text in one embedding.

# %% Exercise 4: answers moved to random places
from pyterrier_longdoc.training import debias_positions

near_candidates = candidates(near.topics)
moved = debias_positions(near_candidates, collection.answers, seed=0)
print("documents changed:", int((moved["text"] != near_candidates["text"]).sum()))
print(pt.Experiment([model(moved) for model in models.values()], near.topics, near.qrels, [RR],
                    names=list(models), round=3).to_string(index=False))
# The relevant passages now sit anywhere in their documents, often beyond what FirstP reads: FirstP
# falls to about chance, while MaxP, which scores every window, loses little.
