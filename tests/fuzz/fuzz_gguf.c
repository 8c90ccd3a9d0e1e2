/* fuzz_gguf - libFuzzer target for the GGUF reader (lib/gguf_file.c).
 * The input is written to a memory file (memfd) and opened by its
 * /proc/self/fd path, since wp_gguf_open takes a path and checks sizes
 * against the file's; every record is read (wp_gguf_next) and handed to the
 * GGUF writer (wp_gguf_out_add), which writes the file again to memory.
 * Built and run by tests/fuzz/run. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gguf_file.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    if (fd < 0) {
        fd = memfd_create("fuzz_gguf", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    wp_gguf_in *g = wp_gguf_open(path, err, sizeof err);
    if (!g)
        return 0;
    wp_gguf_out *o = wp_gguf_out_new(err, sizeof err);
    wp_record r;
    int k, ok = 1;
    wp_record_init(&r);
    while ((k = wp_gguf_next(g, &r)) > 0) {
        if (o && ok && wp_gguf_out_add(o, &r) < 0)
            ok = 0;
        wp_record_free(&r);
    }
    wp_record_free(&r);
    if (k == 0 && o && ok) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (m) {
            wp_gguf_out_finish(o, m);
            fclose(m);
        }
        free(buf);
    }
    wp_gguf_out_free(o);
    wp_gguf_close(g);
    return 0;
}
