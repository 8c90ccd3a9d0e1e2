/* ggufpack - a wpack tensor stream back into a GGUF file.
 * Usage: ggufpack [-o OUT.gguf] [STREAM]      (see ggufpack(1)) */
#include <string.h>

#include "cli.h"
#include "gguf_file.h"

static const char usage[] =
    "usage: ggufpack [-v] [-o OUT.gguf] [STREAM]\n"
    "Write the GGUF header, key/value and tensor records of a wpack stream\n"
    "(stdin by default) as a GGUF file to stdout or OUT.gguf (written to a\n"
    "temporary file and renamed). Other records are dropped; -v counts them.\n"
    "A stream with none of those records is an error.\n";

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int verbose = 0;
    char err[1024];
    wp_cli_init(argv[0]);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            verbose = 1;
        } else {
            wp_cli_common(argc, argv, &i, usage, &in, &out);
        }
    }

    wp_cli_input(in);   /* -o onto it said as such, before "write-protected" */
    wp_out_refuse_tty(out, WP_OUT_GGUF);   /* before the stream is read (it wrote the GGUF onto the terminal) */
    wp_reader *rd = wp_cli_reader(in);
    wp_gguf_out *g = wp_gguf_out_new(err, sizeof err);
    if (!g)
        wp_die("%s: %s", in && strcmp(in, "-") ? in : "stdin", err);
    wp_record r;
    wp_record_init(&r);
    long dropped = 0, kept = 0;
    char first[64] = "";   /* the kind of the first record dropped */
    while (wp_cli_next(rd, &r)) {
        /* a bundle: unbundle writes its GGUF itself ("unbundle --stream it first", then
           ggufpack, was a step too many: a new user's trial) */
        if (wp_rec_is_bundle(r.kind))
            wp_die("%s: a bundle (a %s record): unbundle writes its GGUF", in && strcmp(in, "-") ? in : "stdin",
                   wp_rec_kind_name(r.kind));
        if (wp_rec_is_coded(r.kind))
            wp_cli_refuse_coded(in, &r, "a tensor stream");
        int k = wp_gguf_out_add(g, &r);
        if (k < 0)
            wp_die("%s: %s", in ? in : "stdin", wp_gguf_out_error(g));
        dropped += k == 0;
        kept += k == 1;
        if (k == 0 && !first[0])
            snprintf(first, sizeof first, "%s", wp_rec_kind_name(r.kind));
    }
    if (!kept)   /* (ggufpack m.hess > x.gguf wrote an empty GGUF and said nothing) */
        wp_die("%s: no GGUF header, key/value or tensor record to write (%ld record%s of other kinds%s%s)",
               in && strcmp(in, "-") ? in : "stdin", dropped, dropped == 1 ? "" : "s", dropped ? ", the first " : "",
               first);
    if (wp_gguf_out_complete(g))
        wp_die("%s: %s", in && strcmp(in, "-") ? in : "stdin", wp_gguf_out_error(g));
    FILE *f = wp_out_open(out);
    if (wp_gguf_out_finish(g, f))
        wp_die("%s: %s", wp_out_name(), wp_gguf_out_error(g));
    wp_out_commit();
    const char *warn = wp_gguf_out_warning(g);   /* valid GGUF, but not one llama.cpp opens */
    if (warn)
        wp_warn("%s", warn);
    if (verbose)
        fprintf(stderr, "ggufpack: %ld non-GGUF records dropped\n", dropped);
    wp_record_free(&r);
    wp_gguf_out_free(g);
    wp_reader_close(rd);
    return 0;
}
