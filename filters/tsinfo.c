/* tsinfo - list the records of a wpack stream or bundle, one line each.
 * Usage: tsinfo [-a] [-x] [FILE|-]      (see tsinfo(1)) */
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "bundle.h"
#include "cli.h"
#include "ggml_type.h"
#include "gguf_file.h"
#include "safetensors.h"

static const char usage[] =
    "usage: tsinfo [-a] [-x] [FILE|-]\n"
    "One line per record of a wpack stream or bundle (or of a GGUF or safetensors file,\n"
    "as ggufcat or safetensorscat writes it): kind, name, type,\n"
    "shape, payload bytes, and bits per weight where defined (or the value of\n"
    "a metadata key). -a also prints each record's attributes; -x each\n"
    "payload's XXH64 (diff two listings to compare tensors).\n";

static void shape_str(const wp_record *r, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    if (r->n_dims == 0) {
        snprintf(buf, n, "-");
        return;
    }
    for (int d = 0; d < r->n_dims && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, d ? "x" : "", r->ne[d]);
}

static const char *type_str(const wp_record *r, char *buf, size_t n)
{
    if (r->kind == WP_REC_KV)
        return wp_gguf_type_name(r->type);
    if (r->kind == WP_REC_GGUF || r->kind == WP_REC_KVPACK || r->kind == WP_REC_END)
        return "-";
    if (wp_ggml_type_name(r->type))
        return wp_ggml_type_name(r->type);
    snprintf(buf, n, "%" PRIu32, r->type);
    return buf;
}

/* What the regular file at path starts as: 'g' GGUF's magic, 's' a safetensors header, else 0
 * (a pipe is not peeked: its bytes would be lost to the stream reader). */
static int file_kind(const char *path)
{
    uint8_t m[9];
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    const size_t n = f ? fread(m, 1, sizeof m, f) : 0;
    if (f)
        fclose(f);
    return wp_gguf_magic(m, n) ? 'g' : n == sizeof m && wp_st_magic(m) ? 's' : 0;
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int show_attrs = 0, show_hash = 0;
    wp_cli_init(argv[0]);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-a")) {
            show_attrs = 1;
        } else if (!strcmp(argv[i], "-x")) {
            show_hash = 1;
        } else if (!strcmp(argv[i], "-o")) {
            wp_die("tsinfo writes its listing to stdout: no -o");
        } else {
            wp_cli_common(argc, argv, &i, usage, &in, &out);
        }
    }

    /* a GGUF file named is listed as ggufcat would write it, as gguf-dump does (it said "read it
       with ggufcat": a new user's trial), and a safetensors file as safetensorscat would (it said
       "read it with safetensorscat": a new user's trial); any other input is a stream */
    wp_gguf_in *g = NULL;
    wp_st_in *st = NULL;
    wp_reader *rd = NULL;
    const int kind = in && strcmp(in, "-") ? file_kind(in) : 0;
    char err[1024];
    if (kind == 'g') {
        wp_cli_input(in);
        if (!(g = wp_gguf_open(in, err, sizeof err)))
            wp_die("%s", err);
    } else if (kind == 's') {
        wp_cli_input(in);
        if (!(st = wp_st_open(in, err, sizeof err)))
            wp_die("%s", err);
    } else {
        rd = wp_cli_reader(in);
    }
    wp_out_open(NULL);   /* a failure truncates a redirected listing */
    wp_record r;
    wp_record_init(&r);
    uint64_t n = 0, bytes = 0, tensor_bytes = 0;
    int64_t weights = 0;
    static wp_weight_tally tally;   /* the weights a bundle restores */
    printf("%-8s %-40s %-8s %-14s %12s  %s\n", "kind", "name", "type", "shape", "bytes", "b/w or value");
    int k;
    while ((k = g ? wp_gguf_next(g, &r) : st ? wp_st_next(st, &r) : wp_cli_next(rd, &r)) > 0) {
        char shape[96], tb[16], extra[256] = "";
        shape_str(&r, shape, sizeof shape);
        int64_t nw = wp_attr_i64(&r, "n_weights", r.kind == WP_REC_TENSOR ? wp_record_nelem(&r) : 0);
        if (r.kind == WP_REC_KV)
            wp_gguf_value_str(r.type, r.payload, r.payload_len, extra, sizeof extra);
        else if (nw > 0)
            snprintf(extra, sizeof extra, "%.4f", 8.0 * (double)r.payload_len / (double)nw);
        char pn[4 * WP_MAX_NAME + 8], px[4 * sizeof extra];   /* a newline in a name or value splits no line */
        printf("%-8s %-40s %-8s %-14s %12" PRIu64 "  %s", wp_rec_kind_name(r.kind), wp_printable(r.name, pn, sizeof pn),
               type_str(&r, tb, sizeof tb), shape, r.payload_len, wp_printable(extra, px, sizeof px));
        if (show_hash)
            printf("  xxh64=%016llx", (unsigned long long)XXH64(r.payload_len ? (const void *)r.payload : "",
                                                                  (size_t)r.payload_len, 0));
        printf("\n");
        if (show_attrs && r.attrs && r.attrs[0]) {   /* (NULL from the GGUF reader: a crash) */
            for (const char *p = r.attrs; *p;) {
                const char *nl = strchr(p, '\n');
                printf("    %.*s\n", (int)(nl ? nl - p : (long)strlen(p)), p);
                p = nl ? nl + 1 : p + strlen(p);
            }
        }
        n++;
        bytes += r.payload_len;
        if (r.kind == WP_REC_TENSOR) {
            weights += nw;
            tensor_bytes += r.payload_len;
        }
        wp_weight_tally_add(&tally, &r);   /* every tensor once, whatever form it takes */
    }
    if (k < 0)
        wp_die("%s", g ? wp_gguf_error(g) : wp_st_error(st));
    printf("# %" PRIu64 " records, %" PRIu64 " payload bytes", n, bytes);
    int64_t bundle_weights = tally.weights;
    if (weights && weights == bundle_weights)
        printf(", %" PRId64 " tensor weights, tensors %.4f b/w", weights, 8.0 * (double)tensor_bytes / (double)weights);
    else if (bundle_weights)
        printf(", %" PRId64 " weights in all, payloads %.4f b/w", bundle_weights,
               8.0 * (double)bytes / (double)bundle_weights);
    printf("\n");
    wp_out_commit();
    wp_record_free(&r);
    if (rd)
        wp_reader_close(rd);
    wp_gguf_close(g);
    wp_st_close(st);
    return 0;
}
