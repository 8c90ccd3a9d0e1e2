/* spool.c - unnamed temporary files in $TMPDIR (see spool.h). */
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    /* never on descriptor 0, 1 or 2: with stdin closed (prog <&-), the spool took
       descriptor 0 and was read as the input ("stdin: empty input", where every
       other program says "Bad file descriptor": a breaker's find) */
    if (fd <= 2) {
        const int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        const int e = errno;
        close(fd);
        if (hi < 0) {
            snprintf(err, errlen, "cannot create a temporary file in %s%s: %s", dir, why, strerror(e));
            return NULL;
        }
        fd = hi;
    }
    FILE *f = fdopen(fd, "w+b");
    if (!f) {
        snprintf(err, errlen, "cannot create a temporary file in %s%s: %s", dir, why, strerror(errno));
        close(fd);
    }
    return f;
}
