// lltok is llama.cpp's side of tokdiff: it loads a vocabulary (argv[1]),
// reads strings (little-endian u32 length, bytes) from stdin and prints
// for each the token ids on one line, then the ids detokenized as a u32
// length, the bytes and a newline. With argv[2] = "special" it tokenizes
// with add_special and parse_special and detokenizes with unparse_special;
// otherwise all three are off.
#include "llama.h"
#include <cstdio>
#include <cstdint>
#include <vector>
#include <string>
static void quiet(enum ggml_log_level, const char *, void *) {}
int main(int argc, char **argv) {
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model *m = llama_model_load_from_file(argv[1], mp);
    if (!m) { fprintf(stderr, "load failed\n"); return 1; }
    const llama_vocab *v = llama_model_get_vocab(m);
    const bool sp = argc > 2 && std::string(argv[2]) == "special";
    for (;;) {
        uint32_t n;
        if (fread(&n, 4, 1, stdin) != 1) break;
        std::string s(n, '\0');
        if (n && fread(&s[0], 1, n, stdin) != n) break;
        std::vector<llama_token> t(n * 4 + 16);
        int k = llama_tokenize(v, s.data(), (int)n, t.data(), (int)t.size(), sp, sp);
        if (k < 0) { t.resize(-k); k = llama_tokenize(v, s.data(), (int)n, t.data(), (int)t.size(), sp, sp); }
        t.resize(k);
        for (int i = 0; i < k; i++) printf(i ? " %d" : "%d", t[i]);
        printf("\n");
        std::string out(n * 8 + 64, '\0');
        int d = llama_detokenize(v, t.data(), k, &out[0], (int)out.size(), false, sp);
        if (d < 0) { out.resize(-d); d = llama_detokenize(v, t.data(), k, &out[0], (int)out.size(), false, sp); }
        out.resize(d > 0 ? d : 0);
        uint32_t dl = out.size();
        fwrite(&dl, 4, 1, stdout); fwrite(out.data(), 1, dl, stdout);
        printf("\n");
        fflush(stdout);
    }
    llama_model_free(m);
}
