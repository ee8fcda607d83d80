# Solutions to the exercises of notebook 7 (07_biencoder_zero_shot.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (minilm, dtype, reads,
# far_relevant, runs, per_query, rr, paired). Nothing is trained; the first two cells take up to a
# minute each.

# %% Exercise 1: BiEncoderLongP over this MiniLM
from pyterrier_longdoc import BiEncoderLongP

longp = BiEncoderLongP(minilm, dtype=dtype, batch_size=32)
far_candidates = far_relevant["far"].candidates.drop(columns=["label", "source"])
longp_run = longp(far_candidates)
print(f"LongP reads up to {longp.settings['max_length'] - 2} tokens of a document here (FirstP: {reads})")
both = longp_run.merge(runs["far"]["FirstP"], on=["qid", "docno"], suffixes=("_longp", "_firstp"))
largest = float((both["score_longp"] - both["score_firstp"]).abs().max())
print(f"largest difference between LongP's and FirstP's scores: {largest:.2g}")
assert longp.settings["max_length"] == firstp.settings["max_length"] and largest < 1e-4
# LongP embeds the whole document only up to the model's input length; all-MiniLM-L6-v2 reads 256
# positions, so LongP reads exactly what FirstP reads and gives the same scores: it is at chance on
# the far queries too. LongP differs from FirstP with a long-context embedding model (E5-4K in the
# positional-bias study, 4096 tokens), which reads these whole documents.

# %% Exercise 2: MaxP with FirstP-sized windows
wide_maxp = BiEncoderMaxP(minilm, dtype=dtype, batch_size=32, window=reads, stride=reads)
wide_run = wide_maxp(far_candidates)
wide = float(pt.Experiment([wide_run], far_relevant["far"].topics, far_relevant["far"].qrels, [RR])["RR"].iloc[0])
print(f"far queries: MaxP with {reads}-token windows {wide:.3f}, FirstP {rr('far', 'FirstP'):.3f}, "
      f"MaxP with {maxp.settings['window']}-token windows {rr('far', 'MaxP'):.3f}")
assert wide >= rr("far", "FirstP") + 0.15
# Windows as long as FirstP's input find the far answers too: FirstP's failure is where it reads,
# not how much text one embedding holds.

# %% Exercise 3: how many queries?
needed = {}
for other in ("BM25", "FirstP"):
    difference = per_query["far"]["MaxP"] - per_query["far"][other]
    size = 0.05 if other == "BM25" else abs(difference.mean())
    needed[other] = _stats.queries_needed(size, difference.std(ddof=1))
    print(f"MaxP vs {other}: a difference of {size:.3f} with per-query standard deviation "
          f"{difference.std(ddof=1):.3f} needs about {needed[other]} queries")
assert needed["BM25"] > len(per_query["far"]) >= needed["FirstP"]
# A difference as large as MaxP's over FirstP shows with fewer queries than the notebook used; a
# difference of 0.05 between two strong rankers needs more than it used: its queries tell MaxP and
# BM25 apart only when they differ by more than that.
