# Solutions to the exercises of notebook 6 (06_real_collections.ipynb): the TREC DL 2019 lab.
#
# Cells to run at the end of the notebook, in the same kernel: they use its variables
# (`collection`, `topics`, `qrels`, `top100`, `first_stage`, `text`, `candidates`, `runs`, `found`,
# `documents`, `models`, ...). On a GPU each takes minutes. CI runs them after the notebook on its
# stand-ins (tests/docs/test_tutorials.py), where every number is noise.

# %% Exercise 1: where does MaxP gain over FirstP?
# Per relevant document: where its first matched relevant passage starts. A query goes into the
# "past FirstP" group when one of its matched documents answers only past what FirstP reads: its
# first 477 document tokens (512 with the query's 32 tokens and 3 special tokens), not 512, since
# FirstP's input holds the query too. The earliest start over a query's documents would put nearly
# every query in the first chunk.
#
# What to look for: MaxP should gain more on the queries with a far-answering document. Count the
# queries of each group before reading its mean: on TREC DL 2019 few queries have such a document,
# and a group of a handful of queries shows nothing reliable (notebook 5).
from pyterrier_longdoc.diagnostics import span_positions

firstp_reads = models["FirstP"].chunk_spans("word " * 2000)[0][1]  # the end of its one chunk, in tokens
print(f"FirstP reads the first {firstp_reads} document tokens")
assert STANDIN or firstp_reads == 477
positions = span_positions(found, documents, tokenizer=CROSS_ENCODER)
document_start = positions.groupby(["qid", "docno"])["token_start"].min()  # each document's first matched passage
has_far = (document_start >= firstp_reads).groupby(level="qid").any()
group = has_far.map({True: f"a document answers only past token {firstp_reads}",
                     False: "every document answers within FirstP's input"})
gain = (values["MaxP"] - values["FirstP"]).rename("MaxP - FirstP")
by_group = pd.concat([gain, group.rename("matched relevant documents")], axis=1, join="inner")
table = by_group.groupby("matched relevant documents")["MaxP - FirstP"].agg(["mean", "count"])
assert table["count"].sum() == len(by_group) == has_far.index.isin(gain.index).sum()
table.round(3)

# %% Exercise 2: window size
# The same MaxP over the same cross-encoder, with shorter and longer windows (the stride keeps
# half a window of overlap). `max_doc_tokens` stays 1,431, so every variant reads the same text.
#
# What to look for: the cross-encoder was trained on short MS MARCO passages; windows
# much longer than that dilute the answer with text the model never learned to read, windows much
# shorter can cut it in half. Differences of a few hundredths are within the noise of 43 queries:
# read the p-values.
window_runs = {"MaxP 150/100 (default)": runs["MaxP"]}
for window, stride in ((64, 32), (256, 128)):
    model = MaxP(CROSS_ENCODER, device=DEVICE, dtype=DTYPE, batch_size=BATCH_SIZE, window=window, stride=stride)
    window_runs[f"MaxP {window}/{stride}"] = model(candidates)[["qid", "docno", "score", "rank"]]
pt.Experiment(list(window_runs.values()), topics, qrels, [nDCG @ 10, RR @ 100], names=list(window_runs),
              baseline=0, correction="holm", round=3)

# %% Exercise 3: re-ranking depth
# MaxP re-ranks only the first `depth` documents of the official run (ranks start at 0), the way
# `first_stage % depth >> text >> model` would. R@depth of the cut run is the ceiling of each depth.
#
# What to look for: nDCG@10 rises quickly with the first few dozen documents and then flattens,
# while R@depth keeps rising: the relevant documents found deep in the list rarely reach the top 10.
import matplotlib.pyplot as plt

depths = (2, 4, 8) if STANDIN else (10, 25, 50, 100)
rows = []
for depth in depths:
    shallow = candidates[candidates["rank"] < depth]
    reranked = models["MaxP"](shallow)[["qid", "docno", "score", "rank"]]
    scores = pt.Experiment([reranked, top100[top100["rank"] < depth]], topics, qrels, [nDCG @ 10, R @ depth],
                           names=["MaxP", "first stage"])
    rows.append({"depth": depth, "MaxP nDCG@10": scores["nDCG@10"].iloc[0],
                 "first stage nDCG@10": scores["nDCG@10"].iloc[1], "R@depth (ceiling)": scores[f"R@{depth}"].iloc[1]})
depth_table = pd.DataFrame(rows).set_index("depth")
fig, ax = plt.subplots(figsize=(6, 3))
depth_table.plot(ax=ax, marker="o")
ax.set(xlabel="re-ranking depth", ylabel="value", ylim=(0, 1), title="MaxP against re-ranking depth")
plt.show()
depth_table.round(3)

# %% Exercise 4: k of the k-max average
# k = 1 is MaxP (the best window); a large k approaches the mean of the windows, a SumP-like
# reading that rewards documents with many matching windows.
#
# What to look for: on TREC DL, where relevance is usually pinpointed to one passage, small k
# should be as good as or better than large k; on collections whose relevant documents discuss the
# topic throughout (Robust04, GOV2), larger k and learned aggregation (PARADE) gain, as the PARADE
# paper reports.
kmax_runs = {}
for k in (1, 2, 3, 5):
    model = KMaxAvgP(CROSS_ENCODER, device=DEVICE, dtype=DTYPE, batch_size=BATCH_SIZE, k=k)
    kmax_runs[f"k = {k}"] = model(candidates)[["qid", "docno", "score", "rank"]]
pt.Experiment(list(kmax_runs.values()), topics, qrels, [nDCG @ 10, RR @ 100], names=list(kmax_runs),
              baseline=0, correction="holm", round=3)
