// llamaref: llama.cpp's logits along greedy continuations, teacher-forced,
// batched as llama-server batches a request (the prompt in one pass, then
// one token per pass), for bench/iquant/agree -logits to compare with
// ruvllm's step by step. Linked against a llama.cpp build's libllama (see
// logits.sh); it only calls llama.h, nothing of llama.cpp is copied here.
//
//   llamaref MODEL.gguf REF.jsonl OUT.bin [THREADS]
//
// REF.jsonl is what greedy.py writes ({"prompt_tokens": [...], "tokens":
// [...]} per line; this reads only those two arrays). OUT.bin holds, per
// line: u32 steps, u32 vocab, then steps rows of vocab f32 logits, row 0
// after the prompt, row i after tokens[i-1]. It prints how many rows'
// argmax equals the reference token (a check that the build is the one
// that made REF.jsonl).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "llama.h"

// ints parses the JSON integer array after "key": in line.
static std::vector<int32_t> ints(const std::string & line, const char * key) {
    std::vector<int32_t> out;
    std::string k = std::string("\"") + key + "\":";
    size_t p = line.find(k);
    if (p == std::string::npos) {
        return out;
    }
    p = line.find('[', p);
    size_t e = line.find(']', p);
    const char * s = line.c_str() + p + 1;
    const char * end = line.c_str() + e;
    while (s < end) {
        char * next;
        long v = strtol(s, &next, 10);
        if (next == s) {
            s++;
            continue;
        }
        out.push_back((int32_t) v);
        s = next;
    }
    return out;
}

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: llamaref MODEL.gguf REF.jsonl OUT.bin [THREADS]\n");
        return 2;
    }
    int threads = argc > 4 ? atoi(argv[4]) : 1;
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "llamaref: cannot load %s\n", argv[1]);
        return 1;
    }
    // llama-server's defaults: context as compare.sh gives it, batch 2048,
    // micro-batch 512, flash attention auto (on for the CPU), f16 cache.
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 1024;
    cp.n_batch = 2048;
    cp.n_ubatch = 512;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llamaref: cannot make a context\n");
        return 1;
    }
    const int32_t vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE * in = fopen(argv[2], "r");
    FILE * out = fopen(argv[3], "wb");
    if (!in || !out) {
        fprintf(stderr, "llamaref: cannot open %s or %s\n", argv[2], argv[3]);
        return 1;
    }
    std::string line;
    int rows = 0, same = 0, total = 0;
    char buf[1 << 16];
    while (fgets(buf, sizeof buf, in)) {
        line += buf;
        if (line.empty() || line.back() != '\n') {
            continue;
        }
        std::vector<int32_t> prompt = ints(line, "prompt_tokens");
        std::vector<int32_t> toks = ints(line, "tokens");
        line.clear();
        if (prompt.empty() || toks.empty()) {
            continue;
        }
        llama_memory_clear(llama_get_memory(ctx), true);
        uint32_t steps = (uint32_t) toks.size(), v = (uint32_t) vocab;
        fwrite(&steps, 4, 1, out);
        fwrite(&v, 4, 1, out);
        std::vector<int32_t> cur = prompt;
        for (uint32_t i = 0; i < steps; i++) {
            if (llama_decode(ctx, llama_batch_get_one(cur.data(), (int32_t) cur.size()))) {
                fprintf(stderr, "llamaref: decode failed\n");
                return 1;
            }
            const float * l = llama_get_logits_ith(ctx, -1);
            fwrite(l, sizeof(float), vocab, out);
            int best = 0;
            for (int j = 1; j < vocab; j++) {
                if (l[j] > l[best]) {
                    best = j;
                }
            }
            same += best == toks[i];
            total++;
            cur.assign(1, toks[i]);
        }
        rows++;
    }
    fclose(out);
    printf("llamaref: %d rows, argmax equals the reference at %d of %d steps\n", rows, same, total);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
