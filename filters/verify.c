/* verify - check a bundle against its original GGUF (or safetensors file), bit for
 * bit, with both lane decoders, and account bits per weight.
 * Usage: verify [-q] [--tsv] ORIGINAL.gguf BUNDLE      (see verify(1)) */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bundle.h"
#include "cli.h"
#include "spool.h"
#include "zframe.h"
#include "ggml_type.h"
#include "gguf_file.h"
#include "safetensors.h"

static const char usage[] =
    "usage: verify [-q] [--tsv] ORIGINAL.gguf BUNDLE\n"
    "Decode every coded matrix of BUNDLE with the reference decoder (a peek of\n"
    "max_len bits against per-length limits) and with the fast decoder, compare\n"
    "both with the tensor in ORIGINAL.gguf bit for bit, rebuild the whole GGUF\n"
    "and compare it byte for byte, and print per matrix and in total: bits per\n"
    "weight (b/w) of the GGUF and of the bundle, the entropy bound, and the\n"
    "overhead of tables, offsets and lane padding. Exit status 0 only if\n"
    "everything matches.\n"
    "ORIGINAL may be a safetensors file too, for the bundle of its stream\n"
    "(safetensorscat FILE | ...): the file is rebuilt and compared instead.\n"
    "-q prints the totals only; --tsv prints tab-separated columns for scripts\n"
    "(a header line, a line per matrix, then the file's line, named '*').\n";

/* b a copy of a (wp_record_copy), or the run ends: out of memory. */
static void copy_record(const wp_record *a, wp_record *b)
{
    if (wp_record_copy(b, a))   /* the offset too: a ref's tensor is an earlier one (resolve_ref) */
        wp_die("out of memory");
}

static int same_tensor(const wp_record *a, const wp_record *b)
{
    return a->type == b->type && a->n_dims == b->n_dims && !memcmp(a->ne, b->ne, sizeof a->ne) &&
           a->payload_len == b->payload_len && !memcmp(a->payload, b->payload, (size_t)a->payload_len);
}

/* One matrix's line (or, with name "*", the file's): aligned for people, or
 * with --tsv tab-separated, "-" where a column does not apply (a matrix not
 * lane-coded has no entropy, tables or padding). Values in b/w. */
static int tsv;
/* The original's format, as the report names it: "GGUF" or "safetensors". */
static const char *fmt = "GGUF";

/* The report's column names, once: before its first row, or before the totals (-q, or no
 * matrix). Printed before the bundle's first record, they came after a one-line refusal of it
 * on a pipe (the report is flushed at exit). */
static void report_header(int quiet)
{
    static int done;
    if (done)
        return;
    done = 1;
    if (tsv)
        printf("matrix\ttype\tweights\tgguf_bpw\tbundle_bpw\tentropy_bpw\ttables_bpw\tpadding_bpw\tstored\tcheck\n");
    else if (!quiet)
        printf("%-32s %-6s %9s %8s %8s %8s %8s %8s  %s\n", "matrix", "type", "weights",
               strcmp(fmt, "GGUF") ? "file" : "GGUF", "bundle",
               "entropy", "tables", "padding", "check");
}

static void print_row(const char *name, const char *type, double weights, double gguf, double bundle, double entropy,
                      double tables, double padding, const char *stored, int ok, const char *same)
{
    report_header(0);
    char g[32] = "-", bd[32] = "-", e[32] = "-", t[32] = "-", p[32] = "-", pn[4 * WP_MAX_NAME + 8];
    name = wp_printable(name, pn, sizeof pn);   /* a newline or tab in a name splits no line or column */
    if (weights > 0) {   /* no weights, no b/w: "-" (an empty tensor's line read "-nan": a breaker's find) */
        snprintf(g, sizeof g, "%.4f", gguf);
        snprintf(bd, sizeof bd, "%.4f", bundle);
        if (entropy >= 0)
            snprintf(e, sizeof e, "%.4f", entropy);
        if (tables >= 0)
            snprintf(t, sizeof t, "%.4f", tables);
        if (padding >= 0)
            snprintf(p, sizeof p, "%.4f", padding);
    }
    if (tsv) {
        printf("%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, type, weights, g, bd, e, t, p, stored,
               ok ? "ok" : "FAILED");
        return;
    }
    printf("%-32s %-6s %9.0f %8s %8s %8s %8s %8s  %s", name, type, weights, g, bd, e, t, p, ok ? "ok" : "DIFFERS");
    if (!strcmp(stored, "shared"))
        printf(" (shares the bytes of %s)", same);
    else if (strcmp(stored, "coded"))
        printf(" (%s)", !strcmp(stored, "zstd") ? "zstd" : "stored fixed-width");
    printf("\n");
}

/* The text report's last three lines: weights by how they are stored, b/w of
 * both files and the overheads, and the verdict. */
static void print_totals(double weights, double coded_w, uint64_t n_coded, uint64_t n_fixed, uint64_t n_shared,
                         double gguf_bpw, double bundle_bpw, double table_bytes, double pad_bytes, double meta_bytes,
                         double head_bytes, int whole, int bad)
{
    printf("total: %.0f weights (%.0f in %" PRIu64 " coded matrices, %" PRIu64 " stored fixed-width or zstd, %" PRIu64
           " shared)\n", weights, coded_w, n_coded, n_fixed, n_shared);
    /* no saving when the bundle is not that GGUF's (a wrong GGUF showed "saving 56.08%", then FAILED) */
    char saving[64];
    if (bad || !whole)
        snprintf(saving, sizeof saving, "no saving: not this %s's bundle", strcmp(fmt, "GGUF") ? "file" : fmt);
    else
        snprintf(saving, sizeof saving, "saving %.2f%%", 100.0 * (1 - bundle_bpw / gguf_bpw));
    /* the record headers, their alignment and the index: the rest of the file, in a plain
       bundle (an auditor found 0.28 b/w of one unaccounted); a --dist bundle's are zstd'd
       with everything else */
    char head[80] = "";
    if (head_bytes >= 0 && weights > 0)
        snprintf(head, sizeof head, ", record headers+index %.4f b/w", 8.0 * head_bytes / weights);
    if (weights == 0)   /* a GGUF without tensors (it said "inf b/w (saving -nan%)": a review) */
        printf("%s and bundle: no weights, so no b/w; metadata %.0f bytes\n", fmt, meta_bytes);
    else
        printf("%s %.4f b/w, bundle %.4f b/w (%s); tables+offsets %.4f b/w, lane padding %.4f b/w,"
               " metadata %.4f b/w%s\n",
               fmt, gguf_bpw, bundle_bpw, saving, 8.0 * table_bytes / weights, 8.0 * pad_bytes / weights,
               8.0 * meta_bytes / weights, head);
    printf("rebuilt %s %s: %s\n", fmt, whole ? "byte-identical" : "DIFFERS",
           bad       ? "FAILED"
           : n_coded ? "every tensor matches with both decoders"
                     /* (a --dist bundle's, or one whose matrices code no smaller: no lane was
                        decoded, and "with both decoders" said otherwise; a fresh user's find) */
                     : "every tensor matches (no lane-coded matrix, so no lane decoder ran)");
}

/* Bits the symbols of a coded record take without lane padding. */
static uint64_t ideal_bits(const wp_coded_view *v, const uint8_t *sym)
{
    uint64_t bits = 0, n = v->shape.rows * v->shape.row_sym;
    for (uint64_t i = 0; i < n; i++)
        bits += v->lengths[sym[i]];
    return bits;
}

static int files_equal(FILE *a, const char *path)
{
    FILE *b = fopen(path, "rb");
    char x[1 << 15], y[1 << 15];
    int eq = b != NULL;
    rewind(a);
    while (eq) {
        size_t n = fread(x, 1, sizeof x, a), m = fread(y, 1, sizeof y, b);
        if (n != m || memcmp(x, y, n))
            eq = 0;
        if (n == 0)
            break;
    }
    if (b)
        fclose(b);
    return eq;
}

int main(int argc, char **argv)
{
    const char *orig = NULL, *bpath = NULL;
    int quiet = 0, bad = 0;
    char err[1024];
    wp_cli_init(argv[0]);
    int opts = 1;   /* until "--" (GNU, zstd): the words after it are files, "-x.gguf" too */
    for (int i = 1; i < argc; i++) {
        if (opts)
            wp_cli_info(argv[i], usage);   /* --help, -h, --version: exit here */
        if (!opts || !strcmp(argv[i], "-") || argv[i][0] != '-') {
            if (!orig)
                orig = argv[i];
            else if (!bpath)
                bpath = argv[i];
            else
                wp_die("too many arguments (got '%s' too; try --help)", argv[i]);   /* named, as the filters do */
        } else if (!strcmp(argv[i], "--")) {
            opts = 0;
        } else if (!strcmp(argv[i], "-q")) {
            quiet = 1;
        } else if (wp_cli_flag(argv[i], "--tsv")) {
            tsv = 1;
        } else {
            wp_die("%s: unknown option (try --help)", argv[i]);
        }
    }
    if (!orig || !bpath)
        wp_die("give ORIGINAL.gguf and BUNDLE (usage: verify [-q] [--tsv] ORIGINAL.gguf BUNDLE)");
    if (!strcmp(orig, "-") || !strcmp(bpath, "-"))   /* it said "-: No such file or directory" */
        wp_die("-: verify reads both files twice, so not standard input: give file names");

    wp_cli_input(orig);   /* verify x.gguf x.bundle >> x.gguf is refused */
    uint8_t h9[9] = {0};
    wp_st_in *sti = NULL;   /* a safetensors original (the bundle of safetensorscat FILE) */
    wp_gguf_in *g = NULL;
    if (wp_file_head(orig, h9, 9) == 9 && wp_st_magic(h9)) {
        if (!(sti = wp_st_open(orig, err, sizeof err)))
            wp_die("%s", err);
        fmt = "safetensors";
    } else if (!(g = wp_gguf_open(orig, err, sizeof err))) {
        /* the two given the other way round: "not a GGUF file (a wpack stream ...)" did not say
           so (a new user's trial) */
        uint8_t a[4] = {0}, b[9] = {0};
        const size_t nb = wp_file_head(bpath, b, 9);
        const int st_second = nb == 9 && wp_st_magic(b);   /* (a safetensors file second: no hint, a breaker's find) */
        const int swapped = wp_file_head(orig, a, 4) == 4 && nb >= 4 &&
                            (!memcmp(a, WP_STREAM_MAGIC, 4) || wp_zframe_magic(a, 4)) && (wp_gguf_magic(b, 4) || st_second);
        if (swapped)
            wp_die("%s: a bundle or stream, and %s a %s file: the order is verify ORIGINAL.%s BUNDLE", orig, bpath,
                   st_second ? "safetensors" : "GGUF", st_second ? "safetensors" : "gguf");
        wp_die("%s", err);
    }
    struct stat st;
    if (!*bpath)   /* (it said ": No such file or directory") */
        wp_die("an empty file name for the bundle (give the file's name)");
    if (stat(bpath, &st))
        wp_die("%s: %s", bpath, strerror(errno));
    if (!S_ISREG(st.st_mode))
        wp_die("%s: not a regular file (verify reads the bundle twice: give a file)", bpath);
    /* two GGUFs (it said "a GGUF file: read it with ggufcat", a stream filter's hint: a fresh
       user's nit) */
    uint8_t h[4] = {0};
    if (wp_gguf_magic(h, wp_file_head(bpath, h, 4)))
        wp_die("%s: a GGUF file, no bundle: verify checks a bundle against the GGUF it was made of (verify "
               "ORIGINAL.gguf BUNDLE; cmp compares two GGUFs)", bpath);
    wp_reader *rd = wp_cli_reader(bpath);
    wp_out_open(NULL);   /* a failure truncates a redirected report */
    char first_bad[WP_MAX_NAME + 256] = "";
    int n_bad_tensors = 0;
    wp_restore *ref = wp_restore_new(), *fast = wp_restore_new();
    wp_gguf_out *rebuilt = g ? wp_gguf_out_new(err, sizeof err) : NULL;
    if (g && !rebuilt)
        wp_die("%s: cannot rebuild the GGUF: %s", bpath, err);
    /* a safetensors file is rebuilt as it comes, into a spool; its first problem is kept for the
       end (the tensors are still checked one by one) */
    char why[600], st_bad[8192] = "";
    wp_st_out *st_rebuilt = sti ? wp_st_out_new() : NULL;
    FILE *st_tmp = sti ? wp_spool(why, sizeof why) : NULL;
    if (sti && (!st_rebuilt || !st_tmp))
        wp_die("%s: cannot rebuild the safetensors file: %s", bpath, st_rebuilt ? why : "out of memory");
    if (!ref || !fast)
        wp_die("out of memory");

    wp_record r, dup, o, coded;
    wp_record_init(&r);
    wp_record_init(&dup);
    wp_record_init(&o);
    wp_record_init(&coded);
    FILE *src = fopen(bpath, "rb");
    if (!src)
        wp_die("%s: cannot open: %s", bpath, strerror(errno));
    FILE *plain = wp_zframe_plain(src, bpath, err, sizeof err);   /* a --dist bundle: decompressed */
    if (!plain)
        wp_die("%s", err);
    void (*source)(wp_restore *, FILE *, const char *) = plain != src ? wp_restore_source_decompressed
                                                                      : wp_restore_source;
    /* A tensor stream (ggufcat's, gptq's) passed as a "bundle" larger than the GGUF is refused
       first. An index that does not read is refused after the reader in order has had its say
       ("truncated stream" of a file cut short). */
    wp_index ix;
    char ix_err[sizeof err] = "", notb[WP_MAX_NAME + 200];
    if ((plain != src ? wp_index_read_decompressed : wp_index_read)(plain, bpath, &ix, ix_err, sizeof ix_err)) {
        if (!ix_err[0])
            snprintf(ix_err, sizeof ix_err, "%s: unreadable index", bpath);
    } else {
        if (wp_index_not_bundle(&ix, notb, sizeof notb))
            wp_die("%s: %s", bpath, notb);
        wp_index_free(&ix);
    }
    const int framed = plain != src;
    src = plain;
    source(ref, src, bpath);
    source(fast, src, bpath);
    double weights = 0, coded_w = 0, table_bytes = 0, pad_bytes = 0, meta_bytes = 0, payload_bytes = 0;
    uint64_t n_coded = 0, n_fixed = 0, n_shared = 0, unit_bytes = 0;
    int have_coded = 0;
    uint8_t *sym = NULL;
    while (wp_cli_next(rd, &r)) {
        wp_record *a = NULL, *b = NULL;
        char same[WP_MAX_NAME + 1] = "";
        unsigned kind = r.kind;
        if (ix_err[0] && wp_rec_not_bundle(kind, r.name, notb, sizeof notb))   /* a cut tensor stream */
            wp_die("%s: %s", bpath, notb);
        unit_bytes += r.payload_len;
        payload_bytes += (double)r.payload_len;
        if (kind == WP_REC_REF)
            wp_attr_str(&r, "same_as", same, sizeof same);
        if (kind == WP_REC_CODED) {
            copy_record(&r, &coded);
            have_coded = 1;
        }
        copy_record(&r, &dup);
        int ka = wp_restore_put(ref, &r, 1, &a), kb = wp_restore_put(fast, &dup, 0, &b);
        if (ka < 0 || kb < 0)
            wp_die("%s: %s", bpath, wp_restore_error(ka < 0 ? ref : fast));
        if (kind == WP_REC_KVPACK || kind == WP_REC_GGUF) {   /* metadata; an empty kvpack expands to nothing */
            meta_bytes += (double)unit_bytes;
            unit_bytes = 0;
        }
        if (ka == 0)
            continue;
        for (; a; a = wp_restore_more(ref), b = wp_restore_more(fast)) {
            if (!b)
                wp_die("%s: the two decoders disagree on the record count", bpath);
            if (a->kind == WP_REC_TENSOR) {
                int k = g ? wp_gguf_read_tensor(g, a->name, &o) : wp_st_read_tensor(sti, a->name, &o);
                if (k < 0)
                    wp_die("%s", g ? wp_gguf_error(g) : wp_st_error(sti));
                int ok = k == 1 && same_tensor(a, &o) && same_tensor(b, &o);
                bad += !ok;
                if (!ok && !n_bad_tensors++) {
                    if (k != 1)
                        snprintf(first_bad, sizeof first_bad, "%s is not in %s", a->name, orig);
                    else if (a->type != o.type)
                        snprintf(first_bad, sizeof first_bad, "%s is %s in %s, %s in the bundle", a->name,
                                 wp_ggml_type_name(o.type) ? wp_ggml_type_name(o.type) : "?", orig,
                                 wp_ggml_type_name(a->type) ? wp_ggml_type_name(a->type) : "?");
                    else if (memcmp(a->ne, o.ne, sizeof a->ne))
                        snprintf(first_bad, sizeof first_bad, "%s has another shape in %s", a->name, orig);
                    else
                        snprintf(first_bad, sizeof first_bad, "%s: %s bytes differ from %s", a->name,
                                 same_tensor(a, &o) ? "the fast decoder's" : "the decoded", orig);
                }
                double nw = (double)wp_record_nelem(a), gbpw = 8.0 * (double)o.payload_len / nw;
                const char *type = wp_ggml_type_name(a->type) ? wp_ggml_type_name(a->type) : "?";
                if (have_coded) {
                    wp_coded_view v;
                    double h = wp_attr_f64(&coded, "entropy", -1), over;
                    if (wp_coded_view_get(&coded, &v, err, sizeof err))
                        wp_die("%s: %s", bpath, err);
                    uint64_t n = v.shape.rows * v.shape.row_sym;
                    sym = realloc(sym, n ? n : 1);
                    if (!sym || wp_coded_decode(&v, 0, sym, err, sizeof err))
                        wp_die("%s: %s", bpath, sym ? err : "out of memory");
                    double pad = (double)v.n_words * 4 - (double)((ideal_bits(&v, sym) + 7) / 8);
                    over = pad;
                    table_bytes += (double)v.table_bytes;
                    pad_bytes += pad;
                    double side = (double)wp_restore_side_len(ref);
                    double hb = -1;
                    if (h >= 0)
                        hb = (h * (double)n + 8.0 * side) / nw;
                    n_coded++;
                    coded_w += nw;
                    if (!quiet)
                        print_row(a->name, type, nw, gbpw, 8.0 * (double)unit_bytes / nw, hb,
                                  8.0 * (double)v.table_bytes / nw, 8.0 * over / nw, "coded", ok, "");
                } else if (same[0]) {
                    n_shared++;
                    if (!quiet)
                        print_row(a->name, type, nw, gbpw, 8.0 * (double)unit_bytes / nw, -1, -1, -1, "shared", ok,
                                  same);
                } else {
                    n_fixed++;
                    if (!quiet)
                        print_row(a->name, type, nw, gbpw, 8.0 * (double)unit_bytes / nw, -1, -1, -1,
                                  kind == WP_REC_Z ? "zstd" : "fixed", ok, "");
                }
                weights += nw;
                unit_bytes = 0;
                have_coded = 0;
            }
            if (rebuilt && wp_gguf_out_add(rebuilt, a) < 0)
                wp_die("%s: %s", bpath, wp_gguf_out_error(rebuilt));
            if (st_rebuilt && !st_bad[0] && wp_st_out_add(st_rebuilt, a, st_tmp) < 0)
                snprintf(st_bad, sizeof st_bad, "%s", wp_st_out_error(st_rebuilt));
        }
    }
    if (wp_restore_pending(ref))
        wp_die("%s: side data without its symbols at the end of the bundle", bpath);
    if (ix_err[0])
        wp_die("%s", ix_err);
    FILE *tmp = st_tmp;
    if (rebuilt) {
        /* unbundle's check of the gguf record's counts (verify said byte-identical of a bundle
           unbundle refused: a breaker's find) */
        if (wp_gguf_out_complete(rebuilt))
            wp_die("%s: %s", bpath, wp_gguf_out_error(rebuilt));
        if (!(tmp = wp_spool(why, sizeof why)))
            wp_die("%s: cannot rebuild the GGUF: %s", bpath, why);
        if (wp_gguf_out_finish(rebuilt, tmp))
            wp_die("%s: cannot rebuild the GGUF: %s", bpath, wp_gguf_out_error(rebuilt));
    } else if (!st_bad[0] && wp_st_out_finish(st_rebuilt)) {
        snprintf(st_bad, sizeof st_bad, "%s", wp_st_out_error(st_rebuilt));
    }
    if (fflush(tmp))
        wp_die("%s: cannot rebuild the %s file: temporary file in %s: write error: %s", bpath, fmt,
               wp_spool_where(), strerror(errno));
    int whole = !st_bad[0] && files_equal(tmp, orig);
    bad += !whole;
    fclose(tmp);

    report_header(quiet);   /* a report without rows: its header alone, as before */
    struct stat ost;
    const double orig_size = g ? (double)wp_gguf_file_size(g) : stat(orig, &ost) ? 0 : (double)ost.st_size;
    double gguf_bpw = 8.0 * orig_size / weights;
    double bundle_bpw = 8.0 * (double)st.st_size / weights;
    if (tsv) {   /* the file's line: everything included; no entropy column (side data, metadata) */
        print_row("*", "file", weights, gguf_bpw, bundle_bpw, -1, 8.0 * table_bytes / weights,
                  8.0 * pad_bytes / weights, "-", !bad, "");
    } else {
        print_totals(weights, coded_w, n_coded, n_fixed, n_shared, gguf_bpw, bundle_bpw, table_bytes, pad_bytes,
                     meta_bytes, framed ? -1 : (double)st.st_size - payload_bytes, whole, bad);
    }
    wp_out_commit();
    char shown[4 * sizeof first_bad];   /* (a newline in the name split the line: a breaker's find) */
    if (n_bad_tensors)
        fprintf(stderr, "verify: %s: %d tensors differ from %s (first: %s)\n", bpath, n_bad_tensors, orig,
                wp_printable(first_bad, shown, sizeof shown));
    else if (st_bad[0])
        fprintf(stderr, "verify: %s: cannot rebuild %s from it: %s\n", bpath, orig, st_bad);
    else if (!whole)
        fprintf(stderr, "verify: %s: the rebuilt %s differs from %s (metadata or layout)\n", bpath, fmt, orig);
    wp_record_free(&r);
    wp_record_free(&dup);
    wp_record_free(&o);
    wp_record_free(&coded);
    fclose(src);
    free(sym);
    wp_restore_free(ref);
    wp_restore_free(fast);
    wp_gguf_out_free(rebuilt);
    wp_st_out_free(st_rebuilt);
    wp_gguf_close(g);
    wp_st_close(sti);
    wp_reader_close(rd);
    return bad ? 1 : 0;
}
