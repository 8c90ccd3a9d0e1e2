/* laneinterleave - Huffman-code each matrix into 64x256 tiles of 32 lanes:
 * the bundle. Usage: laneinterleave [-o OUT] [STREAM]   (see laneinterleave(1)) */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "bundle.h"
#include "cli.h"
#include "codes.h"

static const char usage[] =
    "usage: laneinterleave [--align N] [-o OUT] [STREAM]\n"
    "Encode the symbols of each matrix with its code table (huffbuild) into\n"
    "64x256 tiles, lane k holding rows 2k and 2k+1, the 32 lanes' 32-bit words\n"
    "interleaved, with per-tile offsets; keep side data and everything else.\n"
    "A matrix whose coded form is not smaller than its fixed-width form is\n"
    "stored fixed-width (attribute stored=fixed). The output, ending with its\n"
    "index, is the bundle (wpack-bundle(5)); unbundle restores the GGUF.\n"
    "--align N aligns payloads to N bytes (a power of two; default 8: the GPU\n"
    "runner copies each matrix into its own device buffer).\n";

static const char *src = "stdin";

/* Bytes of the tensor a SYMBOLS record stands for, stored fixed-width. */
static uint64_t fixed_bytes(const wp_record *sym)
{
    char codec[16] = "";
    wp_attr_str(sym, "codec", codec, sizeof codec);
    int64_t rows = sym->ne[0] ? wp_record_nelem(sym) / sym->ne[0] : 0;
    if (!strcmp(codec, "q")) {
        wp_codes_geom g;
        if (wp_codes_geom_get((int)sym->type, sym->ne[0], (uint64_t)rows, &g))
            wp_die("%s: '%s': type without a code view", src, sym->name);
        return g.block_len;
    }
    int eb, rb, es = wp_bf16_fields(sym->type, &eb, &rb);
    if (es <= 0)
        wp_die("%s: '%s': unknown codec '%s'", src, sym->name, codec);
    return (uint64_t)wp_record_nelem(sym) * (uint64_t)es;
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    char err[512];
    unsigned align = 8;
    wp_cli_init(argv[0]);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--align") && i + 1 < argc) {
            align = (unsigned)wp_arg_int("--align", argv[++i], 1, 4096);
            if (align & (align - 1))
                wp_die("--align: %u is not a power of two", align);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            wp_die("unknown option '%s' (try --help)", argv[i]);
        } else if (!in) {
            in = argv[i];
        } else {
            wp_die("one stream at a time (got '%s' too)", argv[i]);
        }
    }
    if (in && strcmp(in, "-"))
        src = in;

    wp_reader *rd = wp_cli_reader(in);
    wp_writer *w = wp_cli_writer_aligned(out, align);
    wp_record r, table, held, coded;
    wp_record_init(&r);
    wp_record_init(&table);
    wp_record_init(&held);
    wp_record_init(&coded);
    int holding = 0, have_table = 0;
    double entropy = -1;
    char entropy_of[WP_MAX_NAME + 1] = "";
    while (wp_cli_next(rd, &r)) {
        switch (r.kind) {
        case WP_REC_HIST:
            entropy = wp_attr_f64(&r, "entropy", -1);
            snprintf(entropy_of, sizeof entropy_of, "%s", r.name);
            continue;
        case WP_REC_TABLE: {
            wp_record t = table;
            table = r;
            r = t;
            have_table = 1;
            continue;
        }
        case WP_REC_SIDE:
        case WP_REC_RAW: {
            if (holding)
                wp_die("%s: '%s': %s data without its symbols", src, held.name, wp_rec_kind_name(held.kind));
            wp_record t = held;
            held = r;
            r = t;
            holding = 1;
            continue;
        }
        case WP_REC_SYMBOLS:
            break;
        default:
            if (holding)
                wp_die("%s: '%s': %s data without its symbols", src, held.name, wp_rec_kind_name(held.kind));
            wp_cli_put(w, &r);
            continue;
        }

        /* A SYMBOLS record: code it, or store the tensor fixed-width. */
        if (!have_table || strcmp(table.name, r.name))
            wp_die("%s: '%s': no code table (run huffbuild before laneinterleave)", src, r.name);
        if (!holding || strcmp(held.name, r.name))
            wp_die("%s: '%s': symbols without their side or raw data", src, r.name);
        if (table.payload_len != 256)
            wp_die("%s: '%s': bad code table", src, r.name);
        wp_lanes_shape shape = {
            .rows = r.ne[0] ? (uint64_t)(wp_record_nelem(&r) / r.ne[0]) : 0,
            .row_sym = (uint64_t)wp_attr_i64(&r, "row_sym", -1),
            .tile_sym = (uint32_t)wp_attr_i64(&r, "tile_sym", 0),
        };
        if (shape.rows * shape.row_sym != r.payload_len)
            wp_die("%s: '%s': %" PRIu64 " symbols do not fill %" PRIu64 " rows of %" PRIu64, src, r.name,
                   r.payload_len, shape.rows, shape.row_sym);
        free(coded.attrs);
        coded.attrs = strdup(r.attrs ? r.attrs : "");
        coded.type = r.type;
        coded.n_dims = r.n_dims;
        memcpy(coded.ne, r.ne, sizeof r.ne);
        if (!coded.attrs || wp_record_set_name(&coded, r.name))
            wp_die("out of memory");
        if (wp_coded_encode(&coded, r.payload, &shape, table.payload,
                            (int)wp_attr_i64(&table, "max_len", WP_HUF_LEN), err, sizeof err))
            wp_die("%s: '%s': %s", src, r.name, err);
        if (entropy >= 0 && !strcmp(entropy_of, r.name))
            wp_attr_set_f64(&coded, "entropy", entropy);
        holding = 0;
        if (coded.payload_len + held.payload_len < fixed_bytes(&r)) {
            wp_cli_put(w, &held);
            wp_cli_put(w, &coded);
            continue;
        }
        /* Not smaller coded: restore the tensor and store it as it was. */
        wp_restore *rs = wp_restore_new();
        wp_record *t = NULL;
        if (!rs || wp_restore_put(rs, &held, 0, &t) < 0 || wp_restore_put(rs, &r, 0, &t) != 1)
            wp_die("%s: '%s': %s", src, r.name, rs ? wp_restore_error(rs) : "out of memory");
        wp_attr_set(t, "stored", "fixed");
        wp_cli_put(w, t);
        wp_restore_free(rs);
    }
    if (holding)
        wp_die("%s: '%s': %s data without its symbols (truncated stream?)", src, held.name,
               wp_rec_kind_name(held.kind));
    wp_cli_writer_close(w);
    wp_record_free(&r);
    wp_record_free(&table);
    wp_record_free(&held);
    wp_record_free(&coded);
    wp_reader_close(rd);
    return 0;
}
