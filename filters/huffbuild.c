/* huffbuild - one length-limited canonical Huffman table per matrix.
 * Usage: huffbuild [--max-len L] [-o OUT] [STREAM]      (see huffbuild(1)) */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "cli.h"
#include "codes.h"
#include "huffman.h"

static const char usage[] =
    "usage: huffbuild [--max-len L] [-o OUT] [STREAM]\n"
    "For each histogram record, write a code table record: the code lengths of\n"
    "the optimal canonical Huffman code no longer than L bits (default 11,\n"
    "at most 15), found by package-merge. Symbols that never occur get no code.\n"
    "Every record passes through.\n";

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int max_len = WP_HUF_LEN;
    wp_cli_init(argv[0]);
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = wp_cli_arg(argc, argv, &i, "--max-len"))) {
            max_len = (int)wp_arg_int("--max-len", v, 1, WP_HUF_MAX_LEN);
        } else {
            wp_cli_common(argc, argv, &i, usage, &in, &out);
        }
    }

    wp_reader *rd = wp_cli_reader(in);
    wp_writer *w = wp_cli_writer(out);
    wp_record r, t;
    wp_record_init(&r);
    wp_record_init(&t);
    uint64_t n_hist = 0, n_uncoded = 0;   /* hist records; symbols and block-type tensors */
    while (wp_cli_next(rd, &r)) {
        if (wp_rec_is_bundle(r.kind) || r.kind == WP_REC_TABLE)   /* a bundle, or huffbuild's own output */
            wp_cli_refuse_coded(in, &r, "histogram's output");
        wp_cli_put(w, &r);
        wp_codes_geom g;
        n_uncoded += r.kind == WP_REC_SYMBOLS ||
                     (r.kind == WP_REC_TENSOR && !wp_codes_geom_get((int)r.type, r.ne[0], 1, &g));
        if (r.kind != WP_REC_HIST)
            continue;
        n_hist++;
        uint64_t counts[256];
        if (wp_hist_counts(&r, counts))
            wp_die("%s: histogram '%s': %" PRIu64 " bytes, expected %u", in ? in : "stdin", r.name,
                   r.payload_len, WP_HIST_BYTES);
        uint8_t lengths[256];
        if (wp_huf_lengths(counts, 256, max_len, lengths)) {
            int used = 0, need = 0;
            for (int s = 0; s < 256; s++)
                used += counts[s] > 0;
            while ((1 << need) < used)
                need++;
            if (need > max_len)
                wp_die("%s: histogram '%s': %d symbols need a longest code of at least %d bits; --max-len %d is too short",
                       in ? in : "stdin", r.name, used, need, max_len);
            wp_die("%s: histogram '%s': counts too large", in ? in : "stdin", r.name);
        }
        if (wp_table_record(&t, &r, lengths, max_len, wp_huf_coded_bits(counts, lengths, 256)))
            wp_die("out of memory");
        wp_cli_put(w, &t);
    }
    /* histogram left out of the pipeline: it passed silently (a new user's trial). Only
     * symbols (bf16split's) and block-type tensors tell: histogram codes those always,
     * floats not with --no-float, 1-D tensors never */
    if (!n_hist && n_uncoded)
        wp_warn("%s: no histogram records, so no code tables: %" PRIu64 " matrices of a coded type passed "
                "through (histogram comes before huffbuild)", in && strcmp(in, "-") ? in : "stdin", n_uncoded);
    wp_cli_writer_close(w);
    wp_record_free(&r);
    wp_record_free(&t);
    wp_reader_close(rd);
    return 0;
}
