# Solutions to the exercises of notebook 1 (01_quickstart.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (collection, train, test,
# groups, bm25, candidates, warm_start, windows, models, runs, random_rr, work, DTYPE). Each
# exercise takes seconds to a minute; none trains.

# %% Exercise 1: re-rank the top 2 BM25 candidates instead of the top 4
from pyterrier.measures import R

top2 = bm25 % 2 >> collection.text
runs2 = {"BM25": (bm25 % 2)(test.topics), "MaxP": (top2 >> models["MaxP"])(test.topics)}
table2 = pt.Experiment(list(runs2.values()), test.topics, test.qrels, [RR, R @ 2], names=list(runs2), round=3)
print(table2)
# BM25's RR drops only on the queries where it put the answer at rank 3 or 4 (1/3 or 1/4 before,
# 0 now); its order does not change. MaxP's RR drops more: on every such query MaxP now never sees
# the answer, which it would have moved to the top. R@2, the
# share of relevant documents among the candidates, is the ceiling of any re-ranker of the top 2.
top4 = pt.Experiment([runs["BM25"], runs["MaxP"]], test.topics, test.qrels, [RR], names=["BM25", "MaxP"])
lost = top4.set_index("name")["RR"] - table2.set_index("name")["RR"]
print(f"RR lost with the top 2 instead of the top 4: BM25 {lost['BM25']:.3f}, MaxP {lost['MaxP']:.3f}")
assert table2.set_index("name").loc["MaxP", "RR"] <= table2.set_index("name").loc["MaxP", "R@2"] + 1e-9
assert 0 < lost["BM25"] < lost["MaxP"], "MaxP loses more: it would have moved those answers to the top"

# %% Exercise 2: SumP over the warm start, zero-shot
from pyterrier_longdoc import SumP

runs["SumP"] = (candidates >> SumP(warm_start, dtype=DTYPE, **windows))(test.topics)
for group, subset in groups.items():
    print(group, f"(random order {random_rr[group]:.3f})")
    table = pt.Experiment([runs[name] for name in ("FirstP", "MaxP", "SumP")], subset.topics, subset.qrels, [RR],
                          names=["FirstP", "MaxP", "SumP"], round=3)
    print(table)
    assert table.set_index("name").loc["SumP", "RR"] <= table.set_index("name").loc["MaxP", "RR"] + 0.02, group
# SumP adds the scores of every window. Here the answer is one passage, and the other windows of
# every candidate (answer or not) are alike, so the sum carries the windows that answer nothing
# too: expect SumP at or below MaxP (compare the two rows against the random order). SumP gains
# where relevance is spread over several passages of a document, not where it sits in one.

# %% Exercise 3: BM25 as the baseline, Bonferroni's correction
against_bm25 = pt.Experiment(list(runs.values()), test.topics, test.qrels, [RR], names=list(runs),
                             baseline=0, correction="bonferroni")
print(against_bm25.round(3))
against_firstp = pt.Experiment(list(runs.values()), test.topics, test.qrels, [RR], names=list(runs), baseline=1)
holm = pt.Experiment(list(runs.values()), test.topics, test.qrels, [RR], names=list(runs), baseline=0, correction="holm")
firstp_row, bm25_row = against_bm25.set_index("name").loc["FirstP"], against_firstp.set_index("name").loc["BM25"]
assert (firstp_row["RR +"], firstp_row["RR -"]) == (bm25_row["RR -"], bm25_row["RR +"])  # the counts flip
assert abs(firstp_row["RR p-value"] - bm25_row["RR p-value"]) < 1e-12  # the paired test is symmetric
assert (against_bm25["RR p-value corrected"].dropna() >= holm["RR p-value corrected"].dropna() - 1e-12).all()
# The means do not change; the comparisons do. Before, BM25's row counted the queries on which BM25
# beat FirstP ("+") or lost to it ("-"); now FirstP's row counts them from FirstP's side, so the
# same queries appear under the opposite sign, and the p-value of that pair is the same (a paired
# test is symmetric). The other systems are now tested against BM25, so their p-values change.
# Bonferroni multiplies every p-value by the number of comparisons; Holm multiplies only the
# smallest by that number and the next ones by less, so Bonferroni is never less strict than Holm.

# %% Exercise 4: score a text of your own
mine = pd.DataFrame([
    {"qid": "mine", "query": "what color is the bridge of carter", "docno": "answer",
     "text": "the bridge of carter is painted red. everyone in carter knows the bridge is red."},
    {"qid": "mine", "query": "what color is the bridge of carter", "docno": "no-answer",
     "text": "nobody in carter remembers the color of the old fence. the fence was painted long ago."},
])
print(models["MaxP"](mine)[["docno", "score", "rank"]])

# %% Exercise 5: save the fine-tuned PARADE-Attn and load it back
import numpy as np

from pyterrier_longdoc import LongDocReranker

models["ParadeAttn"].save_pretrained(work / "my-parade")
loaded = LongDocReranker.from_pretrained(work / "my-parade", dtype=DTYPE)
sample = candidates(test.topics.head(2))
np.testing.assert_allclose(loaded(sample)["score"], models["ParadeAttn"](sample)["score"], rtol=1e-4, atol=1e-5)
print(type(loaded).__name__, "loaded; same scores")
