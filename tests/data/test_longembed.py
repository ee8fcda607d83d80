"""LongEmbed's passkey and needle tasks, generated offline at the papers' lengths."""
import pytest

from pyterrier_longdoc.data.longembed import LENGTHS, make_longembed_task

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


@pytest.mark.parametrize("task", ["passkey", "needle"])
def test_each_length_has_its_queries_and_documents_with_the_fact_at_its_position(task):
    data = make_longembed_task(task, lengths=(256, 1024), queries_per_length=5)
    assert sorted(set(data.documents["length"])) == [256, 1024] and len(data.topics) == 10
    texts = dict(zip(data.documents["docno"], data.documents["text"]))
    lengths = dict(zip(data.documents["docno"], data.documents["length"]))
    for row in data.positions.itertuples():
        text = texts[row.docno]
        assert len(text.split()) == lengths[row.docno]
        fact = text[row.char_start:row.char_end]
        assert (" pass key is " in fact) if task == "passkey" else (" is painted " in fact)
        assert text.split()[row.word_start] == fact.split()[0] and 0 <= row.depth <= 1
    assert (data.qrels.groupby("qid")["label"].sum() == 1).all()
    assert data.positions["depth"].nunique() > 1  # the depth varies


def test_the_query_names_what_only_its_document_holds():
    data = make_longembed_task("passkey", lengths=(256,), queries_per_length=4)
    for qid, query in zip(data.topics["qid"], data.topics["query"]):
        name = query.split()[-1].rstrip("?")
        relevant = data.qrels.loc[data.qrels["qid"] == qid, "docno"].item()
        holders = [d for d, t in zip(data.documents["docno"], data.documents["text"]) if f"{name}'s pass key" in t]
        assert holders == [relevant]


def test_candidates_are_the_documents_of_the_query_length_and_generation_is_deterministic():
    data = make_longembed_task("needle", lengths=(256, 512), queries_per_length=3)
    candidates = data.candidates()
    assert len(candidates) == 2 * 3 * 3 and set(candidates.columns) >= {"qid", "query", "docno", "text"}
    one = data.at_length(512)
    assert set(one.topics["length"]) == {512} and len(one.documents) == 3 and len(one.qrels) == 3
    again = make_longembed_task("needle", lengths=(256, 512), queries_per_length=3)
    assert again.documents.equals(data.documents) and again.topics.equals(data.topics)
    assert LENGTHS == (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


def test_a_model_reranks_a_length_and_bad_arguments_are_named(tiny_bert):
    from pyterrier_longdoc import MaxP
    from pyterrier_longdoc.training.fit_loop import run_metric

    data = make_longembed_task("passkey", lengths=(256,), queries_per_length=3)
    run = MaxP(tiny_bert)(data.candidates())
    assert 0 <= run_metric(run, data.topics, data.qrels, "nDCG@1") <= 1 and len(run) == 9
    with pytest.raises(ValueError, match="unknown task 'haystack'; tasks: passkey, needle"):
        make_longembed_task("haystack")
    with pytest.raises(ValueError, match="lengths must be integers of at least 64"):
        make_longembed_task(lengths=(10,))
    with pytest.raises(ValueError, match="queries_per_length must be from 1"):
        make_longembed_task(queries_per_length=0)
    with pytest.raises(ValueError, match="no documents of length 512; lengths: \\[256\\]"):
        data.at_length(512)


def test_lengths_count_the_given_tokenizers_tokens(tmp_path):
    # LongEmbed counts tokens: a document of a length in words is longer in a model's tokens
    from helpers.tiny_bert import write_tiny_bert
    from pyterrier_longdoc.data._tokens import resolve_tokenizer

    path = write_tiny_bert(tmp_path / "bert")
    tokens = resolve_tokenizer(str(path))
    data = make_longembed_task("needle", lengths=(256, 1024), queries_per_length=3, tokenizer=str(path))
    for text, length in zip(data.documents["text"], data.documents["length"]):
        count = len(tokens.spans(text))
        assert length - 16 <= count <= length and len(text.split()) < length  # whole words up to the length
    for row in data.positions.itertuples():
        text = data.documents.set_index("docno").loc[row.docno, "text"]
        assert " is painted " in text[row.char_start:row.char_end]
