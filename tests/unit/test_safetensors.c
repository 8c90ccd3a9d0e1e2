/* test_safetensors.c - lib/safetensors.c's writer (wp_st_out) and by-name
 * reader (wp_st_read_tensor) on a crafted file as the safetensors library
 * writes one (header padded with spaces to 8 bytes, tensors in another order
 * than the header lists them, a zero-size tensor, __metadata__): the stream
 * gives the file back byte for byte, and each way a stream can stop being
 * the file's is refused with its message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"
#include "safetensors.h"
#include "tap.h"

/* The data section: "b" (BF16 [4], 8 bytes) at 0, "a" (F32 [2, 3], 24 bytes)
 * at 8, "z" (F16 [0, 5]) empty at 32; the header lists a, z, b. */
static const char header[] =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]},"
    "\"z\":{\"dtype\":\"F16\",\"shape\":[0,5],\"data_offsets\":[32,32]},"
    "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}";

static size_t file_bytes(const char *hdr, uint8_t *buf)
{
    size_t n = strlen(hdr), padded = (n + 7) / 8 * 8;
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)padded >> 8 * i);
    memcpy(buf + 8, hdr, n);
    memset(buf + 8 + n, ' ', padded - n);
    for (int i = 0; i < 32; i++)
        buf[8 + padded + (size_t)i] = (uint8_t)(i * 37 + 11);
    return 8 + padded + 32;
}

static char path[] = "/tmp/wpack-test-st-XXXXXX";

/* The file's stream, wp_st_next's records (the header's first); n into r. */
static int read_stream(wp_record *r, int max)
{
    char err[512];
    wp_st_in *s = wp_st_open(path, err, sizeof err);
    int n = 0;
    if (!s) {
        printf("# %s\n", err);
        return 0;
    }
    while (n < max && wp_st_next(s, &r[n]) > 0)
        n++;
    wp_st_close(s);
    return n;
}

/* Feed records order[0..n) of r to a fresh writer; the first -1's message
 * into msg (or "" when all are taken and the finish passes). */
static void feed(wp_record *r, const int *order, int n, char *msg, size_t len, FILE *f)
{
    wp_st_out *o = wp_st_out_new();
    msg[0] = 0;
    for (int i = 0; i < n; i++)
        if (wp_st_out_add(o, &r[order[i]], f) < 0) {
            snprintf(msg, len, "%s", wp_st_out_error(o));
            wp_st_out_free(o);
            return;
        }
    if (wp_st_out_finish(o))
        snprintf(msg, len, "%s", wp_st_out_error(o));
    wp_st_out_free(o);
}

static int has(const char *msg, const char *part)
{
    if (strstr(msg, part))
        return 1;
    printf("# got: %s\n", msg);
    return 0;
}

int main(void)
{
    static uint8_t buf[4096], back[4096];
    const size_t size = file_bytes(header, buf);
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f || fwrite(buf, 1, size, f) != size || fclose(f)) {
        CHECK(0, "write the test file %s", path);
        return tap_done();
    }

    wp_record r[8];
    const int n = read_stream(r, 8);
    CHECK(n == 5, "the stream: header, one metadata key/value, three tensors (%d records)", n);
    CHECK(n == 5 && wp_st_is_header(&r[0]) && r[0].payload_len == 8 + (size - 8 - 32) &&
              !memcmp(r[0].payload, buf, (size_t)r[0].payload_len),
          "the header record holds the file's first 8 + N bytes, its padding too");
    CHECK(n == 5 && !strcmp(r[2].name, "b") && !strcmp(r[3].name, "a") && !strcmp(r[4].name, "z"),
          "tensors in data-offset order: b, a, z");

    /* the whole stream writes the file back */
    char msg[1024];
    const int all[] = {0, 1, 2, 3, 4};
    FILE *t = tmpfile();
    feed(r, all, 5, msg, sizeof msg, t);
    size_t got = 0;
    if (t) {
        rewind(t);
        got = fread(back, 1, sizeof back, t);
        fclose(t);
    }
    CHECK(!msg[0] && got == size && !memcmp(back, buf, size), "the stream gives the file back byte for byte (%zu of %zu bytes)%s%s",
          got, size, msg[0] ? ": " : "", msg);

    /* by name, as verify reads the original */
    char err[512];
    wp_st_in *s = wp_st_open(path, err, sizeof err);
    wp_record x;
    int ka = s ? wp_st_read_tensor(s, "a", &x) : -1;
    CHECK(ka == 1 && x.type == WP_F32 && x.ne[0] == 3 && x.ne[1] == 2 && x.payload_len == 24 &&
              !memcmp(x.payload, buf + size - 24, 24), "read_tensor 'a': F32 3x2, its 24 bytes at offset 8");
    wp_record_free(&x);
    int kz = s ? wp_st_read_tensor(s, "z", &x) : -1;
    CHECK(kz == 1 && x.payload_len == 0 && x.ne[0] == 5 && x.ne[1] == 0, "read_tensor 'z': empty, 5x0");
    wp_record_free(&x);
    int kn = s ? wp_st_read_tensor(s, "nope", &x) : -1;
    CHECK(kn == 0, "read_tensor of a name the file lacks: 0");
    wp_record next;
    int k1 = s ? wp_st_next(s, &next) : -1;
    CHECK(k1 == 1 && wp_st_is_header(&next), "read_tensor leaves the sequential position (the header's record still first)");
    wp_record_free(&next);
    wp_st_close(s);

    /* each way a stream stops being the file's */
    t = tmpfile();
    feed(r, (const int[]){2, 0}, 2, msg, sizeof msg, t);
    CHECK(has(msg, "record 'b' before the safetensors.header key/value"), "a tensor before the header");
    feed(r, (const int[]){0, 1, 0}, 3, msg, sizeof msg, t);
    CHECK(has(msg, "a second safetensors.header"), "a second header (two files' streams)");
    feed(r, (const int[]){0, 1, 3, 2, 4}, 5, msg, sizeof msg, t);
    CHECK(has(msg, "tensor 'a' where safetensors.header lists 'b' next"), "tensors out of their order");
    feed(r, (const int[]){0, 1, 2, 3}, 4, msg, sizeof msg, t);
    CHECK(has(msg, "the stream ends before tensor 'z' (2 of the 3 tensors"), "a tensor missing at the end");
    feed(r, (const int[]){0, 1, 2, 3, 4, 4}, 6, msg, sizeof msg, t);
    CHECK(has(msg, "tensor 'z' is not in safetensors.header (it lists 3 tensors)"), "a tensor too many");
    feed(r, (const int[]){1}, 0, msg, sizeof msg, t);
    CHECK(has(msg, "no safetensors.header key/value"), "an empty stream");

    r[3].type = WP_F16;   /* 'a' as another dtype of the same bytes */
    r[3].ne[0] = 6;
    feed(r, all, 5, msg, sizeof msg, t);
    CHECK(has(msg, "tensor 'a' is F16, safetensors.header says F32"), "a tensor of another dtype");
    r[3].type = WP_F32;
    r[3].ne[0] = 3;
    r[3].ne[1] = 1;
    r[3].ne[2] = 2;
    r[3].n_dims = 3;
    feed(r, all, 5, msg, sizeof msg, t);
    CHECK(has(msg, "tensor 'a' has another shape than safetensors.header says"), "a tensor of another shape");
    r[3].ne[1] = 2;
    r[3].ne[2] = 1;
    r[3].n_dims = 2;

    wp_record_free(&r[1]);   /* a key/value a safetensors file does not hold */
    wp_record_init(&r[1]);
    r[1].kind = WP_REC_KV;
    r[1].type = WP_GGUF_STRING;
    wp_record_set_name(&r[1], "general.architecture");
    memcpy(wp_record_alloc(&r[1], 9), "\1\0\0\0\0\0\0\0x", 9);
    feed(r, all, 5, msg, sizeof msg, t);
    CHECK(has(msg, "key/value 'general.architecture' is not a safetensors file's"), "another key/value");

    /* a header that no longer parses, and one with a hole */
    r[0].payload[r[0].payload_len - 1] = 'x';
    feed(r, all, 1, msg, sizeof msg, t);
    CHECK(has(msg, "safetensors.header: malformed JSON header"), "a damaged header: its problem, named");
    static const char hole[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
    wp_record h;
    wp_record_init(&h);
    h.kind = WP_REC_KV;
    h.type = WP_GGUF_STRING;
    wp_record_set_name(&h, WP_ST_HEADER_KEY);
    uint8_t *p = wp_record_alloc(&h, 8 + sizeof hole - 1);
    memset(p, 0, 8);
    p[0] = (uint8_t)(sizeof hole - 1);
    memcpy(p + 8, hole, sizeof hole - 1);
    feed(&h, (const int[]){0}, 1, msg, sizeof msg, t);
    CHECK(has(msg, "bytes [0, 4) of the 8-byte data section belong to no tensor"), "a header with a hole");
    wp_record_free(&h);

    if (t)
        fclose(t);
    for (int i = 0; i < n; i++)
        wp_record_free(&r[i]);
    remove(path);
    return tap_done();
}
