/*
 * wr_dev.h - the per-weight arithmetic of the runner, written once for the
 * host (C11) and the device (CUDA): canonical Huffman decode of an L-bit peek
 * against per-length limits, the geometry of the block types with the codes
 * a symbol holds (their bit layouts are lib/block_layout.h's, which this
 * includes), the sub-block scale of a weight from its block's side bytes, BF16, F16 and
 * F32 reconstruction from exponent + the other bytes, the 2^L decode table
 * of the GEMV kernels and the lane bit reader.
 *
 * Everything here is an inline function without allocation or I/O, so the
 * CPU reference (runtime/cpu.c) and the CUDA kernels (runtime/kernels.cuh) run the
 * same code; the CPU tests (tests/runtime/test_cpu.c) check it against lib/
 * (blocks.h, huffman.h) bit for bit, which is how device logic gets tested on
 * machines without a GPU.
 *
 * Sources: block layouts of lib/block_layout.h, which lib/blocks.c builds
 * on too (ggml-common.h of the pinned llama.cpp); the limit decode of lib/huffman.h (wp_huf_decode_peek); the
 * float expressions of wp_parts_code_value (same operand order, so host
 * results are bit-equal to lib and to ggml's dequantize_row_*; device results
 * may differ in the last bit where nvcc contracts a*b-c into an FMA).
 */
#ifndef WPACK_WR_DEV_H
#define WPACK_WR_DEV_H

#include <stdint.h>
#include <string.h>

#include "block_layout.h"
#include "ggml_type.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif

#ifdef __CUDACC__
#define WR_HD static __host__ __device__ __forceinline__
#else
#define WR_HD static inline
#endif

/* ---- memory-access probe ------------------------------------------------
 * WR_PROBE(site, p): the decode path's shared- and global-memory reads of
 * lane words and tables, marked where they happen. Nothing on the device
 * and in the CPU code; the kernel emulator (tests/runtime/simt.h) defines it
 * to count, per warp instruction, the shared-memory wavefronts (bank
 * conflicts) and global 128-byte lines each read takes. Sites: */
enum {
    WR_SITE_LUT,     /* the decode-table lookup (shared; one a symbol: the emulator's step) */
    WR_SITE_GWORD,   /* a lane word loaded from global memory (pipeline fused) */
    WR_SITE_SWORD,   /* a lane word read from shared memory (staged, ring) */
    WR_SITE_GROUP,   /* a group's start read from shared memory (fused refills, ring fills) */
    WR_SITE_COPY,    /* the global source of a lane word's asynchronous copy (staged, ring) */
    WR_SITE_SIDE,    /* a tile row's side bytes (scales, mins) loaded from global memory */
    WR_SITES
};
#ifndef WR_PROBE
#define WR_PROBE(site, p) ((void)0)
#endif

/* ---- bit casts and fp16 ------------------------------------------------- */

WR_HD float wr_as_float(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

/* fp16 bits -> float, exact (as wp_fp16_to_f32; NaN gets the quiet bit).
 * On the device the hardware conversion (one instruction, the same value
 * for every non-NaN input). */
WR_HD float wr_fp16_to_f32(uint16_t h)
{
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(h));
#else
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3ffu;
    if (e == 31)
        return wr_as_float(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    return wr_as_float(sign | ((e + 112u) << 23) | (m << 13));
#endif
}

WR_HD uint16_t wr_rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* BF16 bits from an exponent byte and a raw byte (bf16.h: sign << 7 | mantissa). */
WR_HD uint16_t wr_bf16_rebuild(uint32_t exp, uint32_t raw)
{
    return (uint16_t)(((raw >> 7) & 1u) << 15 | (exp & 255u) << 7 | (raw & 127u));
}

/* The sign+mantissa bits of weight i from a split's packed raw stream
 * (bf16.h: w bits a weight, LSB-first; w = 8 BF16, 11 F16, 24 F32). Reads
 * only the bytes that hold them. */
WR_HD uint32_t wr_raw_get(const uint8_t *raw, uint64_t i, int w)
{
    if (w == 8)
        return raw[i];
    const uint64_t bit = i * (uint64_t)w;
    const uint8_t *p = raw + bit / 8;
    const int sh = (int)(bit % 8), nb = (sh + w + 7) / 8;
    uint32_t v = 0;
    for (int b = 0; b < nb; b++)
        v |= (uint32_t)p[b] << (8 * b);
    return (v >> sh) & ((1u << w) - 1u);
}

/* The bits of a BF16, F16 or F32 element from its exponent field and its raw
 * sign+mantissa value (bf16.h's field geometry). */
WR_HD uint32_t wr_float_rebuild(int type, uint32_t exp, uint32_t raw)
{
    if (type == WP_F16)
        return ((raw >> 10) & 1u) << 15 | (exp & 31u) << 10 | (raw & 0x3ffu);
    if (type == WP_F32)
        return ((raw >> 23) & 1u) << 31 | (exp & 255u) << 23 | (raw & 0x7fffffu);
    return wr_bf16_rebuild(exp, raw);
}

/* The float value of element bits of that type (F16 exactly, as wr_fp16_to_f32). */
WR_HD float wr_float_value(int type, uint32_t bits)
{
    if (type == WP_F16)
        return wr_fp16_to_f32((uint16_t)bits);
    if (type == WP_F32)
        return wr_as_float(bits);
    return wr_as_float(bits << 16);
}

/* ---- canonical Huffman: per-length limits -------------------------------- */

/* The limit tables of one matrix (a copy of wp_huf_table's decoding fields,
 * fixed-size so that it travels by value into a kernel and into shared
 * memory). L = max_len (1..15); limit[l] left-justified to L bits. */
typedef struct {
    uint32_t limit[16];
    uint16_t first[16];
    uint16_t offset[16];
    uint8_t  symbols[256];
    int32_t  L;
} wr_huf;

/* Decode one symbol from an L-bit peek: the first l with peek < limit[l].
 * Returns the symbol and its length in *len, or -1 (no code: corrupt). */
WR_HD int wr_huf_peek(const wr_huf *t, uint32_t peek, int *len)
{
    for (int l = 1; l <= t->L; l++)
        if (peek < t->limit[l]) {
            *len = l;
            return t->symbols[t->offset[l] + (peek >> (t->L - l)) - t->first[l]];
        }
    *len = 0;
    return -1;
}

/* ---- the lookup-table decode of the GEMV kernels ---------------------------
 * A 2^L-entry table indexed by the next L bits of a lane (L = max code
 * length, 1..11 on the device). Entry = code length (bits 0..3; 0 when no
 * code starts with this peek) | flags (bits 4..6) | payload (bits 8..31):
 *   ggml codes, exponent bytes   the symbol at 8..15 (the exponent, as for
 *                                palette pairs) and again at 24..31;
 *   palette pairs (pal != NULL)  palette[lo] at 8..15, palette[hi] at 16..23,
 *                                the symbol at 24..31; flag PAL0/PAL1 when
 *                                index lo/hi has no palette entry.
 * So e >> 24 is the symbol of any entry (one shift, where (e >> 8) & 255
 * took two). k_fused_q's table replaces a block type's symbols with their
 * codes' values (wr_lut_codes, below).
 * Built from the same limit tables as wr_huf_peek, so both decode alike. */
#define WR_LUT_MAX_BITS 11   /* longest code the device tables take */
#define WR_LUT_LEN 15u
#define WR_LUT_PAL0 (1u << 4)
#define WR_LUT_PAL1 (1u << 5)
#define WR_LUT_BAD (1u << 6)   /* no code starts with this peek: corrupt lane */
#define WR_LUT_FLAGS (WR_LUT_PAL0 | WR_LUT_PAL1 | WR_LUT_BAD)

/* Entry `peek` (0 .. 2^L - 1) of a matrix's table; pal/n_pal: the palette
 * of a palette-pair BF16 matrix, else NULL/0. */
WR_HD uint32_t wr_lut_entry(const wr_huf *h, uint32_t peek, const uint8_t *pal, int n_pal)
{
    int len = 0, sym = wr_huf_peek(h, peek, &len);
    if (sym < 0)
        return WR_LUT_BAD;
    uint32_t e = (uint32_t)len;
    if (pal) {
        int i0 = sym & 15, i1 = sym >> 4;
        e |= (i0 >= n_pal ? WR_LUT_PAL0 : 0u) | (i1 >= n_pal ? WR_LUT_PAL1 : 0u);
        e |= (uint32_t)pal[i0] << 8 | (uint32_t)pal[i1] << 16 | (uint32_t)sym << 24;
    } else {
        e |= (uint32_t)sym << 8 | (uint32_t)sym << 24;
    }
    return e;
}

/* The top 32 bits of the 64 bits hi:lo shifted left by s (0..31): the
 * device's funnel shift (SHF), one instruction. */
WR_HD uint32_t wr_funnel_l(uint32_t lo, uint32_t hi, uint32_t s)
{
#ifdef __CUDA_ARCH__
    return __funnelshift_l(lo, hi, s);
#else
    s &= 31u;
    return s ? hi << s | lo >> (32u - s) : hi;
#endif
}

/* One lane's bit reader: buf holds nbits unread bits, left-justified; next
 * = words pushed so far. The kernels push the lane's word `next` (0 past its
 * W words) whenever wr_bits_low, then take symbols: after a push at least 32
 * bits are buffered, so two symbols of <= 16 bits can be taken per check
 * (the GEMV loops check once every two symbols). */
typedef struct {
    uint64_t buf;
    int32_t nbits;
    uint32_t next;
} wr_bits;

WR_HD void wr_bits_init(wr_bits *b)
{
    b->buf = 0;
    b->nbits = 0;
    b->next = 0;
}

WR_HD int wr_bits_low(const wr_bits *b) { return b->nbits < 32; }

WR_HD void wr_bits_push(wr_bits *b, uint32_t w)
{
    b->buf |= (uint64_t)w << (32 - b->nbits);
    b->nbits += 32;
    b->next++;
}

/* Consume the code of table entry e (its length, bits 0..3). */
WR_HD void wr_bits_skip(wr_bits *b, uint32_t e)
{
    const uint32_t len = e & WR_LUT_LEN;
    b->buf <<= len;
    b->nbits -= (int32_t)len;
}

/* Decode one symbol through the table (L bits, 1 <= L <= 32); returns its entry (a peek
 * without a code consumes nothing and returns WR_LUT_BAD). */
WR_HD uint32_t wr_bits_take(wr_bits *b, const uint32_t *lut, int L)
{
    /* the peek from the buffer's high word (L <= 32): a 32-bit shift, where a 64-bit one by a
       variable count took the device several instructions */
    const uint32_t *ep = lut + ((uint32_t)(b->buf >> 32) >> (32 - L));
    WR_PROBE(WR_SITE_LUT, ep);
    const uint32_t e = *ep;
    wr_bits_skip(b, e);
    return e;
}

/* ---- the lane-private table of pipeline "private" -----------------------------
 * The same decode as wr_bits_take, from a table in which lane k reads only
 * bank k of shared memory. Why: the 32 lanes of a warp peek at unrelated
 * bits, so their lookups in the 2^L-word table fall on random banks, and a
 * warp's lookup takes as many wavefronts as the most distinct words in one
 * bank: 3.56 on average for Q4_K, Q6_K and Q8_0 (test_runtime_emu's traffic
 * counts; the expected maximum of 32 balls in 32 bins). Here entry p is 16
 * bits, h = wr_lut_entry's bits 0..7 (length, flags) | its symbol << 8, and
 * word (p >> 1) * 32 + k holds entries p & ~1 (low half) and p | 1 (high
 * half) for lane k: one wavefront a lookup whatever the peeks, for a table
 * 32 times the size (2^L x 64 bytes: 128 KiB at L = 11). For ggml-code
 * (WR_Q) tables only: a palette pair's two exponents do not fit. */

/* Word r of the pair table (the value all 32 lanes' copies of row r hold),
 * from entries e0 = lut[2r] and e1 = lut[2r + 1] of wr_lut_entry (no
 * palette). */
WR_HD uint32_t wr_plut_pair(uint32_t e0, uint32_t e1)
{
    const uint32_t h0 = (e0 & 255u) | (e0 >> 24) << 8, h1 = (e1 & 255u) | (e1 >> 24) << 8;
    return h0 | h1 << 16;
}

/* wr_bits_take for lane k (0..31) through the lane-private table plut
 * (2^(L-1) x 32 words). Returns the entry as wr_bits_take returns it for
 * the fields k_fused_private reads (length bits 0..3, WR_LUT_BAD, symbol
 * bits 24..31; not wr_lut_codes's values, which k_fused_private does not
 * use): the 16-bit entry h in both halves, h | h << 16. */
WR_HD uint32_t wr_bits_take_private(wr_bits *b, const uint32_t *plut, unsigned k, int L)
{
    const uint32_t p = (uint32_t)(b->buf >> 32) >> (32 - L);
    const uint32_t *wp = plut + (p >> 1) * 32u + k;
    WR_PROBE(WR_SITE_LUT, wp);
    const uint32_t w = *wp;
#ifdef __CUDA_ARCH__
    const uint32_t e = __byte_perm(w, 0, 0x1010u + 0x2222u * (p & 1u));   /* half p & 1, twice */
#else
    const uint32_t h = (p & 1u) ? w >> 16 : w & 0xffffu;
    const uint32_t e = h | h << 16;
#endif
    wr_bits_skip(b, e);
    return e;
}

/* The canonical-form checks of lanes.h after a lane's last code: exactly W
 * words used, the last one's padding bits zero. Returns 1 when they fail. */
WR_HD int wr_bits_close(const wr_bits *b, uint32_t W)
{
    const uint64_t p = 32ull * b->next - (uint64_t)b->nbits;   /* bits consumed */
    int bad = p > 32ull * W || (p + 31) / 32 != W;
    if (p % 32)
        bad |= (b->buf >> (32 + p % 32)) != 0;
    return bad;
}

/* wr_bits_close for a lane read by position (k_fused_q's staged and ring
 * lanes, lane_pair_at): pos = the bits read, word = the lane's word
 * pos / 32 (0 past its W words). Returns 1 when the checks fail. */
WR_HD int wr_pos_close(uint32_t pos, uint32_t W, uint32_t word)
{
    int bad = pos > 32u * W || (pos + 31u) / 32u != W;
    if (pos % 32u)
        bad |= (word << (pos % 32u)) != 0;
    return bad;
}

/* Staged lanes: a tile's words in shared memory, word i of lane k at
 * [i * 32 + k] (the interleave undone). Group i of the tile holds word i of
 * every lane with W_k > i, in lane order; mask = those lanes (the warp's
 * ballot), start = the words of groups 0 .. i-1. Returns the index in the
 * tile's words of word i of lane k (lane k in mask). */
WR_HD uint32_t wr_group_word(uint32_t start, uint32_t mask, unsigned k)
{
    uint32_t m = mask & ((1u << k) - 1u);
#ifdef __CUDA_ARCH__
    return start + (uint32_t)__popc(m);
#else
    uint32_t n = 0;
    for (; m; m &= m - 1)
        n++;
    return start + n;
#endif
}

/* ---- block geometry ------------------------------------------------------- */

/* Geometry of the coded block types (block_layout.h), with the codes a
 * symbol holds; 0 for other types. */
typedef struct {
    int n;           /* weights per block: 32 or 256 */
    int bytes;       /* block bytes */
    int side;        /* side bytes */
    int sub_n;       /* weights per sub-block scale */
    int bits;        /* bits per code: 2, 3, 4, 5, 6 or 8 */
    int wps;         /* weights (codes) per symbol, 8 / bits: 4, 2 or 1
                        (lib/codes.h wp_codes_wps) */
} wr_geom;

WR_HD wr_geom wr_geom_of(int type)
{
    const wp_block_geom b = wp_block_geom_of(type);
    wr_geom g = {b.n, b.bytes, b.side, b.sub_n, b.bits, b.bits ? 8 / b.bits : 0};
    return g;
}

/* ---- symbols -> codes (lib/codes.h) --------------------------------------- */

/* Code k (0 .. wps-1) of a symbol holding wps codes of `bits` bits: symbol =
 * sum of q[k] << (bits·k), the first weight in the lowest bits. */
WR_HD int wr_sym_code(int sym, int bits, int k)
{
    return (sym >> (bits * k)) & ((1 << bits) - 1);
}

/* Codes of nw weights (a multiple of wps) from the nw / wps symbols at sym,
 * weight order, to q[0 .. nw-1] (as wp_codes_join, without its range check:
 * bits above the wps codes of a symbol are ignored). */
WR_HD void wr_unpack(const uint8_t *sym, int bits, int wps, int nw, uint8_t *q)
{
    for (int j = 0; j < nw; j += wps)
        for (int k = 0; k < wps; k++)
            q[j + k] = (uint8_t)wr_sym_code(sym[j / wps], bits, k);
}

/* ---- dequantization from side bytes ------------------------------------- */

/* Scale of one sub-block: weight i of sub-block s is
 *     dl * c(q) - ml,   c(q) = kvalues_iq4nl[q] when nl, else q - off
 * which is, bit for bit on the host, wp_parts_code_value's expression
 * (x - 0 = x and x - (-m) = x + m exactly in IEEE arithmetic). */
typedef struct {
    float dl, ml;
    int   off, nl;
} wr_scale;

/* The scale of sub-block s (0 .. n/sub_n - 1) from a block's side bytes
 * (block_layout.h's wp_side_*). Written a type group at a time, d read
 * before or after the sub-block scale as the kernels were timed with (the
 * order changes their code). */
WR_HD wr_scale wr_sub_scale(int type, const uint8_t *side, int s)
{
    const wp_block_geom g = wp_block_geom_of(type);
    wr_scale r = {0.0f, 0.0f, g.code_off, g.nl};
    int sc, mn;
    if (g.nsub == 1) {   /* the 32-weight types: d, and Q4_1/Q5_1's m added */
        r.dl = wr_fp16_to_f32((uint16_t)wp_side_d(type, side));
        if (g.has_min)
            r.ml = -wr_fp16_to_f32((uint16_t)wp_side_dmin(type, side));
    } else if (type == WP_Q3_K) {
        wp_side_sc_mn(type, side, s, &sc, &mn);
        r.dl = wr_fp16_to_f32((uint16_t)wp_side_d(type, side)) * (float)(sc - g.sc_bias);
    } else {
        const float d = wr_fp16_to_f32((uint16_t)wp_side_d(type, side));
        wp_side_sc_mn(type, side, s, &sc, &mn);
        r.dl = d * (float)(sc - g.sc_bias);
        if (g.has_min)
            r.ml = wr_fp16_to_f32((uint16_t)wp_side_dmin(type, side)) * (float)mn;
    }
    return r;
}

/* kvalues_iq4nl (block_layout.h), for device and host alike. */
WR_HD float wr_kv(int q)
{
    const int8_t kv[16] = WP_KVALUES_IQ4NL;
    return (float)kv[q & 15];
}

/* ---- the code values of k_fused_q's table -------------------------------
 * k_fused_q's decode table holds, in place of a symbol, the values c(q) of
 * its codes (q - off, or kv[q] when nl: wr_sub_scale's c) as the leading
 * bits of their floats, so that a code becomes its value in one AND (two
 * for a pair's second code) where the symbol took a byte permute and a
 * subtraction a code. The length and flags (bits 0..7) stay:
 *   one code a symbol (wps 1: Q5_0, Q5_1, Q5_K, Q6_K, Q8_0): c's float bits
 *     16..31 at 16..31 (|c| <= 256: at most 8 significant bits, so its
 *     float's bits 0..15 are zero);
 *   two (wps 2, linear: Q4_0, Q4_1, Q3_K, Q4_K): c0's float bits 20..31 at
 *     20..31, c1's at 8..19 (|c| <= 15: at most 4 significant bits, float
 *     bits 0..19 zero);
 *   two, non-linear (IQ4_NL, IQ4_XS): kv[q0]'s float bits 17..31 at 17..31
 *     (|kv| <= 127: 7 significant bits), q1 at 8..11 (kv16's index);
 *   four (Q2_K) and a bad entry: as wr_lut_entry made them.
 * Bits 0..5 stay the code length alone (0 without a code): lane_pair_at
 * adds entries up for the lane's position.
 * So each value is exact, and the symbol is no longer in the entry: the
 * other users of the table (k_fused_private's pair table, plut_host, and
 * wr_dev_decode_tile) read wr_lut_build's entries. */

/* The float bits of f (host and device). */
WR_HD uint32_t wr_f32_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
#endif
}

/* Entry e of wr_lut_entry (no palette) for codes of `bits` bits, wps a
 * symbol, value q - off (nl 0) or kv[q] (nl 1), laid out as above. */
WR_HD uint32_t wr_lut_codes(uint32_t e, int bits, int wps, int off, int nl)
{
    if ((e & WR_LUT_BAD) || wps > 2)
        return e;
    const uint32_t sym = e >> 24, mask = (1u << bits) - 1u, head = e & 0xffu;
    const uint32_t q0 = sym & mask, q1 = (sym >> bits) & mask;
    if (wps == 1)
        return head | (wr_f32_bits((float)((int)q0 - off)) & 0xffff0000u);
    if (nl)
        return head | (wr_f32_bits(wr_kv((int)q0)) & 0xfffe0000u) | q1 << 8;
    return head | (wr_f32_bits((float)((int)q0 - off)) & 0xfff00000u) |
           ((wr_f32_bits((float)((int)q1 - off)) >> 12) & 0x000fff00u);
}

/* Code u (0 or 1) of an entry of wr_lut_codes as its value (wps 1 or 2;
 * nl: kv16 holds kv[0..15]). */
WR_HD float wr_lut_value(uint32_t e, int u, int wps, int nl, const float *kv16)
{
    if (wps == 1)
        return wr_as_float(e & 0xffff0000u);
    if (u == 0)
        return wr_as_float(e & (nl ? 0xfffe0000u : 0xfff00000u));
    if (nl)
        return kv16[(e >> 8) & 15u];
    return wr_as_float((e << 12) & 0xfff00000u);
}

/* The value of a weight with code q under scale sc. */
WR_HD float wr_value(const wr_scale *sc, int q)
{
    float c = sc->nl ? wr_kv(q) : (float)(q - sc->off);
    return sc->dl * c - sc->ml;
}

#endif
