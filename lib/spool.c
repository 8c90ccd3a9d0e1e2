/* spool.c - unnamed temporary files in $TMPDIR (see spool.h). */
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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
    /* Unnamed from the start (O_TMPFILE): a file named by mkstemp until its unlink was left
       behind by a signal between the two, the handler not knowing its name (wpack-spool-*
       files in /tmp: a breaker's find). Where the file system has no O_TMPFILE, mkstemp and
       unlink with the signals that end a program held back between them. */
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        sigset_t stop, was;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGHUP);
        sigaddset(&stop, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &stop, &was);
        fd = mkstemp(path);
        const int e = errno;
        if (fd >= 0)
            unlink(path);
        pthread_sigmask(SIG_SETMASK, &was, NULL);
        errno = e;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a temporary file in %s%s: %s", dir, why, strerror(errno));
        return NULL;
    }
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
