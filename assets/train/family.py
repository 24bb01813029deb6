# Per-family conventions of the built-in models: special tokens, chat template (same strings the C++ engine applies,
# engine/README.md §c.1/§c.2), response end tokens, and the exported config.json / tokenizer_config.json.
LLADA_SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                  "<|mdm_mask|>"]
DREAM_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|mask|>"]

LLADA_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
DREAM_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


class Family:
    def __init__(self, name):
        self.name = name
        if name == "llada":
            self.specials = LLADA_SPECIALS
            self.bos, self.eos, self.end, self.mask = "<|startoftext|>", "<|endoftext|>", "<|eot_id|>", "<|mdm_mask|>"
        elif name == "dream":
            self.specials = DREAM_SPECIALS
            self.bos, self.eos, self.end, self.mask = "<|endoftext|>", "<|endoftext|>", "<|im_end|>", "<|mask|>"
        else:
            raise ValueError(f"unknown family {name!r} (llada|dream)")
        self.shift = name == "dream"  # Dream: logits of position i come from hidden row i-1

    def chat(self, msg):
        if self.name == "llada":
            return ("<|startoftext|><|start_header_id|>user<|end_header_id|>\n\n" + msg.strip() +
                    "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
        return ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n" + msg +
                "<|im_end|>\n<|im_start|>assistant\n")

    def config_json(self, mc, tok, max_len):
        ids = {s: tok.id(s) for s in self.specials}
        if self.name == "llada":
            return {
                "architectures": ["LLaDAModelLM"], "model_type": "llada",
                "d_model": mc["d"], "n_layers": mc["n_layers"], "n_heads": mc["n_heads"],
                "n_kv_heads": mc["n_kv_heads"], "mlp_hidden_size": mc["ffn"], "mlp_ratio": 4,
                "activation_type": "silu", "block_type": "llama", "layer_norm_type": "rms",
                "layer_norm_with_affine": True, "bias_for_layer_norm": False, "rms_norm_eps": mc["eps"],
                "rope": True, "rope_theta": mc["rope_theta"], "rope_full_precision": True,
                "include_bias": False, "include_qkv_bias": False, "weight_tying": False,
                "scale_logits": False, "input_emb_norm": False, "attention_layer_norm": False, "alibi": False,
                "vocab_size": len(tok), "embedding_size": len(tok), "max_sequence_length": max_len,
                "mask_token_id": ids["<|mdm_mask|>"], "eos_token_id": ids["<|endoftext|>"],
                "pad_token_id": ids["<|endoftext|>"], "precision": "fp32", "torch_dtype": "float32",
            }
        return {
            "architectures": ["DreamModel"], "model_type": "Dream",
            "hidden_size": mc["d"], "num_hidden_layers": mc["n_layers"], "num_attention_heads": mc["n_heads"],
            "num_key_value_heads": mc["n_kv_heads"], "intermediate_size": mc["ffn"], "hidden_act": "silu",
            "rms_norm_eps": mc["eps"], "rope_theta": mc["rope_theta"], "rope_scaling": None,
            "vocab_size": len(tok), "tie_word_embeddings": False, "max_position_embeddings": max_len,
            "mask_token_id": ids["<|mask|>"], "bos_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|endoftext|>"], "pad_token_id": ids["<|endoftext|>"],
            "attention_dropout": 0.0, "use_cache": False, "torch_dtype": "float32",
        }

    def tokenizer_config(self, tok):
        decoder = {str(tok.id(s)): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                                    "single_word": False, "special": True} for s in self.specials}
        base = {"add_bos_token": False, "add_eos_token": False, "added_tokens_decoder": decoder,
                "clean_up_tokenization_spaces": False, "model_max_length": 4096,
                "tokenizer_class": "PreTrainedTokenizerFast"}
        if self.name == "llada":
            base.update({"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                         "mask_token": "<|mdm_mask|>", "chat_template": LLADA_CHAT_TEMPLATE})
        else:
            base.update({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                         "mask_token": "<|mask|>", "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
                         "chat_template": DREAM_CHAT_TEMPLATE})
        return base
