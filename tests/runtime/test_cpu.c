/*
 * test_cpu.c - the runner's CPU reference (runtime/cpu.c, model.c) and the
 * host/device arithmetic it shares with the CUDA kernels (runtime/wr_dev.h),
 * checked against lib/ with real values.
 *
 *   - wr_dev.h against blocks.h, codes.h, half.h, huffman.h, bit for bit:
 *     the codes a symbol holds and symbol unpacking, the twin's 8-code
 *     spans of fixed-width blocks, block assembly, weight values, fp16,
 *     limit decode (the bit layouts are block_layout.h's, lib's own);
 *   - per coded type (and BF16, F16, F32): a synthetic matrix with partial
 *     tiles, restored by the CPU tile decoders (reference, fast, and the
 *     kernels' own: wr_dev_decode_tile) equals
 *     wp_restore's bytes; the fused decode+GEMV equals the float64
 *     dequantize-then-GEMV to float rounding (relative error < 1e-5) for
 *     batch 1, 3 and 8, and the twin bit for bit;
 *   - one 4096 x 14336 matrix (Q4_K) the same way;
 *   - a Q3_K bundle with a code for a symbol >= 64 is refused on load, and
 *     a BF16 one whose n_verbatim disagrees with its verbatim map;
 *   - a corrupt lane count is rejected, and a tile's span one word longer
 *     than its lanes use.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blocks.h"
#include "ggml_type.h"
#include "half.h"
#include "huffman.h"
#include "tap.h"
#include "wprun.h"

static const uint32_t types[] = {WP_Q4_0, WP_Q4_1, WP_Q5_0, WP_Q5_1, WP_Q8_0, WP_IQ4_NL,
                                 WP_Q2_K, WP_Q3_K, WP_Q4_K, WP_Q5_K, WP_Q6_K, WP_IQ4_XS};
#define NTYPES (int)(sizeof types / sizeof *types)

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd(void) { return (uint32_t)(tap_xorshift(&rs) >> 32); }

static int same_float(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y || (a != a && b != b);
}

static void test_dev_blocks(void)
{
    for (int ti = 0; ti < NTYPES; ti++) {
        uint32_t t = types[ti];
        wr_geom g = wr_geom_of((int)t);
        wp_block_info bi;
        wp_block_info_get((int)t, &bi);
        wp_codes_geom cg;
        /* (n, bytes, side, sub_n and bits are block_layout.h's, as lib's; the codes a symbol holds are
           codes.h's, which wr_geom_of works out again) */
        int geom_ok = wp_codes_geom_get((int)t, bi.n, 1, &cg) == 0 && g.wps == cg.wps;
        int pack_ok = 1, val_ok = 1, unpack_ok = 1, span_ok = 1, n_span = 0;
        for (int trial = 0; trial < 300; trial++) {
            uint8_t blk[256], q[256], side[32], side2[32], out[256];
            for (int j = 0; j < bi.block_bytes; j++)
                blk[j] = (uint8_t)rnd();
            if (trial % 2) {   /* finite scales on half the trials (values compared exactly) */
                if (t == WP_Q2_K)
                    blk[81] &= 0x3b, blk[83] &= 0x3b;
                else if (t == WP_Q3_K)
                    blk[109] &= 0x3b;
                else if (t == WP_Q6_K)
                    blk[209] &= 0x3b;
                else
                    blk[1] &= 0x3b, blk[3] &= 0x3b;
            }
            wp_block_get_codes((int)t, blk, q);
            wp_block_get_side((int)t, blk, side);
            for (int i0 = 0; i0 < bi.n; i0 += 8) {   /* the twin's 8-code spans */
                int off, sh;
                if (wp_block_code_span8((int)t, i0, &off, &sh) == 0) {
                    n_span++;
                    for (int u = 0; u < 8; u++)
                        span_ok &= (t == WP_Q8_0 ? blk[off + u] ^ 0x80 : (blk[off + u] >> sh) & 15) == q[i0 + u];
                }
            }
            wp_block_assemble((int)t, side, q, out);
            pack_ok &= memcmp(out, blk, (size_t)bi.block_bytes) == 0;
            /* lib's symbols of the block (codes.h grouping) unpack to its codes */
            uint8_t sym[256], q2[256];
            wp_codes_split(&cg, blk, sym, side2);
            memset(q2, 0xff, sizeof q2);
            wr_unpack(sym, g.bits, g.wps, bi.n, q2);
            unpack_ok &= memcmp(q2, q, (size_t)bi.n) == 0;
            for (int i = 0; i < bi.n; i++)
                unpack_ok &= wr_sym_code(sym[i / g.wps], g.bits, i % g.wps) == q[i];
            wp_block_parts p;
            wp_block_unpack((int)t, blk, &p);
            for (int s = 0; s < bi.n / bi.sub_n; s++) {
                wr_scale sc = wr_sub_scale((int)t, side, s);
                for (int i = 0; i < bi.sub_n; i++) {
                    int w = s * bi.sub_n + i;
                    val_ok &= same_float(wr_value(&sc, q[w]), wp_parts_value((int)t, &p, w));
                }
            }
        }
        CHECK(geom_ok, "%s: wr_geom_of's codes a symbol match codes.h (%d-bit codes, %d per symbol)",
              wp_ggml_type_name(t), g.bits, g.wps);
        CHECK(unpack_ok, "%s: wr_unpack, wr_sym_code of wp_codes_split's symbols = the block's codes",
              wp_ggml_type_name(t));
        CHECK(pack_ok, "%s: wp_block_assemble(side, codes) gives the exact block back", wp_ggml_type_name(t));
        const int spans = t == WP_Q4_0 || t == WP_IQ4_NL || t == WP_Q4_1 || t == WP_Q8_0 || t == WP_Q4_K ||
                          t == WP_IQ4_XS;
        CHECK(span_ok && n_span == (spans ? 300 * bi.n / 8 : 0), "%s: wp_block_code_span8 gives %d spans of 8 codes%s",
              wp_ggml_type_name(t), n_span, spans ? ", each = lib's codes" : " (declines the type)");
        CHECK(val_ok, "%s: wr_value(wr_sub_scale) = wp_parts_value bit for bit", wp_ggml_type_name(t));
    }
    int fp_ok = 1;
    for (uint32_t h = 0; h < 65536; h++)
        fp_ok &= same_float(wr_fp16_to_f32((uint16_t)h), wp_fp16_to_f32((uint16_t)h));
    CHECK(fp_ok, "wr_fp16_to_f32 = wp_fp16_to_f32 on all 65536 patterns");
    int bf_ok = 1;
    for (uint32_t b = 0; b < 65536; b++)
        bf_ok &= wr_bf16_rebuild((b >> 7) & 255, (b >> 8 & 128) | (b & 127)) == b;
    CHECK(bf_ok, "wr_bf16_rebuild(exponent, sign|mantissa) = the BF16 bits");
}

static void test_dev_huffman(void)
{
    for (int trial = 0; trial < 3; trial++) {
        uint64_t counts[256];
        for (int s = 0; s < 256; s++)
            counts[s] = trial == 2 ? (s < 3 ? 5 : 0) : 1 + (rnd() % (trial ? 100000 : 10)) * (s % 7 == 0 ? 1000 : 1);
        uint8_t len[256];
        wp_huf_lengths(counts, 256, WP_HUF_LEN, len);
        wp_huf_table tab;
        wp_huf_table_init(&tab, len, 256, WP_HUF_LEN);
        wr_huf h;
        memset(&h, 0, sizeof h);
        for (int l = 0; l <= WP_HUF_MAX_LEN; l++) {
            h.limit[l] = tab.limit[l];
            h.first[l] = tab.first[l];
            h.offset[l] = tab.offset[l];
        }
        memcpy(h.symbols, tab.symbols, 256);
        h.L = tab.max_len;
        int ok = 1;
        for (uint32_t p = 0; p < (1u << WP_HUF_LEN); p++) {
            int l1, l2, s1 = wr_huf_peek(&h, p, &l1), s2 = wp_huf_decode_peek(&tab, p, &l2);
            ok &= s1 == s2 && (s1 < 0 || l1 == l2);
        }
        CHECK(ok, "wr_huf_peek = wp_huf_decode_peek on every 11-bit peek (table %d)", trial);
        /* the table entries (wr_lut_entry): length, and the symbol at bits 24..31 of
           every entry; ggml codes / exponent bytes: also at 8..15, bits 16..23 zero
           (k_fused_private's code_val reads code u at bit 24 + bits u); palette
           pairs: palette[lo], palette[hi] at 8..15, 16..23 */
        const uint8_t pal[16] = {0x7a, 0x79, 0x7b, 0x78, 0x7c, 0x77, 0x7d, 0x76, 0x75, 0x7e, 0x74, 0x73, 0x72, 0x7f};
        int eok = 1, pok = 1, bads = 0;
        for (uint32_t p = 0; p < (1u << h.L); p++) {
            const uint32_t e = wr_lut_entry(&h, p, NULL, 0), ep = wr_lut_entry(&h, p, pal, 14);
            int len, sym = wr_huf_peek(&h, p, &len);
            if (sym < 0) {
                bads++;
                eok &= e == WR_LUT_BAD && ep == WR_LUT_BAD;
                continue;
            }
            eok &= (e & WR_LUT_LEN) == (uint32_t)len && (e >> 24) == (uint32_t)sym &&
                   ((e >> 8) & 255u) == (uint32_t)sym && ((e >> 16) & 255u) == 0 && !(e & WR_LUT_FLAGS);
            pok &= (ep & WR_LUT_LEN) == (uint32_t)len && (ep >> 24) == (uint32_t)sym &&
                   ((ep >> 8) & 255u) == pal[sym & 15] && ((ep >> 16) & 255u) == pal[sym >> 4] &&
                   !!(ep & WR_LUT_PAL0) == ((sym & 15) >= 14) && !!(ep & WR_LUT_PAL1) == ((sym >> 4) >= 14);
        }
        CHECK(eok && pok, "wr_lut_entry (table %d, L %d): length, symbol at 24..31 (codes: and 8..15, 16..23 zero), "
              "palette pairs' exponents and flags; %d peeks without a code flagged", trial, h.L, bads);
        /* wr_lut_codes / wr_lut_value (k_fused_q's table, wr_lut_values): every code of every
           entry of each block type comes back as its value c(q) = q - off (or kv[q]) exactly,
           with the entry's length and flags; Q2_K's and bad entries unchanged */
        static const int types[] = {WP_Q4_0, WP_Q4_1, WP_Q5_0, WP_Q5_1, WP_Q8_0, WP_IQ4_NL, WP_Q2_K,
                                    WP_Q3_K, WP_Q4_K, WP_Q5_K, WP_Q6_K, WP_IQ4_XS};
        float kv16[16];
        for (int q = 0; q < 16; q++)
            kv16[q] = wr_kv(q);
        int cok = 1, vals = 0, sumok = 1;
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
            const wr_geom g = wr_geom_of(types[ti]);
            const uint8_t zero[32] = {0};
            const wr_scale z = wr_sub_scale(types[ti], zero, 0);
            for (uint32_t p = 0; p < (1u << h.L); p++) {
                const uint32_t e = wr_lut_entry(&h, p, NULL, 0), c = wr_lut_codes(e, g.bits, g.wps, z.off, z.nl);
                /* lane_pair_at sums entries for the position: bits 0..5 are the length alone
                   (0 without a code), whatever the type */
                int len = 0;
                const int has = wr_huf_peek(&h, p, &len) >= 0;
                sumok &= (c & 63u) == (has ? (uint32_t)len : 0u);
                if ((e & WR_LUT_BAD) || g.wps > 2) {
                    cok &= c == e;
                    continue;
                }
                cok &= (c & 0xffu) == (e & 0xffu);
                for (int u = 0; u < g.wps; u++) {
                    const int q = wr_sym_code((int)(e >> 24), g.bits, u);
                    const float want = z.nl ? wr_kv(q) : (float)(q - z.off);
                    cok &= wr_lut_value(c, u, g.wps, z.nl, kv16) == want;
                    vals++;
                }
            }
        }
        CHECK(cok, "wr_lut_codes (table %d): %d codes of 11 block types read back by wr_lut_value as "
              "their exact values, length and flags kept; Q2_K and bad entries unchanged", trial, vals);
        CHECK(sumok, "k_fused_q's table (table %d): bits 0..5 of every entry of 12 block types are its code length, "
              "0 without a code (lane_pair_at sums entries for the position)", trial);
        if (trial == 0) {
            /* wr_pos_close: the end of a lane read by position (bits read, W words, the word
               the position is in) */
            CHECK(wr_pos_close(64, 2, 0) == 0 && wr_pos_close(40, 2, 0xff000000u) == 0 &&
                      wr_pos_close(40, 2, 0xff000001u) == 1 && wr_pos_close(40, 2, 0x00800000u) == 1 &&
                      wr_pos_close(30, 2, 0) == 1 && wr_pos_close(65, 2, 0) == 1 && wr_pos_close(0, 0, 0) == 0 &&
                      wr_pos_close(1, 0, 0) == 1,
                  "wr_pos_close: 64 bits of 2 words ok; 40 with the rest of word 1 zero ok, with its bit 0 "
                  "or bit 23 set flagged; 30 (short of a word) and 65 (past 2) flagged; 0 of 0 ok, 1 of 0 flagged");
            CHECK(wr_funnel_l(0x89abcdefu, 0x01234567u, 8) == 0x23456789u &&
                      wr_funnel_l(0x89abcdefu, 0x01234567u, 0) == 0x01234567u &&
                      wr_funnel_l(0x89abcdefu, 0x01234567u, 31) == 0xc4d5e6f7u,
                  "wr_funnel_l: the top word of hi:lo << s (s 8, 0, 31), as the device's __funnelshift_l");
        }
    }
}

/* Restore (both decoders) and GEMV checks of one matrix. */
/* wr_relerr with Inf and NaN in the reference (a BF16 matrix holding Inf
 * weights: its GEMV is Inf or NaN, and --verify failed every pipeline with
 * "relerr -nan", a new user's trial). */
static void test_relerr(void)
{
    const double inf = INFINITY, nan = NAN;
    const double r1[4] = {2.0, inf, nan, -4.0};
    const float y1[4] = {2.5f, INFINITY, NAN, -4.0f};
    CHECK(wr_relerr(y1, r1, 4) == 0.125, "relerr: Inf and NaN outputs that match are left out (0.5 / 4 = %g)",
          wr_relerr(y1, r1, 4));
    const float y2[4] = {2.0f, -INFINITY, NAN, -4.0f};
    CHECK(isinf(wr_relerr(y2, r1, 4)), "relerr: -Inf where the reference is +Inf is an infinite error");
    const float y3[4] = {2.0f, INFINITY, 1.0f, -4.0f};
    CHECK(isinf(wr_relerr(y3, r1, 4)), "relerr: a number where the reference is NaN is an infinite error");
    const double r4[2] = {1.0, 2.0};
    const float y4[2] = {1.0f, NAN};
    CHECK(isinf(wr_relerr(y4, r4, 2)), "relerr: a NaN where the reference is finite is an infinite error");
    const float y5[2] = {1.0f, INFINITY};
    CHECK(isinf(wr_relerr(y5, r4, 2)), "relerr: an Inf where the reference is finite is an infinite error");
    const double r6[2] = {0.0, 0.0};
    const float y6[2] = {0.0f, 0.0f};
    CHECK(wr_relerr(y6, r6, 2) == 0.0, "relerr: 0 when both are 0");
    /* a reference of all zeros or all Inf (no finite |ref| > 0): the error is the absolute one,
       not 0 (a mutation test's find) */
    const float y12[2] = {1.0f, 0.0f};
    CHECK(wr_relerr(y12, r6, 2) == 1.0, "relerr: 1 where the reference is 0: the absolute error 1 (%g)",
          wr_relerr(y12, r6, 2));
    const double r13[1] = {inf};
    const float y13[1] = {-INFINITY};
    CHECK(isinf(wr_relerr(y13, r13, 1)), "relerr: -Inf against a lone +Inf is an infinite error (%g)",
          wr_relerr(y13, r13, 1));
    /* with the sums of |w x|: a denominator at least the largest of them within float's range
       over sqrt(cols), else max|ref| as before; outputs of sums beyond float's range may be Inf
       or NaN (float overflow), not a finite number that differs */
    const double r7[2] = {0.001, -0.002};
    const float y7[2] = {0.0015f, -0.002f};
    const double a7[2] = {0.4, 0.2}, a8[2] = {0.004, 0.002};
    const double e7 = wr_relerr_abs(y7, r7, a7, 2, 64), e8 = wr_relerr_abs(y7, r7, a8, 2, 64);
    CHECK(fabs(e7 - 0.01) < 1e-6 && fabs(e8 - 0.25) < 1e-6 && wr_relerr(y7, r7, 2) == e8 &&
              wr_relerr_abs(y7, r7, NULL, 2, 64) == e8,
          "relerr: sums of |w x| up to 0.4 over sqrt(64): 0.0005 / 0.05 = %g; up to 0.004: max|ref|'s %g", e7, e8);
    const double r9[3] = {-1.6e38, 3.6e38, 1.0}, a9[3] = {7e38, 4e38, 2.0};
    const float y9[3] = {NAN, INFINITY, 1.0f}, y10[3] = {NAN, 1.8e38f, 1.0f};
    const double e9 = wr_relerr_abs(y9, r9, a9, 3, 4), e10 = wr_relerr_abs(y10, r9, a9, 3, 4);
    CHECK(e9 == 0.0 && fabs(e10 - 0.5) < 1e-6 && isinf(wr_relerr(y9, r9, 3)),
          "relerr: sums of |w x| beyond FLT_MAX: NaN and Inf left out (%g), a finite output compared (%g); "
          "without the sums an infinite error", e9, e10);
    const double r11[2] = {INFINITY, 1.0}, a11[2] = {INFINITY, 1.0};
    const float y11[2] = {-INFINITY, 1.0f};
    CHECK(isinf(wr_relerr_abs(y11, r11, a11, 2, 4)), "relerr: with the sums, -Inf where the reference is +Inf is still "
                                                     "an infinite error");
}

/* A matrix stored fixed-width (wr_model_add_stored): restored as given, run
 * by the twin, its scale the largest sum of |w x| over sqrt(cols); the
 * twin refuses other types. */
static void test_stored(void)
{
    char err[256];
    wr_model md;
    memset(&md, 0, sizeof md);
    /* Q8_0, 2 rows of 64: d = 1 (fp16 0x3c00), codes +-1 in row 0, 1 .. 64 in row 1 */
    uint8_t blk[4 * 34];
    for (int b = 0; b < 4; b++) {
        blk[34 * b] = 0x00, blk[34 * b + 1] = 0x3c;
        for (int i = 0; i < 32; i++)
            blk[34 * b + 2 + i] = (uint8_t)(int8_t)(b < 2 ? (i % 2 ? -1 : 1) : 32 * (b - 2) + i + 1);
    }
    int rc = wr_model_add_stored(&md, WP_Q8_0, "st.q8", 2, 64, blk, err, sizeof err);
    CHECK(rc == 0 && md.n == 1 && md.m[0].stored == WR_STORED_FIXED && md.m[0].kind == WR_Q && md.m[0].rows == 2 &&
              wr_fixed_bytes(&md.m[0]) == sizeof blk && wr_coded_bytes(&md.m[0]) == sizeof blk,
          "stored Q8_0 2x64: a block-type matrix of %zu bytes, fixed-width on the device too (%s)", sizeof blk,
          rc ? err : "ok");
    if (rc == 0) {
        uint8_t *ref = NULL;
        size_t len = 0;
        float x[64], y[2];
        double y64[2], yabs[2];
        for (int i = 0; i < 64; i++)
            x[i] = 1.0f;
        rc = wr_restore_bytes(&md.m[0], &ref, &len, err, sizeof err);
        CHECK(rc == 0 && len == sizeof blk && memcmp(ref, blk, len) == 0, "stored Q8_0: restored as given");
        if (rc == 0) {
            const int fixed_rc = wr_cpu_gemv_fixed(&md.m[0], ref, x, 1, y);
            wr_ref_gemv64(&md.m[0], ref, x, 1, y64, yabs);
            /* row 0 cancels to 0 (its |w x| sum to 64); row 1 = 1 + ... + 64 = 2080 */
            CHECK(fixed_rc == 0 && y[0] == 0.0f && y[1] == 2080.0f && y64[0] == 0.0 && y64[1] == 2080.0 && yabs[0] == 64.0 &&
                      yabs[1] == 2080.0,
                  "stored Q8_0: twin %g %g, float64 %g %g, sums of |w x| %g %g (0, 2080, 64, 2080)", y[0], y[1], y64[0],
                  y64[1], yabs[0], yabs[1]);
        }
        free(ref);
    }
    uint16_t bf[3 * 5];
    for (int i = 0; i < 15; i++)
        bf[i] = 0x3f80;   /* 1.0 */
    rc = wr_model_add_stored(&md, WP_BF16, "st.bf16", 3, 5, (const uint8_t *)bf, err, sizeof err);
    CHECK(rc == 0 && md.n == 2 && md.m[1].kind == WR_EXP && wr_fixed_bytes(&md.m[1]) == sizeof bf,
          "stored BF16 3x5: a float matrix (%s)", rc ? err : "ok");
    rc = wr_model_add_stored(&md, WP_Q4_K, "st.q4k", 1, 64, blk, err, sizeof err);
    CHECK(rc == -1 && md.n == 2 && !strcmp(err, "st.q4k: the twin does not take Q4_K 1x64 (a block type of the kernels in whole blocks, BF16, F16 or F32)"),
          "stored Q4_K of 64 columns (not a whole block) refused: %s", err);
    wr_model_free(&md);
}

static void check_matrix(const wr_matrix *m, const int *batches, int nb)
{
    char err[512];
    uint8_t *ref = NULL, *mine = NULL;
    size_t len = 0;
    int rc = wr_restore_bytes(m, &ref, &len, err, sizeof err);
    CHECK(rc == 0 && len == wr_fixed_bytes(m), "%s: wp_restore gives %zu bytes", m->name, len);
    if (rc)
        return;
    mine = malloc(len + 1);
    CHECK(mine && wr_cpu_restore(m, WR_DEC_LIMITS, mine, err, sizeof err) == 0 && memcmp(mine, ref, len) == 0,
          "%s: tile decode (reference decoder) restores the exact bytes", m->name);
    memset(mine, 0, len);
    CHECK(wr_cpu_restore(m, WR_DEC_TABLE, mine, err, sizeof err) == 0 && memcmp(mine, ref, len) == 0,
          "%s: tile decode (fast decoder) restores the exact bytes", m->name);
    memset(mine, 0, len);
    CHECK(wr_cpu_restore(m, WR_DEC_DEVICE, mine, err, sizeof err) == 0 && memcmp(mine, ref, len) == 0,
          "%s: tile decode (the kernels' staged table decode, wr_dev.h) restores the exact bytes", m->name);
    free(mine);
    for (int i = 0; i < nb; i++) {
        int b = batches[i];
        size_t nx = (size_t)b * (size_t)m->cols, ny = (size_t)b * (size_t)m->rows;
        float *x = malloc(nx * 4), *yf = malloc(ny * 4), *yt = malloc(ny * 4);
        double *y64 = malloc(ny * 8);
        wr_make_x(x, nx, (uint64_t)(7 + i), m->kind == WR_EXP);
        int nz = 1;
        for (size_t j = 0; j < nx; j++)
            nz &= x[j] != 0;
        wr_ref_gemv64(m, ref, x, b, y64, NULL);
        rc = wr_cpu_gemv_fused(m, x, b, yf, err, sizeof err);
        const int fixed_rc = wr_cpu_gemv_fixed(m, ref, x, b, yt);
        double e = wr_relerr(yf, y64, ny);
        double amax = 0;
        for (size_t j = 0; j < ny; j++)
            amax = fmax(amax, fabs(y64[j]));
        CHECK(rc == 0 && nz && amax > 0 && e < 1e-5, "%s: fused decode+GEMV batch %d: relative error %.2e vs float64 (< 1e-5)",
              m->name, b, e);
        CHECK(fixed_rc == 0 && memcmp(yf, yt, ny * 4) == 0, "%s: fused = twin bit for bit, batch %d", m->name, b);
        if (m->kind == WR_EXP && m->type == WP_BF16 && m->s.palette_n) {
            /* the palette pipelines (BF16): run-time transcode = load-time transcode, and their GEMV */
            if (b == 1) {   /* the GPU palette GEMV refuses palette entry 0 = exponent 255 (k_palette) */
                const uint8_t p0 = m->s.palette[0];
                int ok = wr_palette_ok(m);
                ((wr_matrix *)m)->s.palette[0] = 0xFF;
                int refused = !wr_palette_ok(m);
                ((wr_matrix *)m)->s.palette[0] = p0;
                CHECK(ok && refused, "%s: wr_palette_ok: palette entry 0 = 0x%02x taken, 0xff refused", m->name, p0);
                /* k_palette's correction list: a verbatim weight's w_pal (index 0, its raw byte)
                   plus its delta gives the weight back; delta is 0 past the group */
                const struct wp_bf16_split *s = &m->s;
                const int64_t st = wr_palette_fix_stride(m);
                const size_t nv = (size_t)s->n_verbatim;
                uint32_t *vcol = malloc(4 * nv + 4);
                float *dl = malloc(4 * nv * (size_t)st + 4);
                const int frc = wr_palette_fix(m, ref, vcol, dl);
                long bad = 0, nw = 0;
                for (int64_t r = 0; frc == 0 && r < m->rows; r++)
                    for (uint32_t v = m->vcnt[r]; v < m->vcnt[r + 1]; v++) {
                        bad += vcol[v] % s->group != 0 || !wp_bf16_verbatim(s, r, vcol[v] / s->group);
                        for (int64_t t = 0; t < st; t++) {
                            const float d = dl[(size_t)v * (size_t)st + (size_t)t];
                            const int64_t j = vcol[v] + t;
                            if (t >= s->group || j >= m->cols) {
                                bad += d != 0.0f;
                                continue;
                            }
                            const uint64_t wi = (uint64_t)(r * m->cols + j);
                            const float w = wp_bf16_to_f32(wr_rd16(ref + 2 * wi));
                            const float wp = wr_float_value(WP_BF16, wr_float_rebuild(WP_BF16, s->palette[0],
                                                                                       wr_raw_get(s->raw, wi, s->raw_bits)));
                            bad += fabsf(wp + d - w) > 0x1p-24f * fmaxf(fabsf(w), fabsf(wp));
                            nw++;
                        }
                    }
                CHECK(frc == 0 && bad == 0 && (nv == 0 || nw >= (long)nv),
                      "%s: wr_palette_fix: w_pal + delta = w for the %ld weights of %zu verbatim groups (%ld wrong)",
                      m->name, nw, nv, bad);
                free(vcol);
                free(dl);
            }
            size_t il = (size_t)(wr_palette_stride(m) * m->rows);
            uint8_t *i1 = malloc(il + 1), *i2 = malloc(il + 1);
            CHECK(wr_palette_stride(m) % 4 == 0 && wr_palette_stride(m) >= (m->cols + 1) / 2,
                  "%s: palette index stride %lld", m->name, (long long)wr_palette_stride(m));
            CHECK(wr_cpu_transcode(m, i1, err, sizeof err) == 0 && wr_palette_index(m, ref, i2) == 0 &&
                      memcmp(i1, i2, il) == 0,
                  "%s: transcoded palette indices (lanes) = load-time indices (bytes)", m->name);
            rc = wr_cpu_gemv_palette(m, i1, x, b, yf, err, sizeof err);
            e = wr_relerr(yf, y64, ny);
            CHECK(rc == 0 && e < 1e-5, "%s: palette GEMV batch %d: relative error %.2e vs float64", m->name, b, e);
            CHECK(memcmp(yf, yt, ny * 4) == 0, "%s: palette GEMV = twin bit for bit, batch %d", m->name, b);
            free(i1);
            free(i2);
        }
        free(x);
        free(yf);
        free(yt);
        free(y64);
    }
    free(ref);
}

/* Write a one-matrix bundle to path: m's side/raw record, then its symbols
 * re-coded with this shape and these code lengths (the CODED record takes
 * m's name, type, shape and attributes). 1 on success. */
static int write_recoded(const char *path, const wr_matrix *m, const uint8_t *sym, const wp_lanes_shape *shape,
                         const uint8_t *lengths, int max_len)
{
    char err[512];
    wp_record coded;
    wp_record_init(&coded);
    coded.kind = WP_REC_CODED;
    coded.type = m->coded.type;
    coded.n_dims = m->coded.n_dims;
    memcpy(coded.ne, m->coded.ne, sizeof coded.ne);
    wp_record_set_name(&coded, m->coded.name);
    coded.attrs = strdup(m->coded.attrs);
    FILE *f = fopen(path, "wb");
    wp_writer *w = f ? wp_writer_open(f, path, 8, err, sizeof err) : NULL;
    int ok = w && wp_coded_encode(&coded, sym, shape, lengths, max_len, err, sizeof err) == 0 &&
             wp_writer_put(w, &m->aux) == 0 && wp_writer_put(w, &coded) == 0 && wp_writer_close(w, err, sizeof err) == 0;
    if (f)
        fclose(f);
    wp_record_free(&coded);
    return ok;
}

/* write_recoded with m's own shape and code lengths made from sym's counts (its n symbols). */
static int write_recounted(const char *path, const wr_matrix *m, const uint8_t *sym, uint64_t n)
{
    uint64_t counts[256] = {0};
    uint8_t lengths[256];
    for (uint64_t i = 0; i < n; i++)
        counts[sym[i]]++;
    wp_huf_lengths(counts, 256, WP_HUF_LEN, lengths);
    return write_recoded(path, m, sym, &m->v.shape, lengths, WP_HUF_LEN);
}

/* wr_cpu_restore(m, WR_DEC_DEVICE) with tile 0's span one zero word longer
 * (the later tiles' offsets moved up) and, lane >= 0, that lane's word count
 * one more; m's view is put back after. */
static int restore_padded(wr_matrix *m, int lane, uint8_t *out, char *err, size_t errlen)
{
    wp_coded_view keep = m->v;
    const uint64_t nt = keep.n_tiles, nw = keep.n_words, o1 = keep.offsets[1];
    uint32_t *off = malloc(4 * (nt + 1)), *words = malloc(4 * (nw + 1));
    uint8_t *lw = malloc(32 * nt);
    int rc = -2;
    if (off && words && lw) {
        memcpy(words, keep.words, 4 * o1);
        words[o1] = 0;
        memcpy(words + o1 + 1, keep.words + o1, 4 * (nw - o1));
        for (uint64_t t = 0; t <= nt; t++)
            off[t] = keep.offsets[t] + (t > 0);
        memcpy(lw, keep.lane_words, 32 * nt);
        if (lane >= 0)
            lw[lane]++;
        m->v.offsets = off;
        m->v.words = words;
        m->v.lane_words = lw;
        m->v.n_words = nw + 1;
        rc = wr_cpu_restore(m, WR_DEC_DEVICE, out, err, errlen);
        m->v = keep;
    }
    free(off);
    free(words);
    free(lw);
    return rc;
}

int main(void)
{
    char err[512];
    test_dev_blocks();
    test_dev_huffman();
    test_relerr();
    test_stored();

    /* every type: a matrix with a partial tile row and a partial tile column */
    const int batches[] = {1, 3, 8};
    for (int ti = 0; ti < NTYPES + 3; ti++) {
        const uint32_t floats[3] = {WP_BF16, WP_F16, WP_F32};
        uint32_t t = ti < NTYPES ? types[ti] : floats[ti - NTYPES];
        int blk = ti >= NTYPES ? 1 : wp_ggml_blck_size(t);
        int64_t cols = blk == 256 ? 768 : 544;   /* 2 full tile columns + a partial one (K: 3 full) */
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, t, 130, cols, (uint64_t)ti + 1, err, sizeof err);
        CHECK(rc == 0 && md.n == 1, "synthetic %s 130x%lld coded (%s)", wp_ggml_type_name(t), (long long)cols,
              rc ? err : "ok");
        if (rc == 0)
            check_matrix(&md.m[0], batches, 3);
        wr_model_free(&md);
    }

    /* BF16 with verbatim groups (zeros are rare exponents) */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, WP_BF16, 300, 2000, 99, err, sizeof err);
        CHECK(rc == 0 && md.m[0].s.n_verbatim > 0, "synthetic BF16 300x2000 has verbatim groups (%lld)",
              rc ? -1LL : (long long)md.m[0].s.n_verbatim);
        if (rc == 0)
            check_matrix(&md.m[0], batches, 2);
        wr_model_free(&md);
    }

    /* palette indices of a matrix with an odd row length: the last pair's high nibble is 0 */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, WP_BF16, 70, 301, 17, err, sizeof err);
        CHECK(rc == 0, "synthetic BF16 70x301 coded");
        if (rc == 0) {
            const int b2[] = {2};
            check_matrix(&md.m[0], b2, 1);
            wr_matrix *m = &md.m[0];
            uint8_t *idx = malloc((size_t)(wr_palette_stride(m) * m->rows));
            CHECK(wr_cpu_transcode(m, idx, err, sizeof err) == 0 && wr_palette_stride(m) == 152 &&
                      (idx[150] >> 4) == 0 && idx[151] == 0,
                  "BF16 70x301: stride 152 bytes, padding nibble and bytes zero");
            /* an index without a palette entry is an error, not a silent value: a palette of
               n_palette - 1 entries and index n_palette - 1 in row 0's first non-verbatim pair */
            float xx[301], yy[70];
            wr_make_x(xx, 301, 3, 1);
            CHECK(wr_cpu_gemv_palette(m, idx, xx, 1, yy, err, sizeof err) == 0, "BF16 70x301: palette GEMV ok");
            int np = m->s.n_palette, g0 = m->s.vmap[0] & 1 ? 1 : 0;   /* group 0 or 1 of row 0 */
            CHECK(np >= 2 && !(m->s.vmap[0] >> g0 & 1), "BF16 70x301: %d palette entries, row 0 group %d coded", np, g0);
            idx[g0 * 32] = (uint8_t)((idx[g0 * 32] & 0xf0) | (np - 1));
            m->s.n_palette = np - 1;
            CHECK(wr_cpu_gemv_palette(m, idx, xx, 1, yy, err, sizeof err) == -1 && strstr(err, "palette"),
                  "palette index %d of a %d-entry palette fails (%s)", np - 1, np - 1, err);
            m->s.n_palette = np;
            free(idx);
        }
        wr_model_free(&md);
    }

    /* the shape, one type */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, WP_Q4_K, 4096, 14336, 1234, err, sizeof err);
        CHECK(rc == 0, "synthetic Q4_K 4096x14336 coded");
        if (rc == 0) {
            const int b1[] = {1};
            check_matrix(&md.m[0], b1, 1);
        }
        wr_model_free(&md);
    }

    /* a Q3_K bundle whose code gives a symbol >= 64 (two 3-bit codes are 6
     * bits) is refused on load, as wp_codes_join refuses it */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, WP_Q3_K, 64, 512, 6, err, sizeof err);
        CHECK(rc == 0 && md.m[0].g.wps == 2 && md.m[0].v.shape.tile_sym == 128 && md.m[0].v.shape.row_sym == 256,
              "synthetic Q3_K 64x512: 2 codes per symbol, 128 symbols per tile row");
        if (rc == 0) {
            wr_matrix *m = &md.m[0];
            uint64_t n = m->v.shape.rows * m->v.shape.row_sym;
            uint8_t *sym = malloc(n);
            CHECK(wp_coded_decode(&m->v, 1, sym, err, sizeof err) == 0, "Q3_K symbols decoded");
            const uint8_t was = sym[n / 2];
            sym[n / 2] = 64 + 9;
            char path[] = "/tmp/wpack-test-cpu-XXXXXX";
            int fd = mkstemp(path);
            if (fd >= 0)
                close(fd);
            int ok = fd >= 0 && write_recounted(path, m, sym, n);
            wr_model bad;
            memset(&bad, 0, sizeof bad);
            err[0] = 0;
            CHECK(ok && wr_model_load(&bad, path, NULL, err, sizeof err) == -1 && strstr(err, "outside"),
                  "Q3_K with a code for symbol 73: load refused (%s)", err);
            wr_model_free(&bad);
            /* symbol 64, the first outside the alphabet (a mutation test's find) */
            sym[n / 2] = 64;
            ok = write_recounted(path, m, sym, n);
            memset(&bad, 0, sizeof bad);
            err[0] = 0;
            CHECK(ok && wr_model_load(&bad, path, NULL, err, sizeof err) == -1 &&
                      !strcmp(err, "synth.Q3_K.64x512: code for symbol 64, outside the 64-symbol alphabet"),
                  "Q3_K with a code for symbol 64: load refused, \"synth.Q3_K.64x512: code for symbol 64, outside "
                  "the 64-symbol alphabet\" (%s)", err);
            wr_model_free(&bad);
            /* the same file with the symbol put back loads and restores (to the blocks its
               xxh32 is of) */
            sym[n / 2] = was;
            ok = write_recounted(path, m, sym, n);
            memset(&bad, 0, sizeof bad);
            CHECK(ok && wr_model_load(&bad, path, NULL, err, sizeof err) == 0 && bad.n == 1,
                  "Q3_K with every symbol < 64: loads (%s)", ok ? "ok" : err);
            if (bad.n == 1)
                check_matrix(&bad.m[0], batches, 1);
            wr_model_free(&bad);
            remove(path);
            free(sym);
        }
        wr_model_free(&md);
    }

    /* a BF16 matrix coded with 64 symbols a tile row (not the 128 pairs of 256
     * weights the kernels rely on) is refused on load */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, WP_BF16, 64, 512, 21, err, sizeof err);
        if (rc == 0) {
            wr_matrix *m = &md.m[0];
            uint64_t n = m->v.shape.rows * m->v.shape.row_sym;
            uint8_t *sym = malloc(n);
            wp_lanes_shape shape = m->v.shape;
            shape.tile_sym = 64;
            char path[] = "/tmp/wpack-test-cpu-XXXXXX";
            int fd = mkstemp(path);
            if (fd >= 0)
                close(fd);
            int ok = fd >= 0 && sym && wp_coded_decode(&m->v, 1, sym, err, sizeof err) == 0 &&
                     write_recoded(path, m, sym, &shape, m->v.lengths, m->v.max_len);
            wr_model bad;
            memset(&bad, 0, sizeof bad);
            err[0] = 0;
            CHECK(ok && wr_model_load(&bad, path, NULL, err, sizeof err) == -1 &&
                      !strcmp(err, "synth.BF16.64x512: 64 symbols a tile row, not the 128 of 256 weights' palette pairs"),
                  "BF16 with 64 symbols a tile row: load refused (%s)", err);
            wr_model_free(&bad);
            remove(path);
            free(sym);
        }
        CHECK(rc == 0, "synthetic BF16 64x512 for the tile shape check");
        wr_model_free(&md);
    }

    /* a BF16 raw record whose n_verbatim is one more than its verbatim map holds is refused
       on load (a mutation test's find) */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        int rc = wr_model_synth(&md, WP_BF16, 300, 2000, 99, err, sizeof err);
        const int64_t nv = rc == 0 ? md.m[0].s.n_verbatim : -1;
        CHECK(rc == 0 && nv > 0, "synthetic BF16 300x2000 for the verbatim count check: %lld verbatim groups",
              (long long)nv);
        if (rc == 0) {
            wr_matrix *m = &md.m[0];
            uint64_t n = m->v.shape.rows * m->v.shape.row_sym;
            uint8_t *sym = malloc(n);
            char path[] = "/tmp/wpack-test-cpu-XXXXXX";
            int fd = mkstemp(path);
            if (fd >= 0)
                close(fd);
            int ok = fd >= 0 && sym && wp_coded_decode(&m->v, 1, sym, err, sizeof err) == 0 &&
                     wp_attr_set_i64(&m->aux, "n_verbatim", nv + 1) == 0 &&
                     write_recoded(path, m, sym, &m->v.shape, m->v.lengths, m->v.max_len);
            wp_attr_set_i64(&m->aux, "n_verbatim", nv);
            wr_model bad;
            memset(&bad, 0, sizeof bad);
            err[0] = 0;
            CHECK(ok && wr_model_load(&bad, path, NULL, err, sizeof err) == -1 &&
                      !strcmp(err, "synth.BF16.300x2000: verbatim map does not match its bytes"),
                  "BF16 with n_verbatim %lld, its map's %lld: load refused, the verbatim map does not match "
                  "its bytes (%s)", (long long)nv + 1, (long long)nv, err);
            wr_model_free(&bad);
            remove(path);
            free(sym);
        }
        wr_model_free(&md);
    }

    /* corruption: one lane count too many */
    {
        wr_model md;
        memset(&md, 0, sizeof md);
        wr_model_synth(&md, WP_Q8_0, 64, 256, 5, err, sizeof err);
        wr_matrix *m = &md.m[0];
        ((uint8_t *)m->v.lane_words)[3]++;
        float x[256], y[64];
        wr_make_x(x, 256, 1, 0);
        uint8_t *out = malloc(wr_fixed_bytes(m));
        CHECK(wr_cpu_restore(m, WR_DEC_LIMITS, out, err, sizeof err) == -1 && strstr(err, "corrupt"),
              "corrupt lane count: restore fails (%s)", err);
        CHECK(wr_cpu_restore(m, WR_DEC_DEVICE, out, err, sizeof err) == -1 && strstr(err, "corrupt"),
              "corrupt lane count: the kernels' decode flags the tile (%s)", err);
        ((uint8_t *)m->v.lane_words)[3]--;
        uint32_t *lut = malloc(sizeof(uint32_t) << WR_LUT_MAX_BITS);
        uint8_t tile[64 * 256];
        CHECK(lut && wr_lut_build(m, lut) == 0 && wr_dev_decode_tile(m, lut, 0, tile) == 0,
              "lane count restored: the kernels' decode takes the tile");
        ((uint32_t *)m->v.offsets)[1] = (uint32_t)m->v.n_words + 1;   /* a tile ending past the words */
        CHECK(wr_dev_decode_tile(m, lut, 0, tile) == -1, "offset past the lane words: the tile is flagged");
        ((uint32_t *)m->v.offsets)[1] = (uint32_t)m->v.n_words;
        ((uint32_t *)m->v.words)[m->v.n_words - 1] |= 1u;   /* a padding bit of the longest lane (this seed) */
        int flagged = wr_dev_decode_tile(m, lut, 0, tile) == -1;
        CHECK(flagged, "a set padding bit in the last word: the tile is flagged");
        free(lut);
        err[0] = 0;
        CHECK(wr_cpu_gemv_fused(m, x, 1, y, err, sizeof err) == -1 && strstr(err, "corrupt"),
              "a set padding bit: fused GEMV fails (%s)", err);
        /* an over-subscribed code table (four codes of one bit): each decoder says so (the fused
           GEMV said "out of memory") */
        uint8_t keep[256];
        memcpy(keep, m->v.lengths, sizeof keep);
        memset(m->v.lengths, 1, 4);
        err[0] = 0;
        CHECK(wr_cpu_gemv_fused(m, x, 1, y, err, sizeof err) == -1 && !strcmp(err, "synth.Q8_0.64x256: bad code table"),
              "bad code table: fused GEMV says so (%s)", err);
        err[0] = 0;
        CHECK(wr_cpu_restore(m, WR_DEC_LIMITS, out, err, sizeof err) == -1 &&
                  !strcmp(err, "synth.Q8_0.64x256: bad code table"),
              "bad code table: restore says so (%s)", err);
        memcpy(m->v.lengths, keep, sizeof keep);
        /* a zero word past tile 0's lanes: the kernels' decode flags the tile, whether no lane
           claims it (the groups' words fall short of the span) or the deepest lane claims it
           (its code ends a word short of its count) (a mutation test's find) */
        ((uint32_t *)m->v.words)[m->v.n_words - 1] &= ~1u;
        int deep = 0;
        for (int k = 0; k < 32; k++)
            deep = m->v.lane_words[k] >= m->v.lane_words[deep] ? k : deep;
        err[0] = 0;
        CHECK(wr_cpu_restore(m, WR_DEC_DEVICE, out, err, sizeof err) == 0 && m->v.lane_words[deep] < WP_LANE_MAX_WORDS,
              "padding bit cleared: the kernels' decode restores the matrix (%s)", err[0] ? err : "ok");
        err[0] = 0;
        CHECK(restore_padded(m, -1, out, err, sizeof err) == -1 &&
                  !strcmp(err, "synth.Q8_0.64x256: tile 0: corrupt lanes"),
              "a zero word past tile 0's lanes, no lane's: the kernels' decode flags the tile (%s)", err);
        err[0] = 0;
        CHECK(restore_padded(m, deep, out, err, sizeof err) == -1 &&
                  !strcmp(err, "synth.Q8_0.64x256: tile 0: corrupt lanes"),
              "a zero word past tile 0's lanes, counted in lane %d (the deepest, %d words): the kernels' decode "
              "flags the tile (%s)", deep, m->v.lane_words[deep], err);
        free(out);
        wr_model_free(&md);
    }
    return tap_done();
}
