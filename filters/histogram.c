/* histogram - pull the integer codes out of quantized matrices and count them.
 * Usage: histogram [--report] [-o OUT] [STREAM]      (see histogram(1)) */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "bundle.h"
#include "cli.h"
#include "codes.h"
#include "ggml_type.h"
#include "huffman.h"
#include "rowmap.h"

static const char usage[] =
    "usage: histogram [--report] [--float-palette N] [--no-float] [--no-rowmap] [-o OUT] [STREAM]\n"
    "For each quantized matrix (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K..Q6_K,\n"
    "IQ4_XS) write its side data (d, dmin, scales, mins as the blocks store them),\n"
    "its code symbols (4-bit codes in pairs, others singly) and a histogram record;\n"
    "split every other F16/BF16/F32 tensor of 2+ dimensions (fallbacks,\n"
    "embeddings; rows of ne[0] weights) into exponent symbols and raw bits as\n"
    "bf16split does (--float-palette N, default 16; --no-float keeps them as\n"
    "they are); count the exponent symbols that bf16split wrote. A matrix\n"
    "with repeated rows is stored as a row map and its distinct rows\n"
    "(--no-rowmap keeps every row). Other records pass through.\n"
    "--report prints per matrix and in total: symbols, Shannon entropy, fixed\n"
    "width and bits per weight, to stderr.\n";

/* Totals over the stream for --report. */
static struct {
    double weights, tensor_bytes;     /* every tensor */
    double coded_weights, coded_fixed_bytes, entropy_bits, side_bytes;
    double exp_weights, exp_h, exp_limit, exp_verbatim;  /* weighted by weights */
    double exp_fixed_bytes;
    double rowmap_saved;      /* bytes of repeated rows left out */
} tot;

static void count(const uint8_t *sym, uint64_t n, uint64_t hist[256])
{
    memset(hist, 0, 256 * sizeof *hist);
    for (uint64_t i = 0; i < n; i++)
        hist[sym[i]]++;
}

/* A HIST record for symbols of record src. */
static void put_hist(wp_writer *w, const wp_record *src, const uint64_t hist[256], uint64_t n_sym,
                     int64_t n_weights)
{
    wp_record h;
    wp_record_init(&h);
    if (wp_hist_record(&h, src, hist, n_sym, n_weights))
        wp_die("out of memory");
    wp_cli_put(w, &h);
    wp_record_free(&h);
}

/* The report's header, once, before its first line (or at the end when it has none): printed
 * before the first record, it came before a one-line refusal of a bundle or of empty input. */
static void report_header(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    fprintf(stderr, "%-32s %-7s %10s %10s %8s %8s %6s %7s %7s\n", "matrix", "type", "weights", "symbols", "H/sym",
            "H b/w", "fixed", "side", "block");
}

/* One matrix's report line; rows_all > 0: a row map's matrix, whose numbers are its distinct
 * rows' (it said so nowhere: a fresh user read output.weight's 22272 weights for 32768). */
static void report_line(const char *name, const char *type, int64_t weights, uint64_t n_sym, double h,
                        double fixed_bits, double side_bpw, double block_bpw, uint64_t rows, uint64_t rows_all)
{
    if (weights == 0)   /* no weights, no b/w (it read "-nan": a breaker's find) */
        fprintf(stderr, "%-32s %-7s %10d %10d %8s %8s %6s %7s %7s", name, type, 0, 0, "-", "-", "-", "-", "-");
    else
        fprintf(stderr, "%-32s %-7s %10" PRId64 " %10" PRIu64 " %8.4f %8.4f %6.2f %7.4f %7.4f", name, type,
                weights, n_sym, h, h * (double)n_sym / (double)weights, fixed_bits, side_bpw, block_bpw);
    if (rows_all)
        fprintf(stderr, "  (row map: %" PRIu64 " distinct rows of %" PRIu64 ")", rows, rows_all);
    fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int report = 0, float_palette = WP_BF16_PALETTE_MAX, split_float = 1, rowdedupe = 1;
    uint64_t presplit = 0, kept = 0;   /* --no-float: matrices bf16split split before; floats kept */
    wp_cli_init(argv[0]);
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (wp_cli_flag(argv[i], "--report")) {
            report = 1;
        } else if (wp_cli_flag(argv[i], "--no-rowmap")) {
            rowdedupe = 0;
        } else if (wp_cli_flag(argv[i], "--no-float")) {
            split_float = 0;
        } else if ((v = wp_cli_arg(argc, argv, &i, "--float-palette"))) {
            float_palette = (int)wp_arg_int("--float-palette", v, 0, WP_BF16_PALETTE_MAX);
        } else {
            wp_cli_common(argc, argv, &i, usage, &in, &out);
        }
    }

    wp_reader *rd = wp_cli_reader(in);
    wp_writer *w = wp_cli_writer(out);
    wp_record r, side, sym, map, reduced;
    uint64_t hist[256];
    wp_record_init(&r);
    wp_record_init(&side);
    wp_record_init(&sym);
    wp_record_init(&map);
    wp_record_init(&reduced);
    while (wp_cli_next(rd, &r)) {
        wp_codes_geom g;
        /* a tensor stream, or bf16split's symbols and raw bytes; not a bundle, nor its own output */
        if (wp_rec_is_coded(r.kind) && r.kind != WP_REC_SYMBOLS && r.kind != WP_REC_RAW)
            wp_cli_refuse_coded(in, &r, "a tensor stream or bf16split's output");
        uint64_t rows = r.ne[0] ? (uint64_t)(wp_record_nelem(&r) / r.ne[0]) : 0, rows_all = 0;
        if (r.kind == WP_REC_TENSOR) {
            tot.weights += (double)wp_record_nelem(&r);
            tot.tensor_bytes += (double)r.payload_len;
            /* Repeated rows: a row map, and only the distinct rows go on. */
            int k = rowdedupe ? wp_rowmap_make(&r, &map, &reduced) : 0;
            if (k < 0)
                wp_die("out of memory");
            if (k == 1) {
                wp_attr_set_hash(&map, "xxh32", r.payload, r.payload_len);
                tot.rowmap_saved += (double)(r.payload_len - reduced.payload_len);
                wp_cli_put(w, &map);
                wp_record t = r;
                r = reduced;
                reduced = t;
                rows_all = rows;
                rows = (uint64_t)r.ne[1];
            }
        }
        if (r.kind == WP_REC_TENSOR && r.n_dims >= 2 && !wp_codes_geom_get((int)r.type, r.ne[0], rows, &g)) {
            if (r.payload_len != g.block_len)
                wp_die("%s: tensor '%s': %" PRIu64 " bytes, but its shape needs %" PRIu64, in ? in : "stdin",
                       r.name, r.payload_len, g.block_len);
            if (wp_q_records(&g, &r, &side, &sym))
                wp_die("out of memory");
            count(sym.payload, g.n_sym, hist);
            put_hist(w, &sym, hist, g.n_sym, wp_record_nelem(&r));
            wp_cli_put(w, &side);
            wp_cli_put(w, &sym);
            if (report) {
                report_header();
                double h = wp_huf_entropy(hist, 256), nw = (double)wp_record_nelem(&r);
                report_line(r.name, wp_ggml_type_name(r.type), wp_record_nelem(&r), g.n_sym, h,
                            (double)g.bi.code_bits, 8.0 * (double)g.side_len / nw, 8.0 * (double)g.block_len / nw,
                            rows, rows_all);
                tot.coded_weights += nw;
                tot.coded_fixed_bytes += (double)g.block_len;
                tot.entropy_bits += h * (double)g.n_sym;
                tot.side_bytes += (double)g.side_len;
            }
            continue;
        }
        int eb, rb;
        const int from_bf16split = r.kind == WP_REC_SYMBOLS;   /* split before histogram, not by it */
        const int is_float = r.kind == WP_REC_TENSOR && r.n_dims >= 2 && wp_bf16_fields(r.type, &eb, &rb) > 0;
        kept += !split_float && is_float;
        if (split_float && is_float) {
            /* An unquantized matrix: exponent symbols + raw bits (bf16split). */
            struct wp_bf16_split s;
            int rc = wp_bf16_split(&s, r.type, r.payload, (int64_t)rows, r.ne[0], float_palette,
                                   WP_BF16_GROUP_DEFAULT);
            if (rc)
                wp_die("%s: tensor '%s': %s", in ? in : "stdin", r.name, wp_bf16_strerror(rc));
            if (wp_bf16_records(&s, &r, &side, &sym))
                wp_die("out of memory");
            wp_bf16_split_free(&s);
            wp_cli_put(w, &side);
            wp_record t = r;
            r = sym;
            sym = t;
        }
        if (r.kind == WP_REC_SYMBOLS) {
            if (!split_float)   /* bf16split's, from the input: --no-float leaves them coded */
                presplit++;
            count(r.payload, r.payload_len, hist);
            int64_t nw = wp_attr_i64(&r, "n_weights", wp_record_nelem(&r));
            put_hist(w, &r, hist, r.payload_len, nw);
            if (from_bf16split) {   /* its tensor never came by as one: counted here (the total
                                       left bf16split's matrices out, a fresh user's find) */
                tot.weights += (double)nw;
                tot.tensor_bytes += (double)nw * wp_ggml_type_size(r.type);
            }
            if (report) {
                report_header();
                double h = wp_huf_entropy(hist, 256);
                const char *tn = wp_ggml_type_name(r.type) ? wp_ggml_type_name(r.type) : "?";
                if (nw == 0)
                    fprintf(stderr, "%-32s %-7s %10d %10d %8s %8s  no weights\n", r.name, tn, 0, 0, "-", "-");
                else
                    fprintf(stderr, "%-32s %-7s %10" PRId64 " %10" PRIu64 " %8.4f %8.4f  exponent H %.4f,"
                                    " limit %.4f b/w, verbatim %.4f%%\n",
                            r.name, tn, nw, r.payload_len, h, h * (double)r.payload_len / (double)nw,
                            wp_attr_f64(&r, "h_exp", -1), wp_attr_f64(&r, "limit", -1),
                            100 * wp_attr_f64(&r, "verbatim_frac", 0));
                tot.exp_weights += (double)nw;
                tot.exp_fixed_bytes += (double)nw * wp_ggml_type_size(r.type);
                tot.exp_h += wp_attr_f64(&r, "h_exp", 0) * (double)nw;
                tot.exp_limit += wp_attr_f64(&r, "limit", 0) * (double)nw;
                tot.exp_verbatim += wp_attr_f64(&r, "verbatim_frac", 0) * (double)nw;
            }
        }
        wp_cli_put(w, &r);
    }
    if (report)   /* a stream with no matrix: the header alone, as before */
        report_header();
    if (presplit && !kept)   /* it did nothing, silently (a fresh user's find) */
        wp_warn("--no-float has no effect: the input's %" PRIu64 " float matri%s split by bf16split already, "
                "and coded as it split %s (--no-float keeps the float matrices histogram would split itself)",
                presplit, presplit == 1 ? "x was" : "ces were", presplit == 1 ? "it" : "them");
    if (report && tot.exp_weights > 0)
        fprintf(stderr, "total exponent-coded: %.0f weights; exponent H %.4f b/w, limit (raw + H) %.4f b/w,"
                        " verbatim %.4f%% (means weighted by weights)\n",
                tot.exp_weights, tot.exp_h / tot.exp_weights, tot.exp_limit / tot.exp_weights,
                100 * tot.exp_verbatim / tot.exp_weights);
    /* (a model of floats alone, no coded matrix, had no total line) */
    if (report && tot.weights > 0 && (tot.coded_weights > 0 || tot.exp_weights > 0)) {
        double uncoded = tot.tensor_bytes - tot.rowmap_saved - tot.coded_fixed_bytes - tot.exp_fixed_bytes;
        char expc[64] = "";
        if (tot.exp_weights > 0)
            snprintf(expc, sizeof expc, ", %.0f exponent-coded", tot.exp_weights);
        fprintf(stderr, "total: %.0f weights, %.0f in quantized matrices%s; tensors %.4f b/w as stored;"
                        " entropy bound %.4f b/w (order 0: codes at H, exponents one at a time at raw bits + H,"
                        " side data and other tensors as stored; a tensor's repeated rows once, a tensor"
                        " repeating another again)\n",
                tot.weights, tot.coded_weights, expc, 8.0 * tot.tensor_bytes / tot.weights,
                (tot.entropy_bits + tot.exp_limit + 8.0 * (tot.side_bytes + uncoded)) / tot.weights);
    }
    /* the report written whole before the stream is published: one that could not be (a full
       disk under 2> FILE) exited 0, the report lost unsaid (a tester's find) */
    if (report && (fflush(stderr) || ferror(stderr)))
        wp_die("stderr: the report could not be written: %s", strerror(errno ? errno : EIO));
    wp_cli_writer_close(w);
    wp_record_free(&r);
    wp_record_free(&side);
    wp_record_free(&sym);
    wp_record_free(&map);
    wp_record_free(&reduced);
    wp_reader_close(rd);
    return 0;
}
