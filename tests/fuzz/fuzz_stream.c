/* fuzz_stream - libFuzzer target for the stream reader (lib/stream.c).
 * The input is read as a stream in one pass (wp_reader over fmemopen, as a
 * pipe would deliver it), then as a file: its trailing index
 * (wp_index_read) and each indexed record by offset (wp_record_read_at).
 * Built and run by tests/fuzz/run. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return 0;
    wp_reader *rd = wp_reader_open(f, "fuzz", err, sizeof err);
    if (rd) {
        wp_record r;
        wp_record_init(&r);
        for (int k = 0; k < 100000 && wp_reader_next(rd, &r) > 0; k++) {
            /* touch what a filter would use */
            (void)wp_record_nelem(&r);
            (void)wp_attr_i64(&r, "n_weights", 0);
        }
        wp_record_free(&r);
        wp_reader_close(rd);
    }
    wp_index ix;
    if (wp_index_read(f, "fuzz", &ix, err, sizeof err) == 0) {
        for (uint64_t i = 0; i < ix.count && i < 256; i++) {
            wp_record r;
            wp_record_init(&r);
            (void)wp_index_find(&ix, ix.e[i].kind, ix.e[i].name);
            wp_record_read_at(f, "fuzz", ix.e[i].offset, &r, err, sizeof err);
            wp_record_free(&r);
        }
        wp_index_free(&ix);
    }
    fclose(f);
    return 0;
}
