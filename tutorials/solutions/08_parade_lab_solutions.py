# Solutions to the exercises of notebook 8 (08_parade_lab.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (models, MODELS, collection,
# test, groups, test_candidates, runs, random_rr, work, DTYPE, _stats).

# %% Exercise 1: PARADE-Attn's aggregation weights over far documents
import numpy as np
import torch

captured = []


def keep_weights(module, inputs, output):
    features, mask = inputs[0], inputs[1]
    logits = (features.float() @ module.query_vector.float()).masked_fill(~mask, float("-inf"))
    captured.extend(torch.softmax(logits, dim=1).detach().cpu().numpy())


parade = models["ParadeAttn"]
far_relevant = test.far().qrels.query("label > 0")[["qid", "docno"]]
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
print("heaviest window per far document:", np.bincount(heaviest))
print(f"the heaviest window holds the answer in {np.mean(holds_answer):.0%} of the far documents")
# Equal weights (the untrained aggregation starts near them) would make the heaviest window the
# answer's about one time in three: a share well above that says PARADE-Attn learned where to look,
# past the first window, which FirstP never reads. A weight is not a relevance score (the head scores
# the weighted sum), so read the share, not each weight.

# %% Exercise 2: the passage stage alone
from pyterrier_longdoc import FirstP, MaxP

stage = str(work / "FirstP" / "passage-stage")
alone = {"FirstP, passage stage": FirstP(stage, dtype=DTYPE),
         "MaxP, passage stage": MaxP(stage, dtype=DTYPE, window=240, stride=240)}
table = {}
for group, subset in groups.items():
    values = _stats.per_query({**{name: model(test_candidates) for name, model in alone.items()},
                               "FirstP": runs["FirstP"], "MaxP": runs["MaxP"]}, subset, RR)
    table[group] = values.mean()
print(pd.DataFrame(table).round(3))
# The passage stage already ranks: it learned to match a term's entry to "what is <term>" in
# windows, so MaxP over it can find far answers before any document training (compare its far
# column with FirstP's); the document stage moves each model by what the table shows, and model
# selection never keeps a model below its start on validation.

# %% Exercise 3: how small a difference 8 queries can show
sd = (_stats.per_query(runs, groups["far"], RR)["MaxP"] - _stats.per_query(runs, groups["far"], RR)["FirstP"]).std()
for n in (8, 50):
    print(f"{n} queries detect a difference of about {(1.96 + 0.84) * sd / n ** 0.5:.2f} (far, MaxP - FirstP)")
# Only the far gap between FirstP and the models that read the whole document (about half of RR's
# range) survives 8 queries per group; anything of a few hundredths needs hundreds of queries.
