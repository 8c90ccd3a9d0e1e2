/* safetensorspack - a stream of one safetensors file back into that file.
 * Usage: safetensorspack [-o OUT.safetensors] [STREAM]      (see safetensorspack(1)) */
#include <string.h>

#include "cli.h"
#include "safetensors.h"

static const char usage[] =
    "usage: safetensorspack [-o OUT.safetensors] [STREAM]\n"
    "Write the stream of one safetensors file (safetensorscat FILE, or\n"
    "unbundle --stream of its bundle; stdin by default) back into that file,\n"
    "byte for byte, to stdout or OUT (written to a temporary file and\n"
    "renamed): its header as it was, then its tensors. A stream without the\n"
    "file's header (safetensors.header), or whose tensors are no longer the\n"
    "ones it lists, is an error.\n";

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    wp_cli_init(argv[0]);
    for (int i = 1; i < argc; i++)
        wp_cli_common(argc, argv, &i, usage, &in, &out);
    const char *src = in && strcmp(in, "-") ? in : "stdin";

    wp_cli_input(in);
    wp_out_refuse_tty(out, WP_OUT_SAFETENSORS);   /* before the stream is read */
    wp_reader *rd = wp_cli_reader(in);
    wp_st_out *o = wp_st_out_new();
    if (!o)
        wp_die("%s: out of memory", src);
    FILE *f = NULL;
    wp_record r;
    wp_record_init(&r);
    while (wp_cli_next(rd, &r)) {
        if (wp_rec_is_bundle(r.kind))   /* as ggufpack says it */
            wp_die("%s: a bundle (a %s record): unbundle writes its file", src, wp_rec_kind_name(r.kind));
        if (wp_rec_is_coded(r.kind))
            wp_cli_refuse_coded(in, &r, "a tensor stream");
        if (!f && wp_st_is_header(&r))   /* the output opened once there is a file to write */
            f = wp_out_open(out);
        if (wp_st_out_add(o, &r, f) < 0)
            wp_die("%s: %s", src, wp_st_out_error(o));
    }
    if (wp_st_out_finish(o))
        wp_die("%s: %s", src, wp_st_out_error(o));
    wp_out_commit();
    wp_record_free(&r);
    wp_st_out_free(o);
    wp_reader_close(rd);
    return 0;
}
