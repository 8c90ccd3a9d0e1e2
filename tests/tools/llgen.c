/* llgen - greedy generation through libllama, for tests.
 *
 *   llgen MODEL.gguf [N=64] [PROMPT="Once upon a time"]
 *
 * Loads MODEL with libllama on the CPU (1 thread), tokenizes PROMPT as
 * llama.cpp's tools do (BOS added as the vocabulary asks), decodes it, then
 * greedily generates exactly N tokens (no stop at end-of-generation tokens)
 * and prints the N generated token ids on one line, space-separated.  Two
 * models that print the same line compute the same argmax at every step.
 *
 * Backends come from WPACK_GGML_BACKEND_DIR or the directory of the linked
 * libggml (filters/llm_common.h); llama.cpp's log is shown only when
 * WPACK_LLAMA_LOG is set.  Errors: one line on stderr, exit 1.
 */
#include "../../filters/llm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *what, const char *why)
{
    fprintf(stderr, "llgen: %s: %s\n", what, why);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc < 2 ? stderr : stdout, "usage: llgen MODEL.gguf [N=64] [PROMPT]\n");
        return argc < 2 ? 1 : 0;
    }
    wp_cli_init("llgen");   /* names a libllama abort's line (llm_abort_cb) */
    const char *path = argv[1];
    long n_gen = 64;
    if (argc > 2) {
        char *end;
        n_gen = strtol(argv[2], &end, 10);
        if (*argv[2] == '\0' || *end || n_gen < 0 || n_gen > 100000)
            return die(argv[2], "N must be an integer from 0 to 100000");
    }
    const char *prompt = argc > 3 ? argv[3] : "Once upon a time";

    if (llm_setup() != 0)
        return die(path, "no ggml backend available");
    const char *why;
    struct llama_model *model = llm_load_model(path, &why);
    if (!model)
        return die(path, why);
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    int n_prompt = 0;
    llama_token *tok = llm_tokenize(vocab, prompt, strlen(prompt), &n_prompt);
    if (!tok || n_prompt == 0)
        return die(path, "cannot tokenize the prompt");

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_prompt + n_gen + 1);
    cp.n_batch = cp.n_ctx;
    cp.n_ubatch = cp.n_ctx;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx)
        return die(path, "llama.cpp cannot create a context");

    struct llama_sampler *smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(smpl, llama_sampler_init_greedy());

    struct llama_batch batch = llama_batch_get_one(tok, n_prompt);
    llama_token next;
    for (long i = 0; i < n_gen; i++) {
        if (llama_decode(ctx, batch) != 0)
            return die(path, "llama_decode failed");
        next = llama_sampler_sample(smpl, ctx, -1);
        printf(i ? " %d" : "%d", next);
        batch = llama_batch_get_one(&next, 1);
    }
    printf("\n");

    llama_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    free(tok);
    llama_backend_free();
    return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
