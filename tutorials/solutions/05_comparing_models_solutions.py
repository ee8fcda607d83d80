# Solutions to the exercises of notebook 5 (05_comparing_models.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (seeds, per_query, by_seed,
# averaged, groups, tests, comparisons, kept, test_candidates, test, random_rr, summary, seconds,
# points, models, backbone). Exercises 1-3 re-use the per-query values: nothing is trained or run again;
# exercise 4 scores the test candidates once more with a new zero-shot model (under a minute).

# %% Exercise 1: one seed only
seed_columns = [f"seed={s}" for s in seeds]
single = {column: per_query.groupby("name", sort=False)[column].mean() for column in seed_columns}
single["mean over the seeds"] = per_query.groupby("name", sort=False)["value"].mean()
print(pd.DataFrame(single).round(3))
seed_means = per_query.groupby("name", sort=False)[seed_columns].mean()
spread = seed_means.max(axis=1) - seed_means.min(axis=1)
print("spread over seeds, all test queries:")
print(spread.round(3))
bound = spread * (len(seeds) - 1) / len(seeds)  # how far one of n values can lie from their mean
assert (seed_means.sub(single["mean over the seeds"], axis=0).abs().max(axis=1) <= bound + 1e-12).all()
# Each single seed gives its own means; each differs from the mean over the seeds by at most
# (n - 1) / n of the spread (checked above). Where the gap between two models is many times the
# spread (MaxP and FirstP on far queries), any seed tells the same story; for two models closer than
# the spread, single seeds could even reverse their order.

# %% Exercise 2: per-seed significance on the far queries
far_qids = set(groups["far"].topics["qid"])
far = per_query[per_query["qid"].isin(far_qids)].pivot_table(index="qid", columns="name", values=seed_columns)
per_seed_p = {}
for seed_column in seed_columns:
    per_seed_p[seed_column] = ttest_rel(far[seed_column]["MaxP"], far[seed_column]["FirstP"]).pvalue
    print(f"{seed_column}: MaxP - FirstP = {(far[seed_column]['MaxP'] - far[seed_column]['FirstP']).mean():+.3f}, "
          f"p = {per_seed_p[seed_column]:.2g}")
print("significant at 0.05:", sum(p < 0.05 for p in per_seed_p.values()), "of", len(per_seed_p))
# Per-seed p-values (or the spread of the per-seed differences) tell a reader how stable a result is
# over training runs, which the one test on seed-averaged values cannot: averaging first removes the
# seed variance from the test, so a result that holds for one seed in three can still look
# significant on the average.

# %% Exercise 3: the Wilcoxon signed-rank test on the same values
from scipy.stats import wilcoxon

rows = {}
for group in groups:
    values = averaged.loc[group]
    for label, (a, b) in comparisons.items():
        difference = values[a] - values[b]
        wilcoxon_p = 1.0 if (difference == 0).all() else wilcoxon(values[a], values[b]).pvalue  # zeros: no test
        rows[group, label] = {"t-test": tests.loc[(group, label), "p-value"], "Wilcoxon": wilcoxon_p}
both = pd.DataFrame(rows).T
print(both.round(4))
agree = ((both["t-test"] < 0.05) == (both["Wilcoxon"] < 0.05))
print("same verdict at 0.05 (uncorrected):", int(agree.sum()), "of", len(agree))
# The signed-rank test drops the queries whose difference is 0 (many here: both models rank the
# answer first, or both miss it) and uses only the ranks of the others, so it can disagree with the
# t-test on small differences. (Compared uncorrected: swapping the test inside the notebook's family
# would change the family, and its correction, too.)

# %% Exercise 4: MaxP reading the first 512 tokens only
cls, settings = models["MaxP"]
short = cls(backbone, dtype=DTYPE, **settings, max_doc_tokens=512, warn_cropping=False)  # zero-shot, as the start
began = time.perf_counter()
run = short(test_candidates)
seconds["MaxP, first 512 tokens"] = (time.perf_counter() - began) / len(test.topics)
added = {}
for group, subset in groups.items():
    mean, low, high = _stats.measure_interval(_stats.per_query({"short": run}, subset, RR)["short"])
    added[group] = {"RR": mean, "low": low, "high": high, "MaxP, zero-shot": summary.loc[(group, "MaxP, zero-shot"), "mean"],
                    "seconds per query": seconds["MaxP, first 512 tokens"]}
print(pd.DataFrame(added).T.round(3))
print("what it reads of the first candidate:", short.chunk_spans(test_candidates["text"].iloc[0]))
assert abs(added["far"]["RR"] - random_rr["far"]) <= 0.1  # blind beyond token 512, like FirstP
# It embeds three windows per document, the last one of 32 tokens (480-512, printed): cheaper than
# the whole-document MaxP, dearer than FirstP. On far queries the answers start past token 512, so it
# is at the random order, like FirstP. On near queries compare the two columns: a window of a few
# words makes a noisy embedding, which can outscore the answer's window, so reading less is not
# always at least as good where the answer sits early.
