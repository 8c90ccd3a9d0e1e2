/* test_stream.c - the stream reader refuses what the fuzzers found and
 * round-trips what the writer writes. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <xxhash.h>
#include <zstd.h>

#include "ggml_type.h"
#include "gguf_file.h"
#include "stream.h"
#include "tap.h"

static uint64_t rd64(const char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static void wr64(char *p, uint64_t v) { memcpy(p, &v, 8); }
static void wr32(char *p, uint32_t v) { memcpy(p, &v, 4); }

/* A stream writer into memory, payloads aligned to 8: *buf and *len hold the
 * stream once the writer is closed and *f fclose'd. */
static wp_writer *mem_writer(char **buf, size_t *len, FILE **f)
{
    char err[256];
    *f = open_memstream(buf, len);
    return wp_writer_open(*f, "mem", 8, err, sizeof err);
}

/* A stream of tensor records named names[i], each of `bytes` bytes of value
 * fill[i] (F32, shape bytes/4), in memory; *len its length. */
static char *records(const char *const *names, const int *fill, int n, uint64_t bytes, size_t *len)
{
    char *buf = NULL, err[256];
    FILE *f;
    wp_writer *w = mem_writer(&buf, len, &f);
    wp_record r;
    wp_record_init(&r);
    for (int i = 0; i < n; i++) {
        r.kind = WP_REC_TENSOR;
        r.n_dims = 1;
        r.ne[0] = (int64_t)(bytes / 4), r.ne[1] = r.ne[2] = r.ne[3] = 1;
        wp_record_set_name(&r, names[i]);
        wp_record_alloc(&r, bytes);
        memset(r.payload, fill[i], (size_t)bytes);
        wp_writer_put(w, &r);
    }
    wp_writer_close(w, err, sizeof err);
    fclose(f);
    wp_record_free(&r);
    return buf;
}

/* Replace the end record's payload (the index) of stream buf with pl, and
 * reseal its checksums and trailer, as a corrupter who knows the format
 * would (wpack-stream(5): header 72 bytes + name + attrs + xxh64). */
static char *with_index(const char *buf, size_t len, const char *pl, size_t pl_len, size_t *out_len)
{
    uint64_t end = rd64(buf + len - 16), al = rd32(buf + end + 48), hl = 72 + al + 8;
    uint64_t p = (end + hl + 7) / 8 * 8, n = (p + pl_len + 7) / 8 * 8 + 16;
    char *o = calloc(1, n);
    memcpy(o, buf, end + hl);
    wr64(o + end + 56, pl_len);
    wr64(o + end + 64, XXH64(pl, pl_len, 0));
    wr64(o + end + hl - 8, XXH64(o + end, hl - 8, 0));
    memcpy(o + p, pl, pl_len);
    wr64(o + n - 16, end);
    memcpy(o + n - 8, "WPACKEND", 8);
    *out_len = n;
    return o;
}

/* An index payload: count, entries_len, then a zstd frame of `entries`. */
static char *index_payload(uint64_t count, uint64_t entries_len, const char *entries, size_t n, size_t *len)
{
    size_t cap = ZSTD_compressBound(n);
    char *pl = malloc(16 + cap);
    wr64(pl, count);
    wr64(pl + 8, entries_len);
    *len = 16 + ZSTD_compress(pl + 16, cap, entries, n, 3);
    return pl;
}

/* wp_index_read and wp_record_read_at of every entry on a temporary file
 * holding buf: 0, or -1 with the message in msg. */
static int random_access(const char *buf, size_t len, char *msg, size_t n)
{
    FILE *f = tmpfile();
    fwrite(buf, 1, len, f);
    fflush(f);
    wp_index ix;
    wp_record r;
    wp_record_init(&r);
    int rc = wp_index_read(f, "mem", &ix, msg, n);
    for (uint64_t i = 0; rc == 0 && i < ix.count; i++)
        rc = wp_record_read_at(f, "mem", ix.e[i].offset, &r, msg, n);
    if (rc == 0 || strncmp(msg, "mem: corrupt index", 18))
        wp_index_free(&ix);
    wp_record_free(&r);
    fclose(f);
    return rc;
}

/* A stream of one record of kind `kind` with shape ne, in memory. */
static char *one_record(unsigned kind, const int64_t ne[4], int n_dims, uint64_t bytes, size_t *len)
{
    char *buf = NULL, err[256];
    FILE *f;
    wp_writer *w = mem_writer(&buf, len, &f);
    wp_record r;
    wp_record_init(&r);
    r.kind = (uint16_t)kind;
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

/* A stream of one F32 tensor "t" of 4 values with attributes "ab=1\nc=2\n",
 * in memory; *len its length. */
static char *attr_record(size_t *len)
{
    char *buf = NULL, err[256];
    FILE *f;
    wp_writer *w = mem_writer(&buf, len, &f);
    wp_record t;
    wp_record_init(&t);
    t.kind = WP_REC_TENSOR, t.n_dims = 1, t.ne[0] = 4, t.ne[1] = t.ne[2] = t.ne[3] = 1;
    wp_record_set_name(&t, "t");
    wp_attr_set(&t, "ab", "1");
    wp_attr_set(&t, "c", "2");
    memset(wp_record_alloc(&t, 16), 5, 16);
    wp_writer_put(w, &t);
    wp_writer_close(w, err, sizeof err);
    fclose(f);
    wp_record_free(&t);
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

/* GGUF key/values as gguf.cpp serialises them, and the layout sizes (gptq sizes its output's
 * header with them before ggufpack writes it). */
static void test_gguf_kv(void)
{
    wp_record kv;
    wp_record_init(&kv);
    char buf[16];
    CHECK(wp_gguf_kv_set(&kv, "general.architecture", "llama", 0) == 0 && kv.kind == WP_REC_KV &&
              kv.type == WP_GGUF_STRING && kv.payload_len == 13 && kv.payload[0] == 5 && kv.payload[7] == 0 &&
              !memcmp(kv.payload + 8, "llama", 5) && wp_gguf_kv_str(&kv, buf, sizeof buf) == 0 &&
              !strcmp(buf, "llama") && wp_gguf_kv_bytes(&kv) == 8 + 20 + 4 + 13 && wp_gguf_kv_uint(&kv) == -1,
          "a string key/value: u64 length 5 + 'llama', 45 GGUF bytes");
    CHECK(wp_gguf_kv_str(&kv, buf, 5) == -1, "a 5-byte string does not fit 5 bytes with its NUL: -1");
    CHECK(wp_gguf_kv_set(&kv, "general.alignment", NULL, 0x01020304) == 0 && kv.type == WP_GGUF_U32 &&
              kv.payload_len == 4 && kv.payload[0] == 4 && kv.payload[3] == 1 &&
              wp_gguf_kv_uint(&kv) == 0x01020304 && wp_gguf_kv_str(&kv, buf, sizeof buf) == -1 &&
              wp_gguf_kv_bytes(&kv) == 8 + 17 + 4 + 4,
          "a u32 key/value: 4 bytes little-endian, read back as 16909060");
    /* an array of u16 [7, 9]: its first element; an empty array: none */
    const uint8_t arr[] = {2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7, 0, 9, 0};
    kv.type = WP_GGUF_ARRAY;
    memcpy(wp_record_alloc(&kv, sizeof arr), arr, sizeof arr);
    CHECK(wp_gguf_kv_uint(&kv) == 7, "an array of u16 [7, 9]: 7");
    kv.payload[4] = 0;
    CHECK(wp_gguf_kv_uint(&kv) == -1, "an empty array: -1");
    CHECK(wp_gguf_tinfo_bytes("blk.0.attn_q.weight", 2) == 8 + 19 + 4 + 16 + 4 + 8 && WP_GGUF_HEADER_BYTES == 24,
          "a 2-D tensor info of a 19-byte name: 59 bytes; the header 24");
    wp_record_free(&kv);
}

int main(void)
{
    test_gguf_kv();
    char msg[512];
    size_t len;
    int64_t ok_ne[4] = {2, 2, 1, 1}, huge[4] = {1, INT64_C(1) << 40, INT64_C(1) << 40, INT64_C(1) << 24};
    char *a = one_record(WP_REC_TENSOR, ok_ne, 2, 16, &len);
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
    char *c = one_record(WP_REC_TENSOR, ok_ne, 2, 4, &len);
    CHECK(read_all(c, len, msg, sizeof msg) < 0 && strstr(msg, "record 't': 4 payload bytes, but F32 2 x 2 needs 16"),
          "a tensor whose payload does not fit its type and shape is refused: %s", msg);
    free(c);
    /* a forged kind (checksums whole) was passed on by every filter and dropped by ggufpack */
    char *k99 = one_record(99, ok_ne, 2, 16, &len);
    CHECK(read_all(k99, len, msg, sizeof msg) < 0 &&
              !strcmp(msg, "mem: record 't' at byte 16: unknown record kind 99 (corrupt, or from a newer wpack)"),
          "a record of an unknown kind is refused: %s", msg);
    free(k99);
    /* 2^62 F32 elements: 2^64 bytes, which wrapped to 0, so a record of no payload was read */
    int64_t wraps[4] = {1, INT64_C(1) << 40, INT64_C(1) << 22, 1};
    char *w0 = one_record(WP_REC_TENSOR, wraps, 3, 0, &len);
    CHECK(read_all(w0, len, msg, sizeof msg) < 0 &&
              !strcmp(msg, "mem: record 't': 0 payload bytes, but F32 1 x 4611686018427387904 needs 2^64 bytes or more"),
          "a tensor of 2^62 F32 elements and no payload is refused: %s", msg);
    free(w0);
    char *b = one_record(WP_REC_TENSOR, huge, 4, 4, &len);
    CHECK(read_all(b, len, msg, sizeof msg) < 0 && strstr(msg, "more than 2^62 elements"),
          "a shape whose element count overflows is refused: %s", msg);
    free(b);
    /* an attribute is found by its whole key: "offsets" is not "offset", nor "offset" "off"
       (untested: a mutation test's find) */
    {
        wp_record r;
        wp_record_init(&r);
        size_t vl = 0;
        int set = wp_attr_set(&r, "offsets", "5") == 0 && wp_attr_set(&r, "offset", "64") == 0;
        const char *v = wp_attr_find(&r, "offset", &vl);
        CHECK(set && v && vl == 2 && !strncmp(v, "64", 2) && wp_attr_i64(&r, "offsets", -1) == 5 &&
                  !wp_attr_find(&r, "off", NULL) && wp_attr_i64(&r, "off", -1) == -1,
              "attributes by whole key: offsets=5, offset=64, no off");
        wp_record_free(&r);
    }

    /* the index, re-sealed, against the records (a breaker's lies: every reader said ok) */
    const char *ab[] = {"a1", "b2"}, *ba[] = {"b2", "a1"};
    int f12[] = {1, 2}, f21[] = {2, 1};
    size_t la, lb;
    char *sa = records(ab, f12, 2, 64, &la), *sb = records(ba, f21, 2, 64, &lb);
    CHECK(la == lb && read_all(sa, la, msg, sizeof msg) == 0 && random_access(sa, la, msg, sizeof msg) == 0,
          "two records read in order and by index");
    /* the same layout with the names swapped: b's end record (its index) after a's records */
    uint64_t end = rd64(sa + la - 16);
    char *sw = malloc(la);
    memcpy(sw, sa, end);
    memcpy(sw + end, sb + end, la - end);
    CHECK(read_all(sw, la, msg, sizeof msg) < 0 &&
              !strcmp(msg, "mem: corrupt stream: index entry 0 does not match the record at byte 16"),
          "an index naming other records at the same offsets: the reader refuses it: %s", msg);
    CHECK(random_access(sw, la, msg, sizeof msg) < 0 &&
              !strcmp(msg, "mem: corrupt index: entry 0 does not match the record at byte 16"),
          "and random access refuses the record its entry leads to: %s", msg);
    free(sw);
    /* an index that lists the first record alone, re-sealed: each reader refuses it (the in-order
       reader's count check and random access's end check were untested: a mutation test's find) */
    {
        uint64_t e = rd64(sa + la - 16), al = rd32(sa + e + 48), p = (e + 72 + al + 8 + 7) / 8 * 8;
        char ent[256];
        const size_t en = (size_t)rd64(sa + p + 8);
        ZSTD_decompress(ent, sizeof ent, sa + p + 16, (size_t)rd64(sa + e + 56) - 16);
        size_t il, hl;
        char *ip = index_payload(1, 16 + 2, ent, 16 + 2, &il), *one = with_index(sa, la, ip, il, &hl);
        CHECK(en > 18 && read_all(one, hl, msg, sizeof msg) < 0 &&
                  !strcmp(msg, "mem: corrupt stream: index does not match the records"),
              "an index of record a1 alone: the reader refuses it: %s", msg);
        CHECK(random_access(one, hl, msg, sizeof msg) < 0 &&
                  !strcmp(msg, "mem: corrupt index: entry 1 does not match the record at byte 168"),
              "and random access: %s", msg);
        free(ip), free(one);
    }
    /* a record hidden in another's payload, the index leading to it: wprun took the hidden
     * weights while verify refused the file (a breaker's find) */
    {
        size_t l1, l2, lh;
        const char *b2[] = {"b2"}, *a1b2[] = {"a1", "b2"};
        int f9[] = {9}, f12b[] = {1, 2};
        char *one = records(b2, f9, 1, 64, &l1);   /* record b2 (64 bytes of 9) at 16 */
        uint64_t rec_len = rd64(one + l1 - 16) - 16;
        char *two = records(a1b2, f12b, 2, 64, &l2);
        /* a1's payload (its bytes after its header) becomes b2's whole record, as a symbols
           record of rec_len bytes; rebuilt with the writer so every checksum holds */
        char *buf = NULL, err[256];
        FILE *f;
        wp_writer *w = mem_writer(&buf, &lh, &f);
        wp_record r;
        wp_record_init(&r);
        r.kind = WP_REC_SYMBOLS, r.n_dims = 1, r.ne[0] = (int64_t)rec_len, r.ne[1] = r.ne[2] = r.ne[3] = 1;
        wp_record_set_name(&r, "a1");
        wp_record_alloc(&r, rec_len);
        memcpy(r.payload, one + 16, rec_len);
        wp_writer_put(w, &r);
        r.kind = WP_REC_TENSOR, r.ne[0] = 16;
        wp_record_set_name(&r, "b2");
        wp_record_alloc(&r, 64);
        memset(r.payload, 2, 64);
        wp_writer_put(w, &r);
        wp_writer_close(w, err, sizeof err);
        fclose(f);
        wp_record_free(&r);
        CHECK(read_all(buf, lh, msg, sizeof msg) == 0 && random_access(buf, lh, msg, sizeof msg) == 0,
              "a stream whose first payload holds a whole record reads in order and by index");
        /* its index, entry b2 moved to a1's payload (a1's header is 72 + 2 + 8 bytes, padded to 88) */
        uint64_t e2 = rd64(buf + lh - 16), a2 = rd32(buf + e2 + 48), p2 = (e2 + 72 + a2 + 8 + 7) / 8 * 8;
        char ent[256];
        size_t en = (size_t)rd64(buf + p2 + 8);
        ZSTD_decompress(ent, sizeof ent, buf + p2 + 16, (size_t)rd64(buf + e2 + 56) - 16);
        wr64(ent + 16 + 2, 16 + 88);   /* entry 1 (after entry 0: 16 bytes + "a1") at byte 104 */
        size_t il2, hl;
        char *ip2 = index_payload(2, en, ent, en, &il2), *hid = with_index(buf, lh, ip2, il2, &hl);
        CHECK(random_access(hid, hl, msg, sizeof msg) < 0 &&
                  !strcmp(msg, "mem: corrupt index: entry 1 does not match the record at byte 256"),
              "an index entry leading to a record hidden in a payload is refused by index: %s", msg);
        CHECK(read_all(hid, hl, msg, sizeof msg) < 0 &&
                  !strcmp(msg, "mem: corrupt stream: index entry 1 does not match the record at byte 256"),
              "and in order: %s", msg);
        free(one), free(two), free(buf), free(ip2), free(hid);
    }
    /* the real entries, decompressed, to build lies from */
    uint64_t al = rd32(sa + end + 48), pl_at = (end + 72 + al + 8 + 7) / 8 * 8, pl_len = rd64(sa + end + 56);
    uint64_t ent_len = rd64(sa + pl_at + 8);
    char ent[4096 + 8];
    CHECK(ent_len < 4096 && ZSTD_decompress(ent, sizeof ent, sa + pl_at + 16, pl_len - 16) == ent_len,
          "the index holds %llu bytes of entries", (unsigned long long)ent_len);
    size_t il, ll;
    char *ip = index_payload(2, ent_len, ent, ent_len, &il), *s2 = with_index(sa, la, ip, il, &ll);
    CHECK(read_all(s2, ll, msg, sizeof msg) == 0 && random_access(s2, ll, msg, sizeof msg) == 0,
          "the real entries, re-sealed so, read in order and by index");
    free(ip), free(s2);
    /* entries_len beyond what 2 entries can hold: 256 MiB of zeros took 264 MB, then an unrelated error */
    char *zeros = calloc(1, 1 << 20);
    ip = index_payload(2, 1 << 20, zeros, 1 << 20, &il);
    s2 = with_index(sa, la, ip, il, &ll);
    CHECK(read_all(s2, ll, msg, sizeof msg) < 0 && !strcmp(msg, "mem: corrupt stream: index does not match the records"),
          "an index whose entries_len is more than its count can use is refused: %s", msg);
    CHECK(random_access(s2, ll, msg, sizeof msg) < 0 && !strcmp(msg, "mem: corrupt index"),
          "by random access too: %s", msg);
    free(ip), free(s2), free(zeros);
    /* an index that claims more entries and bytes than the stream could hold, read by offset
     * (as wprun and a ref's restore read it): refused before any allocation. The frame is real:
     * 2^28 zero bytes in RLE blocks (4 bytes a 128 KiB block), which the reader used to
     * allocate, decompress and parse as 2^24 entries */
    {
        uint64_t big = UINT64_C(1) << 28, nb = big >> 17;
        size_t fl = 4 + 1 + 1 + 8 + 4 * nb;
        char *fr = malloc(16 + fl), *q = fr + 16;
        wr64(fr, UINT64_C(1) << 24), wr64(fr + 8, big);
        memcpy(q, "\x28\xb5\x2f\xfd", 4), q += 4;
        *q++ = (char)0xC0;                 /* 8-byte frame content size, not single-segment */
        *q++ = (char)(7 << 3);             /* window 2^17 */
        wr64(q, big), q += 8;
        for (uint64_t i = 0; i < nb; i++) {
            uint32_t bh = (uint32_t)(i == nb - 1) | (1u << 1) | (1u << 17 << 3);   /* last, RLE, 128 KiB */
            memcpy(q, &bh, 3), q += 3;
            *q++ = 0;
        }
        CHECK(ZSTD_getFrameContentSize(fr + 16, fl) == big, "a %zu-byte zstd frame of 2^28 bytes", fl);
        s2 = with_index(sa, la, fr, 16 + fl, &ll);
        struct rusage before, after;
        getrusage(RUSAGE_SELF, &before);
        int rc = random_access(s2, ll, msg, sizeof msg);
        getrusage(RUSAGE_SELF, &after);
        CHECK(rc < 0 && !strcmp(msg, "mem: corrupt index") && after.ru_maxrss - before.ru_maxrss < 32 * 1024,
              "an index claiming 2^24 entries in 2^28 bytes is refused unread (%s; peak RSS +%ld KiB)", msg,
              after.ru_maxrss - before.ru_maxrss);
        free(fr), free(s2);
    }
    /* bytes after the last entry */
    memcpy(ent + ent_len, "junkjunk", 8);
    ip = index_payload(2, ent_len + 8, ent, ent_len + 8, &il);
    s2 = with_index(sa, la, ip, il, &ll);
    CHECK(read_all(s2, ll, msg, sizeof msg) < 0 && random_access(s2, ll, msg, sizeof msg) < 0,
          "an index with bytes after its last entry is refused: %s", msg);
    free(ip), free(s2);
    /* an offset past the end record */
    char lie[4096];
    memcpy(lie, ent, ent_len);
    wr64(lie, UINT64_C(1) << 50);
    ip = index_payload(2, ent_len, lie, ent_len, &il);
    s2 = with_index(sa, la, ip, il, &ll);
    CHECK(read_all(s2, ll, msg, sizeof msg) < 0 && random_access(s2, ll, msg, sizeof msg) < 0 &&
              !strcmp(msg, "mem: corrupt index"),
          "an entry at byte 2^50 is refused (verify said byte-identical): %s", msg);
    free(ip), free(s2);

    /* a payload length that lies, header re-sealed: no allocation of that size */
    char *pl = malloc(la);
    memcpy(pl, sa, la);
    wr64(pl + 16 + 56, UINT64_C(1) << 39);
    pl[16 + 4] = WP_REC_SYMBOLS;   /* a tensor's length is checked against its shape first */
    uint64_t hl0 = 72 + rd32(pl + 16 + 12) + rd32(pl + 16 + 48) + 8;
    wr64(pl + 16 + hl0 - 8, XXH64(pl + 16, hl0 - 8, 0));
    CHECK(read_all(pl, la, msg, sizeof msg) < 0 && strstr(msg, "mem: truncated stream: payload ends at byte"),
          "from memory (no file size), a 2^39-byte payload claim reads what is there: %s", msg);
    CHECK(random_access(pl, la, msg, sizeof msg) < 0 &&
              strstr(msg, "truncated stream: record 'a1' at byte 16 claims 549755813888 payload bytes, the file has"),
          "from a file, it is checked against the file's size first: %s", msg);
    free(pl);
    free(sa), free(sb);

    /* gguf records: no payload, one a stream */
    {
        char *buf = NULL, err[256];
        size_t n;
        FILE *f;
        wp_writer *w = mem_writer(&buf, &n, &f);
        wp_record g;
        wp_record_init(&g);
        g.kind = WP_REC_GGUF;
        wp_record_set_name(&g, "m.gguf");
        wp_writer_put(w, &g);
        wp_writer_put(w, &g);
        wp_writer_close(w, err, sizeof err);
        fclose(f);
        CHECK(read_all(buf, n, msg, sizeof msg) < 0 && !strcmp(msg, "mem: corrupt stream: a second gguf record at byte 104"),
              "a second gguf record is refused (ggufpack took it): %s", msg);
        free(buf);
        wp_record_free(&g);
    }
    /* wpack-stream(5): reserved is 0 and attributes are key=value lines; a resealed header
     * with reserved 1, an uppercase key, a line without '=' or without its newline was read
     * as it came (a breaker's find) */
    {
        const char *bad[] = {NULL, "Ab=1\nc=2\n", "ab_1\nc=2\n", "ab=1\nc=23", "=ab1\nc=2\n", "ab=1\nc=2\n"};
        const char *why[] = {"reserved field not 0", "attributes are not key=value lines",
                             "attributes are not key=value lines", "attributes are not key=value lines",
                             "attributes are not key=value lines", ""};
        int right = 0;
        for (int c = 0; c < 6; c++) {
            size_t n;
            char *buf = attr_record(&n);
            const uint32_t nl = rd32(buf + 16 + 12), al = rd32(buf + 16 + 48);
            const size_t hl = 72 + nl + al + 8;
            if (bad[c])
                memcpy(buf + 16 + 72 + nl, bad[c], al);   /* "ab=1\nc=2\n": 9 bytes */
            else
                wr32(buf + 16 + 52, 1);
            wr64(buf + 16 + hl - 8, XXH64(buf + 16, hl - 8, 0));
            const int k = read_all(buf, n, msg, sizeof msg);
            right += al == 9 && (why[c][0] ? k < 0 && strstr(msg, why[c]) != NULL : k == 0);
            if (!(al == 9 && (why[c][0] ? k < 0 && strstr(msg, why[c]) != NULL : k == 0)))
                fprintf(stderr, "# case %d: %d %s\n", c, k, msg);
            free(buf);
        }
        CHECK(right == 6, "reserved not 0, and attributes that are not key=value lines, are refused; "
                          "the writer's own lines resealed are read (%d of 6)", right);
    }
    {
        /* wp_record_map_at (wprun's load): the payload left in the mapping, checked as a copy is */
        const char *names[] = {"a", "b"};
        const int fill[] = {3, 5};
        size_t n;
        char *buf = records(names, fill, 2, 1000, &n);
        FILE *f = tmpfile();
        fwrite(buf, 1, n, f);
        fflush(f);
        const uint8_t *map = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fileno(f), 0);
        wp_index ix;
        wp_record r, c;
        wp_record_init(&r);
        wp_record_init(&c);
        int good = map != MAP_FAILED && wp_index_read(f, "mem", &ix, msg, sizeof msg) == 0 && ix.count == 2;
        for (uint64_t i = 0; good && i < 2; i++) {
            good &= wp_record_map_at(f, map, n, "mem", ix.e[i].offset, &r, msg, sizeof msg) == 0 &&
                    wp_record_read_at(f, "mem", ix.e[i].offset, &c, msg, sizeof msg) == 0;
            good &= r.borrowed && r.payload_cap == 0 && r.payload >= map && r.payload + 1000 <= map + n &&
                    r.payload_len == 1000 && !memcmp(r.payload, c.payload, 1000) && r.payload[0] == fill[i] &&
                    !strcmp(r.name, names[i]) && r.kind == c.kind && r.ne[0] == c.ne[0];
        }
        CHECK(good, "wp_record_map_at: each record as wp_record_read_at reads it, its payload in the mapping");
        /* the mapping left alone by wp_record_free and by wp_record_alloc, which gives the record
           a buffer of its own */
        uint8_t *p = good ? wp_record_alloc(&r, 16) : NULL;
        CHECK(p && !r.borrowed && r.payload_cap >= 16 && (p < map || p >= map + n),
              "wp_record_alloc on a borrowed payload allocates its own");
        wp_record_free(&r);
        if (good && wp_record_map_at(f, map, n, "mem", ix.e[1].offset, &r, msg, sizeof msg) == 0)
            wp_record_free(&r);   /* borrowed: not freed (a free() of the mapping would abort) */
        /* a mapping shorter than the payload (the file cut after it was mapped): said as a cut
           file is, nothing read past it; a changed byte under the checksum: said */
        const int cut = good && wp_record_map_at(f, map, ix.e[1].offset + 200, "mem", ix.e[1].offset, &r, msg,
                                                 sizeof msg) < 0;
        CHECK(cut && strstr(msg, "mem: truncated stream: payload ends at byte") == msg, "a short mapping: %s", msg);
        char *bad = malloc(n);
        const uint64_t pl = ix.e[1].offset - 1000;   /* a's payload ends where b starts (1000 is 8-aligned) */
        memcpy(bad, buf, n);
        bad[pl + 17] ^= 1;
        const int sum = good && wp_record_map_at(f, (const uint8_t *)bad, n, "mem", ix.e[0].offset, &r, msg,
                                                 sizeof msg) < 0;
        CHECK(sum && !strcmp(msg, "mem: record 'a': payload checksum mismatch (corrupt data)"),
              "a changed payload byte: %s", msg);
        wp_record_free(&r);
        wp_record_free(&c);
        free(bad);
        if (good)
            wp_index_free(&ix);
        if (map != MAP_FAILED)
            munmap((void *)map, n);
        fclose(f);
        free(buf);
    }
    /* the limits and checks of names, shapes, attributes and alignment at their edges
       (each untested: a mutation test's find) */
    {
        char err[256], *buf = NULL, *name = malloc(4098);
        size_t n = 0;
        memset(name, 'n', 4097);
        name[4096] = 0;   /* 4096 bytes: WP_MAX_NAME, taken by writer and reader */
        FILE *f = open_memstream(&buf, &n);
        wp_writer *w = wp_writer_open(f, "mem", 4096, err, sizeof err);
        wp_record r;
        wp_record_init(&r);
        r.kind = WP_REC_KV, r.type = WP_GGUF_U8;
        wp_record_alloc(&r, 1)[0] = 9;
        wp_record_set_name(&r, name);
        r.ne[0] = 3;   /* past n_dims (0): written as 1 */
        const int put4096 = w ? wp_writer_put(w, &r) : -2;
        if (w)
            wp_writer_close(w, err, sizeof err);
        fclose(f);
        char *buf2 = NULL;   /* a writer for the refusals (each leaves an index entry: discarded) */
        size_t n2 = 0;
        FILE *f2 = open_memstream(&buf2, &n2);
        w = wp_writer_open(f2, "mem", 8, err, sizeof err);
        name[4096] = 'n', name[4097] = 0;
        free(r.name);
        r.name = strdup(name);   /* 4097 bytes, past wp_record_set_name */
        const int put4097 = w ? wp_writer_put(w, &r) : -2;
        /* (its message, the whole name in it, is cut at the writer's 768 bytes) */
        CHECK(put4097 == -1 && w && !strncmp(wp_writer_error(w), "mem: record 'nnnnnnnn", 21) &&
                  strlen(wp_writer_error(w)) == 767,
              "the writer refuses a name of 4097 bytes: %.24s", w ? wp_writer_error(w) : "");
        wp_record_set_name(&r, "k");
        r.n_dims = -1;
        const int neg = w ? wp_writer_put(w, &r) : -2;
        CHECK(neg == -1 && w && !strcmp(wp_writer_error(w), "mem: record 'k': bad name, attributes or shape"),
              "the writer refuses n_dims -1: %s", w ? wp_writer_error(w) : "");
        if (w)
            wp_writer_close(w, NULL, 0);
        fclose(f2);
        free(buf2);
        int got = 0, k = -1;
        FILE *rf = fmemopen(buf, n, "rb");
        wp_reader *rd = wp_reader_open(rf, "mem", err, sizeof err);
        wp_record c;
        wp_record_init(&c);
        while (rd && (k = wp_reader_next(rd, &c)) == 1)
            got += strlen(c.name) == 4096 && c.ne[0] == 1 && c.payload_len == 1 && c.payload[0] == 9;
        CHECK(put4096 == 0 && rd && wp_reader_align(rd) == 4096 && k == 0 && got == 1,
              "a name of 4096 bytes in a stream of alignment 4096 is written and read back (%d, %d)", put4096, got);
        if (rd)
            wp_reader_close(rd);
        fclose(rf);
        free(buf);
        f2 = open_memstream(&buf, &n);
        CHECK(!wp_writer_open(f2, "mem", 8192, err, sizeof err) && !strcmp(err, "mem: bad alignment"),
              "the writer refuses alignment 8192: %s", err);
        fclose(f2);
        free(buf);
        wp_record_free(&c);
        /* attributes: a value with a newline; a line of 2^20 bytes in all (MAX_ATTRS) taken */
        wp_record_free(&r);
        CHECK(wp_attr_set(&r, "k", "a\nb") == -1 && r.attrs_lost == 1 && !wp_attr_find(&r, "k", NULL),
              "an attribute value with a newline is refused and marks the record");
        wp_record_free(&r);
        const size_t vl = (1u << 20) - 5;   /* "pad=" + value + "\n": 2^20 bytes */
        char *v = malloc(vl + 1);
        memset(v, 'x', vl);
        v[vl] = 0;
        CHECK(wp_attr_set(&r, "pad", v) == 0 && !r.attrs_lost && strlen(r.attrs) == (1u << 20),
              "attributes of exactly 2^20 bytes are taken");
        free(v);
        wp_record_free(&r);
        /* counts: 32 digits are too many for wp_attr_int (31 are read); " 5", "+5", "5x" are none;
           a negative offset is no count */
        int64_t x = 0;
        wp_attr_set(&r, "a", "0000000000000000000000000000005");    /* 31 */
        wp_attr_set(&r, "b", "00000000000000000000000000000005");   /* 32 */
        wp_attr_set(&r, "c", "+5");
        wp_attr_set(&r, "d", "5x");
        CHECK(wp_attr_int(&r, "a", &x) == 1 && x == 5 && wp_attr_int(&r, "b", &x) == -1 &&
                  wp_attr_int(&r, "c", &x) == -1 && wp_attr_int(&r, "d", &x) == -1,
              "wp_attr_int: 31 digits read, 32 digits, +5 and 5x refused");
        char sb[4];
        wp_attr_set(&r, "s", "abcd");   /* as long as the buffer: cut to 3 and its NUL */
        CHECK(wp_attr_str(&r, "s", sb, sizeof sb) == 1 && !strcmp(sb, "abc"), "wp_attr_str cuts to its buffer: %s", sb);
        wp_attr_set(&r, "e", "");
        wp_attr_set(&r, "g", "1.5x");
        wp_attr_set(&r, "h", "1.5");
        CHECK(wp_attr_f64(&r, "e", 2.5) == 2.5 && wp_attr_f64(&r, "g", 2.5) == 2.5 && wp_attr_f64(&r, "h", 2.5) == 1.5,
              "wp_attr_f64: an empty value and 1.5x give the default, 1.5 is read");
        wp_record_free(&r);
        r.kind = WP_REC_TENSOR;
        wp_attr_set(&r, "offset", "-64");
        char pb[128];
        const char *pr = wp_attr_counts_problem(&r, pb, sizeof pb);
        CHECK(pr && !strcmp(pr, "attribute offset=-64 is not a count"), "offset=-64 is no count: %s", pr ? pr : "(none)");
        wp_record_free(&r);
        free(name);
    }
    /* read_header's checks on resealed headers: a NUL in the name, a dimension past n_dims
       that is not 1, 2^62 elements exactly (taken; a mutation test's find) */
    {
        const int64_t ne2[4] = {2, 2, 1, 1};
        size_t n;
        char *buf = one_record(WP_REC_TENSOR, ne2, 2, 16, &n);
        const uint32_t nl = rd32(buf + 16 + 12), al = rd32(buf + 16 + 48);
        const size_t hl = 72 + nl + al + 8;
        buf[16 + 72] = 0;   /* the name "t" as "\0" */
        wr64(buf + 16 + hl - 8, XXH64(buf + 16, hl - 8, 0));
        CHECK(read_all(buf, n, msg, sizeof msg) < 0 && !strcmp(msg, "mem: corrupt record header at byte 16 (NUL in name)"),
              "a NUL in a record's name: %s", msg);
        buf[16 + 72] = 't';
        wr64(buf + 16 + 32, 5);   /* ne[2] of a 2-dimensional tensor */
        wr64(buf + 16 + hl - 8, XXH64(buf + 16, hl - 8, 0));
        CHECK(read_all(buf, n, msg, sizeof msg) < 0 && !strcmp(msg, "mem: record 't': bad shape"),
              "a dimension past n_dims that is not 1: %s", msg);
        free(buf);
        const int64_t e62[4] = {1, INT64_C(1) << 40, INT64_C(1) << 22, 1};   /* 2^62 elements */
        buf = one_record(WP_REC_TENSOR, e62, 3, 4, &n);
        wr32(buf + 16 + 8, 24);   /* I8: 2^62 bytes */
        wr64(buf + 16 + hl - 8, XXH64(buf + 16, hl - 8, 0));
        CHECK(read_all(buf, n, msg, sizeof msg) < 0 && strstr(msg, "mem: record 't': 4 payload bytes, but ") == msg &&
                  strstr(msg, " needs 4611686018427387904"),
              "2^62 elements are a shape (its payload then checked): %s", msg);
        free(buf);
    }
    /* an attribute that cannot be set marks its record, which the writer refuses (a reviewer
     * found over 30 callers that drop wp_attr_set's failure: wp_z_wrap's z_of among them) */
    {
        char *buf = NULL, err[256];
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);
        wp_writer *w = wp_writer_open(f, "mem", 8, err, sizeof err);
        wp_record r, c;
        wp_record_init(&r), wp_record_init(&c);
        r.kind = WP_REC_KV, r.type = WP_GGUF_U8;
        wp_record_set_name(&r, "k");
        wp_record_alloc(&r, 1)[0] = 7;
        const size_t pad = (1u << 20) - 6;   /* "pad=" + value + newline: 2^20 - 1 bytes, one short */
        char *v = malloc(pad + 1);
        memset(v, 'x', pad);
        v[pad] = 0;
        const int set = wp_attr_set(&r, "pad", v), more = wp_attr_set_i64(&r, "n", 1);
        wp_record_copy(&c, &r);
        const int put = wp_writer_put(w, &r), putc = wp_writer_put(w, &c);
        snprintf(err, sizeof err, "%s", wp_writer_error(w));
        wp_writer_close(w, NULL, 0);
        CHECK(set == 0 && more == -1 && r.attrs_lost && c.attrs_lost && put == -1 && putc == -1 &&
                  !strcmp(err, "mem: record 'k': an attribute could not be set (out of memory, or its attributes "
                               "past 1 MiB)"),
              "a record whose attribute could not be set is refused by the writer, and its copy: %s", err);
        wp_gguf_out *o = wp_gguf_out_new(err, sizeof err);
        const int gput = wp_gguf_out_add(o, &r);
        CHECK(gput == -1 && !strcmp(wp_gguf_out_error(o), "record 'k': " WP_ATTRS_LOST),
              "and by the GGUF writer: %s", wp_gguf_out_error(o));
        wp_gguf_out_free(o);
        wp_record_free(&r);
        CHECK(!r.attrs_lost, "wp_record_free clears the mark");
        /* and a reader, whose record replaces the attributes whole */
        char *one = NULL;
        size_t one_len = 0;
        FILE *of = open_memstream(&one, &one_len);
        wp_writer *ow = wp_writer_open(of, "mem", 8, err, sizeof err);
        wp_record k;
        wp_record_init(&k);
        k.kind = WP_REC_KV, k.type = WP_GGUF_U8;
        wp_record_set_name(&k, "k");
        wp_record_alloc(&k, 1)[0] = 1;
        wp_writer_put(ow, &k);
        wp_writer_close(ow, err, sizeof err);
        fclose(of);
        FILE *rf = fmemopen(one, one_len, "rb");
        wp_reader *rd = wp_reader_open(rf, "mem", err, sizeof err);
        const int got = rd ? wp_reader_next(rd, &c) : -1;
        CHECK(got == 1 && !c.attrs_lost && !strcmp(c.name, "k"), "a reader's record into a marked one clears the mark");
        if (rd)
            wp_reader_close(rd);
        fclose(rf);
        free(one);
        wp_record_free(&k);
        wp_record_free(&c);
        fclose(f);
        free(buf);
        free(v);
    }
    {   /* wp_record_move: the buffers change hands, the source is left empty */
        wp_record a, b;
        wp_record_init(&a);
        wp_record_init(&b);
        wp_record_set_name(&a, "blk.0.attn_q.weight");
        memcpy(wp_record_alloc(&a, 4), "abcd", 4);
        uint8_t *p = a.payload;
        wp_record_move(&b, &a);
        CHECK(b.payload == p && b.payload_len == 4 && !strcmp(b.name, "blk.0.attn_q.weight") && a.payload == NULL &&
                  a.payload_len == 0 && a.name == NULL,
              "wp_record_move: the payload and name move, the source is empty");
        wp_record_free(&a);
        wp_record_free(&b);
        CHECK(wp_ggml_is_float(WP_F32) && wp_ggml_is_float(WP_F16) && wp_ggml_is_float(WP_BF16) &&
                  !wp_ggml_is_float(WP_Q8_0) && !wp_ggml_is_float(WP_F64) && !wp_ggml_is_float(999),
              "wp_ggml_is_float: F32, F16, BF16 only");
    }
    return tap_done();
}
