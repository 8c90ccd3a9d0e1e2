/* spool.c - unnamed temporary files in $TMPDIR (see spool.h). */
#include "spool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *wp_spool_where(void)
{
    static char where[4096 + 16];
    const char *env = getenv("TMPDIR");
    snprintf(where, sizeof where, "%s%s", env && *env ? env : "/tmp", env && *env ? " (TMPDIR)" : "");
    return where;
}

FILE *wp_spool(char *err, size_t errlen)
{
    const char *env = getenv("TMPDIR"), *dir = env && *env ? env : "/tmp", *why = env && *env ? " (TMPDIR)" : "";
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/wpack-spool-XXXXXX", dir);
    if (n < 0 || (size_t)n >= sizeof path) {
        snprintf(err, errlen, "cannot create a temporary file in %s%s: name too long", dir, why);
        return NULL;
    }
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a temporary file in %s%s: %s", dir, why, strerror(errno));
        return NULL;
    }
    unlink(path);
    FILE *f = fdopen(fd, "w+b");
    if (!f) {
        snprintf(err, errlen, "cannot create a temporary file in %s%s: %s", dir, why, strerror(errno));
        close(fd);
    }
    return f;
}
