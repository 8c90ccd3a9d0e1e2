/* test_bundle.c - the bundle's coded records and the stream's checks:
 * symbols + side data restore the exact llama.cpp blocks, and every single
 * bit flip of a small bundle is detected (never a crash). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ggml.h"
#include "bf16.h"
#include "blocks.h"
#include "bundle.h"
#include "codes.h"
#include "ggml_type.h"
#include "huffman.h"
#include "rowmap.h"
#include "stream.h"
#include "tap.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) - 0.5f;
}

/* Quantize a rows x cols matrix with the reference llama.cpp and append its
 * SIDE + CODED records to w; returns the block bytes (caller frees). */
static uint8_t *add_matrix(wp_writer *w, const char *name, int type, int64_t rows, int64_t cols)
{
    float *x = malloc(sizeof(float) * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows * cols; i++)
        x[i] = frand() * frand() * 4;
    size_t bytes = (size_t)rows * ggml_row_size((enum ggml_type)type, cols);
    uint8_t *blocks = malloc(bytes);
    ggml_quantize_chunk((enum ggml_type)type, x, blocks, 0, rows, cols, NULL);
    free(x);

    wp_codes_geom g;
    wp_codes_geom_get(type, cols, (uint64_t)rows, &g);
    uint8_t *sym = malloc(g.n_sym), *side = malloc(g.side_len);
    wp_codes_split(&g, blocks, sym, side);
    uint64_t counts[256] = {0};
    uint8_t lengths[256];
    for (uint64_t i = 0; i < g.n_sym; i++)
        counts[sym[i]]++;
    wp_huf_lengths(counts, 256, 11, lengths);

    wp_record r;
    char err[256];
    wp_record_init(&r);
    r.kind = WP_REC_SIDE;
    r.type = (uint32_t)type;
    r.n_dims = 2;
    r.ne[0] = cols;
    r.ne[1] = rows;
    wp_record_set_name(&r, name);
    memcpy(wp_record_alloc(&r, g.side_len), side, g.side_len);
    wp_writer_put(w, &r);
    wp_lanes_shape s = {.rows = (uint64_t)rows, .row_sym = g.row_sym, .tile_sym = g.tile_sym};
    wp_attr_set(&r, "codec", "q");
    wp_attr_set_hash(&r, "xxh32", blocks, bytes);   /* (restorers require it) */
    CHECK(wp_coded_encode(&r, sym, &s, lengths, 11, err, sizeof err) == 0, "%s: coded", name);
    wp_writer_put(w, &r);
    wp_record_free(&r);
    free(sym);
    free(side);
    return blocks;
}

/* Read a whole bundle from memory, restoring tensors with the reference
 * decoder (ref 1), the fast one (0), or each in turn (-1). Returns the
 * number of tensors restored, or -1 on any error. Restored blocks compared
 * with want. */
static int read_bundle(const uint8_t *buf, size_t len, int ref, uint8_t *const *want, const size_t *want_len,
                       int *same)
{
    char err[256];
    FILE *f = fmemopen((void *)buf, len, "rb");
    wp_reader *rd = wp_reader_open(f, "mem", err, sizeof err);
    int n = 0, k;
    *same = 1;
    if (!rd) {
        fclose(f);
        return -1;
    }
    wp_restore *rs = wp_restore_new();
    wp_record r, *t;
    wp_record_init(&r);
    while ((k = wp_reader_next(rd, &r)) == 1) {
        int p = wp_restore_put(rs, &r, ref < 0 ? n % 2 : ref, &t);
        if (p < 0) {
            k = -1;
            break;
        }
        if (p == 1 && t->kind == WP_REC_TENSOR) {
            if (n < 2 && (t->payload_len != want_len[n] || memcmp(t->payload, want[n], want_len[n])))
                *same = 0;
            n++;
        }
    }
    if (k == 0 && wp_restore_pending(rs))
        k = -1;
    wp_record_free(&r);
    wp_restore_free(rs);
    wp_reader_close(rd);
    fclose(f);
    return k < 0 ? -1 : n;
}

/* wp_q_records, wp_hist_record / wp_hist_counts and wp_table_record: the
 * payloads and attributes histogram and huffbuild write. */
static void test_records(void)
{
    wp_record t, side, sym, h, tab;
    wp_record_init(&t);
    wp_record_init(&side);
    wp_record_init(&sym);
    wp_record_init(&h);
    wp_record_init(&tab);
    float x[3 * 64];
    for (int i = 0; i < 3 * 64; i++)
        x[i] = frand();
    t.kind = WP_REC_TENSOR;
    t.type = WP_Q4_0;
    t.n_dims = 2;
    t.ne[0] = 64;
    t.ne[1] = 3;
    wp_record_set_name(&t, "blk.0.w");
    wp_attr_set_i64(&t, "offset", 4096);
    uint8_t *blocks = wp_record_alloc(&t, 3 * 2 * 18);
    ggml_quantize_chunk(GGML_TYPE_Q4_0, x, blocks, 0, 3, 64, NULL);
    wp_codes_geom g;
    wp_codes_geom_get(WP_Q4_0, 64, 3, &g);
    uint8_t want_sym[3 * 32], want_side[3 * 2 * 2];
    wp_codes_split(&g, blocks, want_sym, want_side);
    char hex[16], codec[8];
    snprintf(hex, sizeof hex, "%08x", (unsigned)XXH32(blocks, 3 * 2 * 18, 0));
    char got[32] = "";
    CHECK(wp_q_records(&g, &t, &side, &sym) == 0 && side.kind == WP_REC_SIDE && sym.kind == WP_REC_SYMBOLS &&
              sym.payload_len == 96 && !memcmp(sym.payload, want_sym, 96) && side.payload_len == 12 &&
              !memcmp(side.payload, want_side, 12) && !strcmp(sym.name, "blk.0.w") && sym.ne[1] == 3 &&
              side.ne[0] == 64 && wp_attr_str(&sym, "codec", codec, sizeof codec) && !strcmp(codec, "q") &&
              wp_attr_str(&sym, "xxh32", got, sizeof got) && !strcmp(got, hex) &&
              wp_attr_i64(&sym, "row_sym", -1) == 32 && wp_attr_i64(&sym, "tile_sym", -1) == 128 &&
              wp_attr_i64(&sym, "n_weights", -1) == 192 && wp_attr_i64(&sym, "offset", -1) == 4096 &&
              !strcmp(side.attrs ? side.attrs : "", ""),
          "wp_q_records: Q4_0 3x64: 96 symbols, 12 side bytes, codec=q xxh32=%s row_sym=32 tile_sym=128 "
          "n_weights=192 offset=4096", got);
    t.payload_len--;
    CHECK(wp_q_records(&g, &t, &side, &sym) == -1, "wp_q_records: a payload a byte short of the blocks: -1");

    uint64_t hist[256] = {0}, back[256];
    hist[3] = 1;
    hist[200] = 3;
    CHECK(wp_hist_record(&h, &t, hist, 4, 192) == 0 && h.kind == WP_REC_HIST && h.type == WP_Q4_0 &&
              h.n_dims == 1 && h.ne[0] == 256 && h.payload_len == 2048 && h.payload[8 * 200] == 3 &&
              h.payload[8 * 3] == 1 && h.payload[8 * 3 + 1] == 0 && wp_attr_i64(&h, "n_symbols", -1) == 4 &&
              wp_attr_i64(&h, "n_weights", -1) == 192 &&
              fabs(wp_attr_f64(&h, "entropy", -1) - 0.8112781244591328) < 1e-6,
          "wp_hist_record: counts u64 little-endian, n_symbols=4 n_weights=192 entropy=0.811278 (3:1)");
    hist[7] = UINT64_C(0x0102030405060708);
    wp_hist_record(&h, &t, hist, 4, 192);
    CHECK(h.payload[8 * 7] == 0x08 && h.payload[8 * 7 + 7] == 0x01 && wp_hist_counts(&h, back) == 0 &&
              !memcmp(back, hist, sizeof hist),
          "wp_hist_counts reads back every count, 0x0102030405060708 included");
    h.payload_len = 2047;
    CHECK(wp_hist_counts(&h, back) == -1, "wp_hist_counts: a 2047-byte payload: -1");
    h.payload_len = 2048;

    uint8_t lengths[256] = {0};
    lengths[3] = 1;
    lengths[200] = 1;
    CHECK(wp_table_record(&tab, &h, lengths, 11, 4) == 0 && tab.kind == WP_REC_TABLE && tab.type == WP_Q4_0 &&
              tab.payload_len == 256 && !memcmp(tab.payload, lengths, 256) && !strcmp(tab.name, "blk.0.w") &&
              wp_attr_i64(&tab, "max_len", -1) == 11 && wp_attr_i64(&tab, "coded_bits", -1) == 4,
          "wp_table_record: 256 code lengths, max_len=11 coded_bits=4");
    wp_record_free(&t);
    wp_record_free(&side);
    wp_record_free(&sym);
    wp_record_free(&h);
    wp_record_free(&tab);
}

int main(void)
{
    test_records();
    char *buf = NULL, err[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    wp_writer *w = wp_writer_open(f, "mem", 8, err, sizeof err);
    uint8_t *want[2];
    size_t want_len[2];
    want[0] = add_matrix(w, "a.Q4_0", WP_Q4_0, 3, 64);
    want_len[0] = 3 * 2 * 18;
    want[1] = add_matrix(w, "b.Q6_K", WP_Q6_K, 2, 256);
    want_len[1] = 2 * 210;
    CHECK(wp_writer_close(w, err, sizeof err) == 0, "small bundle written");
    fclose(f);

    int same;
    /* each decoder on both (each took one: a reviewer's find) */
    for (int ref = 0; ref < 2; ref++)
        CHECK(read_bundle((uint8_t *)buf, len, ref, want, want_len, &same) == 2 && same,
              "both matrices restore the exact llama.cpp blocks (%s decoder)", ref ? "reference" : "fast");

    /* Every single-bit flip is detected: the reader or the restorer fails. */
    uint64_t undetected = 0, flips = 0;
    uint8_t *copy = malloc(len);
    for (size_t i = 0; i < len; i++)
        for (int b = 0; b < 8; b++) {
            memcpy(copy, buf, len);
            copy[i] ^= (uint8_t)(1 << b);
            flips++;
            if (read_bundle(copy, len, -1, want, want_len, &same) >= 0)
                undetected++;
        }
    CHECK(undetected == 0, "all %llu single-bit flips of a %zu-byte bundle are detected (%llu missed)",
          (unsigned long long)flips, len, (unsigned long long)undetected);

    /* Every truncation is detected. */
    uint64_t cut_ok = 0;
    for (size_t n = 0; n < len; n++)
        if (read_bundle((uint8_t *)buf, n, -1, want, want_len, &same) >= 0)
            cut_ok++;
    CHECK(cut_ok == 0, "every truncation of the bundle is detected (%llu missed)", (unsigned long long)cut_ok);

    /* codes round trip on every supported type */
    static const int types[] = {WP_Q4_0, WP_Q4_1, WP_Q5_0, WP_Q5_1, WP_Q8_0, WP_IQ4_NL,
                                WP_Q2_K, WP_Q3_K, WP_Q4_K, WP_Q5_K, WP_Q6_K, WP_IQ4_XS};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        wp_codes_geom g;
        int64_t rows = 5, cols = 512;
        float *x = malloc(sizeof(float) * rows * cols);
        for (int64_t i = 0; i < rows * cols; i++)
            x[i] = frand() * frand() * 3;
        size_t bytes = (size_t)rows * ggml_row_size((enum ggml_type)types[t], cols);
        uint8_t *blk = malloc(bytes), *back = malloc(bytes);
        ggml_quantize_init((enum ggml_type)types[t]);
        ggml_quantize_chunk((enum ggml_type)types[t], x, blk, 0, rows, cols, NULL);
        CHECK(wp_codes_geom_get(types[t], cols, (uint64_t)rows, &g) == 0 && g.block_len == bytes,
              "%s: geometry matches ggml_row_size", wp_ggml_type_name((uint32_t)types[t]));
        /* a row of one and a half blocks has no geometry (untested: a mutation test's find) */
        wp_codes_geom half;
        const int nb = wp_codes_geom_get(types[t], g.bi.n + g.bi.n / 2, 1, &half);
        CHECK(nb == -1 && half.row_sym == 0, "%s: rows of %d weights (1.5 blocks) are refused",
              wp_ggml_type_name((uint32_t)types[t]), g.bi.n + g.bi.n / 2);
        uint8_t *sym = malloc(g.n_sym), *side = malloc(g.side_len);
        wp_codes_split(&g, blk, sym, side);
        /* grouping: as many codes per symbol as fit in 8 bits, first weight lowest */
        const char *tn = wp_ggml_type_name((uint32_t)types[t]);
        int bits = g.bi.code_bits, want_wps = bits == 2 ? 4 : bits <= 4 ? 2 : 1;
        CHECK(g.wps == want_wps && g.wps == wp_codes_wps(bits) && g.row_sym == (uint64_t)cols / (uint64_t)want_wps &&
                  g.tile_sym == 256u / (uint32_t)want_wps && g.n_sym == (uint64_t)rows * g.row_sym &&
                  g.alphabet == 1u << (bits * want_wps),
              "%s: %d-bit codes, %d per symbol: %llu symbols per row, %u per tile row, alphabet %u", tn, bits, g.wps,
              (unsigned long long)g.row_sym, g.tile_sym, g.alphabet);
        int layout_ok = 1, range_ok = 1;
        uint8_t q[256];
        for (int64_t b = 0; b < rows * cols / g.bi.n; b++) {
            wp_block_get_codes(types[t], blk + b * g.bi.block_bytes, q);
            for (int j = 0; j < g.bi.n / g.wps; j++) {
                unsigned want = 0;
                for (int k = 0; k < g.wps; k++)
                    want |= (unsigned)q[g.wps * j + k] << (bits * k);
                uint8_t got = sym[b * (g.bi.n / g.wps) + j];
                layout_ok &= got == want;
                range_ok &= got < g.alphabet;
            }
        }
        CHECK(layout_ok && range_ok, "%s: symbol j = sum of q[%d j + k] << %d k (first weight lowest), all < %u", tn,
              g.wps, bits, g.alphabet);
        CHECK(wp_codes_join(&g, sym, side, back) == 0 && !memcmp(blk, back, bytes),
              "%s: symbols + side data join back to the exact blocks (%llu symbols, %llu side bytes)", tn,
              (unsigned long long)g.n_sym, (unsigned long long)g.side_len);
        if (g.alphabet < 256) {
            /* a symbol just outside the alphabet (Q3_K: 64; 5-bit: 32), late in the matrix */
            uint64_t at = g.n_sym - 3;
            uint8_t keep = sym[at];
            sym[at] = (uint8_t)g.alphabet;
            int rc1 = wp_codes_join(&g, sym, side, back);
            sym[at] = 255;
            int rc2 = wp_codes_join(&g, sym, side, back);
            sym[at] = keep;
            CHECK(rc1 == -1 && rc2 == -1 && wp_codes_join(&g, sym, side, back) == 0 && !memcmp(blk, back, bytes),
                  "%s: join rejects a symbol of %u and of 255 (alphabet %u)", tn, g.alphabet, g.alphabet);
        }
        free(x), free(blk), free(back), free(sym), free(side);
    }

    /* Q2_K and Q3_K by hand: one block of known codes q[i] = i % 2^bits */
    for (int t = 0; t < 2; t++) {
        int type = t ? WP_Q3_K : WP_Q2_K, bits = t ? 3 : 2;
        wp_codes_geom g;
        wp_codes_geom_get(type, 256, 1, &g);
        wp_block_parts p;
        memset(&p, 0, sizeof p);
        p.n = 256;
        for (int i = 0; i < 256; i++)
            p.q[i] = (uint8_t)(i % (1 << bits));
        uint8_t blk[256], back[256], sym[256], side[64];
        wp_block_pack(type, &p, blk);
        wp_codes_split(&g, blk, sym, side);
        /* Q2_K: codes 0,1,2,3 -> 0 | 1<<2 | 2<<4 | 3<<6 = 0xe4; Q3_K: pairs
         * (0,1) (2,3) (4,5) (6,7) -> 8, 26, 44, 62 */
        static const uint8_t q3[4] = {0 | 1 << 3, 2 | 3 << 3, 4 | 5 << 3, 6 | 7 << 3};
        int ok = 1;
        for (uint64_t j = 0; j < g.n_sym; j++)
            ok &= sym[j] == (t ? q3[j % 4] : 0xe4);
        CHECK(g.n_sym == (t ? 128u : 64u) && ok && wp_codes_join(&g, sym, side, back) == 0 &&
                  !memcmp(blk, back, (size_t)g.bi.block_bytes),
              "%s by hand: %llu symbols of the known values, joined back exactly", wp_ggml_type_name((uint32_t)type),
              (unsigned long long)g.n_sym);
    }
    free(copy);
    free(buf);
    free(want[0]);
    free(want[1]);
    /* a zstd record may wrap only a record with a payload: a gguf record made of a wrapped
     * rowmap (z_of=1, re-sealed) rewrote the GGUF silently (a breaker's find) */
    {
        wp_record t, z, *out;
        wp_record_init(&t), wp_record_init(&z);
        t.kind = WP_REC_TENSOR, t.n_dims = 1, t.ne[0] = 64, t.ne[1] = t.ne[2] = t.ne[3] = 1;
        wp_record_set_name(&t, "x");
        wp_record_alloc(&t, 256);
        memset(t.payload, 3, 256);
        /* and z_of is a known kind as it stands: 65537 became a gguf record and 131071 an end
         * record through the u16 kind, 99 a record of no kind, each passed on with exit 0 */
        const int64_t bad[] = {WP_REC_GGUF, WP_REC_REF, WP_REC_Z, WP_REC_END, 65536 + WP_REC_GGUF,
                               65536 + WP_REC_END, 65536 + WP_REC_TENSOR, 99, 15, 0, -1};
        const int nbad = (int)(sizeof bad / sizeof bad[0]);
        int refused = 0;
        for (int i = 0; i < nbad; i++) {
            wp_restore *rs = wp_restore_new();
            wp_z_wrap(&t, 1, 3, &z);
            wp_attr_set_i64(&z, "z_of", bad[i]);
            refused += wp_restore_put(rs, &z, 0, &out) == -1 &&
                       !strcmp(wp_restore_error(rs), "record 'x': bad zstd record attributes");
            wp_restore_free(rs);
        }
        wp_restore *rs = wp_restore_new();
        wp_z_wrap(&t, 1, 3, &z);
        CHECK(refused == nbad && wp_restore_put(rs, &z, 0, &out) == 1 && out->kind == WP_REC_TENSOR &&
                  out->payload_len == 256 && !memcmp(out->payload, t.payload, 256),
              "a zstd record of a tensor unwraps; of a gguf, ref, zstd, end or unknown kind (z_of past "
              "65535 too) it is refused (%d of %d)", refused, nbad);
        wp_restore_free(rs);
        wp_record_free(&t), wp_record_free(&z);
    }
    /* a record whose attributes cannot take one more (a reader's 1 MiB limit, or out of memory)
     * is a failure: wp_z_wrap returned 0 for a zstd record without z_of, z_len and z_group, and
     * wp_rowmap_make 1 for a reduced tensor without rowmap=1 (a reviewer's find) */
    {
        wp_record t, z, map, red;
        wp_record_init(&t), wp_record_init(&z), wp_record_init(&map), wp_record_init(&red);
        t.kind = WP_REC_TENSOR, t.type = WP_F32, t.n_dims = 2, t.ne[0] = 64, t.ne[1] = 8;
        wp_record_set_name(&t, "full");
        memset(wp_record_alloc(&t, 8 * 64 * 4), 5, 8 * 64 * 4);   /* 8 equal rows: a row map pays */
        const size_t pad = (1u << 20) - 9;   /* "pad=" + value + newline: 2^20 - 4 bytes */
        char *v = malloc(pad + 1);
        memset(v, 'x', pad);
        v[pad] = 0;
        int set = wp_attr_set(&t, "pad", v);
        int zr = wp_z_wrap(&t, 1, 3, &z), mr = wp_rowmap_make(&t, &map, &red);
        CHECK(set == 0 && zr == -1 && mr == -1,
              "a record with a full attribute block: wp_z_wrap and wp_rowmap_make fail (set %d, wrap %d, rowmap %d)",
              set, zr, mr);
        wp_attr_del(&t, "pad");
        wp_record_free(&z), wp_record_free(&map), wp_record_free(&red);
        wp_record_init(&z), wp_record_init(&map), wp_record_init(&red);
        zr = wp_z_wrap(&t, 1, 3, &z), mr = wp_rowmap_make(&t, &map, &red);
        CHECK(zr == 0 && wp_attr_i64(&z, "z_len", -1) == 8 * 64 * 4 && mr == 1 &&
                  wp_attr_i64(&red, "rowmap", 0) == 1 && wp_attr_i64(&map, "distinct_rows", 0) == 1,
              "without it, both work: z_len %lld, rowmap %lld, distinct_rows %lld",
              (long long)wp_attr_i64(&z, "z_len", -1), (long long)wp_attr_i64(&red, "rowmap", 0),
              (long long)wp_attr_i64(&map, "distinct_rows", 0));
        /* the map expands to the tensor; a map of 8 rows whose payload holds 1 is refused before
           it is read past (untested: a mutation test's find) */
        wp_record full;
        wp_record_init(&full);
        char rerr[256] = "";
        int ex = wp_rowmap_expand(&map, &red, &full, rerr, sizeof rerr);
        CHECK(ex == 0 && full.payload_len == t.payload_len && !memcmp(full.payload, t.payload, t.payload_len),
              "the row map expands to the 8 rows (%d %s)", ex, rerr);
        wp_record_free(&full);
        wp_record_init(&full);
        map.payload_len = 4;
        ex = wp_rowmap_expand(&map, &red, &full, rerr, sizeof rerr);
        map.payload_len = 8 * 4;
        CHECK(ex == -1 && !strcmp(rerr, "record 'full': row map does not fit its tensor"),
              "a map of 8 rows with 4 payload bytes: refused (%d: %s)", ex, rerr);
        wp_record_free(&full);
        free(v);
        wp_record_free(&t), wp_record_free(&z), wp_record_free(&map), wp_record_free(&red);
    }
    /* a ref restores an earlier tensor only (wpack-bundle(5)): a ref to one written after it
     * restored that one's bytes with exit 0 (a breaker's find); and one whose recorded hash is
     * not the tensor's is refused (untested: a mutation test's find) */
    for (int c = 0; c < 3; c++) {
        const int later = c == 1, badhash = c == 2;
        char *sb = NULL;
        size_t sl = 0;
        FILE *sf = open_memstream(&sb, &sl);
        wp_writer *sw = wp_writer_open(sf, "mem", 8, err, sizeof err);
        wp_record t, ref, in, *out;
        wp_record_init(&t), wp_record_init(&ref), wp_record_init(&in);
        t.kind = WP_REC_TENSOR, t.type = WP_F32, t.n_dims = 1, t.ne[0] = 16, t.ne[1] = t.ne[2] = t.ne[3] = 1;
        wp_record_set_name(&t, "a");
        memset(wp_record_alloc(&t, 64), 1, 64);
        if (!later)
            wp_writer_put(sw, &t);
        wp_ref_make(&t, "a", &ref);
        wp_record_set_name(&ref, "b");
        if (badhash)
            wp_attr_set(&ref, "xxh32", "00000000");
        wp_writer_put(sw, &ref);
        if (later)
            wp_writer_put(sw, &t);
        wp_writer_close(sw, err, sizeof err);
        fclose(sf);
        FILE *rf = fmemopen(sb, sl, "rb"), *xf = fmemopen(sb, sl, "rb");   /* the source: its own position */
        wp_reader *rd = wp_reader_open(rf, "mem", err, sizeof err);
        wp_restore *rs = wp_restore_new();
        wp_restore_source(rs, xf, "mem");
        int k, got = -2, ok = 0;
        while ((k = wp_reader_next(rd, &in)) == 1) {
            int p = wp_restore_put(rs, &in, 0, &out);
            if (p < 0) {
                got = -1;
                break;
            }
            if (p == 1 && !strcmp(out->name, "b"))
                got = 1, ok = out->kind == WP_REC_TENSOR && out->payload_len == 64 && out->payload[63] == 1;
        }
        if (badhash)
            CHECK(got == -1 && !strcmp(wp_restore_error(rs), "record 'b': the shared tensor does not match its recorded hash"),
                  "a ref whose hash is not its tensor's is refused (%d: %s)", got, wp_restore_error(rs));
        else if (!later)
            CHECK(got == 1 && ok, "a ref to an earlier tensor restores its bytes");
        else
            CHECK(got == -1 && strstr(wp_restore_error(rs), "the tensor it shares, 'a', is missing"),
                  "a ref to a later tensor is refused (%d: %s)", got, wp_restore_error(rs));
        wp_restore_free(rs);
        wp_reader_close(rd);
        fclose(rf), fclose(xf);
        free(sb);
        wp_record_free(&t), wp_record_free(&ref), wp_record_free(&in);
    }
    /* a KVPACK's contents end with its last kv record: bytes after it are refused (untested: a
     * mutation test's find) */
    for (int extra = 0; extra < 2; extra++) {
        wp_record kv, pk, *out = NULL;
        wp_record_init(&kv), wp_record_init(&pk);
        kv.kind = WP_REC_KV, kv.type = 4;   /* GGUF's u32 */
        wp_record_set_name(&kv, "general.alignment");
        const uint32_t al = 32;
        memcpy(wp_record_alloc(&kv, 4), &al, 4);
        uint8_t *kb = NULL;
        size_t kl = 0;
        int made = wp_kvpack_add(&kb, &kl, &kv) == 0 && (kb = realloc(kb, kl + 3)) != NULL;
        if (made)
            memset(kb + kl, 0, 3);
        made = made && wp_kvpack_finish(kb, kl + 3 * (size_t)extra, 1, 3, &pk) == 0;
        wp_restore *rs = wp_restore_new();
        const int p = made ? wp_restore_put(rs, &pk, 0, &out) : -2;
        if (extra)
            CHECK(p == -1 && !strcmp(wp_restore_error(rs), "the kvpack record: 3 trailing bytes"),
                  "a KVPACK with 3 bytes after its kv record is refused (%d: %s)", p, p == -1 ? wp_restore_error(rs) : "");
        else
            CHECK(p == 1 && out->kind == WP_REC_KV && !strcmp(out->name, "general.alignment") && out->type == 4 &&
                      out->payload_len == 4 && !memcmp(out->payload, &al, 4) && !wp_restore_more(rs),
                  "a KVPACK of one kv record restores it (%d)", p);
        wp_restore_free(rs);
        free(kb);
        wp_record_free(&kv), wp_record_free(&pk);
    }
    /* the weights a bundle restores: a rowmapped matrix counts all its rows, its rowmap zstd'd
     * or not (tsinfo missed a zstd'd one and counted the distinct rows only) */
    for (int zmap = 0; zmap < 2; zmap++) {
        wp_record t, map, red, side, z, u;
        wp_record_init(&t), wp_record_init(&map), wp_record_init(&red), wp_record_init(&side);
        wp_record_init(&z), wp_record_init(&u);
        t.kind = WP_REC_TENSOR, t.type = WP_F32, t.n_dims = 2, t.ne[0] = 64, t.ne[1] = 8, t.ne[2] = t.ne[3] = 1;
        wp_record_set_name(&t, "m");
        wp_record_alloc(&t, 8 * 256);
        for (int r = 0; r < 8; r++)
            memset(t.payload + 256 * r, r % 2 + 1, 256);   /* 2 distinct rows of 8 */
        int made = wp_rowmap_make(&t, &map, &red);
        side.kind = WP_REC_SIDE, side.n_dims = 2, side.ne[0] = 64, side.ne[1] = 2, side.ne[2] = side.ne[3] = 1;
        wp_record_set_name(&side, "m");
        u.kind = WP_REC_CODED, u.n_dims = 2, u.ne[0] = 64, u.ne[1] = 3, u.ne[2] = u.ne[3] = 1;
        wp_record_set_name(&u, "next");
        wp_z_wrap(&map, 4, 3, &z);
        wp_weight_tally tally;
        memset(&tally, 0, sizeof tally);
        int64_t a = wp_weight_tally_add(&tally, zmap ? &z : &map), b = wp_weight_tally_add(&tally, &side);
        int64_t c = wp_weight_tally_add(&tally, &red), d = wp_weight_tally_add(&tally, &u);
        CHECK(made == 1 && red.ne[1] == 2 && a == 512 && b == 0 && c == 0 && d == 192 && tally.weights == 704,
              "a %srowmap counts its 64x8 matrix (512 weights), its 2 distinct rows nothing, the next 64x3 192: "
              "%lld %lld %lld %lld", zmap ? "zstd'd " : "", (long long)a, (long long)b, (long long)c, (long long)d);
        wp_record_free(&t), wp_record_free(&map), wp_record_free(&red), wp_record_free(&side);
        wp_record_free(&z), wp_record_free(&u);
    }
    /* a raw record's attributes, read by restore and by wprun through one parser; a group of
     * 2^63-1 overflowed (UBSan, a breaker's find) */
    {
        struct wp_bf16_split sp, back;
        float m[4 * 128];
        for (int i = 0; i < 4 * 128; i++)
            m[i] = (float)(i % 37 - 18) * 0.01f;
        uint16_t bf[4 * 128];
        for (int i = 0; i < 4 * 128; i++) {
            uint32_t u;
            memcpy(&u, &m[i], 4);
            bf[i] = (uint16_t)(u >> 16);
        }
        memset(&sp, 0, sizeof sp);
        wp_record t, raw, sym;
        wp_record_init(&t), wp_record_init(&raw), wp_record_init(&sym);
        t.kind = WP_REC_TENSOR, t.type = WP_BF16, t.n_dims = 2, t.ne[0] = 128, t.ne[1] = 4, t.ne[2] = t.ne[3] = 1;
        wp_record_set_name(&t, "w");
        CHECK(wp_bf16_split(&sp, WP_BF16, bf, 4, 128, 16, 64) == 0 && wp_bf16_records(&sp, &t, &raw, &sym) == 0,
              "a 4x128 BF16 matrix split into raw and symbols records");
        memset(&back, 0, sizeof back);
        int ok = wp_bf16_from_records(&raw, WP_BF16, 4, 128, &back) == 0 && back.palette_n == sp.palette_n &&
                 back.n_palette == sp.n_palette && back.group == 64 && back.groups_per_row == 2 &&
                 back.n_verbatim == sp.n_verbatim && back.vmap_bytes == sp.vmap_bytes &&
                 back.vbytes_len == sp.vbytes_len && back.raw_bytes == sp.raw_bytes && back.sym_per_row == 64 &&
                 back.n_sym == 256 && !memcmp(back.palette, sp.palette, 16);
        CHECK(ok, "wp_bf16_from_records gives back what wp_bf16_records wrote");
        const char *bad[] = {"group=9223372036854775807", "group=1073741825", "group=0", "vmap_bytes=9223372036854775807",
                             "vbytes_len=9223372036854775807", "n_verbatim=9", "palette_n=17", "n_palette=17",
                             "vmap_bytes=-1"};
        int refused = 0;
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            wp_record c;
            wp_record_init(&c);
            c.attrs = strdup(raw.attrs);
            c.payload = raw.payload, c.payload_len = raw.payload_len;
            char k[32];
            const char *eq = strchr(bad[i], '=');
            snprintf(k, sizeof k, "%.*s", (int)(eq - bad[i]), bad[i]);
            wp_attr_set(&c, k, eq + 1);
            memset(&back, 0, sizeof back);
            refused += wp_bf16_from_records(&c, WP_BF16, 4, 128, &back) == -1;
            c.payload = NULL;
            wp_record_free(&c);
        }
        CHECK(refused == (int)(sizeof bad / sizeof *bad), "%d of %zu lying raw attributes refused", refused,
              sizeof bad / sizeof *bad);
        CHECK(wp_bf16_from_records(&raw, WP_Q4_0, 4, 128, &back) == -1, "a raw record for a non-float type is refused");
        wp_bf16_split_free(&sp);
        wp_record_free(&t), wp_record_free(&raw), wp_record_free(&sym);
    }
    return tap_done();
}
