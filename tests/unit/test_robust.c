/* test_robust.c - malformed input found in review: each is refused with a
 * message, never a crash or a wrong round trip. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "gguf_file.h"
#include "rowmap.h"
#include "spool.h"
#include "stream.h"
#include "tap.h"

static void put64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
static void put32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }

/* A GGUF with one F32 tensor of 8 weights called `name`, then `extra`
 * bytes of value `fill` after its data. */
static void write_gguf(const char *path, const char *name, int extra, int fill)
{
    FILE *f = fopen(path, "wb");
    fwrite("GGUF", 1, 4, f);
    put32(f, 3);
    put64(f, 1);            /* tensors */
    put64(f, 0);            /* kv */
    put64(f, strlen(name));
    fwrite(name, 1, strlen(name), f);
    put32(f, 1);
    put64(f, 8);
    put32(f, 0);            /* F32 */
    put64(f, 0);            /* offset */
    long pos = ftell(f);
    while (pos++ % 32)
        fputc(0, f);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    fwrite(x, 4, 8, f);
    for (int i = 0; i < extra; i++)
        fputc(fill, f);
    fclose(f);
}

static int open_all(const char *path, char *err, size_t n)
{
    wp_gguf_in *g = wp_gguf_open(path, err, n);
    if (!g)
        return -1;
    wp_record r;
    wp_record_init(&r);
    int k;
    while ((k = wp_gguf_next(g, &r)) > 0)
        ;
    if (k < 0)
        snprintf(err, n, "%s", wp_gguf_error(g));
    wp_record_free(&r);
    wp_gguf_close(g);
    return k;
}

/* Where the spool f lives, as /proc/self/fd says ("... (deleted)" once
 * unlinked), into buf. */
static const char *spool_where(FILE *f, char *buf, size_t n)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fileno(f));
    ssize_t k = readlink(link, buf, n - 1);
    buf[k > 0 ? (size_t)k : 0] = 0;
    return buf;
}

/* Whether the file system of dir makes unnamed files (open(2)'s O_TMPFILE). */
static int tmpfile_supported(const char *dir)
{
    const int fd = open(dir, O_TMPFILE | O_RDWR, 0600);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

int main(void)
{
    char err[1024], path[] = "/tmp/wpack-robust-XXXXXX";
    int fd = mkstemp(path);
    close(fd);

    write_gguf(path, "w", 0, 0);
    CHECK(open_all(path, err, sizeof err) == 0, "a well-formed GGUF reads");
    write_gguf(path, "w", 16, 0);
    CHECK(open_all(path, err, sizeof err) == 0, "zero padding after the last tensor is accepted");
    write_gguf(path, "w", 16, 0xaa);
    CHECK(open_all(path, err, sizeof err) < 0 && strstr(err, "nonzero byte in the padding after the last tensor"),
          "nonzero trailing padding is refused (it would not round-trip): %s", err);
    write_gguf(path, "w", 100, 0);
    CHECK(open_all(path, err, sizeof err) < 0 && strstr(err, "100 bytes after the last tensor's data"),
          "trailing data beyond the padding is refused: %s", err);
    char *longname = malloc(5001);
    memset(longname, 'n', 5000);
    longname[5000] = 0;
    write_gguf(path, longname, 0, 0);
    CHECK(open_all(path, err, sizeof err) < 0 && strstr(err, "tensor name of 5000 bytes is longer than 4096"),
          "a 5000-byte tensor name is refused as such: %s", err);
    free(longname);
    unlink(path);

    /* an untrusted offset attribute cannot make ggufpack write gigabytes */
    wp_gguf_out *o = wp_gguf_out_new(err, sizeof err);
    wp_record t;
    wp_record_init(&t);
    t.kind = WP_REC_TENSOR;
    t.type = 0;
    t.n_dims = 1;
    t.ne[0] = 8;
    wp_record_set_name(&t, "w");
    memset(wp_record_alloc(&t, 32), 0, 32);
    wp_attr_set_i64(&t, "offset", INT64_C(1) << 40);
    CHECK(wp_gguf_out_add(o, &t) < 0 && strstr(wp_gguf_out_error(o), "offset 1099511627776"),
          "an offset attribute far past the data is refused: %s", wp_gguf_out_error(o));
    /* a refused record leaves the writer as it was: the tensor sent again, corrected, is taken
       (its name stayed in the writer's map, "duplicate tensor name": a reviewer's find) */
    wp_attr_set_i64(&t, "offset", 0);
    CHECK(wp_gguf_out_add(o, &t) == 1, "the same tensor, its offset corrected, is taken after the refusal: %s",
          wp_gguf_out_error(o));
    wp_gguf_out_free(o);
    /* a gguf record of 2 tensors and a stream of 1: refused before writing (a forged record kind
       made ggufpack and unbundle write 47 of 48 tensors, exit 0) */
    o = wp_gguf_out_new(err, sizeof err);
    wp_record g;
    wp_record_init(&g);
    g.kind = WP_REC_GGUF;
    wp_record_set_name(&g, "m.gguf");
    wp_attr_set_i64(&g, "n_tensors", 2);
    wp_attr_set_i64(&t, "offset", 0);
    CHECK(wp_gguf_out_add(o, &g) == 1 && wp_gguf_out_add(o, &t) == 1 && wp_gguf_out_complete(o) < 0 &&
              !strcmp(wp_gguf_out_error(o), "the gguf record says 2 tensors, the stream holds 1 (a tensor record "
                                             "lost or added on the way)"),
          "a stream with fewer tensors than its gguf record says is refused: %s", wp_gguf_out_error(o));
    wp_attr_set_i64(&g, "n_tensors", 1);
    wp_gguf_out_free(o);
    o = wp_gguf_out_new(err, sizeof err);
    CHECK(wp_gguf_out_add(o, &g) == 1 && wp_gguf_out_add(o, &t) == 1 && wp_gguf_out_complete(o) == 0,
          "as many tensors as the gguf record says: complete");
    wp_gguf_out_free(o);
    wp_record_free(&g);
    wp_record_free(&t);

    /* a row map whose row count does not fit its payload */
    wp_record map, red, full;
    wp_record_init(&map);
    wp_record_init(&red);
    wp_record_init(&full);
    map.kind = WP_REC_ROWMAP;
    map.n_dims = 2;
    map.ne[0] = 1;
    map.ne[1] = INT64_C(1) << 62;
    wp_record_set_name(&map, "x");
    wp_record_alloc(&map, 0);
    red.kind = WP_REC_TENSOR;
    red.n_dims = 2;
    red.ne[0] = 1;
    red.ne[1] = 1;
    wp_record_set_name(&red, "x");
    memset(wp_record_alloc(&red, 4), 0, 4);
    CHECK(wp_rowmap_expand(&map, &red, &full, err, sizeof err) < 0 && strstr(err, "row map does not fit"),
          "a row map of 2^62 rows with no payload is refused: %s", err);
    map.ne[1] = 3;
    uint8_t *m = wp_record_alloc(&map, 12);
    memset(m, 0, 12);
    CHECK(wp_rowmap_expand(&map, &red, &full, err, sizeof err) == 0 && full.payload_len == 12 && full.ne[1] == 3,
          "a fitting row map expands one distinct row to three");
    m[4] = 1;
    CHECK(wp_rowmap_expand(&map, &red, &full, err, sizeof err) < 0 && strstr(err, "points past the distinct rows"),
          "a row map pointing past the distinct rows is refused: %s", err);
    wp_record_free(&map);
    wp_record_free(&red);
    wp_record_free(&full);

    /* spools (wp_spool): in $TMPDIR, never named (O_TMPFILE: nothing left behind
     * whatever ends the program; a file named by mkstemp until its unlink was left by a
     * signal between the two, a breaker's find); an empty TMPDIR is as none: /tmp */
    char sd[] = "/tmp/wpack-spooldir-XXXXXX", where[4096], want[128], buf[8] = "";
    if (!mkdtemp(sd))
        return 1;
    setenv("TMPDIR", sd, 1);
    FILE *sp = wp_spool(err, sizeof err);
    if (sp)
        spool_where(sp, where, sizeof where);
    else
        snprintf(where, sizeof where, "(none: %s)", err);
    const int was_empty = rmdir(sd) == 0;   /* (fails on a directory holding the spool's name) */
    CHECK(sp && was_empty, "a spool in TMPDIR is unlinked at once: its directory is empty (%s)", where);
    snprintf(want, sizeof want, "%s/#", sd);   /* /proc's name of an O_TMPFILE file: "DIR/#inode (deleted)" */
    const int tmpfile_ok = tmpfile_supported("/tmp");
    if (tmpfile_ok)
        CHECK(!strncmp(where, want, strlen(want)) && strstr(where, " (deleted)"),
              "the spool was made in TMPDIR, never named: %s", where);
    else
        SKIP("/tmp's file system has no O_TMPFILE: the spool is named until its unlink (%s)", where);
    const int rt = sp && fputs("spool", sp) >= 0 && fflush(sp) == 0 && fseek(sp, 0, SEEK_SET) == 0 &&
                   fread(buf, 1, 5, sp) == 5 && !memcmp(buf, "spool", 5);
    CHECK(rt, "a spool is read back as written ('%.5s')", buf);
    if (sp)
        fclose(sp);
    setenv("TMPDIR", "", 1);
    sp = wp_spool(err, sizeof err);
    if (sp) {
        spool_where(sp, where, sizeof where);
        fclose(sp);
    } else {
        snprintf(where, sizeof where, "(none: %s)", err);
    }
    CHECK(!strncmp(where, tmpfile_ok ? "/tmp/#" : "/tmp/wpack-spool-", tmpfile_ok ? 6 : 17),
          "TMPDIR empty: the spool goes in /tmp (%s)", where);
    setenv("TMPDIR", sd, 1);   /* (removed above) */
    sp = wp_spool(err, sizeof err);
    snprintf(want, sizeof want, "cannot create a temporary file in %s (TMPDIR): No such file or directory", sd);
    CHECK(!sp && !strcmp(err, want), "TMPDIR missing: no spool, one message: '%s'", err);
    if (sp)
        fclose(sp);
    /* a spool in memory (a tmpfs, as /dev/shm is) is told from one on disk (the build folder's:
       gptq warns of a large model spooled in memory, a new user's trial at 7B shapes) */
    struct statfs fs;
    if (statfs("/dev/shm", &fs) == 0 && fs.f_type == 0x01021994) {
        setenv("TMPDIR", "/dev/shm", 1);
        sp = wp_spool(err, sizeof err);
        CHECK(sp && wp_spool_in_memory(sp) == 1, "a spool in /dev/shm (a tmpfs) is in memory");
        if (sp)
            fclose(sp);
    } else {
        SKIP("/dev/shm is no tmpfs here: a spool in memory not checked");
    }
    setenv("TMPDIR", ".", 1);
    sp = wp_spool(err, sizeof err);
    if (statfs(".", &fs) == 0 && fs.f_type != 0x01021994)
        CHECK(sp && wp_spool_in_memory(sp) == 0, "a spool in the build folder (on disk) is not in memory");
    if (sp)
        fclose(sp);
    unsetenv("TMPDIR");
    return tap_done();
}
