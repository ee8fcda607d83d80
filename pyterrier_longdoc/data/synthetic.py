"""A deterministic, generated long-document collection for demos and tests.

Every query asks for one attribute of one entity ("what color is the bridge of carter").
Each query has its own small pool of long documents (about 800-1150 wordpiece tokens by
default) that all mention that entity, so BM25 retrieves them together. Exactly one document
holds the answering passage (four sentences, each restating the entity and the asked
attribute). It sits either inside the first ``near_limit`` tokens (a *near* query) or at word
``far_start`` or later, beyond a 512-token cross-encoder input (a *far* query).

The other documents are hard negatives built by the same process. What they hold where the
answer would be depends on their kind (``negative_kinds``, cycled over a topic's negatives):

* ``scattered`` (the default): four isolated sentences with the query's cue words ("nobody
  remembers the color of the old fence") that answer nothing. BM25 sees the same terms as in
  the answer; a model has to find the dense block that restates the entity and the attribute.
* ``other_attribute``: a passage about the *same entity* but another attribute.
* ``no_passage``: topic filler only.
* ``other_entity``: a passage answering the *same attribute* for a different entity.

Negatives place their sentences by the same near/far rule as their query's answer, and every
document of a query draws its filler from the same distribution. So the first ~477 tokens of a
far query's documents look alike whether or not the document is relevant: a FirstP model can
only guess there, while a model that sees the whole document (MaxP, PARADE) can find the
passage.

All text is built from word lists written in this module (no text from any real corpus); each
word is a single wordpiece of the BERT uncased vocabulary, so a document has exactly
``words + punctuation marks`` tokens. Generation uses string-seeded ``random.Random`` streams
(seeded through SHA-512, unlike the salted ``hash()``), so the same arguments give identical
frames in every process.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from .collection import SplitCollection

__all__ = ["DEFAULT_NEGATIVES", "NEGATIVE_KINDS", "SyntheticCollection", "make_collection", "passage_triples"]

# --- word lists ------------------------------------------------------------------------------
# Filler words never include the entity, value or cue words below, so query terms only occur in
# topic-mention sentences and in passages.
_WORDS: dict[str, tuple[str, ...]] = {
    "noun": tuple(
        "river road tree hill field house village town boat horse dog cat bird child man woman "
        "family friend king queen story song letter book door window table chair bread water "
        "fire lamp cart wagon path forest lake sea island mountain valley morning evening winter "
        "summer rain snow wind sun moon shop street corner kitchen room roof floor coat hat "
        "basket box key ship train bell rope ladder fence stream pond meadow orchard cloud "
        "storm".split()
    ),
    "adj": tuple(
        "old new small large quiet busy dark bright cold warm long short happy young little "
        "early late strange simple narrow wide heavy gentle empty full tired proud calm lonely "
        "clever".split()
    ),
    "vt": tuple(
        "saw found carried followed watched passed crossed left reached moved pulled pushed held "
        "brought met joined filled cleaned fixed sold bought kept shared remembered "
        "described".split()
    ),
    "vi": tuple(
        "slept waited laughed smiled rested stayed arrived returned worked played sang danced "
        "listened wandered".split()
    ),
    "adv": tuple("slowly quickly quietly often again soon later together alone outside carefully happily".split()),
    "prep": tuple("near behind beside across along under over past toward into".split()),
    "plural": tuple(
        "children people friends horses boats birds stories songs letters books travelers "
        "neighbors students families".split()
    ),
    "time": ("that morning", "one evening", "last winter", "after the rain", "before dinner", "on sunday"),
    "job": tuple(
        "farmer carpenter mason painter teacher baker merchant sailor soldier priest doctor "
        "builder engineer architect".split()
    ),
}

# The "X" of "the X of NAME".
_OBJECTS = tuple(
    "bridge tower castle church mill harbor library garden temple palace fountain gate school "
    "hall museum theater station prison farm abbey cathedral monument statue stadium hospital "
    "hotel inn barn chapel fort dam canal lighthouse market square park clock observatory "
    "bakery factory windmill cottage manor villa arch pier dock tavern".split()
)

# The NAME of "the X of NAME": one per query while they last, so BM25 can tell queries apart.
_NAMES = tuple(
    "ashford bristol carter dalton easton fairfax garland hadley irving jarvis kendall langley "
    "mercer norwood oakley preston quincy ramsey sutton thornton upton vaughn walden ashby barlow "
    "calder denton elton harlow kingsley newton orton talbot wexford winslow carlisle dover "
    "exeter hastings ipswich kent lincoln morley norfolk oxford perth reading salisbury wells "
    "york bath chester derby durham ely hereford leeds nelson richmond stafford warwick windsor "
    "berwick clifton fulton hamilton jackson lawson madison milton porter shelby sheldon tucker "
    "weston colby darby emery hartley keating lowell mortimer nash ogden quinn rowan sawyer "
    "tanner vance wallace abbott baxter crosby dawson ellis fletcher hobbs ingram jennings knox "
    "lambert monroe nolan osborne pierce rhodes stanton thatcher underwood walton brandon "
    "conway dunbar everett forbes garrett hayes hewitt kirby lennox maxwell norris parker riley "
    "spencer thompson wheeler barton cooper foster graham harper hudson lowe murray russell "
    "sinclair turner webster wright bradford cambridge dudley eton gloucester hampton kingston "
    "lancaster newport plymouth rochester sheffield stirling sussex bedford chelsea denver "
    "lancashire marion".split()
)

_TOPIC_TEMPLATES = (
    "the {obj} of {name} stands {prep} the {adj} {noun}.",
    "people in {name} often talk about the {obj}.",
    "many stories are told about the {obj} of {name}.",
    "the {obj} is the pride of {name}.",
    "{time}, some {plural} {vt} the {obj} of {name}.",
    "from the {noun} you can see the {obj} of {name}.",
)
_FILLER_TEMPLATES = (
    "the {adj} {noun} {vt} the {noun} {prep} the {noun}.",
    "{time}, one {noun} {vi} {prep} the {adj} {noun}.",
    "some {plural} {vt} the {noun} and {vi} {adv}.",
    "the {noun} was {adj} and the {noun} was {adj}.",
    "one {adj} {noun} {vi} {adv} {prep} the {noun}.",
    "{plural} {vt} the {adj} {noun} {time}.",
    "nobody {vt} the {noun} {prep} the {noun} {time}.",
)
# Share of sentences that mention the query's entity: enough for BM25 to find every document of
# the query, few enough that the passage stands out.
_TOPIC_RATE = 0.1


@dataclass(frozen=True)
class _Attribute:
    """One kind of question: its query template, answer values, the answering passage's
    sentences and ``cues``: sentences that use the same cue words but answer nothing."""

    query: str
    values: tuple[str, ...]
    passage: tuple[str, ...]
    cues: tuple[str, ...]


# Cue words ("color", "opened", "tall", ...) appear only in queries, passages and cue sentences.
# Every passage sentence restates the entity and a cue word, so the passage is the one dense
# match of the query; cue sentences carry the same words one at a time, answering nothing.
_ATTRIBUTES = (
    _Attribute(
        "what color is the {obj} of {name}",
        tuple("red blue green white black yellow gray brown orange purple pink golden silver".split()),
        (
            "the color of the {obj} of {name} is {val}.",
            "the {obj} of {name} is painted {val}.",
            "people say the {val} color suits the {obj} of {name}.",
            "every spring the {obj} of {name} is painted {val} again.",
        ),
        (
            "nobody in {name} remembers the color of the {adj} {noun}.",
            "the {noun} by the {noun} was painted long ago.",
            "{plural} argued about the color of the {noun}.",
            "the {adj} {noun} was painted again.",
        ),
    ),
    _Attribute(
        "in what year was the {obj} of {name} opened",
        tuple(str(year) for year in range(1750, 1950)),
        (
            "the {obj} of {name} was opened in the year {val}.",
            "since the year {val}, the {obj} of {name} has been open.",
            "the {obj} of {name} opened its doors in {val}.",
            "the opening of the {obj} of {name} in {val} was a great day.",
        ),
        (
            "nobody in {name} knows the year the {noun} was opened.",
            "the {adj} {noun} opened again that year.",
            "{plural} talked about the opening of the {noun}.",
            "the {noun} was opened by {plural}.",
        ),
    ),
    _Attribute(
        "how tall is the {obj} of {name}",
        tuple("12 15 18 20 25 30 35 40 45 50 60 70 80 90 100 120 150 200".split()),
        (
            "the {obj} of {name} is {val} meters tall.",
            "at {val} meters, the {obj} of {name} is taller than any house.",
            "the height of the {obj} of {name} is {val} meters.",
            "few buildings are as tall as the {obj} of {name}.",
        ),
        (
            "nobody in {name} measured how tall the {noun} was.",
            "the {noun} was not very tall.",
            "{plural} asked about the height of the {noun} in meters.",
            "the tall {noun} stood {prep} the {noun}.",
        ),
    ),
    _Attribute(
        "what is the {obj} of {name} made of",
        tuple("stone wood brick iron glass marble steel clay copper granite timber concrete bronze".split()),
        (
            "the {obj} of {name} is made of {val}.",
            "{val} is the material the {obj} of {name} is made of.",
            "the {val} used for the {obj} of {name} came from the hills.",
            "builders made the {obj} of {name} from {val} long ago.",
        ),
        (
            "nobody in {name} knows what the {noun} was made of.",
            "the {noun} was made by {plural}.",
            "{plural} asked about the material of the {noun}.",
            "the {adj} {noun} was made long ago.",
        ),
    ),
    _Attribute(
        "who takes care of the {obj} of {name}",
        tuple("john mary james anna peter sarah thomas emma william alice george helen henry laura".split()),
        (
            "a {job} named {val} takes care of the {obj} of {name}.",
            "{val} has been the keeper of the {obj} of {name} for a long time.",
            "people know that {val} takes good care of the {obj} of {name}.",
            "the care of the {obj} of {name} is the job of {val}.",
        ),
        (
            "nobody in {name} takes care of the {adj} {noun}.",
            "the keeper of the {noun} {vi} {adv}.",
            "{plural} take care of the {noun}.",
            "the {noun} needs more care.",
        ),
    ),
    _Attribute(
        "how many visitors come to the {obj} of {name}",
        tuple("300 400 500 600 700 800 900 1000 1200 1500 2000 3000 5000".split()),
        (
            "about {val} visitors come to the {obj} of {name} each day.",
            "most visitors to {name} come to see the {obj} of {name}.",
            "the {obj} of {name} has {val} visitors on a busy day.",
            "many visitors come to the {obj} of {name} in the summer.",
        ),
        (
            "few visitors from {name} come to the {adj} {noun}.",
            "the {noun} had no visitors that day.",
            "{plural} visit the {noun} every day.",
            "visitors rarely come to see the {noun}.",
        ),
    ),
)

# What a negative document holds where the answer would be; see the module docstring.
NEGATIVE_KINDS = ("scattered", "other_attribute", "no_passage", "other_entity")
# The default: BM25-hard (same cue words as the answer) yet learnable in a few dozen steps (a
# dense answer block against isolated cue sentences). Mixing in other_attribute and
# other_entity asks a model to match the attribute and the entity, which a small cross-encoder
# does not learn from a few dozen training queries.
DEFAULT_NEGATIVES = ("scattered",)

# BERT-style cross-encoders read 512 tokens; FirstP sees fewer document tokens than that.
_MODEL_INPUT_TOKENS = 512
# Sentences of an answer-shaped passage (each attribute's template has this many).
_PASSAGE_SENTENCES = 4
# Room after far_start for a passage and some filler.
_FAR_ROOM_WORDS = 60
_SLOT = re.compile(r"\{(\w+)\}")


# --- text generation ---------------------------------------------------------------------------
def _fill(template: str, rng: random.Random, bound: dict[str, str]) -> str:
    """Fills each {slot} with its bound value, or with a fresh random word of that kind."""
    return _SLOT.sub(lambda m: bound.get(m.group(1)) or rng.choice(_WORDS[m.group(1)]), template)


def _n_words(sentence: str) -> int:
    return sentence.count(" ") + 1


def _n_tokens(sentence: str) -> int:
    # Each word is one wordpiece; BERT's basic tokenizer splits off each punctuation mark.
    return _n_words(sentence) + sentence.count(".") + sentence.count(",")


def _passage(attribute: _Attribute, entity: dict[str, str], rng: random.Random, sentences: int) -> list[str]:
    bound = {**entity, "val": rng.choice(attribute.values)}
    filled = [_fill(t, rng, bound) for t in attribute.passage]
    rng.shuffle(filled)
    return filled[:sentences]  # all four drawn and shuffled first: a shorter passage keeps the same stream


def _blocks(
    kind: str, attribute: _Attribute, entity: dict[str, str], spare_names: list[str], rng: random.Random,
    sentences: int,
) -> list[list[str]]:
    """The sentence blocks a document of this kind places in its passage region."""
    if kind == "answer":
        return [_passage(attribute, entity, rng, sentences)]
    if kind == "other_entity":
        other = {
            "obj": rng.choice([o for o in _OBJECTS if o != entity["obj"]]),
            "name": rng.choice([n for n in spare_names if n != entity["name"]]),
        }
        return [_passage(attribute, other, rng, sentences)]
    if kind == "other_attribute":
        return [_passage(rng.choice([a for a in _ATTRIBUTES if a is not attribute]), entity, rng, sentences)]
    if kind == "scattered":  # one block per sentence: the cue words, spread out, answering nothing
        return [[_fill(template, rng, entity)] for template in attribute.cues]
    return []  # no_passage


def _decoy(
    attribute: _Attribute, entity: dict[str, str], spare_names: list[str], rng: random.Random, sentences: int
) -> list[str]:
    """An answer-shaped passage that answers nothing asked: another attribute of another entity."""
    other = {"obj": rng.choice([o for o in _OBJECTS if o != entity["obj"]]),
             "name": rng.choice([n for n in spare_names if n != entity["name"]])}
    return _passage(rng.choice([a for a in _ATTRIBUTES if a is not attribute]), other, rng, sentences)


def _document(
    rng: random.Random,
    entity: dict[str, str],
    blocks: list[list[str]],
    far: bool,
    near_limit: int,
    far_start: int,
    doc_words: tuple[int, int],
) -> tuple[str, list[tuple[int, int, int, int]]]:
    """Builds one document of topic filler with ``blocks`` (lists of sentences) placed by the
    near/far rule; returns its text and each block's (start_char, end_char, start_word, end_word).

    The filler before the first block does not depend on the blocks, so documents of one query
    are alike up to the passage region.
    """
    target_words = rng.randint(*doc_words)
    size = _n_words if far else _n_tokens  # the unit of the far / near rule
    lengths = [sum(map(size, block)) for block in blocks]
    low, high = (far_start, max(far_start, target_words - sum(lengths))) if far else (0, near_limit - sum(lengths))
    offsets = sorted(rng.randint(low, high) for _ in blocks)
    # Each block is due after the blocks before it, so near blocks all end by token near_limit.
    due = [offset + sum(lengths[:k]) for k, offset in enumerate(offsets)]

    sentences: list[str] = []
    firsts: list[int] = []  # index of each placed block's first sentence
    words = tokens = 0
    while words < target_words or len(firsts) < len(blocks):
        topic = rng.random() < _TOPIC_RATE
        sentence = _fill(rng.choice(_TOPIC_TEMPLATES if topic else _FILLER_TEMPLATES), rng, entity)
        # Far blocks start at the first sentence boundary at or after their word offset; near
        # blocks at the last boundary at or before their token offset.
        while len(firsts) < len(blocks) and (
            words >= target_words
            or (words >= due[len(firsts)] if far else tokens + _n_tokens(sentence) > due[len(firsts)])
        ):
            block = blocks[len(firsts)]
            firsts.append(len(sentences))
            sentences += block
            words, tokens = words + sum(map(_n_words, block)), tokens + sum(map(_n_tokens, block))
        if words >= target_words and len(firsts) == len(blocks):
            break
        sentences.append(sentence)
        words, tokens = words + _n_words(sentence), tokens + _n_tokens(sentence)

    spans = []
    for block, first in zip(blocks, firsts):
        start_char = sum(len(s) + 1 for s in sentences[:first])
        start_word = sum(map(_n_words, sentences[:first]))
        spans.append((start_char, start_char + len(" ".join(block)), start_word, start_word + sum(map(_n_words, block))))
    return " ".join(sentences), spans


# --- the collection ----------------------------------------------------------------------------
# version 0.1's names of the position columns (``answers``)
_OLD_POSITION_NAMES = {"char_start": "start_char", "char_end": "end_char", "word_start": "start_word",
                       "word_end": "end_word"}


@dataclass(frozen=True, eq=False, repr=False)
class SyntheticCollection(SplitCollection):
    """A generated collection; see :func:`make_collection` (the shape of
    :mod:`pyterrier_longdoc.data.collection`).

    Attributes:
        documents: ``docno, text``.
        topics: ``qid, query, split ('train'|'test'), position ('near'|'far')``.
        qrels: ``qid, docno, label``: 1 for the answering document, 0 for the query's
            hard negatives.
        positions: ``qid, docno, char_start, char_end, word_start, word_end``: where the
            answering passage sits in the relevant document (``text[char_start:char_end]``,
            ``text.split()[word_start:word_end]``).
    """

    documents: pd.DataFrame
    topics: pd.DataFrame
    qrels: pd.DataFrame
    positions: pd.DataFrame

    # version 0.1's name
    answers = property(lambda self: self.positions.rename(columns=_OLD_POSITION_NAMES))


def _check_args(n_queries, docs_per_query, far_fraction, doc_words, near_limit, far_start, test_fraction,
                negative_kinds, decoys, passage_sentences) -> None:
    if n_queries <= 0:
        raise ValueError(f"n_queries must be positive, got {n_queries}")
    if n_queries > len(_NAMES) * len(_OBJECTS):
        raise ValueError(f"n_queries must be at most {len(_NAMES) * len(_OBJECTS)} (distinct entities), got {n_queries}")
    if docs_per_query < 2:
        raise ValueError(f"docs_per_query must be at least 2 (one answer, one negative), got {docs_per_query}")
    for name, value in (("far_fraction", far_fraction), ("test_fraction", test_fraction)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be within [0, 1], got {value}")
    # Slots in passages and cue sentences are single words, so templates count as filled.
    longest_passage = max(sum(map(_n_tokens, block)) for a in _ATTRIBUTES for block in (a.passage, a.cues))
    if near_limit < longest_passage:
        raise ValueError(f"near_limit must be at least {longest_passage} tokens to hold a passage, got {near_limit}")
    if far_start <= _MODEL_INPUT_TOKENS:
        raise ValueError(
            f"far_start must exceed {_MODEL_INPUT_TOKENS} so far passages lie beyond a "
            f"{_MODEL_INPUT_TOKENS}-token model input, got {far_start}"
        )
    if near_limit >= far_start:
        raise ValueError(f"near_limit ({near_limit}) must be below far_start ({far_start})")
    if not isinstance(decoys, int) or decoys < 0:
        raise ValueError(f"decoys must be a non-negative integer, got {decoys!r}")
    if not isinstance(passage_sentences, int) or not 1 <= passage_sentences <= _PASSAGE_SENTENCES:
        raise ValueError(f"passage_sentences must be an integer from 1 to {_PASSAGE_SENTENCES}, got {passage_sentences!r}")
    if not negative_kinds or set(negative_kinds) - set(NEGATIVE_KINDS):
        raise ValueError(f"negative_kinds must be a non-empty sequence of {', '.join(NEGATIVE_KINDS)}; got {negative_kinds!r}")
    low, high = doc_words
    if not far_start + _FAR_ROOM_WORDS <= low <= high:
        raise ValueError(
            f"doc_words must be (low, high) with far_start + {_FAR_ROOM_WORDS} <= low <= high, got {doc_words}"
        )


def make_collection(
    n_queries: int = 120,
    docs_per_query: int = 6,
    seed: int = 0,
    far_fraction: float = 0.5,
    doc_words: tuple[int, int] = (700, 1000),
    near_limit: int = 300,
    far_start: int = 600,
    test_fraction: float = 0.25,
    negative_kinds: Sequence[str] = DEFAULT_NEGATIVES,
    decoys: int = 0,
    passage_sentences: int = 4,
) -> SyntheticCollection:
    """Generates a deterministic long-document collection.

    Args:
        n_queries: number of topics; each asks for one attribute of its own entity.
        docs_per_query: documents per topic: one answer and ``docs_per_query - 1`` hard
            negatives. Six keeps all of a topic's documents in a BM25 top 10 and the demo
            within CPU budgets.
        seed: the same seed (and arguments) gives identical frames in any process.
        far_fraction: share of topics whose passages (answer and negatives' distractors) start at
            word ``far_start`` or later; the others are near.
        doc_words: range of document lengths in words (tokens are ~13% more: punctuation).
        near_limit: near passages end within this many wordpiece tokens.
        far_start: far passages start at this word (so token) offset or later; must exceed 512.
        test_fraction: share of topics in the 'test' split, taken separately from near and far
            topics so both splits hold both kinds.
        negative_kinds: kinds of negative documents (from ``NEGATIVE_KINDS``), cycled over each
            topic's negatives; see the module docstring.
        decoys: answer-shaped passages added to EVERY document of a topic, the relevant one
            included, in the same region as its answer: each answers another attribute of another
            entity. With them, how many answer-like blocks a document holds says nothing of its
            relevance.
        passage_sentences: sentences of each answer-shaped passage (the answer, the other_attribute and
            other_entity negatives, the decoys), 1 to 4: a shorter answer is a smaller part of any
            window that holds it, so a passage-level model finds it less easily.

    Raises:
        ValueError: naming the argument that is out of range.
    """
    _check_args(n_queries, docs_per_query, far_fraction, doc_words, near_limit, far_start, test_fraction,
                negative_kinds, decoys, passage_sentences)
    # the module's name before it moved into data/: the seeds keep drawing the same collections
    rng = random.Random(f"pyterrier_longdoc.synthetic:{seed}")
    width = len(str(n_queries))
    positions, attributes, test = _topic_plan(rng, n_queries, far_fraction, test_fraction)
    entities, spare_names = _entities(rng, n_queries)

    docs, topics, qrels, answers = [], [], [], []
    for i, (entity, attr_index, position) in enumerate(zip(entities, attributes, positions)):
        qid = f"q{i + 1:0{width}d}"
        attribute = _ATTRIBUTES[attr_index]
        topics.append((qid, _fill(attribute.query, rng, entity), "test" if i in test else "train", position))
        # One stream per topic: a topic's documents do not depend on the other topics' text.
        qrng = random.Random(f"pyterrier_longdoc.synthetic:{seed}:{qid}")
        relevant_slot = qrng.randrange(docs_per_query)
        negatives = iter(tuple(negative_kinds) * docs_per_query)
        for slot in range(docs_per_query):
            docno = f"d{i + 1:0{width}d}-{slot}"
            kind = "answer" if slot == relevant_slot else next(negatives)
            blocks = _blocks(kind, attribute, entity, spare_names, qrng, passage_sentences)
            first = blocks[0] if blocks else None
            if decoys:  # shuffled in, so that the answer is not always the first block
                blocks += [_decoy(attribute, entity, spare_names, qrng, passage_sentences) for _ in range(decoys)]
                qrng.shuffle(blocks)
            text, spans = _document(qrng, entity, blocks, position == "far", near_limit, far_start, doc_words)
            docs.append((docno, text))
            qrels.append((qid, docno, int(kind == "answer")))
            if kind == "answer":
                answers.append((qid, docno, *spans[next(k for k, block in enumerate(blocks) if block is first)]))

    return SyntheticCollection(
        documents=pd.DataFrame(docs, columns=["docno", "text"]),
        topics=pd.DataFrame(topics, columns=["qid", "query", "split", "position"]),
        qrels=pd.DataFrame(qrels, columns=["qid", "docno", "label"]),
        positions=pd.DataFrame(
            answers, columns=["qid", "docno", "char_start", "char_end", "word_start", "word_end"]
        ),
    )


def _topic_plan(rng: random.Random, n_queries: int, far_fraction: float,
                test_fraction: float) -> tuple[list[str], list[int], set[int]]:
    """Each topic's position ('near'|'far', exact counts), attribute (balanced) and whether it is
    a test topic (sampled within near and within far topics, so both splits hold both)."""
    n_far = round(n_queries * far_fraction)
    positions = ["far"] * n_far + ["near"] * (n_queries - n_far)
    rng.shuffle(positions)
    attributes = [i % len(_ATTRIBUTES) for i in range(n_queries)]
    rng.shuffle(attributes)
    test: set[int] = set()
    for position in ("near", "far"):
        group = [i for i, p in enumerate(positions) if p == position]
        test.update(rng.sample(group, round(len(group) * test_fraction)))
    return positions, attributes, test


def _entities(rng: random.Random, n_queries: int) -> tuple[list[dict[str, str]], list[str]]:
    """An entity per topic: a distinct name while names last, then new (object, name) pairs; and
    the names no topic asks about, for other-entity distractors (all names when none is spare)."""
    names = list(_NAMES)
    rng.shuffle(names)
    used: set[tuple[str, str]] = set()
    entities = []
    for i in range(n_queries):
        name = names[i % len(names)]
        obj = next(o for o in rng.sample(_OBJECTS, len(_OBJECTS)) if (o, name) not in used)
        used.add((obj, name))
        entities.append({"obj": obj, "name": name})
    return entities, names[n_queries:] or names


def passage_triples(collection: SyntheticCollection, *, negatives_per_query: int = 4, seed: int = 0) -> pd.DataFrame:
    """(query, positive, negative) passage triples from a collection's topics, for the passage
    stage (``pyterrier_longdoc.training.train_passage_ranker``): the positive is the answer
    passage; each negative is the same number of words cut from one of the topic's non-relevant
    documents at the answer's word offset, where that document holds its distractor sentences
    (cue words of the query that answer nothing) or other text about the same entity.

    Returns ``qid, query, positive, negative``. Use the training split's topics only
    (``collection.split("train")``), so that test answers are never trained on.
    """
    if negatives_per_query < 1:
        raise ValueError(f"negatives_per_query must be positive, got {negatives_per_query}")
    text = dict(zip(collection.documents["docno"], collection.documents["text"]))
    negatives = collection.qrels[collection.qrels["label"] == 0].groupby("qid")["docno"].apply(list).to_dict()
    answers = collection.positions.set_index("qid")
    rows = []
    for qid, query in zip(collection.topics["qid"], collection.topics["query"]):
        if qid not in answers.index or not negatives.get(qid):
            continue
        answer = answers.loc[qid]
        positive = text[answer["docno"]][answer["char_start"]:answer["char_end"]]
        length = int(answer["word_end"] - answer["word_start"])
        rng = random.Random(f"pyterrier_longdoc.synthetic.passages:{seed}:{qid}")
        for _ in range(negatives_per_query):
            words = text[rng.choice(negatives[qid])].split()
            last = max(0, len(words) - length)  # the latest start that still cuts ``length`` words
            start = min(int(answer["word_start"]), last)
            start = min(last, max(0, start + rng.randint(-length, length)))
            rows.append((qid, query, positive, " ".join(words[start:start + length])))
    return pd.DataFrame(rows, columns=["qid", "query", "positive", "negative"])
