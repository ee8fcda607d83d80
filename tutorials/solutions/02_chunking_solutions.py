# Solutions to the exercises of notebook 2 (02_chunking.ipynb).
#
# Run these cells at the end of the notebook: they use its variables (minilm, collection, models,
# texts, seen, reads_answer). Nothing is trained; each cell takes seconds.

# %% Exercise 1: how many windows does MaxP encode of a 1,000-token document?
# Windows start every 100 tokens while a window still adds tokens no earlier one covered: starts
# 0, 100, ..., 900 (the window at 900 covers 900-1000; one at 1000 would add nothing). 10 windows.
spans = models["MaxP"].chunk_spans(" ".join(["red"] * 1000))
print(len(spans), "windows:", spans)
assert len(spans) == 10 and spans[-1] == (900, 1000)

# %% Exercise 2: ParadeAttn with at most 4 windows, "first" against "first_last_even"
four = {
    "4 windows, first": ParadeAttn(minilm, max_chunks=4, chunk_selection="first"),
    "4 windows, first_last_even": ParadeAttn(minilm, max_chunks=4, chunk_selection="first_last_even"),
}
for name, model in four.items():
    seen[name] = reads_answer(model)
four_reads = seen.groupby("position")[list(four)].mean()
print(four_reads.round(2))
assert four_reads.loc["far", "4 windows, first"] == 0 and four_reads.loc["near", "4 windows, first"] == 1
assert (four_reads["4 windows, first_last_even"] < 1).all()
# "first" reads only the first 4 windows (tokens 0-375): it misses every far answer, like FirstP.
# "first_last_even" spreads its 4 windows over the whole document and misses answers, near or far,
# that fall in the gaps between them.

# %% Exercise 3: tokens encoded per document against the stride
strides = [25, 50, 75, 100, 125, 150]
encoded = []
for stride in strides:
    model = MaxP(minilm, window=150, stride=stride)
    encoded.append(np.mean([sum(end - start for start, end in model.chunk_spans(text)) for text in texts]))
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(strides, encoded, marker="o")
ax.set(xlabel="stride (window 150)", ylabel="document tokens encoded per document")
plt.show()
assert all(a > b for a, b in zip(encoded, encoded[1:]))  # a longer stride encodes less
assert 5 <= encoded[0] / encoded[-1] <= 6.5  # stride 25 against disjoint windows: about 150 / 25 = 6 times
# About window / stride times the document length: stride 25 encodes every token 6 times.

# %% Exercise 4: FirstP with max_length=256
short = FirstP(minilm, max_length=256)
print("reads", short.chunk_spans(texts.iloc[0])[0], "of each document")  # 256 - 32 query - 3 special
seen["FirstP, 256"] = reads_answer(short)
short_reads = seen.groupby("position")["FirstP, 256"].mean()
print(short_reads.round(2))
assert short.chunk_spans(texts.iloc[0])[0] == (0, 221)
assert short_reads["far"] == 0 and 0 < short_reads["near"] < 1
# It reads 221 document tokens: it sees the near answers that end within them and misses those that
# end beyond (some near answers, no far one: checked above).
