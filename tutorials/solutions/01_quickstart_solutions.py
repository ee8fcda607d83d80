# Solutions to the exercises of notebook 1 (01_quickstart.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (collection, train, test,
# bm25, candidates, backbone, models, training, runs, work). Exercise 2 trains two more models
# (about a minute); the others take seconds.

# %% Exercise 1: re-rank the top 10 BM25 candidates instead of the top 6
candidates10 = bm25 % 10 >> collection.get_text()
runs10 = {"BM25": (bm25 % 10)(test.topics), **{name: (candidates10 >> model)(test.topics) for name, model in models.items()}}
print(pt.Experiment(list(runs10.values()), test.topics, test.qrels, [nDCG @ 10, RR], names=list(runs10), round=3))
# BM25's own nDCG@10 and RR do not change: keeping more documents does not move the relevant one.
# The re-rankers now also see 4 documents of other queries. Trained well, they would rank those
# low; trained for 12 steps, they put some of them first and lose. A deeper candidate list is only
# worth it with a re-ranker good enough for it. And a re-ranker only reorders what the first stage
# gives it: a relevant document at BM25 rank 7 is not among the top 6 candidates, so no re-ranker
# of the top 6 can find it. The depth of re-ranking bounds the recall of the whole pipeline.

# %% Exercise 2: add SumP and ParadeMax, with the same backbone and training
from pyterrier_longdoc import ParadeMax, SumP

for cls in (SumP, ParadeMax):
    model = cls(backbone)
    model.fit(train.topics, train.qrels, candidates, **training)
    models[cls.__name__] = model
    runs[cls.__name__] = (candidates >> model)(test.topics)
print(pt.Experiment(list(runs.values()), test.topics, test.qrels, [nDCG @ 10, RR], names=list(runs),
                    baseline=1, correction="holm", round=3))

# %% Exercise 3: BM25 as the baseline, Bonferroni's correction
print(pt.Experiment(list(runs.values()), test.topics, test.qrels, [nDCG @ 10, RR], names=list(runs),
                    baseline=0, correction="bonferroni", round=3))
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

# %% Exercise 5: save the trained MaxP and load it back
import numpy as np

from pyterrier_longdoc import LongDocReranker

models["MaxP"].save_pretrained(work / "my-maxp")
loaded = LongDocReranker.from_pretrained(work / "my-maxp")
sample = candidates(test.topics.head(2))
np.testing.assert_allclose(loaded(sample)["score"], models["MaxP"](sample)["score"], rtol=1e-5, atol=1e-6)
print(type(loaded).__name__, "loaded; same scores")
