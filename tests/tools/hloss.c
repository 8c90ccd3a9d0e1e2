/*
 * hloss - the Hessian-weighted quantization error of each matrix of a
 * quantized GGUF: tr(ΔW·H·ΔWᵀ), ΔW = dequant(Q) − W, with the Hessians that
 * `hessian` wrote (wp_gptq_hloss). For the GPTQ-versus-RTN test.
 *
 * Usage: hloss ORIGINAL-F32.gguf QUANTIZED.gguf HESSIANS
 * Prints one line per quantized matrix that has a Hessian: "name loss"; for
 * a tensor of experts (a record of n_dims 3, one H an expert) one line an
 * expert, "name[e] loss", with that expert's H. The Hessians are read as
 * gptq --hessian reads them (lib/hessians.h: F32 records widened, a shared
 * record for each weight of its weights=); a weight with a zero H is left
 * out. An original tensor other than F32, or a Hessian that does not fit its
 * tensor, is an error (exit 1): a check that printed nothing passed unseen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_file.h"
#include "gptq.h"
#include "hessians.h"
#include "stream.h"

int main(int argc, char **argv)
{
    char err[1024];
    if (argc != 4) {
        fprintf(stderr, "usage: hloss ORIGINAL-F32.gguf QUANTIZED.gguf HESSIANS\n");
        return 2;
    }
    wp_gguf_in *orig = wp_gguf_open(argv[1], err, sizeof err), *quant = NULL;
    if (!orig || !(quant = wp_gguf_open(argv[2], err, sizeof err))) {
        fprintf(stderr, "hloss: %s\n", err);
        return 1;
    }
    wp_hessian_file *hf;
    if (wp_hessian_file_open(argv[3], &hf, err, sizeof err)) {
        fprintf(stderr, "hloss: %s: %s\n", argv[3], err);
        return 1;
    }
    wp_record w, q;
    wp_record_init(&w);
    wp_record_init(&q);
    for (size_t k = 0; k < wp_hessian_file_count(hf); k++) {
        const char *name = wp_hessian_file_at(hf, k)->weight;
        if (wp_gguf_read_tensor(orig, name, &w) != 1 || wp_gguf_read_tensor(quant, name, &q) != 1)
            continue;   /* a shared record's own name, or a weight the model lacks */
        if (w.type != 0 /* F32 */) {
            fprintf(stderr, "hloss: %s: tensor %s is not F32: give the F32 model\n", argv[1], name);
            return 1;
        }
        if (q.type == 0 || q.type == 1 || q.type == 30)
            continue;   /* not quantized (kept F32/F16/BF16) */
        const int64_t n_exp = w.n_dims >= 3 ? w.ne[2] : 1;
        const int64_t cols = w.ne[0], rows = wp_record_nelem(&w) / cols / n_exp;
        double *H;
        const int z = wp_hessian_file_get(hf, name, cols, n_exp, &H, err, sizeof err);
        if (z < 0) {
            fprintf(stderr, "hloss: %s\n", err);
            return 1;
        }
        if (z)
            continue;   /* a zero H */
        const size_t qsize = (size_t)(q.payload_len / (uint64_t)n_exp);
        for (int64_t e = 0; e < n_exp; e++) {
            const double loss = wp_gptq_hloss((int)q.type, (const float *)w.payload + e * rows * cols,
                                              q.payload + e * qsize, rows, cols, H + e * cols * cols);
            if (n_exp > 1)
                printf("%s[%lld] %.9g\n", name, (long long)e, loss);
            else
                printf("%s %.9g\n", name, loss);
        }
        free(H);
    }
    wp_record_free(&w);
    wp_record_free(&q);
    wp_hessian_file_close(hf);
    wp_gguf_close(orig);
    wp_gguf_close(quant);
    return 0;
}
