"""RankGPT's local backend: a tiny random Llama with a chat template, built here, offline."""
import string

import pandas as pd
import pytest
from helpers.tiny_bert import WORDS

from pyterrier_longdoc.listwise import RankGPT, TransformersChat
from pyterrier_longdoc.listwise.prompt import parse_permutation, rankgpt_messages

TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def write_tiny_chat_llama(path, chat_template=TEMPLATE, context=1024):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator([" ".join(WORDS)] * 4 + list(string.printable), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                        additional_special_tokens=specials[3:])
    tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=context,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def tiny_chat_llama(tmp_path_factory):
    return write_tiny_chat_llama(tmp_path_factory.mktemp("tiny-chat-llama"))


def test_generates_through_the_chat_template(tiny_chat_llama):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    backend = TransformersChat(tiny_chat_llama, max_new_tokens=6, device="cpu")
    messages = rankgpt_messages("red cat", ["the red cat", "a blue river"])
    reply = backend.complete(messages)
    tokenizer = AutoTokenizer.from_pretrained(tiny_chat_llama)
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True,
                                           return_tensors="pt")
    assert tokenizer.decode(prompt["input_ids"][0]).startswith("<|system|>You are RankGPT")
    model = AutoModelForCausalLM.from_pretrained(tiny_chat_llama)
    with torch.inference_mode():
        output = model.generate(**prompt, max_new_tokens=6, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    length = prompt["input_ids"].shape[1]
    assert reply.text == tokenizer.decode(output[0, length:], skip_special_tokens=True)
    assert (reply.prompt_tokens, reply.completion_tokens) == (length, output.shape[1] - length)


@pytest.mark.filterwarnings("ignore:.* answers named no passage:pyterrier_longdoc.LongDocWarning")  # a random tiny LM
def test_reranks_with_the_models_tokens_within_its_context(tiny_chat_llama):
    backend = TransformersChat(tiny_chat_llama, max_new_tokens=6, device="cpu")
    inp = pd.DataFrame({"qid": "q1", "query": "red cat", "docno": ["d0", "d1", "d2"],
                        "text": ["the cat " * 300, "blue river " * 300, "red castle"], "score": [3.0, 2.0, 1.0]})
    model = RankGPT(backend)
    assert model.context_tokens == 1024 and model.budget.tokenizer is backend.tokenizer
    out = model(inp)
    # two 300-token passages (the default budget) were cut further to fit 1024 tokens with the 6 of the answer
    assert model.usage["requests"] == 1 and 1024 - 100 < model.usage["prompt_tokens"] <= 1024 - 6
    answer = backend.complete(model.messages("red cat", inp["text"].tolist(),
                                             [model.budget.ends(t) for t in inp["text"]])).text
    expected = [f"d{i}" for i in parse_permutation(answer, 3)[0]]
    assert out.sort_values("rank")["docno"].tolist() == expected


def test_a_model_without_chat_template_is_refused(tmp_path):
    path = write_tiny_chat_llama(tmp_path / "plain", chat_template=None)
    with pytest.raises(ValueError, match="no chat template"):
        TransformersChat(path)


def test_a_template_without_system_role_gets_it_in_the_first_user_turn(tmp_path):
    no_system = ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
                 + TEMPLATE)
    backend = TransformersChat(write_tiny_chat_llama(tmp_path / "no-system", chat_template=no_system),
                               max_new_tokens=2, device="cpu")
    messages = rankgpt_messages("red cat", ["the red cat"])
    prompt = backend.tokenizer.decode(backend.prompt(messages)["input_ids"][0])
    assert prompt.startswith("<|user|>You are RankGPT, an intelligent assistant")
    assert "\n\nI will provide you with 1 passages" in prompt and "<|system|>" not in prompt
    assert backend.complete(messages).completion_tokens > 0
