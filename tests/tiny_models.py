"""Tiny random vision-language models for tests (helpers, not a test module).

No model hub is reachable and no real weights exist where the tests run, so these build
models from config — a byte-level BPE tokenizer trained on a few sentences, a tiny vision
tower and text decoder — and ``save_pretrained`` them into a folder. The folder is then
loaded back through the same ``AutoProcessor`` + ``AutoModelForImageTextToText`` path a
user's real model takes. The models emit nonsense: use them for mechanics only.

torch and transformers are imported inside the builders, never at module level.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

VOCAB_SIZE = 512

_SENTENCES = [
    "Which answer describes the image better? Answer 1 or Answer 2.",
    "Overall Judgment: Answer 2 is better because it counts the apples correctly.",
    "The first response hallucinates a red car that is not in the picture.",
    "Score: 7/10. The rationale is clear but the reasoning skips a step.",
    "A cat sits on a wooden table next to a blue cup of coffee.",
    "Step 1: read the chart. Step 2: compare the bars. Step 3: give the answer.",
    "[[A]] [[B]] [[A>B]] Overall Score: 4. The video shows a man riding a bicycle.",
    "the quick brown fox jumps over the lazy dog 0123456789 ,.;:!?()-'\"",
]

QWEN_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
LLAVA_SPECIAL = ["<unk>", "<s>", "</s>", "<pad>", "<image>", "<video>"]

# Short versions of each family's chat template: same shape, fewer branches.
QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAVA_TEMPLATE = (
    "{% for message in messages %}{{ message['role'].upper() }}: "
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<image>\n"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %} {% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def _tokenizer(special: list[str], **named):
    """Train a byte-level BPE on the sentences above and wrap it for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_SENTENCES * 4, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **named)


def _save(model, processor, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)
    return folder


def build_tiny_qwen2_vl(folder: str | os.PathLike) -> Path:
    """A ~0.2M-parameter Qwen2-VL with an image *and* a video processor (native ``videos=``)."""
    import torch
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLProcessor,
    )
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import (
        Qwen2VLVideoProcessor,
    )

    folder = Path(folder)
    tokenizer = _tokenizer(QWEN_SPECIAL, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIAL}
    # 14-px patches, merged 2×2: a 28×28 block is one image token. Keep images small.
    pixels = {"min_pixels": 28 * 28, "max_pixels": 28 * 28 * 16}
    image_processor = Qwen2VLImageProcessorPil(**pixels)
    video_processor = Qwen2VLVideoProcessor(**pixels, cap_pixels_per_frame=True)
    processor = Qwen2VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=QWEN_TEMPLATE,
    )
    hidden = 32
    config = Qwen2VLConfig(
        text_config=dict(
            vocab_size=VOCAB_SIZE,
            hidden_size=hidden,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=4096,
            rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 10000.0},
            bos_token_id=ids["<|endoftext|>"],
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
        ),
        # The merger projects to the *text* hidden size: the two must agree.
        vision_config=dict(depth=1, embed_dim=16, hidden_size=hidden, num_heads=2, mlp_ratio=2),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(config)
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    return _save(model, processor, folder)


def build_tiny_llava(folder: str | os.PathLike) -> Path:
    """A ~0.2M-parameter LLaVA (CLIP tower + Llama decoder); no video processor."""
    import torch
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.llava.image_processing_pil_llava import (
        LlavaImageProcessorPil,
    )

    folder = Path(folder)
    tokenizer = _tokenizer(LLAVA_SPECIAL, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in LLAVA_SPECIAL}
    image_size, patch = 32, 8
    image_processor = LlavaImageProcessorPil(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's class token
        chat_template=LLAVA_TEMPLATE,
    )
    hidden = 32
    config = LlavaConfig(
        vision_config=dict(
            model_type="clip_vision_model",
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=image_size,
            patch_size=patch,
            projection_dim=16,
        ),
        text_config=dict(
            model_type="llama",
            vocab_size=VOCAB_SIZE,
            hidden_size=hidden,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=4096,
            bos_token_id=ids["<s>"],
            eos_token_id=ids["</s>"],
            pad_token_id=ids["<pad>"],
        ),
        image_token_index=ids["<image>"],
        image_seq_length=(image_size // patch) ** 2,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config)
    model.generation_config.pad_token_id = ids["<pad>"]
    model.generation_config.eos_token_id = ids["</s>"]
    return _save(model, processor, folder)


def build_not_a_vlm(folder: str | os.PathLike) -> Path:
    """A tiny text-only GPT-2, saved like a real checkpoint: the wrong kind of model."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = Path(folder)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=VOCAB_SIZE, n_positions=64, n_embd=16, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0
    )
    model = GPT2LMHeadModel(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    _tokenizer(["<|endoftext|>"], eos_token="<|endoftext|>").save_pretrained(folder)
    return folder
