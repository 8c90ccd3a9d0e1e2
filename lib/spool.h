/*
 * spool.h - unnamed temporary files (spools) for data a program must read
 * twice or hold aside: a piped bundle read back through its index, a GGUF's
 * tensor data gathered before its header is written, a zstd frame
 * decompressed.
 *
 * They go in $TMPDIR (when set and not empty, as mkstemp(3) users expect;
 * glibc's tmpfile(3) ignores it), else /tmp, and are never named (open(2)'s
 * O_TMPFILE; on a file system without it, mkstemp and unlink with INT, TERM,
 * HUP and PIPE held back between them), so nothing is left behind whatever
 * ends the program.
 */
#ifndef WPACK_SPOOL_H
#define WPACK_SPOOL_H
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A new empty temporary file open for reading and writing ("w+b"), already
 * unlinked. Returns NULL with a one-line message in err naming the
 * directory ("cannot create a temporary file in DIR (TMPDIR): reason"). */
FILE *wp_spool(char *err, size_t errlen);
/* Where wp_spool makes its files, for messages: "DIR (TMPDIR)" when TMPDIR is set and not
 * empty, else "/tmp". A static buffer. */
const char *wp_spool_where(void);
/* Whether the spool f (wp_spool's) is held in memory: its file system a tmpfs or ramfs
 * (fstatfs(2)), as /tmp is on some distributions, so that a model spooled there takes RAM, not
 * disk. Returns 1 or 0 (0 when it cannot tell). */
int wp_spool_in_memory(FILE *f);
#ifdef __cplusplus
}
#endif
#endif
