/* bf16split - split BF16 (and F16/F32) matrices into exponent symbols and raw
 * sign+mantissa, losslessly. Usage: see bf16split(1) or --help. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "bundle.h"
#include "cli.h"
#include "ggml_type.h"

static const char usage[] =
    "usage: bf16split [--palette N] [--row G] [--match REGEX] [-o OUT] [STREAM]\n"
    "Split each selected floating-point matrix (BF16; F16 and F32 the same way)\n"
    "into a raw record (sign+mantissa bits, palette, verbatim groups) and a\n"
    "symbols record of exponents for histogram | huffbuild | laneinterleave.\n"
    "  --palette N  code the N most frequent exponents (N <= 16, default 16) as\n"
    "               4-bit palette indices in pairs; a group of G weights holding\n"
    "               another exponent is stored verbatim. 0 codes the whole\n"
    "               exponent byte (DFloat11-style).\n"
    "  --row G      weights per verbatim group (default 64)\n"
    "  --match RE   tensors to split (POSIX extended regex on the name), among\n"
    "               the default: every tensor of 2 or more dimensions, each row\n"
    "               ne[0] weights (a 1-D tensor is never split).\n"
    "               Other records pass through unchanged\n"
    "               (histogram --no-float then keeps them as they are).\n";

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *match = NULL;
    int palette = 16;
    int64_t n_groups = 0, n_verbatim = 0;   /* row groups of the split tensors, verbatim ones */
    long long group = WP_BF16_GROUP_DEFAULT;
    regex_t re;
    wp_cli_init(argv[0]);
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = wp_cli_arg(argc, argv, &i, "--palette"))) {
            palette = (int)wp_arg_int("--palette", v, 0, WP_BF16_PALETTE_MAX);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--row"))) {
            group = wp_arg_int("--row", v, 1, 1 << 20);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--match"))) {
            match = v;
        } else {
            wp_cli_common(argc, argv, &i, usage, &in, &out);
        }
    }
    if (match && regcomp(&re, match, REG_EXTENDED | REG_NOSUB))
        wp_die("--match: '%s' is not a valid regular expression", match);

    wp_reader *rd = wp_cli_reader(in);
    wp_writer *w = wp_cli_writer(out);
    wp_record r, raw, sym;
    wp_record_init(&r);
    wp_record_init(&raw);
    wp_record_init(&sym);
    while (wp_cli_next(rd, &r)) {
        int eb, rb;
        if (wp_rec_is_coded(r.kind))   /* (a bundle passed through, to fail at laneinterleave) */
            wp_cli_refuse_coded(in, &r, "a tensor stream");
        int selected = r.kind == WP_REC_TENSOR && r.n_dims >= 2 && wp_bf16_fields(r.type, &eb, &rb) > 0 &&
                       (match ? regexec(&re, r.name, 0, NULL, 0) == 0 : 1);
        if (!selected) {
            wp_cli_put(w, &r);
            continue;
        }
        struct wp_bf16_split s;
        int64_t rows = wp_record_nelem(&r) / (r.ne[0] ? r.ne[0] : 1);
        int rc = wp_bf16_split(&s, r.type, r.payload, rows, r.ne[0], palette, group);
        if (rc)
            wp_die("%s: tensor '%s': %s", in ? in : "stdin", r.name, wp_bf16_strerror(rc));
        if (wp_bf16_records(&s, &r, &raw, &sym))
            wp_die("out of memory");
        n_groups += s.n_rows * s.groups_per_row;
        n_verbatim += s.n_verbatim;
        wp_cli_put(w, &raw);
        wp_cli_put(w, &sym);
        wp_bf16_split_free(&s);
    }
    wp_cli_writer_close(w);
    /* a small palette leaves most groups verbatim, coded no better than stored, without a word
       (--palette 1 to 8 gave stories260K the same bundle, no matrix lane-coded: a fresh user's
       find); stories260K at 16: 0.24 % */
    if (n_groups && n_verbatim * 20 > n_groups)
        fprintf(stderr, "bf16split: warning: %s: %.1f%% of the row groups are stored verbatim (an exponent "
                        "outside the %d-entry palette): --palette 16, or 0, codes them\n", in ? in : "stdin",
                100.0 * (double)n_verbatim / (double)n_groups, palette);
    wp_record_free(&r);
    wp_record_free(&raw);
    wp_record_free(&sym);
    wp_reader_close(rd);
    return 0;
}
