/* fuzz_safetensors - libFuzzer target for the safetensors reader
 * (lib/safetensors.c). The input is written to a memory file (memfd) and
 * opened by its /proc/self/fd path (wp_st_open takes a path); every record
 * is read. Built and run by tests/fuzz/run. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ggml_type.h"
#include "safetensors.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    if (fd < 0) {
        fd = memfd_create("fuzz_safetensors", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    wp_st_in *s = wp_st_open(path, err, sizeof err);
    if (!s)
        return 0;
    for (uint64_t i = 0; i < wp_st_n_meta(s); i++) {
        const char *v;
        size_t n;
        if (!wp_st_meta(s, i, &v, &n) || !v)
            abort();
    }
    for (uint64_t i = 0; i < wp_st_n_tensors(s); i++)
        if (!wp_st_tensor_name(s, i))
            abort();
    wp_record r;
    wp_record_init(&r);
    while (wp_st_next(s, &r) > 0) {
        /* a tensor's payload is exactly its dtype x shape */
        if (r.kind == WP_REC_TENSOR &&
            (uint64_t)wp_record_nelem(&r) * wp_ggml_type_size(r.type) != r.payload_len)
            abort();
        wp_record_free(&r);
    }
    wp_record_free(&r);
    wp_st_close(s);
    return 0;
}
