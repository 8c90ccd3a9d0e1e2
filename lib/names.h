/*
 * names.h - names (tensor names, GGUF keys) to their index in the caller's
 * list: duplicate checks and lookups in time linear in their number. Each
 * reader and writer compared a name with every one before it (ggufpack took
 * 25 s for 100,000 tensors, ggufcat 47 s for 200,000 keys: a breaker's find).
 *
 * Open addressing on XXH64 of the name, at most half full; names are copied.
 */
#ifndef WPACK_NAMES_H
#define WPACK_NAMES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wp_names wp_names;

/* An empty map, or NULL when out of memory. */
wp_names *wp_names_new(void);
/* Remember name (a C string, copied) as index i (0 or more). Returns -1 when
 * name is new; the index it was put with when it is there already (the map
 * unchanged); -2 when out of memory. */
int64_t wp_names_put(wp_names *m, const char *name, int64_t i);
/* The index name was put with, or -1 when it was not. */
int64_t wp_names_get(const wp_names *m, const char *name);
/* Free m and its copies of the names; NULL is a no-op. */
void wp_names_free(wp_names *m);

#ifdef __cplusplus
}
#endif
#endif
