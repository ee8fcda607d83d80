# Solutions to the exercises of notebook 8 (08_parade_lab.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (models, reports, MODELS, collection,
# groups, qids, test_candidates, runs, random_rr, work, DTYPE, _stats, RR, pd).

# %% Exercise 1: PARADE-Attn's aggregation weights over far documents
import numpy as np
import torch

captured = []


def keep_weights(module, inputs, output):
    """The aggregator's weights, recomputed from its inputs as its forward computes them."""
    features, mask = inputs[0], inputs[1]
    logits = (features.float() @ module.query_vector.float()).masked_fill(~mask, float("-inf"))
    captured.extend(torch.softmax(logits, dim=1).detach().cpu().numpy())


parade = models["ParadeAttn"]
far_relevant = groups["far"].qrels.query("label > 0")[["qid", "docno"]]
rows = test_candidates.merge(far_relevant, on=["qid", "docno"])
answers = collection.positions.set_index(["qid", "docno"])
heaviest, holds_answer = [], []
hook = parade.model.aggregator.register_forward_hook(keep_weights)
try:
    for i in range(len(rows)):  # one document per call: its weights are the last captured
        row = rows.iloc[[i]]
        parade(row)
        spans = parade.chunk_spans(row["text"].iloc[0])  # token spans of the windows it reads
        window = int(np.argmax(captured[-1][:len(spans)]))
        heaviest.append(window)
        start = answers.loc[(row["qid"].iloc[0], row["docno"].iloc[0]), "token_start"]
        holds_answer.append(spans[window][0] <= start < spans[window][1])
finally:
    hook.remove()
print(f"{len(rows)} far relevant documents among the candidates; heaviest window (0, 1, 2):",
      np.bincount(heaviest, minlength=3))
print(f"the heaviest window holds the answer in {np.mean(holds_answer):.0%} of them; "
      f"mean largest weight {np.mean([w.max() for w in captured]):.2f} (equal weights: 0.33)")
# Equal weights (the untrained aggregation starts near them: its query vector starts near zero) make
# the heaviest window the answer's about one time in three. Compare the share printed here with that,
# and the largest weight with 1/3: a share well above a third says PARADE-Attn learned where to look,
# past the first window that FirstP reads; weights near 1/3 say it still ranks like PARADE-Avg and
# its gains come from the windows' [CLS] vectors. A weight is not a relevance score (the head scores
# the weighted sum), so read the share, not each weight.

# %% Exercise 2: the passage stage alone
for name in MODELS:  # the start of each document stage: the passage stage in that model's form
    stage = reports[name]["document stage"]
    print(f"{name}, validation {stage['metric']}: the passage stage alone {stage['start']:.3f}, "
          f"after its document stage {stage['best']:.3f}")
far_candidates = test_candidates[test_candidates["qid"].isin(qids["far"])]
alone = MaxP(str(work / "FirstP" / "passage-stage"), dtype=DTYPE, window=240, stride=240)
scored = {"MaxP, passage stage only": alone(far_candidates), "MaxP": runs["MaxP"], "ParadeAttn": runs["ParadeAttn"]}
print("far test queries, RR:", _stats.per_query(scored, groups["far"], RR).mean().round(3).to_dict(),
      f"; a random order: {random_rr['far']:.3f}")
# The passage stage already ranks: it learned to match a term's entry to "what is <term>" in windows,
# so MaxP over it finds far answers before any document training (FirstP over it could not: they lie
# beyond its 512 tokens). The validation lines say what each document stage added on held-out
# training queries (PARADE-Attn starts with a new, untrained aggregation, close to PARADE-Avg); model
# selection never keeps a model below its start there, which the test queries can still contradict by
# a few hundredths. Only the far candidates are scored: the question is about the answers that FirstP
# cannot read, and scoring the near ones too would double the exercise's time.

# %% Exercise 3: what 8 test queries per group can show
far = _stats.per_query(runs, groups["far"], RR)
sd = float((far["MaxP"] - far["FirstP"]).std())
for n in (8, 50):
    print(f"{n} queries detect a difference of about {(1.96 + 0.84) * sd / n ** 0.5:.2f} RR "
          f"(far, MaxP - FirstP; 80% power, two-sided 0.05, before any correction)")
print(f"measured far difference: {far['MaxP'].mean() - far['FirstP'].mean():+.3f}; queries that difference needs:",
      _stats.queries_needed(far["MaxP"].mean() - far["FirstP"].mean(), sd))
# Only a gap as large as the far one between FirstP and the models that read the whole document (near
# half of RR's range) survives 8 queries per group, and Holm over the lab's tests asks for more still;
# differences of a few hundredths, as between the three models on near answers, need hundreds.
