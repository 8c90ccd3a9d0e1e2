/* names.c - a map from names to indexes (see names.h). */
#include "names.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

struct slot {
    char   *name;   /* NULL: empty */
    int64_t i;
};

struct wp_names {
    struct slot *s;
    uint64_t     cap;   /* a power of 2 */
    uint64_t     n;
};

wp_names *wp_names_new(void)
{
    wp_names *m = calloc(1, sizeof *m);
    if (m && !(m->s = calloc(m->cap = 64, sizeof *m->s))) {
        free(m);
        m = NULL;
    }
    return m;
}

/* The slot of name in s (cap slots): where it is, or the empty one where it goes. */
static struct slot *find(struct slot *s, uint64_t cap, const char *name)
{
    uint64_t k = XXH64(name, strlen(name), 0) & (cap - 1);
    while (s[k].name && strcmp(s[k].name, name))
        k = (k + 1) & (cap - 1);
    return &s[k];
}

static int grow(wp_names *m)
{
    const uint64_t cap = 2 * m->cap;
    struct slot *s = calloc(cap, sizeof *s);
    if (!s)
        return -1;
    for (uint64_t k = 0; k < m->cap; k++)
        if (m->s[k].name)
            *find(s, cap, m->s[k].name) = m->s[k];
    free(m->s);
    m->s = s;
    m->cap = cap;
    return 0;
}

int64_t wp_names_put(wp_names *m, const char *name, int64_t i)
{
    struct slot *e = find(m->s, m->cap, name);
    if (e->name)
        return e->i;
    if (2 * (m->n + 1) > m->cap) {
        if (grow(m))
            return -2;
        e = find(m->s, m->cap, name);
    }
    if (!(e->name = strdup(name)))
        return -2;
    e->i = i;
    m->n++;
    return -1;
}

int64_t wp_names_get(const wp_names *m, const char *name)
{
    const struct slot *e = find(m->s, m->cap, name);
    return e->name ? e->i : -1;
}

void wp_names_free(wp_names *m)
{
    if (!m)
        return;
    for (uint64_t k = 0; k < m->cap; k++)
        free(m->s[k].name);
    free(m->s);
    free(m);
}
