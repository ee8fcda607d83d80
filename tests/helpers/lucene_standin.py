"""A real Lucene index built by Pyserini's indexer from a JSON-lines folder of 300 generated
documents; queries name a topic word that a few documents repeat."""
import json
import random

WORDS = ("the a of and to in is what how why bird fish red blue green river mountain forest city house door "
         "window book paper music song answer question").split()
TOPICS = {"q1": "castle", "q2": "dragon", "q3": "harbour"}


def write_collection(folder, n_docs=300, seed=0):
    """``folder/docs.jsonl`` in Pyserini's JsonCollection format (``id``, ``contents``); documents
    ``d0..d9`` mention a topic word, more often the lower their number within the topic."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    docs = {}
    for i in range(n_docs):
        words = [rng.choice(WORDS) for _ in range(60)]
        if i < 9:  # three documents per topic, with 6, 4, 2 mentions
            word = list(TOPICS.values())[i // 3]
            words[: 6 - 2 * (i % 3)] = [word] * (6 - 2 * (i % 3))
            rng.shuffle(words)
        docs[f"d{i}"] = " ".join(words)
    with open(folder / "docs.jsonl", "w") as f:
        for docid, contents in docs.items():
            f.write(json.dumps({"id": docid, "contents": contents}) + "\n")
    return docs


def build_index(tmp_dir):
    """``(collection folder, index folder, {docid: contents})``: Pyserini's indexer (Anserini's
    IndexCollection, in-process) over the JSON-lines folder, raw documents stored."""
    from pyterrier_longdoc.pyserini import LuceneIndex

    collection, index = tmp_dir / "collection", tmp_dir / "lucene-index"
    docs = write_collection(collection)
    LuceneIndex.build(collection, index)
    return collection, index, docs
