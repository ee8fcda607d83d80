"""A tiny random BERT and its vocabulary of whole words, written to a local folder, offline."""
import string

from helpers.written_once import written_once

WORDS = ("the a of and to in is what how why cat dog bird fish red blue green castle river "
         "mountain forest city house door window book paper music song answer question alpha beta gamma").split()


@written_once  # built once per session, copied for each test that asks
def write_tiny_bert(path, hidden_size=32, layers=2, heads=2, seed=0):
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(string.ascii_lowercase + string.digits + string.punctuation)
    vocab += ["##" + c for c in string.ascii_lowercase + string.digits] + WORDS
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    try:
        tokenizer = BertTokenizer(vocab=str(path / "vocab.txt"))  # transformers 5
    except TypeError:
        tokenizer = BertTokenizerFast(vocab_file=str(path / "vocab.txt"))  # transformers 4
    assert tokenizer("cat dog", add_special_tokens=False)["input_ids"] == [vocab.index("cat"), vocab.index("dog")]
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden_size, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=hidden_size * 2, max_position_embeddings=512,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.5)
    # initializer_range 0.5, not BERT's 0.02: a tiny random BERT at 0.02 gives nearly the same
    # [CLS] for every input, so toy training tasks would barely move
    BertModel(config).save_pretrained(path)
    return path
