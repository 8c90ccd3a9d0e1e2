/* fuzz_bundle - libFuzzer target for the bundle reader (lib/bundle.c, as
 * unbundle, verify and tsinfo use it) and the runner's loader with its CPU
 * reference decode (runtime/model.c, runtime/cpu.c: wprun --cpu --verify).
 * The input is first resealed (reseal: every record's header and payload
 * XXH64 recomputed, as a corrupter who knows the format would, so that a
 * mutation reaches the checks behind the checksums, which fuzz_stream
 * covers) and its tensors' recorded hashes disabled (attribute xxh32 renamed
 * xxh3_, so corrupt lanes that decode reach the code after the decoders);
 * then written to a memory file (memfd) and opened by its /proc/self/fd
 * path, since the readers take a path and seek in it. Then:
 * every record is read in order (wp_reader) and counted (wp_weight_tally_add,
 * tsinfo) and fed to two restorers, the reference and the fast lane decoder
 * (wp_restore_put, as verify runs them; REF records resolved through the
 * index); then the runner loads the file (wr_model_load) and each coded
 * matrix is restored by the library (wr_restore_bytes, wprun's reference),
 * decoded by the three CPU tile decoders (wr_cpu_restore: limits, table,
 * the kernels' code), transcoded (palette BF16), and multiplied once (fused
 * GEMV, and the fixed-width and float64 GEMVs on the restored bytes).
 * Results are not compared: a corrupt input need only fail cleanly.
 * Built and run by tests/fuzz/run. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "bundle.h"
#include "stream.h"
#include "wprun.h"

static int fd = -1;
static char path[64];

static uint64_t get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}

/* Recompute the XXH64 of every record's header and payload in b (the
 * layout of lib/stream.h) and rename the attribute xxh32, as far as the
 * records can be followed. */
static void reseal(uint8_t *b, size_t n)
{
    if (n < 16 || memcmp(b, "WPACKSTR", 8))
        return;
    uint64_t align = get(b + 12, 4), off = 16;
    if (align < 1 || align > 4096 || (align & (align - 1)))
        return;
    for (int k = 0; k < 100000 && off <= n && n - off >= 72 && !memcmp(b + off, "WREC", 4); k++) {
        uint64_t kind = get(b + off + 4, 2), nl = get(b + off + 12, 4), al = get(b + off + 48, 4);
        uint64_t pl = get(b + off + 56, 8);
        if (nl > n || al > n || off + 72 + nl + al + 8 > n)
            return;
        uint64_t hend = off + 72 + nl + al + 8;
        uint8_t *a = b + off + 72 + nl;
        for (uint64_t i = 0; i + 6 <= al; i++)
            if ((i == 0 || a[i - 1] == '\n') && !memcmp(a + i, "xxh32=", 6))
                a[i + 4] = '_';
        uint64_t p = (hend + align - 1) / align * align;
        if (p <= n && pl <= n - p)
            put64(b + off + 64, XXH64(b + p, (size_t)pl, 0));
        put64(b + hend - 8, XXH64(b + off, (size_t)(hend - 8 - off), 0));
        if (kind == 0xffff || p > n || pl > n - p)
            return;
        off = (p + pl + align - 1) / align * align;
    }
}

/* Restore every record of the file in order (unbundle, verify). */
static void restore_all(void)
{
    char err[1024];
    FILE *f = fopen(path, "rb"), *src = fopen(path, "rb");
    if (!f || !src) {
        if (f)
            fclose(f);
        if (src)
            fclose(src);
        return;
    }
    wp_reader *rd = wp_reader_open(f, "fuzz", err, sizeof err);
    wp_restore *ref = wp_restore_new(), *fast = wp_restore_new();
    if (rd && ref && fast) {
        wp_restore_source(ref, src, "fuzz");
        wp_restore_source(fast, src, "fuzz");
        static wp_weight_tally tally;
        memset(&tally, 0, sizeof tally);
        wp_record r, dup, *a, *b;
        wp_record_init(&r);
        wp_record_init(&dup);
        int ok_a = 1, ok_b = 1;
        for (int k = 0; k < 100000 && (ok_a || ok_b) && wp_reader_next(rd, &r) > 0; k++) {
            wp_weight_tally_add(&tally, &r);
            (void)wp_attr_i64(&r, "n_weights", 0);
            /* the fast restorer gets a copy: restoring consumes the record */
            dup.kind = r.kind;
            dup.offset = r.offset;   /* a ref resolves to a tensor before this offset */
            dup.type = r.type;
            dup.n_dims = r.n_dims;
            memcpy(dup.ne, r.ne, sizeof r.ne);
            free(dup.attrs);
            dup.attrs = strdup(r.attrs ? r.attrs : "");
            if (!dup.attrs || wp_record_set_name(&dup, r.name ? r.name : "") || !wp_record_alloc(&dup, r.payload_len))
                break;
            if (r.payload_len)
                memcpy(dup.payload, r.payload, (size_t)r.payload_len);
            if (ok_a) {
                int ka = wp_restore_put(ref, &r, 1, &a);
                ok_a = ka >= 0;
                for (; ka == 1 && a; a = wp_restore_more(ref))
                    (void)wp_record_nelem(a);
            }
            if (ok_b) {
                int kb = wp_restore_put(fast, &dup, 0, &b);
                ok_b = kb >= 0;
                for (; kb == 1 && b; b = wp_restore_more(fast))
                    (void)wp_record_nelem(b);
            }
        }
        (void)wp_restore_pending(ref);
        wp_record_free(&r);
        wp_record_free(&dup);
    }
    wp_restore_free(ref);
    wp_restore_free(fast);
    if (rd)
        wp_reader_close(rd);
    else
        fclose(f);
    fclose(src);
}

/* wprun --cpu --verify on every coded matrix of the file. */
static void run_model(void)
{
    char err[1024];
    wr_model md;
    memset(&md, 0, sizeof md);
    if (wr_model_load(&md, path, NULL, err, sizeof err)) {
        wr_model_free(&md);
        return;
    }
    for (int i = 0; i < md.n; i++) {
        const wr_matrix *m = &md.m[i];
        uint8_t *ref = NULL;
        size_t len = 0;
        int restored = wr_restore_bytes(m, &ref, &len, err, sizeof err) == 0;
        uint64_t fixed = wr_fixed_bytes(m);
        uint8_t *mine = malloc((size_t)fixed + 1);
        if (mine) {
            (void)wr_cpu_restore(m, WR_DEC_LIMITS, mine, err, sizeof err);
            (void)wr_cpu_restore(m, WR_DEC_TABLE, mine, err, sizeof err);
            (void)wr_cpu_restore(m, WR_DEC_DEVICE, mine, err, sizeof err);
        }
        if (m->kind == WR_EXP && m->type == WP_BF16 && m->s.palette_n) {
            size_t il = (size_t)(wr_palette_stride(m) * m->rows) + 1;
            uint8_t *idx = malloc(il);
            if (idx) {
                (void)wr_cpu_transcode(m, idx, err, sizeof err);
                if (restored && len == fixed)
                    (void)wr_palette_index(m, ref, idx);
            }
            free(idx);
        }
        float *x = malloc((size_t)m->cols * sizeof *x + 1), *y = malloc((size_t)m->rows * sizeof *y + 1);
        double *y64 = malloc((size_t)m->rows * sizeof *y64 + 1), *yabs = malloc((size_t)m->rows * sizeof *yabs + 1);
        if (x && y && y64 && yabs) {
            wr_make_x(x, (size_t)m->cols, 1, m->kind == WR_EXP);
            (void)wr_cpu_gemv_fused(m, x, 1, y, err, sizeof err);
            if (restored && len == fixed) {
                wr_cpu_gemv_fixed(m, ref, x, 1, y);
                if (wr_ref_gemv64(m, ref, x, 1, y64, yabs) == 0)
                    (void)wr_relerr_abs(y, y64, yabs, (size_t)m->rows, m->cols);
            }
        }
        free(x);
        free(y);
        free(y64);
        free(yabs);
        free(mine);
        free(ref);
    }
    wr_model_free(&md);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fd < 0) {
        fd = memfd_create("fuzz_bundle", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    uint8_t *b = malloc(size + 1);
    if (!b)
        abort();
    if (size)
        memcpy(b, data, size);
    reseal(b, size);
    if (ftruncate(fd, 0) || (size && pwrite(fd, b, size, 0) != (ssize_t)size))
        abort();
    free(b);
    restore_all();
    run_model();
    return 0;
}
