/*
 * hloss - the Hessian-weighted quantization error of each matrix of a
 * quantized GGUF: tr(ΔW·H·ΔWᵀ), ΔW = dequant(Q) − W, with the Hessians that
 * `hessian` wrote (wp_gptq_hloss). For the GPTQ-versus-RTN test.
 *
 * Usage: hloss ORIGINAL-F32.gguf QUANTIZED.gguf HESSIANS
 * Prints one line per quantized matrix that has a Hessian: "name loss"; for
 * a tensor of experts (a record of n_dims 3, one H an expert) one line an
 * expert, "name[e] loss", with that expert's H.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_file.h"
#include "gptq.h"
#include "stream.h"

int main(int argc, char **argv)
{
    char err[512];
    if (argc != 4) {
        fprintf(stderr, "usage: hloss ORIGINAL-F32.gguf QUANTIZED.gguf HESSIANS\n");
        return 2;
    }
    wp_gguf_in *orig = wp_gguf_open(argv[1], err, sizeof err), *quant = NULL;
    if (!orig || !(quant = wp_gguf_open(argv[2], err, sizeof err))) {
        fprintf(stderr, "hloss: %s\n", err);
        return 1;
    }
    FILE *hf = fopen(argv[3], "rb");
    wp_reader *rd = hf ? wp_reader_open(hf, argv[3], err, sizeof err) : NULL;
    if (!rd) {
        fprintf(stderr, "hloss: %s: %s\n", argv[3], hf ? err : "cannot open");
        return 1;
    }
    wp_record h, w, q;
    wp_record_init(&h);
    wp_record_init(&w);
    wp_record_init(&q);
    int k;
    while ((k = wp_reader_next(rd, &h)) == 1) {
        if (h.kind != WP_REC_HESSIAN || h.n_dims < 2 || h.n_dims > 3)
            continue;
        if (wp_gguf_read_tensor(orig, h.name, &w) != 1 || wp_gguf_read_tensor(quant, h.name, &q) != 1)
            continue;
        if (w.type != 0 /* F32 */ || q.type == 0 || q.type == 1 || q.type == 30 || w.ne[0] != h.ne[0])
            continue;   /* not quantized (kept F32/F16/BF16) */
        const int64_t n_exp = h.n_dims == 3 ? h.ne[2] : 1;
        const int64_t cols = w.ne[0], rows = wp_record_nelem(&w) / cols / n_exp;
        if (w.n_dims != h.n_dims || rows * cols * n_exp != wp_record_nelem(&w))
            continue;
        const size_t qsize = (size_t)(q.payload_len / (uint64_t)n_exp);
        for (int64_t e = 0; e < n_exp; e++) {
            double loss = wp_gptq_hloss((int)q.type, (const float *)w.payload + e * rows * cols,
                                        q.payload + e * qsize, rows, cols, (const double *)h.payload + e * cols * cols);
            if (n_exp > 1)
                printf("%s[%lld] %.9g\n", h.name, (long long)e, loss);
            else
                printf("%s %.9g\n", h.name, loss);
        }
    }
    if (k < 0) {
        fprintf(stderr, "hloss: %s\n", wp_reader_error(rd));
        return 1;
    }
    return 0;
}
