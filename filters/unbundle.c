/* unbundle - restore the original GGUF (or safetensors file) from a bundle, byte for byte.
 * Usage: unbundle [--stream] [--reference] [-o OUT] [BUNDLE]   (see unbundle(1)) */
#include <errno.h>
#include <string.h>

#include "bundle.h"
#include "cli.h"
#include "spool.h"
#include "zframe.h"
#include "gguf_file.h"
#include "safetensors.h"

static const char usage[] =
    "usage: unbundle [--stream] [--reference] [-o OUT] [BUNDLE]\n"
    "Decode every coded matrix of a bundle (stdin by default) back to its exact\n"
    "ggml blocks or floats and write the file it came from, byte for byte, to\n"
    "stdout or OUT: the GGUF, or the safetensors file of a bundle of one\n"
    "(safetensorscat FILE | ...). --stream writes the restored tensor stream.\n"
    "--reference decodes with the reference (limit-comparing) lane decoder.\n";

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int as_stream = 0, reference = 0;
    char err[1024];
    wp_cli_init(argv[0]);
    for (int i = 1; i < argc; i++) {
        if (wp_cli_flag(argv[i], "--stream")) {
            as_stream = 1;
        } else if (wp_cli_flag(argv[i], "--reference")) {
            reference = 1;
        } else {
            wp_cli_common(argc, argv, &i, usage, &in, &out);
        }
    }
    const char *src = in && strcmp(in, "-") ? in : "stdin";
    /* before the bundle is read (it wrote the GGUF onto the terminal); -o onto it said as such */
    wp_cli_input(in);
    /* the file's kind shows at the bundle's first record, checked again then: until then a name
       ending .safetensors (.zst ...) is taken for one, .gguf for a GGUF, any other for either (a compressor's
       suffix refused in words that fit both: the GGUF's advice was given for a safetensors file,
       and the other way round, a breaker's find) */
    wp_out_refuse_tty(out, as_stream ? WP_OUT_STREAM : wp_out_restored_kind(out));

    /* Shared tensors are read back through the index: a pipe is spooled to
     * an unnamed temporary file first. */
    FILE *bf = wp_in_open(in);
    if (fseeko(bf, 0, SEEK_CUR) != 0) {
        char buf[1 << 16], why[600];
        FILE *t = wp_spool(why, sizeof why);
        size_t n;
        if (!t)
            wp_die("%s: %s", src, why);
        /* (a full $TMPDIR said "temporary file: write error", not which input or why, and a
           failed last flush went unseen until the copy read back short: a breaker's find) */
        while ((n = fread(buf, 1, sizeof buf, bf)) > 0)
            if (fwrite(buf, 1, n, t) != n)
                wp_die("%s: temporary file in %s: write error: %s", src, wp_spool_where(), strerror(errno));
        if (ferror(bf))
            wp_die("%s: read error: %s", src, strerror(errno));
        if (fflush(t))
            wp_die("%s: temporary file in %s: write error: %s", src, wp_spool_where(), strerror(errno));
        rewind(t);
        bf = t;
    }
    /* A distribution bundle (one zstd frame) is decompressed to a temporary
     * file, since references are resolved by random access. */
    FILE *plain = wp_zframe_plain(bf, src, err, sizeof err);
    if (!plain)
        wp_die("%s", err);
    const int copy = plain != bf;   /* by index, offsets are the decompressed stream's */
    bf = plain;
    /* A second, independent handle on the same file for random access. */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fileno(bf));
    FILE *ix = fopen(self, "rb");
    /* a GGUF is no bundle: said so, with the way to what was asked (it was "a GGUF file: read
       it with ggufcat", a stream filter's hint, for a GGUF wanted: a new user's trial; with
       --stream that is the way: a breaker's) */
    uint8_t head[4];
    const size_t got = fread(head, 1, sizeof head, bf);
    if (wp_gguf_magic(head, got))
        wp_die("%s: a %sGGUF file, no bundle: %s", src, copy ? "zstd-compressed " : "",
               as_stream ? "ggufcat reads it as a stream"
               : copy    ? "unbundle restores a GGUF from a bundle, and zstd -d gives this one"
                         : "unbundle restores a GGUF from a bundle, and this is one already");
    rewind(bf);
    wp_reader *rd = (copy ? wp_reader_open_decompressed : wp_reader_open)(bf, src, err, sizeof err);
    if (!rd)
        wp_die("%s", err);
    wp_restore *rs = wp_restore_new();
    if (rs && ix)
        (copy ? wp_restore_source_decompressed : wp_restore_source)(rs, ix, src);
    wp_writer *w = as_stream ? wp_cli_writer(out) : NULL;
    wp_gguf_out *g = NULL;   /* made at the first record, for a GGUF (its spools: not for a safetensors file) */
    if (!rs)
        wp_die("%s: out of memory", src);
    wp_record r, *t;
    wp_record_init(&r);
    long kept = 0;   /* GGUF records taken */
    int first = 1;
    wp_st_out *so = NULL;   /* the bundle of one safetensors file: written as it comes */
    FILE *sf = NULL;
    while (wp_cli_next(rd, &r)) {
        int k = wp_restore_put(rs, &r, reference, &t);
        if (k < 0)
            wp_die("%s: %s", src, wp_restore_error(rs));
        for (; k == 1 && t; t = wp_restore_more(rs)) {
            if (first && !w) {
                first = 0;
                if (wp_st_is_header(t)) {
                    wp_out_refuse_tty(out, WP_OUT_SAFETENSORS);
                    if (!(so = wp_st_out_new()))
                        wp_die("%s: out of memory", src);
                    sf = wp_out_open(out);
                } else {
                    wp_out_refuse_tty(out, WP_OUT_GGUF);   /* a GGUF under a safetensors name dies */
                    if (!(g = wp_gguf_out_new(err, sizeof err)))
                        wp_die("%s: %s", src, err);
                }
            }
            int k = w ? (wp_cli_put(w, t), 1) : so ? wp_st_out_add(so, t, sf) : wp_gguf_out_add(g, t);
            if (k < 0)
                wp_die("%s: %s", src, so ? wp_st_out_error(so) : wp_gguf_out_error(g));
            kept += k;
        }
    }
    if (wp_restore_pending(rs))
        wp_die("%s: side data without its symbols at the end of the bundle", src);
    if (w) {
        wp_cli_writer_close(w);
    } else if (so) {
        if (wp_st_out_finish(so))
            wp_die("%s: %s", src, wp_st_out_error(so));
        wp_out_commit();
        wp_st_out_free(so);
    } else {
        if (!kept || !g)   /* (a Hessian file became an empty GGUF, exit 0) */
            wp_die("%s: no GGUF header, key/value or tensor record to write (not a bundle of a GGUF or a tensor "
                   "stream; unbundle --stream gives its records back)", src);
        if (wp_gguf_out_complete(g))
            wp_die("%s: %s", src, wp_gguf_out_error(g));
        FILE *f = wp_out_open(out);
        if (wp_gguf_out_finish(g, f))
            wp_die("%s: %s", wp_out_name(), wp_gguf_out_error(g));
        wp_out_commit();
        const char *warn = wp_gguf_out_warning(g);   /* valid GGUF, but not one llama.cpp opens */
        if (warn)
            wp_warn("%s", warn);
        wp_gguf_out_free(g);
    }
    wp_record_free(&r);
    wp_restore_free(rs);
    wp_reader_close(rd);
    return 0;
}
