# Solutions to the exercises of notebook 1 (01_quickstart.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (collection, test, groups, qids,
# bm25, candidates, candidate_frame, models, runs, random_rr, work, DTYPE). Each exercise takes
# seconds: the bi-encoders keep the window embeddings of the documents they have read, and none trains.

# %% Exercise 1: re-rank the top 2 BM25 candidates instead of the top 5
from pyterrier.measures import R

top2 = bm25 % 2 >> collection.text
runs2 = {"BM25": (bm25 % 2)(test.topics), "MaxP": (top2 >> models["MaxP"])(test.topics)}
table2 = pt.Experiment(list(runs2.values()), test.topics, test.qrels, [RR, R @ 2], names=list(runs2), round=3)
print(table2)
# BM25's RR drops only on the queries where it put the answer at rank 3 to 5 (1/3 to 1/5 before, 0
# now); its order does not change. R@2, the share of relevant documents among the candidates, is the
# ceiling of any re-ranker of the top 2: a document BM25 ranked third is not among them. MaxP's RR
# drops on the queries where it had moved such an answer up, and rises where it had pushed an answer
# that BM25 ranked first or second below a negative that is now gone.
top5 = pt.Experiment([runs["BM25"], runs["MaxP"]], test.topics, test.qrels, [RR], names=["BM25", "MaxP"])
lost = top5.set_index("name")["RR"] - table2.set_index("name")["RR"]
print(f"RR lost with the top 2 instead of the top 5: BM25 {lost['BM25']:.3f}, MaxP {lost['MaxP']:.3f}")
assert table2.set_index("name").loc["MaxP", "RR"] <= table2.set_index("name").loc["MaxP", "R@2"] + 1e-9
assert lost["BM25"] > 0

# %% Exercise 2: a ranker blind to the query, caught by the controls
import re

ATTRIBUTE_WORDS = re.compile(r"\b(color|painted|built|visitors|made of|takes care|tall|opened)\b")


def answer_shape(row):
    """How many sentences name an attribute: what an answer looks like, whatever the query."""
    return float(sum(bool(ATTRIBUTE_WORDS.search(sentence)) for sentence in row["text"].split(".")))


shape = pt.apply.doc_score(answer_shape)
blind = query_controls(shape, candidate_frame, test.qrels, groups=qids)
print(blind.round(3))
print("reads the query:", reads_the_query(blind))
assert not reads_the_query(blind)
real = blind[blind["ranking"] == "real query"].set_index("group")["RR"]
constant = blind[blind["ranking"] == "constant query"].set_index("group")["RR"]
assert (real == constant).all()  # the query changes nothing: every control equals the real query
# The scores do not depend on the query, so "another query's text" and the constant query rank
# exactly as the real one: the difference is 0 and the paired test cannot reject (the p-value is
# undefined or 1), so the verdict's first check fails in every group. On this collection the shape
# of an answer is in every document, so this ranker is also near a random order; on a collection
# where only the relevant document held an answer-shaped passage it would rank well, and only the
# controls would show that it never read the query.

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
    {"qid": "mine", "query": "what color is the bridge of carter", "docno": "another entity",
     "text": "the bridge of nelson is painted green. everyone in nelson knows the bridge is green."},
])
print(models["MaxP"](mine)[["docno", "score", "rank"]])

# %% Exercise 5: save MaxP and load it back
import numpy as np

from pyterrier_longdoc import LongDocReranker

models["MaxP"].save_pretrained(work / "my-maxp")
loaded = LongDocReranker.from_pretrained(work / "my-maxp", dtype=DTYPE)
sample = candidates(test.topics.head(2))
np.testing.assert_allclose(loaded(sample)["score"], models["MaxP"](sample)["score"], rtol=1e-4, atol=1e-5)
print(type(loaded).__name__, "loaded; same scores")
