# Solutions to the exercises of notebook 4 (04_positional_bias.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (collection, candidates,
# similarity, models, runs, experiment, passages, passage_qrels, far_topics, minilm). Nothing is trained; each
# cell takes up to a minute.

# %% Exercise 1: other aggregations of the window scores
for aggregation in ("sum", "mean", "kmaxavg"):
    ranker = LongDoc(similarity, aggregation=aggregation, window_words=100, stride_words=50)
    runs[f"LongDoc {aggregation}"] = (candidates >> ranker)(collection.topics)
for subset in (collection.near(), collection.far()):
    table = experiment(subset)
    print(table.to_string(index=False))
    assert max(rr(table, "LongDoc mean"), rr(table, "LongDoc sum")) < min(rr(table, "MaxP"), rr(table, "LongDoc kmaxavg"))
# "max" and "kmaxavg" (the mean of the 3 best windows) keep the answering window's score; "mean"
# dilutes it among a dozen windows that answer nothing, and "sum" adds the scores of all windows,
# so it also rewards long documents. Every document of a query here talks about its entity, so the
# non-answering windows score alike in all of them and the aggregations that average them lose.

# %% Exercise 2: the far variant with first_tokens=256
far_256 = build_far_relevant(passages, far_topics, passage_qrels, tokenizer=minilm,
                             variant="far", first_tokens=256, max_doc_tokens=1024, negatives=3, seed=0)
short_first = LongDoc(similarity, aggregation="first", window_words=200, stride_words=200)
rankers = {**models, "FirstP, 200 words": short_first}
unlabelled = far_256.candidates.drop(columns=["label", "source"])
far_table = pt.Experiment([ranker(unlabelled) for ranker in rankers.values()], far_256.queries, far_256.qrels,
                          [RR], names=list(rankers), round=3)
print(far_table.to_string(index=False))
assert (far_256.candidates.groupby("qid").size() == 4).all()
chance = sum(1 / k for k in range(1, 5)) / 4  # a random order of 4 candidates, one relevant: 0.52
assert all(abs(rr(far_table, name) - chance) <= 0.12 for name in ("FirstP", "FirstP, 200 words"))
assert rr(far_table, "MaxP") >= 0.85
# The relevant passage now starts anywhere from token 256 to near the end (1024 tokens). The FirstP
# of 200 words (about 230 tokens) never reads it; the FirstP of 400 words reads it only when it
# starts early, and then diluted in one embedding of 400 words: both stay near a random order of
# 4 candidates (RR 0.52). MaxP stays far above both (RR 0.85 or more), as in the far variant above.

# %% Exercise 3: FirstP's window on the near queries
near = collection.near()
texts = collection.docs.set_index("docno")["text"]
windows = {f"first {words} words": LongDoc(similarity, aggregation="first", window_words=words, stride_words=words)
           for words in (100, 200, 400)}
print(pt.Experiment([candidates >> ranker for ranker in windows.values()], near.topics, near.qrels, [RR],
                    names=list(windows), round=3).to_string(index=False))
near_answers = collection.answers[collection.answers["qid"].isin(set(near.topics["qid"]))]
answer_ends = [len(texts[d][:e].split()) for d, e in zip(near_answers["docno"], near_answers["end_char"])]
within = {words: np.mean([end <= words for end in answer_ends]) for words in (100, 200, 400)}
print("near answers that end within the first 100, 200, 400 words:", {w: f"{s:.0%}" for w, s in within.items()})
assert within[100] < 0.5 and 0 < within[200] < 1 and within[400] == 1
# 100 words miss most near answers (they start anywhere in the first 256 tokens); 200 words miss
# some; 400 words see them all, but dilute the answer among more text in one embedding.

# %% Exercise 4: answers moved to random places
from pyterrier_longdoc.training import debias_positions

near_candidates = candidates(near.topics)
moved = debias_positions(near_candidates, collection.answers, seed=0)
print("documents changed:", int((moved["text"] != near_candidates["text"]).sum()))
answer_text = {qid: texts[d][s:e] for qid, d, s, e in collection.answers[["qid", "docno", "start_char", "end_char"]].itertuples(index=False)}
relevant_moved = moved.merge(collection.qrels.query("label > 0")[["qid", "docno"]])
ends = [len(text[:text.find(answer_text[qid])].split()) + len(answer_text[qid].split())
        for qid, text in zip(relevant_moved["qid"], relevant_moved["text"])]
readable = np.mean([end <= 400 for end in ends])
print(f"{readable:.0%} of the moved answers end within FirstP's 400 words")
moved_table = pt.Experiment([model(moved) for model in models.values()], near.topics, near.qrels, [RR],
                            names=list(models), round=3).set_index("name")["RR"]
print(moved_table.to_string())
assert 0.3 <= readable <= 0.8  # documents of 600-700 words: a random place is often still in the first 400
assert moved_table["FirstP"] <= rr(near_table, "FirstP") - 0.1  # FirstP loses much
assert moved_table["MaxP"] >= rr(near_table, "MaxP") - 0.1  # MaxP scores every window: it loses little
# The moved answers sit anywhere in their 600-700-word documents; about half still end within the
# 400 words FirstP reads, and there one embedding of 400 words dilutes them, as on the near queries;
# the rest it never reads. Its RR falls by 0.1 or more (to about a random order's 0.52 in the saved
# run). MaxP, which scores every window, loses little.
