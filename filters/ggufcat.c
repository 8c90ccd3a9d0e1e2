/* ggufcat - a GGUF file as a wpack tensor stream on stdout.
 * Usage: ggufcat [-o OUT] [FILE.gguf|-]   (see ggufcat(1)) */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gguf_file.h"

static const char usage[] =
    "usage: ggufcat [-o OUT] [FILE.gguf|-]\n"
    "Write the GGUF file's header, metadata key/values and tensors as a wpack\n"
    "tensor stream (wpack-stream(5)) to stdout or OUT. `ggufcat x.gguf | ggufpack`\n"
    "gives x.gguf back byte for byte. FILE may be zstd-compressed (x.gguf.zst);\n"
    "without FILE, or with -, the GGUF is read from stdin (a pipe too).\n";

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    char err[1024];
    wp_cli_init(argv[0]);
    for (int i = 1; i < argc; i++) {
        wp_cli_common(argc, argv, &i, usage, &in, &out);
    }
    if (!in)   /* as every filter: standard input (a terminal refused by wp_gguf_open_any) */
        in = "-";

    wp_cli_input(in);
    wp_gguf_in *g = wp_gguf_open_any(in, err, sizeof err);
    if (!g)
        wp_die("%s", err);
    wp_writer *w = wp_cli_writer(out);
    wp_record r;
    wp_record_init(&r);
    int k;
    while ((k = wp_gguf_next(g, &r)) > 0) {
        wp_cli_put(w, &r);
        wp_record_free(&r);
    }
    if (k < 0)
        wp_die("%s", wp_gguf_error(g));
    wp_cli_writer_close(w);
    wp_gguf_close(g);
    return 0;
}
