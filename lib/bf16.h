/*
 * bf16.h - lossless field split of floating-point weights (the "Unweight"
 * path): exponent symbols for the entropy coder, sign+mantissa stored raw.
 *
 * A matrix of n_rows x n_cols weights (ggml order: a row is n_cols
 * consecutive weights, little-endian bytes, type WP_BF16, WP_F16 or WP_F32)
 * is split into
 *
 *   sym     the exponent symbol stream, row-major, sym_per_row symbols a row;
 *   raw     the sign+mantissa bits of every weight, stored as is;
 *   palette the exponent palette (palette mode only);
 *   vmap    one bit per row group: 1 = the group is stored verbatim;
 *   vbytes  the original bytes of every verbatim group.
 *
 * wp_bf16_join() restores the exact original bytes from these parts; nothing
 * is rounded, NaN payloads, signed zeros, subnormals and infinities included.
 *
 * Field geometry (bit 0 = least significant bit of the little-endian word):
 *
 *   type  bits  exponent      sign   mantissa  raw bits per weight (w)
 *   BF16   16   8 (14..7)     15     7 (6..0)   8 = sign<<7  | mantissa
 *   F16    16   5 (14..10)    15    10 (9..0)  11 = sign<<10 | mantissa
 *   F32    32   8 (30..23)    31    23 (22..0) 24 = sign<<23 | mantissa
 *
 * Raw packing: the w-bit values of weights 0, 1, 2, ... (row-major over the
 * whole matrix) are concatenated LSB-first into one bit stream (bit k of
 * weight i is stream bit i*w + k; stream bit b is bit b%8 of byte b/8),
 * raw_bytes = ceil(n_weights * w / 8). For BF16 this is one byte per weight
 * (sign + 7 mantissa bits, as Unweight/DFloat11 keep it); for F32 three
 * little-endian bytes per weight. For F16 it is a dense 11-bit stream: the
 * raw part carries exactly the 11 information bits of each weight, with no
 * padding bits to be squeezed out again and none lost, so it is exactly as
 * compressible as the sign+mantissa field itself (a 2-byte F16 raw field
 * would add 5 zero bits a weight and make the split larger than F16).
 * Every weight has its raw value at its fixed position, verbatim or not, so
 * the raw part of weight (r, c) is at bit (r*n_cols + c) * w.
 *
 * Two modes (wp_bf16_split's palette_n):
 *
 *   palette 0 (DFloat11-style): one symbol per weight, the full exponent
 *     field as a byte (0..255; 0..31 for F16). sym_per_row = n_cols. No
 *     palette, no verbatim groups.
 *
 *   palette N, 1 <= N <= 16 (Unweight's palette + verbatim rows): the N most
 *     frequent exponents of the matrix (ties broken by the smaller exponent
 *     value; exponents that never occur are not taken, so n_palette may be
 *     below N) form the palette, palette[0] the most frequent. Each weight's
 *     exponent becomes its 4-bit palette index; the indices of weights 2j
 *     and 2j+1 of a row form pair symbol j = idx[2j] | idx[2j+1] << 4 (low
 *     nibble first). A row of odd length pads its last pair's high nibble
 *     with 0. sym_per_row = ceil(n_cols / 2).
 *     Each row is cut into row groups of `group` weights (default 64; the
 *     last group of a row is shorter when n_cols is not a multiple). A group
 *     holding any exponent outside the palette is a verbatim group: its bit
 *     in vmap is set and all its original bytes are appended to vbytes.
 *
 * Verbatim groups keep their symbol slots, filled with index 0: every row
 * has the same symbol count, so the coder's tile/lane layout (64 rows x 256
 * columns, a fixed number of pairs per lane) and any per-tile offset stay
 * independent of where verbatim groups fall, and symbol j of row r is always
 * at r*sym_per_row + j. Index 0 is the most frequent exponent, so pair 0x00
 * is (nearly) the cheapest symbol of the table: a filled slot costs about
 * len(0x00)/2 bits a weight, typically 1-2 b/w on verbatim weights only;
 * times the verbatim fraction f (0.24% of groups on stories260K's BF16
 * matrices, 0-3% per matrix) that is < 0.01 b/w overall. Removing the slots instead would save that
 * but make row lengths data dependent. The raw values of verbatim weights
 * likewise stay in raw (fixed positions); vbytes holds the whole original
 * group so a verbatim group is restored by a plain copy. That duplicates w
 * bits a verbatim weight: f * w (8 for BF16) b/w, e.g. 0.008 b/w at f = 0.1%.
 *
 * vmap: bit (r * groups_per_row + g), LSB-first in bytes, row-major;
 * vbytes: the verbatim groups in the same row-major order, each its
 * group length * element size original bytes.
 *
 * Sources: Unweight's 16-exponent palette with 4-bit indices and verbatim
 * rows for rare exponents; DFloat11's full-exponent entropy coding for
 * palette 0. The code is wpack's own.
 */
#ifndef WPACK_BF16_H
#define WPACK_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "ggml_type.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WP_BF16_PALETTE_MAX 16
#define WP_BF16_GROUP_DEFAULT 64

/* Error codes (negative return values); wp_bf16_strerror() names them. */
enum {
    WP_BF16_OK = 0,
    WP_BF16_ETYPE = -1,    /* type is not BF16, F16 or F32 */
    WP_BF16_EARG = -2,     /* bad shape, palette_n > 16, group < 1, NULL */
    WP_BF16_ENOMEM = -3,   /* allocation failed or size overflows */
    WP_BF16_ECORRUPT = -4  /* join: parts inconsistent (bad index, sizes,
                              padding, verbatim slot not 0, ...) */
};

/* The parts of one split matrix. Owned buffers are freed by
 * wp_bf16_split_free(). */
struct wp_bf16_split {
    uint32_t type;           /* WP_BF16, WP_F16 or WP_F32 */
    int64_t n_rows, n_cols;  /* matrix shape, weights */
    int exp_bits;            /* exponent field width: 8 (BF16, F32), 5 (F16) */
    int raw_bits;            /* w, sign+mantissa bits a weight: 8, 11, 24 */

    int palette_n;           /* requested N: 0 = exponent-byte mode */
    int n_palette;           /* palette entries used, <= palette_n */
    uint8_t palette[WP_BF16_PALETTE_MAX]; /* exponent of index i */

    uint8_t *sym;            /* n_rows * sym_per_row symbols */
    int64_t sym_per_row;     /* n_cols (palette 0) or ceil(n_cols / 2) */
    size_t n_sym;            /* n_rows * sym_per_row */

    uint8_t *raw;            /* raw_bytes: packed sign+mantissa, all weights */
    size_t raw_bytes;        /* ceil(n_rows * n_cols * raw_bits / 8) */

    int64_t group;           /* weights per row group (verbatim unit) */
    int64_t groups_per_row;  /* ceil(n_cols / group); 0 in palette 0 mode */
    uint8_t *vmap;           /* ceil(n_rows * groups_per_row / 8) bytes */
    size_t vmap_bytes;
    int64_t n_verbatim;      /* verbatim groups */
    uint8_t *vbytes;         /* original bytes of the verbatim groups */
    size_t vbytes_len;

    uint64_t hist[256];      /* exponent histogram over all weights */
};

/* Whether group g of row r is verbatim: vmap bit (r * groups_per_row + g),
 * LSB-first in bytes (the layout above). 1 or 0; s in palette mode. */
static inline int wp_bf16_verbatim(const struct wp_bf16_split *s, int64_t r, int64_t g)
{
    const uint64_t bit = (uint64_t)(r * s->groups_per_row + g);
    return s->vmap[bit / 8] >> (bit % 8) & 1;
}

/* Statistics of one split, for histogram --report and the README. */
struct wp_bf16_stats {
    uint64_t n_weights;
    int n_exponents;         /* distinct exponent values present */
    double h_exp;            /* Shannon entropy H(exponent), bits a weight */
    double limit;            /* raw_bits + H(exponent): 8 + H for BF16, b/w */
    double h_sym;            /* entropy of the symbol stream, bits a symbol */
    double h_sym_per_weight; /* h_sym * n_sym / n_weights, b/w */
    double verbatim_frac;    /* verbatim groups / all groups (0 at palette 0) */
    double verbatim_weight_frac; /* weights in verbatim groups / all */
    double palette_cover;    /* fraction of weights whose exponent is in the
                                palette (1 at palette 0) */
};

/* Field widths of a type: *exp_bits, *raw_bits (sign + mantissa) and the
 * element size in bytes (return value). Returns WP_BF16_ETYPE for a type
 * other than WP_BF16, WP_F16, WP_F32. Either pointer may be NULL. */
int wp_bf16_fields(uint32_t type, int *exp_bits, int *raw_bits);

/* Exponent field of every one of n weights (little-endian bytes of `type`)
 * counted into hist[256] (zeroed first). Returns 0 or WP_BF16_ETYPE /
 * WP_BF16_EARG. */
int wp_bf16_exp_histogram(uint32_t type, const void *data, size_t n,
                          uint64_t hist[256]);

/* Shannon entropy in bits of the distribution hist[0..n_bins) (counts);
 * 0 for an empty or one-valued histogram. Exact to double rounding. The
 * same as wp_huf_entropy (huffman.h), kept under this name for the
 * library's users. */
double wp_bf16_entropy(const uint64_t *hist, int n_bins);

/* The palette of Unweight: the up to n (<= 16) most frequent exponents of
 * hist (count > 0 only), by descending count, ties by ascending exponent
 * value, written to palette[0..]. Returns the number taken (0..n), or
 * WP_BF16_EARG for n outside 0..16. */
int wp_bf16_palette(const uint64_t hist[256], int n,
                    uint8_t palette[WP_BF16_PALETTE_MAX]);

/* Split an n_rows x n_cols matrix `data` (n_rows*n_cols elements of `type`,
 * little-endian) into *out (overwritten; free with wp_bf16_split_free even
 * on error). palette_n: 0 (exponent bytes, DFloat11) or 1..16 (palette
 * indices in pairs, Unweight); group: weights per verbatim row group, >= 1
 * (ignored at palette 0; WP_BF16_GROUP_DEFAULT = 64). An empty matrix
 * (n_rows or n_cols 0) is valid. Returns 0, WP_BF16_ETYPE, WP_BF16_EARG or
 * WP_BF16_ENOMEM. */
int wp_bf16_split(struct wp_bf16_split *out, uint32_t type, const void *data,
                  int64_t n_rows, int64_t n_cols, int palette_n, int64_t group);

/* Restore the original bytes of s into dst (n_rows * n_cols * element size
 * bytes). Checks every part against the layout above (sizes, indices below
 * n_palette, pad nibbles and verbatim slots 0, exponent values in range,
 * vbytes length matching vmap; the palette bytes past n_palette 0; at
 * palette 0 group, vmap_bytes and every palette byte 0, as
 * wp_bf16_split writes them) and returns WP_BF16_ECORRUPT rather than
 * write a wrong weight (dst may then be partly written: discard it);
 * WP_BF16_EARG when s, or dst for a non-empty tensor, is NULL;
 * WP_BF16_ETYPE when s->type is not a float type bf16split splits; 0 on
 * success. */
int wp_bf16_join(const struct wp_bf16_split *s, void *dst);

/* Statistics of a split (see struct wp_bf16_stats). Returns 0 or
 * WP_BF16_EARG. */
int wp_bf16_stats(const struct wp_bf16_split *s, struct wp_bf16_stats *st);

/* Free the buffers of s and zero it; s may be NULL or zeroed. */
void wp_bf16_split_free(struct wp_bf16_split *s);

/* A static message for an error code. */
const char *wp_bf16_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
