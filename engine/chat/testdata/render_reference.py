#!/usr/bin/env python3
# Renders the Jinja chat templates in this directory with jinja2 (as Hugging
# Face transformers does) to produce the expected strings in
# ../template_test.go. Not run by `go test`; rerun by hand when a template
# changes: python3 render_reference.py
import json, sys
import jinja2

TEMPLATES = {  # our template name -> (jinja file, bos, eos)
    "llama2": ("llama2-chat.jinja", "<s>", "</s>"),
    "llama2-sys-bos": ("ruvllm-test-llama.jinja", "<s>", "</s>"),
    "llama3": ("llama3-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    "mistral-v1": ("mistral-v1.jinja", "<s>", "</s>"),
    "mistral-v3": ("mistral-v3.jinja", "<s>", "</s>"),
    "mistral-v3-tekken": ("mistral-v3-tekken.jinja", "<s>", "</s>"),
    "chatml": ("ruvllm-test-qwen2.jinja", "", "<|im_end|>"),
    "phi3": ("phi3.jinja", "<s>", "<|endoftext|>"),
    "gemma": ("gemma.jinja", "<bos>", "<eos>"),
}

CONV = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "  Hi there!  "},
    {"role": "user", "content": "What is 2+2?"},
]

def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)

env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
env.globals["raise_exception"] = raise_exception
out = {}
for name, (path, bos, eos) in TEMPLATES.items():
    src = open(path).read()
    t = env.from_string(src)
    for gen in (True, False):
        text = t.render(messages=CONV, add_generation_prompt=gen, bos_token=bos, eos_token=eos)
        if bos and text.startswith(bos):
            text = text[len(bos):]  # the tokenizer adds BOS, not the text
        out[f"{name}/{gen}"] = text
json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
print()
