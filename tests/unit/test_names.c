/* test_names.c - lib/names.c: every name put is found with its index, a name
 * put again keeps its first index (a duplicate), absent names are -1, through
 * many doublings of the table; names that share prefixes and empty names. */
#include "names.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    wp_names *m = wp_names_new();
    CHECK(m != NULL, "a new map");
    char name[64];
    int new_ok = 1, again_ok = 1, get_ok = 1;
    const int n = 100000;   /* 64 slots at first: 12 doublings */
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "blk.%d.ffn_up.weight", i);
        new_ok &= wp_names_put(m, name, i) == -1;
    }
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "blk.%d.ffn_up.weight", i);
        again_ok &= wp_names_put(m, name, i + n) == i;   /* there already: its first index */
        get_ok &= wp_names_get(m, name) == i;
    }
    CHECK(new_ok, "%d new names: each put says new (-1)", n);
    CHECK(again_ok, "each put again says the index it was put with, and keeps it");
    CHECK(get_ok, "each is found with its index");
    CHECK(wp_names_get(m, "blk.100000.ffn_up.weight") == -1 && wp_names_get(m, "blk.1.ffn_up") == -1 &&
              wp_names_get(m, "") == -1,
          "absent names, a prefix of one, and the empty name are not found");
    CHECK(wp_names_put(m, "", 7) == -1 && wp_names_get(m, "") == 7 && wp_names_put(m, "", 8) == 7,
          "the empty name is a name");
    wp_names_free(m);
    wp_names_free(NULL);
    return tap_done();
}
