"""A causal language model as a Hugging Face folder with a tokenizer, what every decoder builds from."""

from __future__ import annotations

import shutil
from pathlib import Path

from torch import nn

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                   "vocab.json", "merges.txt")
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")  # ids 0, 1, 2: unknown, beginning and end of a sequence


def write_offline_tokenizer(folder: Path, vocab_size: int) -> None:
    """A word-level tokenizer over ``vocab_size`` ids, saved as a ``PreTrainedTokenizerFast`` in ``folder``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    vocab.update({f"t{i}": i for i in range(len(SPECIAL_TOKENS), vocab_size)})
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    unk, bos, eos = SPECIAL_TOKENS
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token=unk, bos_token=bos, eos_token=eos,
                            pad_token=eos).save_pretrained(str(folder))


def write_model_folder(model: nn.Module, folder: Path, local: str | None = None) -> Path:
    """``folder``, ``model`` saved there with its own folder's (``local``) tokenizer, else an offline one."""
    from transformers.utils import logging

    logging.disable_progress_bar()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    copied = [name for name in TOKENIZER_FILES if local is not None and (Path(local).expanduser() / name).is_file()]
    for name in copied:
        shutil.copy2(Path(local).expanduser() / name, folder / name)
    if not copied:
        write_offline_tokenizer(folder, model.config.vocab_size)
    return folder
