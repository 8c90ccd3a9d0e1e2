/* distform.c - the forms a bundle stores a tensor in (see distform.h). */
#include "distform.h"

#include <stdio.h>
#include <string.h>

#include "bf16.h"
#include "codes.h"
#include "ggml_type.h"

unsigned wp_form_group(uint32_t type)
{
    return wp_ggml_blck_size(type) == 1 ? (unsigned)wp_ggml_type_size(type) : 1;
}

int wp_form_zstd_smaller(const wp_record *r, unsigned group, wp_record *z)
{
    return r->payload_len >= 64 && wp_z_wrap(r, group, WP_FORM_ZLEVEL, z) == 0 && z->payload_len + 32 < r->payload_len;
}

int wp_form_fixed_bytes(const wp_record *sym, uint64_t *bytes, char *err, size_t n)
{
    char codec[16] = "";
    wp_attr_str(sym, "codec", codec, sizeof codec);
    const int64_t rows = sym->ne[0] ? wp_record_nelem(sym) / sym->ne[0] : 0;
    if (!strcmp(codec, "q")) {
        wp_codes_geom g;
        if (wp_codes_geom_get((int)sym->type, sym->ne[0], (uint64_t)rows, &g)) {
            snprintf(err, n, "type without a code view");
            return -1;
        }
        *bytes = g.block_len;
        return 0;
    }
    int eb, rb, es = wp_bf16_fields(sym->type, &eb, &rb);
    if (es <= 0) {
        snprintf(err, n, "unknown codec '%s'", codec);
        return -1;
    }
    *bytes = (uint64_t)wp_record_nelem(sym) * (uint64_t)es;
    return 0;
}

int wp_form_fixed_open(wp_form_fixed *f, const wp_record *held, const wp_record *sym, char *err, size_t n)
{
    f->rs = wp_restore_new();
    f->t = NULL;
    wp_record_init(&f->h);
    wp_record_init(&f->s);
    /* (level-1 zstd copies: the restorer takes what it is given) */
    if (!f->rs || wp_z_wrap(held, 1, 1, &f->h) || wp_z_wrap(sym, 1, 1, &f->s) ||
        wp_restore_put(f->rs, &f->h, 0, &f->t) < 0 || wp_restore_put(f->rs, &f->s, 0, &f->t) != 1) {
        snprintf(err, n, "%s", f->rs ? wp_restore_error(f->rs) : "out of memory");
        return -1;
    }
    wp_attr_set(f->t, "stored", "fixed");
    return 0;
}

void wp_form_fixed_close(wp_form_fixed *f)
{
    wp_record_free(&f->h);
    wp_record_free(&f->s);
    wp_restore_free(f->rs);
    f->rs = NULL;
    f->t = NULL;
}

int wp_form_dist(wp_record *held, wp_record *sym, wp_record *coded, uint64_t fixed, wp_record out[2], int *n_out,
                 char *err, size_t n)
{
    wp_codes_geom cg;
    const unsigned g =
        held->kind == WP_REC_SIDE && !wp_codes_geom_get((int)held->type, held->ne[0], 1, &cg) ? (unsigned)cg.bi.side_bytes
                                                                                            : 1;
    wp_record zside, zsym, zfixed;
    wp_record_init(&zside);
    wp_record_init(&zsym);
    wp_record_init(&zfixed);
    wp_form_fixed f = {0};
    int restored = 0, zipped = 0, bad = 0;
    *n_out = 0;
    if (wp_z_wrap(held, g, WP_FORM_ZLEVEL, &zside) || wp_z_wrap(sym, 1, WP_FORM_ZLEVEL, &zsym)) {
        snprintf(err, n, "out of memory");
        bad = 1;
        goto done;
    }
    wp_record *side_form = zside.payload_len + 32 < held->payload_len ? &zside : held;
    wp_record *sym_form = zsym.payload_len + 64 < coded->payload_len ? &zsym : coded;
    /* the split form takes one record more: about 120 bytes of header and index */
    const uint64_t split_bytes = side_form->payload_len + sym_form->payload_len + 120;
    uint64_t fixed_form = UINT64_MAX;
    if (split_bytes < fixed) {   /* else the fixed form is smaller as it is */
        restored = 1;
        if (wp_form_fixed_open(&f, held, sym, err, n)) {
            bad = 1;
            goto done;
        }
        if (f.t->payload_len < 4 * split_bytes) {
            zipped = f.t->payload_len >= 64 && !wp_z_wrap(f.t, wp_form_group(f.t->type), WP_FORM_ZLEVEL, &zfixed);
            fixed_form = zipped && zfixed.payload_len + 32 < f.t->payload_len ? zfixed.payload_len : f.t->payload_len;
        }
    }
    if (split_bytes < fixed && split_bytes < fixed_form) {
        wp_record_move(&out[0], side_form);
        wp_record_move(&out[1], sym_form);
        *n_out = 2;
    } else {
        if (!restored && (restored = 1, wp_form_fixed_open(&f, held, sym, err, n))) {
            bad = 1;
            goto done;
        }
        if (!zipped)
            zipped = f.t->payload_len >= 64 && !wp_z_wrap(f.t, wp_form_group(f.t->type), WP_FORM_ZLEVEL, &zfixed);
        if (zipped && zfixed.payload_len + 32 < f.t->payload_len)
            wp_record_move(&out[0], &zfixed);
        else if (wp_record_copy(&out[0], f.t))
            bad = snprintf(err, n, "out of memory") >= 0;
        *n_out = 1;
    }
done:
    if (restored)
        wp_form_fixed_close(&f);
    wp_record_free(&zside);
    wp_record_free(&zsym);
    wp_record_free(&zfixed);
    wp_record_free(held);
    wp_record_free(sym);
    wp_record_free(coded);
    return bad ? -1 : 0;
}
