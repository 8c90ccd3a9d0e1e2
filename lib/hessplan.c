/* hessplan.c - hessian(1)'s passes under a memory bound (see hessplan.h). */
#include "hessplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wp_hessplan_layer(const char *name)
{
    if (strncmp(name, "blk.", 4) != 0)
        return -1;
    char *end;
    long v = strtol(name + 4, &end, 10);
    return (end != name + 4 && *end == '.' && v >= 0 && v < INT32_MAX) ? (int)v : -1;
}

uint64_t wp_hessplan_bytes(const wp_hessplan_weight *w, int i)
{
    if (w[i].lead != i)
        return 0;
    return (uint64_t)w[i].n_expert * (uint64_t)w[i].cols * (uint64_t)w[i].cols * sizeof(double);
}

/* One plan of the weights as their leads stand (see wp_hessplan_make):
 * returns the pass count, or -1 (err). */
static int plan_once(wp_hessplan_weight *w, int n, uint64_t *max_mem_io, int grow, char *err, size_t errlen)
{
    uint64_t max_mem = *max_mem_io;
    int pass = 0;
    uint64_t used = 0;
    for (int i = 0; i < n;) {
        int j = i + 1;
        uint64_t unit = wp_hessplan_bytes(w, i);
        for (; j < n && w[j].layer == w[i].layer && w[i].layer >= 0; j++)
            unit += wp_hessplan_bytes(w, j);
        if (used + unit <= max_mem) {
            for (int k = i; k < j; k++)
                w[k].pass = pass;
            used += unit;
            i = j;
            continue;
        }
        if (used > 0) {
            pass++;
            used = 0;
            continue;
        }
        /* a layer alone does not fit: split it weight by weight */
        for (int k = i; k < j; k++) {
            const uint64_t b = wp_hessplan_bytes(w, k);
            if (b > max_mem && grow)
                max_mem = b;
            if (b > max_mem) {
                snprintf(err, errlen, "--max-memory: %llu bytes cannot hold the Hessian of %s (%llu bytes)",
                         (unsigned long long)max_mem, w[k].name, (unsigned long long)b);
                return -1;
            }
            if (used + b > max_mem) {
                pass++;
                used = 0;
            }
            w[k].pass = pass;
            used += b;
        }
        i = j;
    }
    *max_mem_io = max_mem;
    return n ? pass + 1 : 0;
}

int wp_hessplan_make(wp_hessplan_weight *w, int n, uint64_t *max_mem, int grow, int share, char *err, size_t errlen)
{
    for (;;) {
        const int n_pass = plan_once(w, n, max_mem, grow, err, errlen);
        if (n_pass < 0)
            return -1;
        int again = 0;
        for (int k = 0; k < n; k++) {
            const int l = w[k].lead;
            if (l == k || w[k].pass == w[l].pass)
                continue;
            if (share) {
                w[k].pass = w[l].pass;
            } else {
                w[k].lead = k;
                again = 1;
            }
        }
        if (!again)
            return n_pass;
    }
}

uint64_t wp_hessplan_default_memory(uint64_t mem, uint64_t model_bytes)
{
    const uint64_t keep = model_bytes + mem / 8;
    const uint64_t spare = mem > keep ? mem - keep : 0;
    return spare < mem / 2 ? spare : mem / 2;
}
