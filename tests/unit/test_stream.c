/* test_stream.c - the stream reader refuses what the fuzzers found and
 * round-trips what the writer writes. */
#include <stdlib.h>
#include <string.h>

#include "stream.h"
#include "tap.h"

/* A stream of one record with shape ne, in memory. */
static char *one_record(const int64_t ne[4], int n_dims, uint64_t bytes, size_t *len)
{
    char *buf = NULL, err[256];
    FILE *f = open_memstream(&buf, len);
    wp_writer *w = wp_writer_open(f, "mem", 8, err, sizeof err);
    wp_record r;
    wp_record_init(&r);
    r.kind = WP_REC_TENSOR;
    r.n_dims = n_dims;
    memcpy(r.ne, ne, sizeof r.ne);
    wp_record_set_name(&r, "t");
    wp_record_alloc(&r, bytes);
    memset(r.payload, 7, (size_t)bytes);
    wp_writer_put(w, &r);
    wp_writer_close(w, err, sizeof err);
    fclose(f);
    wp_record_free(&r);
    return buf;
}

static int read_all(const char *buf, size_t len, char *msg, size_t n)
{
    char err[512];
    FILE *f = fmemopen((void *)buf, len, "rb");
    wp_reader *rd = wp_reader_open(f, "mem", err, sizeof err);
    int k = -1;
    if (rd) {
        wp_record r;
        wp_record_init(&r);
        while ((k = wp_reader_next(rd, &r)) == 1)
            ;
        snprintf(msg, n, "%s", k < 0 ? wp_reader_error(rd) : "");
        wp_record_free(&r);
        wp_reader_close(rd);
    } else {
        snprintf(msg, n, "%s", err);
    }
    fclose(f);
    return k;
}

int main(void)
{
    char msg[512];
    size_t len;
    int64_t ok_ne[4] = {2, 2, 1, 1}, huge[4] = {1, INT64_C(1) << 40, INT64_C(1) << 40, INT64_C(1) << 24};
    char *a = one_record(ok_ne, 2, 16, &len);
    CHECK(read_all(a, len, msg, sizeof msg) == 0, "a well-formed stream reads to its end record");
    /* a second stream (or any byte) after the first's trailer: refused, not dropped */
    char *two = malloc(2 * len);
    memcpy(two, a, len);
    memcpy(two + len, a, len);
    CHECK(read_all(two, 2 * len, msg, sizeof msg) < 0 &&
              !strcmp(msg, "mem: corrupt stream: data after its end (streams do not concatenate: one stream a pipe)"),
          "two streams concatenated are refused: %s", msg);
    CHECK(read_all(two, len + 1, msg, sizeof msg) < 0 && strstr(msg, "data after its end"),
          "one byte after the trailer is refused: %s", msg);
    free(two);
    free(a);
    char *c = one_record(ok_ne, 2, 4, &len);
    CHECK(read_all(c, len, msg, sizeof msg) < 0 && strstr(msg, "record 't': 4 payload bytes, but F32 2 x 2 needs 16"),
          "a tensor whose payload does not fit its type and shape is refused: %s", msg);
    free(c);
    char *b = one_record(huge, 4, 4, &len);
    CHECK(read_all(b, len, msg, sizeof msg) < 0 && strstr(msg, "more than 2^62 elements"),
          "a shape whose element count overflows is refused: %s", msg);
    free(b);
    return tap_done();
}
