/* safetensorscat - .safetensors files as one wpack tensor stream on stdout.
 * Usage: safetensorscat [-o OUT] FILE.safetensors...   (see safetensorscat(1)) */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "safetensors.h"

static const char usage[] =
    "usage: safetensorscat [-o OUT] FILE.safetensors...\n"
    "Write the tensors (F32, F16, BF16; also F64, I8, I16, I32, I64) of one or\n"
    "more safetensors files, and their __metadata__ as key/values named\n"
    "safetensors.metadata.KEY, as one wpack tensor stream (wpack-stream(5)) to\n"
    "stdout or OUT. Every header is checked before anything is written; a\n"
    "tensor name found in two files is an error. One file's stream keeps its\n"
    "header too (safetensors.header), so that unbundle and safetensorspack\n"
    "give the file back byte for byte.\n";

/* One name across all inputs: which file, and for metadata the value. */
struct seen {
    const char *name, *value;
    size_t      file;
};

static int cmp_seen(const void *a, const void *b)
{
    const struct seen *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    if (!x->value != !y->value)
        return x->value ? 1 : -1;
    return x->file < y->file ? -1 : x->file > y->file;
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    const char **in = calloc((size_t)argc, sizeof *in);
    size_t n_in = 0;
    char err[8192];
    wp_cli_init(argv[0]);
    if (!in)
        wp_die("out of memory");
    for (int i = 1; i < argc; i++) {
        wp_cli_info(argv[i], usage);   /* --help, -h, --version: exit here */
        if (!strcmp(argv[i], "-o")) {
            if (i + 1 >= argc)   /* (it said "-o: unknown option", as no other program: a fresh user's find) */
                wp_die("-o: needs a value (try --help)");
            out = wp_cli_once("-o", out, wp_cli_value(argv, &i), 0);
        } else if (!strcmp(argv[i], "--")) {
            while (++i < argc)
                in[n_in++] = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1]) {   /* "-" goes on to be refused as a file */
            wp_die("%s: unknown option (try --help)", argv[i]);
        } else {
            in[n_in++] = argv[i];
        }
    }
    if (!n_in)
        wp_die("no input file (try --help)");

    /* Open and check every header first, so that a bad file anywhere stops
     * the run before any output. */
    wp_st_in **st = calloc(n_in, sizeof *st);
    uint64_t n_names = 0;
    if (!st)
        wp_die("out of memory");
    for (size_t i = 0; i < n_in; i++) {
        wp_cli_input(in[i]);
        if (!(st[i] = wp_st_open(in[i], err, sizeof err)))
            wp_die("%s", err);
        n_names += wp_st_n_tensors(st[i]) + wp_st_n_meta(st[i]);
    }

    /* Names across files: a tensor in two files is an error; a metadata key
     * in several files is written once when the values agree (shards of one
     * checkpoint all carry {"format": "pt"}) and an error when they differ. */
    char **skip = calloc(n_in, sizeof *skip); /* per file: metadata entries not written */
    if (!skip)
        wp_die("out of memory");
    if (n_in > 1) {
        struct seen *v = calloc(n_names ? n_names : 1, sizeof *v);
        size_t k = 0;
        if (!v)
            wp_die("out of memory");
        for (size_t i = 0; i < n_in; i++) {
            if (!(skip[i] = calloc(wp_st_n_meta(st[i]) + 1, 1)))
                wp_die("out of memory");
            for (uint64_t j = 0; j < wp_st_n_tensors(st[i]); j++)
                v[k++] = (struct seen){wp_st_tensor_name(st[i], j), NULL, i};
            for (uint64_t j = 0; j < wp_st_n_meta(st[i]); j++) {
                const char *val;
                v[k].name = wp_st_meta(st[i], j, &val, NULL);
                v[k].value = val;
                v[k++].file = i;
            }
        }
        qsort(v, k, sizeof *v, cmp_seen);
        for (size_t j = 1; j < k; j++) {
            const struct seen *a = &v[j - 1], *b = &v[j];
            if (strcmp(a->name, b->name) || !a->value != !b->value || a->file == b->file)
                continue;
            if (!a->value || !b->value)
                wp_die("%s: tensor '%s' is also in %s", in[b->file], b->name, in[a->file]);
            if (strcmp(a->value, b->value))
                wp_die("%s: __metadata__ key '%s' differs from the one in %s", in[b->file], b->name,
                       in[a->file]);
            for (uint64_t m = 0; m < wp_st_n_meta(st[b->file]); m++)
                if (wp_st_meta(st[b->file], m, NULL, NULL) == b->name)
                    skip[b->file][m] = 1;
        }
        free(v);
    }

    wp_writer *w = wp_cli_writer(out);
    wp_record r;
    wp_record_init(&r);
    for (size_t i = 0; i < n_in; i++) {
        uint64_t m = 0;
        int k;
        while ((k = wp_st_next(st[i], &r)) > 0) {
            /* a file's header only when it is alone: the stream then gives that file back */
            if (wp_st_is_header(&r)) {
                if (n_in == 1)
                    wp_cli_put(w, &r);
            } else if (r.kind != WP_REC_KV || !skip[i] || !skip[i][m]) {
                wp_cli_put(w, &r);
            }
            if (r.kind == WP_REC_KV && !wp_st_is_header(&r))
                m++;
            wp_record_free(&r);
        }
        if (k < 0)
            wp_die("%s", wp_st_error(st[i]));
        wp_st_close(st[i]);
        free(skip[i]);
    }
    wp_cli_writer_close(w);
    free(skip);
    free(st);
    free(in);
    return 0;
}
