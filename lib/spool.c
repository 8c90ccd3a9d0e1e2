/* spool.c - unnamed temporary files in $TMPDIR (see spool.h). */
#include "spool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

/* The spools' folder: TMPDIR when set and not empty (*why " (TMPDIR)"), else /tmp (*why ""). */
static const char *spool_dir(const char **why)
{
    const char *env = getenv("TMPDIR");
    *why = env && *env ? " (TMPDIR)" : "";
    return env && *env ? env : "/tmp";
}

const char *wp_spool_where(void)
{
    static char where[4096 + 16];
    const char *why, *dir = spool_dir(&why);
    snprintf(where, sizeof where, "%s%s", dir, why);
    return where;
}

FILE *wp_spool(char *err, size_t errlen)
{
    const char *why, *dir = spool_dir(&why);
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

int wp_spool_in_memory(FILE *f)
{
    struct statfs fs;
    /* TMPFS_MAGIC and RAMFS_MAGIC of <linux/magic.h> */
    return f && fstatfs(fileno(f), &fs) == 0 && (fs.f_type == 0x01021994 || fs.f_type == (__typeof__(fs.f_type))0x858458f6);
}
