/*
 * wprun - run a bundle's coded matrices: GPU lane decode, fused decode+GEMV,
 * BF16 pipelines, autotuner, whole-model pass; --cpu runs the CPU reference
 * of all of it on any machine. See wprun(1).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "cli.h"
#include "ggml_type.h"
#include "rowmap.h"
#include "wprun.h"
#ifndef WPACK_NO_CUDA
#include "gpu.h"
#endif

static const char usage[] =
    "usage: wprun ([--bundle] FILE | --synth TYPE:ROWSxCOLS)... [--match STR]... [--cpu]\n"
    "             [--verify] [--bench] [--tune] [--batch 1,16,256]\n"
    "             [--pipeline auto|fused|exp|staged|ring|private|recon|split2|\n"
    "                         split4|split8|full|twin|transcode|palette]\n"
    "             [--tuning FILE]\n"
    "             [--runs N] [--tol X] [--graph]\n"
    "Decode a bundle's coded matrices on the GPU (or, with --cpu, with the CPU\n"
    "reference) and check, time or tune y = W x on them; matrices the bundle\n"
    "stores fixed-width or zstd'd run the twin alone.\n"
    "  --bundle FILE   a bundle (laneinterleave's output); repeatable; a bare\n"
    "                  FILE argument is the same\n"
    "  --synth SPEC    add a synthetic coded matrix: TYPE (Q4_0 ... IQ4_XS, BF16,\n"
    "                  F16, F32, or 'all') and shape, e.g. Q4_K:4096x14336;\n"
    "                  repeatable\n"
    "  --match STR     only matrices whose name contains STR (again: or that one)\n"
    "  --cpu           the CPU reference instead of the GPU (any machine)\n"
    "  --verify        decode and compare with verify's restore bit for bit; GEMV\n"
    "                  outputs against a float64 reference (relative error); the\n"
    "                  default mode\n"
    "  --bench         time every pipeline the matrix takes (medians; on the GPU\n"
    "                  device events, with the twin and cuBLAS beside them)\n"
    "  --tune          time every pipeline per matrix and batch; write --tuning\n"
    "                  (the lines of matrices not tuned now kept)\n"
    "  --batch LIST    batch sizes (default 1)\n"
    "  --pipeline P    GEMV pipeline for --verify and --graph: auto (tuning file, else\n"
    "                  staged or ring for quantized types up to batch 8, palette\n"
    "                  for palette-pair BF16 up to 16, else fused for batch <= 8\n"
    "                  and full above), fused (= exp for BF16), staged (fused,\n"
    "                  lane words staged in shared memory), full, twin; for\n"
    "                  quantized types ring (fused, each lane's next words copied\n"
    "                  ahead into shared memory) and private (fused, each lane\n"
    "                  its own copy of the decode table);\n"
    "                  for BF16 also recon (tiles rebuilt for tensor cores),\n"
    "                  split2/4/8 (full with decode on 1/2, 1/4, 1/8 of the SMs\n"
    "                  beside cuBLAS), and transcode and palette (palette pairs)\n"
    "  --tuning FILE   tuning file to write (--tune) or read (auto); default\n"
    "                  wprun.tuning\n"
    "  --runs N        timed runs per measurement (default 20 GPU, 3 CPU)\n"
    "  --tol X         relative error limit (default 1e-5 CPU, 1e-4 GPU)\n"
    "  --graph         also time a whole-model pass captured in a CUDA graph\n"
    "Environment: WPRUN_PALETTE_AHEAD=1|2, steps the GPU palette GEMV loads ahead\n"
    "at batch 1 and 2 (default 2 at batch 1, 1 at batch 2).\n"
    "Exit status: 0 ok, 1 a check failed or an error, 3 no CUDA device (without\n"
    "--cpu), 64 usage.\n";

/* Pipelines, numbered as gpu.h's WR_PIPE_*. */
enum {
    P_AUTO = -1, P_FUSED = 0, P_FULL = 1, P_TWIN = 2, P_TRANSCODE = 3, P_PALETTE = 4, P_STAGED = 5, P_RECON = 6,
    P_SPLIT2 = 7, P_SPLIT4 = 8, P_SPLIT8 = 9, P_RING = 10, P_PRIVATE = 11, P_COUNT = 12
};
static const char *pipe_name[] = {"fused", "full", "twin", "transcode", "palette", "staged", "recon", "split2", "split4", "split8", "ring", "private"};
_Static_assert(sizeof pipe_name / sizeof *pipe_name == P_COUNT, "a name for every pipeline");
#ifndef WPACK_NO_CUDA
_Static_assert((int)P_COUNT == (int)WR_PIPE_COUNT && (int)P_RING == (int)WR_PIPE_RING &&
                   (int)P_PRIVATE == (int)WR_PIPE_PRIVATE,
               "wprun's pipelines are gpu.h's");
#endif

static int is_split(int p) { return p == P_SPLIT2 || p == P_SPLIT4 || p == P_SPLIT8; }

static struct {
    int cpu, verify, bench, tune, graph, runs, pipe, tuning_given;
    int batch[32], nbatch;
    double tol;
    const char *tuning;
    const char *match[65];   /* --match's substrings, NULL-terminated (a name matches one of them) */
    int nmatch;
} opt = {.pipe = P_AUTO, .tuning = "wprun.tuning"};

/* `wprun --tune ... | head`: the reader of the report went away. The rest of
 * the report goes to /dev/null and the tuning goes on to write its file
 * (a new user's trial lost a whole tuning to `| head -1`). */
static volatile sig_atomic_t stdout_gone;
static void tune_sigpipe(int sig)
{
    (void)sig;
    stdout_gone = 1;
    const int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0 && fd != STDOUT_FILENO) {
        dup2(fd, STDOUT_FILENO);
        close(fd);
    }
}

/* What md's matrices that are not lane-coded but run (by the twin) are, into buf (empty when
   none): "9 fixed-width and 14 zstd'd, where coding would not make them smaller; 5 left uncoded
   by the filters". */
static void stored_kinds(const wr_model *md, char *buf, size_t n)
{
    const int ns = md->n_fixed + md->n_zstd;
    int k = 0;
    buf[0] = 0;
    if (ns) {
        if (md->n_fixed && md->n_zstd)
            k = snprintf(buf, n, "%d fixed-width and %d zstd'd", md->n_fixed, md->n_zstd);
        else
            k = snprintf(buf, n, "%d %s", ns, md->n_fixed ? "fixed-width" : "zstd'd");
        k += snprintf(buf + k, n - (size_t)k, ", where coding would not make %s smaller", ns == 1 ? "it" : "them");
    }
    if (md->n_uncoded)
        snprintf(buf + k, n - (size_t)k, "%s%d left uncoded by the filters", k ? "; " : "", md->n_uncoded);
}

/* What md's matrices that are not run are, into buf (empty when none): "1 shared, a copy of
   another tensor; 2 of a type the twin does not take". */
static void not_run_kinds(const wr_model *md, char *buf, size_t n)
{
    int k = 0;
    buf[0] = 0;
    if (md->n_shared)
        k = snprintf(buf, n, "%d shared, %s of another tensor", md->n_shared, md->n_shared == 1 ? "a copy" : "copies");
    if (md->n_other)
        k += snprintf(buf + k, n - (size_t)k, "%s%d of a type wprun has no kernel for", k ? "; " : "", md->n_other);
    if (md->n_empty)
        snprintf(buf + k, n - (size_t)k, "%s%d empty (0 rows or columns)", k ? "; " : "", md->n_empty);
}

static void die(int status, const char *fmt, const char *a)
{
    char msg[8192], line[8192];
    snprintf(msg, sizeof msg, fmt, a);
    wp_out_abort();   /* an error partway through --tune: no temporary file left (first, as wp_die) */
    /* one line whatever the names hold (a newline in a file name split it) */
    fprintf(stderr, "wprun: %s\n", wp_printable(msg, line, sizeof line));
    exit(status);
}

/* Die when anything printed to stdout was lost (a full disk, a closed
 * descriptor): the report is wprun's result. */
/* A decimal count at s (strtol's, *end past it), or 0 when s does not start
 * with a digit: strtol would take a leading blank or sign (" 5", "+5"). */
static long count_at(const char *s, char **end)
{
    *end = (char *)s;
    return isdigit((unsigned char)*s) ? strtol(s, end, 10) : 0;
}

static void stdout_close(void)
{
    if ((fflush(stdout) || ferror(stdout)) && !stdout_gone)
        die(WR_EXIT_FAIL, "stdout: write error: %s", strerror(errno ? errno : EIO));
}

/* ---- tuning file: "# wprun tuning v2 (gpu|cpu): ..." then lines
 * "name type ROWSxCOLS batch pipeline us" (written tab-separated, read
 * whitespace-separated); auto takes, per
 * matrix (name, type and shape: two bundles may hold matrices of one name)
 * and batch, the pipeline with the fewest microseconds (the last
 * measurement of a pipeline counts). */

#define TUNING_HEAD "# wprun tuning v2 ("

/* What a tuning file's first line says it is: 'c' or 'g' for this version's
 * file tuned on the cpu or the gpu (TUNING_HEAD, then "cpu)" or "gpu)"),
 * 'v' for a v1 file (what wprun wrote before: "# wprun tuning v1 (cpu): ..."
 * or "(gpu)"), 0 for no tuning file at all ("(CPU)", "(cpuish)" and "vvv"
 * were taken: a breaker's find; "v2 notes", "v1 notes", "v3 notes" and
 * "v02" were taken for another version's and overwritten: a reviewer's and
 * a re-tester's finds). */
static int tuning_head_kind(const char *line)
{
    const size_t hl = strlen(TUNING_HEAD);
    if (!strncmp(line, TUNING_HEAD, hl))
        return !strncmp(line + hl, "cpu)", 4) ? 'c' : !strncmp(line + hl, "gpu)", 4) ? 'g' : 0;
    if (!strncmp(line, "# wprun tuning v1 (cpu)", 23) || !strncmp(line, "# wprun tuning v1 (gpu)", 23))
        return 'v';
    return 0;
}

typedef struct {
    char name[256], type[16];
    long long rows, cols;
    int batch;
    double us[P_COUNT];   /* NAN: not measured */
    int used;             /* auto took its pick from it (pipe_for) */
} tune_ent;
static tune_ent *tunes;
static int ntunes;

static tune_ent *tune_find(const char *name, const char *type, long long rows, long long cols, int batch, int add)
{
    for (int i = 0; i < ntunes; i++)
        if (tunes[i].batch == batch && tunes[i].rows == rows && tunes[i].cols == cols && !strcmp(tunes[i].name, name) &&
            !strcasecmp(tunes[i].type, type))
            return &tunes[i];
    if (!add)
        return NULL;
    tune_ent *t = realloc(tunes, (size_t)(ntunes + 1) * sizeof *t);
    if (!t)
        return NULL;
    tunes = t;
    t = &tunes[ntunes++];
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->type, sizeof t->type, "%s", type);
    t->rows = rows;
    t->cols = cols;
    t->batch = batch;
    for (int p = 0; p < P_COUNT; p++)
        t->us[p] = NAN;
    t->used = 0;
    return t;
}

/* One measurement line: 1 and its fields (the key in e, the pipeline, the
 * time) when it is "MATRIX TYPE ROWSxCOLS BATCH PIPELINE MICROSECONDS"
 * (whitespace-separated, exactly six fields, a coded pipeline, a finite
 * time >= 0, batch >= 1; type and pipeline in any case, as --pipeline
 * takes them), else 0 with why it is not in why (wl bytes: the warning
 * said the form alone, for a line of that form whose time was 1e999: a
 * fresh user's find). */
static int tuning_line(char *line, tune_ent *e, int *pipe, double *us_out, char *why, size_t wl)
{
    char *f[7];
    int n = 0;
    for (char *tok = strtok(line, " \t\r\n"); tok && n < 7; tok = strtok(NULL, " \t\r\n"))
        f[n++] = tok;
    if (n != 6) {
        if (n > 6)
            snprintf(why, wl, "more than 6 fields");
        else
            snprintf(why, wl, "%d field%s, not 6", n, n == 1 ? "" : "s");
        return 0;
    }
    if (strlen(f[0]) >= sizeof e->name || strlen(f[1]) >= sizeof e->type) {
        snprintf(why, wl, "a %s longer than %zu bytes", strlen(f[0]) >= sizeof e->name ? "matrix name" : "type",
                 (strlen(f[0]) >= sizeof e->name ? sizeof e->name : sizeof e->type) - 1);
        return 0;
    }
    char *end, *c;
    errno = 0;   /* (a shape's overflow, ERANGE, was blamed on the time: a re-tester's find) */
    e->rows = strtoll(f[2], &end, 10);
    int ok = end != f[2] && *end == 'x' && e->rows >= 1 && !errno;
    if (ok) {
        c = end + 1;
        e->cols = strtoll(c, &end, 10);
        ok = end != c && !*end && e->cols >= 1 && !errno;
    }
    if (!ok) {
        snprintf(why, wl, "shape '%.40s' is not ROWSxCOLS", f[2]);
        return 0;
    }
    const long b = strtol(f[3], &end, 10);
    if (end == f[3] || *end || b < 1 || b > INT_MAX) {
        snprintf(why, wl, "batch '%.40s' is not a count from 1", f[3]);
        return 0;
    }
    /* (an underflow, 1e-320, is a time near 0: ERANGE with a finite result) */
    /* decimal only, as --tol (hex, 0x10, was read as 16: a breaker's find) */
    const double us = wp_plain_decimal(f[5]) ? strtod(f[5], &end) : -1;
    if (us < 0 || end == f[5] || *end || !isfinite(us)) {
        snprintf(why, wl, "time '%.40s' is not a finite number of microseconds, 0 or more", f[5]);
        return 0;
    }
    *pipe = -1;
    for (int q = 0; q < P_COUNT; q++)
        if (q != P_TWIN && !strcasecmp(f[4], pipe_name[q]))
            *pipe = q;
    if (*pipe < 0) {
        snprintf(why, wl, "pipeline '%.40s' is not a coded one", f[4]);
        return 0;
    }
    snprintf(e->name, sizeof e->name, "%s", f[0]);
    snprintf(e->type, sizeof e->type, "%s", f[1]);
    e->batch = (int)b;
    *us_out = us;
    return 1;
}

/* One line of a tuning file into line (NUL-terminated, the newline kept), at
 * most TUNING_LINE_MAX bytes of it: the rest of a longer line is read and
 * dropped (*long_line set), or, with stop_long, left unread (a first line
 * that never ends, as --tuning /dev/zero gives, grew getline's buffer until
 * memory ran out). -1 at the end of the file with nothing read. */
#define TUNING_LINE_MAX 4096
static long tuning_getline(char line[TUNING_LINE_MAX + 1], FILE *f, int stop_long, int *long_line)
{
    size_t n = 0;
    int c = EOF;
    *long_line = 0;
    while ((c = getc(f)) != EOF) {
        if (n < TUNING_LINE_MAX)
            line[n++] = (char)c;
        else if (!*long_line) {
            *long_line = 1;
            if (stop_long)
                break;
        }
        if (c == '\n')
            break;
    }
    line[n] = 0;
    return n == 0 && c == EOF ? -1 : (long)n;
}

/* A line of a tuning file after its first (line, n bytes read, long_line
 * as tuning_getline set it): 0 blank, 1 a comment (#, however long), 2 a
 * measurement (its fields in e, *pipe, *us), -1 neither (other fields, a
 * NUL byte in it, longer than TUNING_LINE_MAX), which warn_bad says, with
 * why (wl bytes). line is left as it was. For tuning_read and tuning_keep
 * alike. */
static int tuning_body_line(const char *line, long n, int long_line, tune_ent *e, int *pipe, double *us, char *why,
                            size_t wl)
{
    if (line[0] == '#')
        return 1;
    if (long_line || memchr(line, 0, (size_t)n)) {
        if (long_line)
            snprintf(why, wl, "longer than %d bytes", TUNING_LINE_MAX);
        else
            snprintf(why, wl, "a NUL byte in it");
        return -1;
    }
    if (line[strspn(line, " \t\r\n")] == 0)
        return 0;
    char copy[TUNING_LINE_MAX + 1];
    memcpy(copy, line, (size_t)n + 1);   /* (tuning_line cuts it into fields) */
    return tuning_line(copy, e, pipe, us, why, wl) ? 2 : -1;
}

/* Warn of a line tuning_body_line refused, and why: the first five by file:line, then
 * (warn_bad_end) one count of the rest; what: "skipped" or "dropped". */
static void warn_bad(const char *path, int ln, int *warned, const char *why, const char *what)
{
    if ((*warned)++ < 5)
        fprintf(stderr, "wprun: warning: %s:%d: not 'MATRIX TYPE ROWSxCOLS BATCH PIPELINE MICROSECONDS' with a "
                        "coded pipeline (%s); %s\n", path, ln, why, what);
}
static void warn_bad_end(const char *path, int warned, const char *what)
{
    if (warned > 5)
        fprintf(stderr, "wprun: warning: %s: %d more such lines %s\n", path, warned - 5, what);
}

/* Read a tuning file. A file named with --tuning that cannot be read, a
 * file whose first line is not TUNING_HEAD (an older version, or not a
 * tuning file: then none of it is used), and lines that are not
 * measurements get a warning (file:line; after 5 such lines, one count of
 * the rest) and are skipped; the default file may be absent. */
static void tuning_read(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[TUNING_LINE_MAX + 1];
    int ln = 0, warned = 0;
    if (!f) {
        if (opt.tuning_given)
            fprintf(stderr, "wprun: warning: cannot read the tuning file %s: %s (auto takes its defaults)\n", path,
                    strerror(errno));
        return;
    }
    int long_line;
    long n;
    while ((n = tuning_getline(line, f, ln == 0, &long_line)) >= 0) {
        ln++;
        if (ln == 1) {
            const int kind = long_line || memchr(line, 0, (size_t)n) ? 0 : tuning_head_kind(line);
            if (kind != 'c' && kind != 'g') {
                fprintf(stderr, "wprun: warning: %s: %s: none of it is used (auto takes its defaults)\n", path,
                        kind != 'v' ? "not a wprun tuning file (its first line is not '" TUNING_HEAD "cpu|gpu)...')"
                                    : "another version's tuning file (v2 keys matrices by name, type and shape; run "
                                      "--tune again)");
                break;
            }
            const size_t hl = strlen(TUNING_HEAD);
            if ((kind == 'c') != !!opt.cpu) {
                /* the current folder's file, tuned on the other kind of machine, is not used: a
                   --cpu --tune run once in a folder steered every later GPU run there (a fresh
                   user's find); one named with --tuning is, as asked */
                if (!opt.tuning_given) {
                    fprintf(stderr, "wprun: warning: %s, the default tuning file, was tuned on the %.3s, this run "
                                    "is on the %s: not used (auto takes its defaults; name it with --tuning to use "
                                    "it)\n", path, line + hl, opt.cpu ? "cpu" : "gpu");
                    break;
                }
                fprintf(stderr, "wprun: warning: %s was tuned on the %.3s, this run is on the %s: its times steer auto "
                                "anyway\n", path, line + hl, opt.cpu ? "cpu" : "gpu");
            }
            continue;
        }
        tune_ent e;
        int p;
        double us;
        char why[128];
        const int k = tuning_body_line(line, n, long_line, &e, &p, &us, why, sizeof why);
        if (k < 0)
            warn_bad(path, ln, &warned, why, "skipped");
        tune_ent *t = k == 2 ? tune_find(e.name, e.type, e.rows, e.cols, e.batch, 1) : NULL;
        if (t)
            t->us[p] = us;
    }
    if (ln == 0 && !ferror(f))
        fprintf(stderr, "wprun: warning: %s: an empty file, not a wprun tuning file (auto takes its defaults)\n",
                path);
    warn_bad_end(path, warned, "skipped");
    if (ferror(f))
        fprintf(stderr, "wprun: warning: read error on the tuning file %s: %s (auto takes its defaults where it "
                        "has no line)\n", path, strerror(errno));
    fclose(f);
}

/* --tune keeps the old file's lines of the matrices and batches it does not
 * time (a run on part of a model dropped the rest's lines: a fresh user's
 * find): each measurement line as it was, with its key, and each comment
 * line, in file order. */
typedef struct {
    tune_ent key;   /* name, type, shape and batch (us unused); name "" for a comment, always kept */
    char *text;     /* the line, newline included */
} kept_line;
static kept_line *kept;
static int nkept;

/* Before --tune writes path: read its measurement lines into kept. A path
 * that is absent, empty, not a regular file (a FIFO or device, written in
 * place), or a tuning file of another version keeps nothing; lines that are
 * not measurements are dropped with a warning (file:line, as tuning_read).
 * Dies (nothing timed, nothing written) when the file is not a tuning file
 * at all (a --tuning naming another file overwrote it), or was tuned on the
 * other kind of machine (a --cpu --tune in a folder replaced the GPU's
 * tuning): the way on is to remove it or name another file. */
static void tuning_keep(const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode) || st.st_size == 0)
        return;
    FILE *f = fopen(path, "r");
    if (!f) {
        char msg[512];
        snprintf(msg, sizeof msg, "%%s: cannot read it (%s): --tune keeps its other lines, so it reads it first",
                 strerror(errno));
        die(WR_EXIT_FAIL, msg, path);
    }
    char line[TUNING_LINE_MAX + 1];
    int ln = 0, warned = 0, long_line;
    long n;
    while ((n = tuning_getline(line, f, ln == 0, &long_line)) >= 0) {
        ln++;
        if (ln == 1) {
            /* judged by its first bytes (a file of gigabytes without a newline is not read
               through); a long first line of a tuning file read to its end */
            const int kind = memchr(line, 0, (size_t)n) ? 0 : tuning_head_kind(line);
            for (int c = 0; long_line && kind && (c = getc(f)) != EOF && c != '\n';)
                ;
            if (!kind) {
                fclose(f);
                die(WR_EXIT_FAIL, "%s: not a wprun tuning file (its first line is not '" TUNING_HEAD
                                  "cpu|gpu)...'): --tune does not overwrite it (remove it, or name another file with "
                                  "--tuning)", path);
            }
            if (kind == 'v') {   /* a v1 file: its lines are keyed otherwise */
                fprintf(stderr, "wprun: warning: %s: another version's tuning file: none of its lines kept\n", path);
                break;
            }
            if ((kind == 'c') != !!opt.cpu) {
                char msg[512];
                snprintf(msg, sizeof msg, "%%s: tuned on the %s, this run is on the %s: --tune does not overwrite "
                         "it (remove it, or name another file with --tuning)", kind == 'c' ? "cpu" : "gpu",
                         opt.cpu ? "cpu" : "gpu");
                fclose(f);
                die(WR_EXIT_FAIL, msg, path);
            }
            continue;
        }
        tune_ent e = {.name = ""};   /* a comment's: kept as it was (it was dropped unsaid: a reviewer's find) */
        int p;
        double us;
        char why[128];
        int kind = tuning_body_line(line, n, long_line, &e, &p, &us, why, sizeof why);
        if (kind == 1 && (long_line || memchr(line, 0, (size_t)n))) {
            kind = -1;   /* a comment that cannot be kept as it was */
            if (long_line)
                snprintf(why, sizeof why, "a comment longer than %d bytes", TUNING_LINE_MAX);
            else
                snprintf(why, sizeof why, "a comment with a NUL byte in it");
        }
        if (kind < 0)
            warn_bad(path, ln, &warned, why, "dropped");
        if (kind <= 0)
            continue;
        kept_line *k = realloc(kept, (size_t)(nkept + 1) * sizeof *k);
        const size_t len = strlen(line);
        char *text = malloc(len + 2);
        if (!k || !text)
            die(WR_EXIT_FAIL, "%s", "out of memory");
        kept = k;
        memcpy(text, line, len + 1);
        if (len == 0 || text[len - 1] != '\n')   /* a last line without its newline */
            memcpy(text + len, "\n", 2);
        kept[nkept].key = e;
        kept[nkept++].text = text;
    }
    warn_bad_end(path, warned, "dropped");
    const int err = ferror(f);
    fclose(f);
    if (err)
        die(WR_EXIT_FAIL, "%s: read error: --tune does not overwrite it", path);
}

/* Before --tune reads the tuning file that wp_out_open will replace (path,
 * wp_out_target's: a symbolic link's file, not the link): an exclusive
 * flock(2) on its folder, held to the end of the run, so
 * --tune runs into one file (make -j, two bundles, the default file, links to
 * one file from two folders) take turns: each keeps the other's lines (the
 * second started from the file as it was before the first wrote it, and
 * dropped its lines: a new user's trial), and none times its pipelines
 * against the other's load.  The folder, not the file: the file is replaced
 * by a rename.  A run that waits says so, once.  A FIFO or device (path
 * NULL: written in place) takes no lock; a folder that cannot be opened (no
 * read permission) or locked (a file system without flock) is said in a
 * warning, and the run goes on unlocked. */
static void tuning_lock(const char *path)
{
    char dir[PATH_MAX], shown[4 * PATH_MAX + 4];
    if (!path)
        return;
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    /* (the name escaped, as the other messages escape it: a breaker's find) */
    const char *said = strcmp(dir, ".") ? wp_printable(dir, shown, sizeof shown) : "this folder";
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        return;   /* held until the run ends (fd left open) */
    if (fd >= 0 && errno == EWOULDBLOCK) {
        fprintf(stderr, "wprun: waiting for another wprun --tune writing into %s (runs into one folder take turns)\n",
                said);
        int rc;
        while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
            ;
        if (rc == 0)
            return;
    }
    /* (a folder without read permission went unlocked unsaid: a breaker's find) */
    fprintf(stderr, "wprun: warning: cannot lock %s (%s): another --tune into it at once would drop this run's lines or "
                    "lose its own\n", said, strerror(errno));
    if (fd >= 0)
        close(fd);
}

/* After the run's own lines: the kept lines whose matrix and batch this run
 * did not time (tuning_put recorded those in tunes), and the comments;
 * returns the count of measurement lines kept.
 * With tf NULL (the file left as it was), only frees them. */
static int tuning_put_kept(FILE *tf)
{
    int n = 0;
    for (int i = 0; i < nkept; i++) {
        const tune_ent *e = &kept[i].key;
        if (tf && (!e->name[0] || !tune_find(e->name, e->type, e->rows, e->cols, e->batch, 0))) {
            fputs(kept[i].text, tf);
            n += e->name[0] != 0;   /* (the measurements counted, not the comments) */
        }
        free(kept[i].text);
    }
    free(kept);
    kept = NULL;
    nkept = 0;
    return n;
}

static const char *type_name(const wr_matrix *m);

static int n_tuned;   /* lines tuning_put wrote */
static int n_skipped;   /* GEMV checks skipped: the pipeline --pipeline named does not apply */
static int n_checked;   /* GEMV checks of lane-coded matrices run (--verify); a stored matrix's is the twin's,
                           whatever --pipeline names */

/* One measurement line of the tuning file (the form tuning_line reads),
 * the time with `digits` decimals. */
static void tuning_put(FILE *tf, const wr_matrix *m, int batch, int pipe, double us, int digits)
{
    n_tuned++;
    tune_find(m->name, type_name(m), m->rows, m->cols, batch, 1);   /* timed now: its kept lines go (tuning_put_kept) */
    fprintf(tf, "%s\t%s\t%lldx%lld\t%d\t%s\t%.*f\n", m->name, type_name(m), (long long)m->rows,
            (long long)m->cols, batch, pipe_name[pipe], digits, us);
}

/* NULL when pipeline p applies to m (as wr_gpu_has_pipe decides on the
 * GPU), else why not, for the skip line, each worded "P takes ... only"
 * (they read "BF16 only" beside "ring takes quantized types only": a
 * note's left alone): ring and private for ggml-block (quantized)
 * matrices, transcode and palette for palette-pair BF16, recon and split
 * for BF16. */
static const char *pipe_refusal(const wr_matrix *m, int p)
{
    static char buf[160];
    if (m->stored && p != P_TWIN)
        return m->stored == WR_STORED_ZSTD      ? "stored zstd'd, not lane-coded: the twin alone runs it"
               : m->stored == WR_STORED_FIXED ? "stored fixed-width, not lane-coded: the twin alone runs it"
                                              : "left uncoded by the filters: the twin alone runs it";
    const char *what = NULL, *note = "";
    if ((p == P_RING || p == P_PRIVATE) && m->kind != WR_Q)
        what = "quantized types";
    else if ((p == P_TRANSCODE || p == P_PALETTE) && !wr_palette_ok(m))   /* the note for the one it concerns */
        what = "palette-pair BF16", note = wr_palette_pair(m) ? " (whose palette entry 0 is not exponent 255)" : "";
    else if ((p == P_RECON || is_split(p)) && !(m->kind == WR_EXP && m->type == WP_BF16))
        what = "BF16";
    if (!what)
        return NULL;
    snprintf(buf, sizeof buf, "%s takes %s only%s", pipe_name[p], what, note);
    return buf;
}

static int pipe_applies(const wr_matrix *m, int p) { return !pipe_refusal(m, p); }

/* The gemv line of a check not run, the CPU's and the GPU's alike: "gemv TYPE NAME batch B P
 * skipped (WHY)". */
static void skip_line(const wr_matrix *m, int batch, int p, const char *why)
{
    printf("gemv   %-6s %-40s batch %-4d %s skipped (%s)\n", type_name(m), m->name, batch, pipe_name[p], why);
}

/* Lanes of at most this many words take staged by default (pipe_default). */
#define STAGED_MAX_DEPTH 48

/* auto's choice where the tuning file has none for m and batch: the
 * fastest on the H100 run of 2026-12-05 (README, 4096 x 14336 synthetic
 * matrices, batch 1 and 8). A quantized type at batch <= 8: staged when
 * its deepest lane holds at most STAGED_MAX_DEPTH words (Q2_K and Q3_K
 * there, 24 and 41 words: staged 6 % faster than ring at batch 1, 1-4 %
 * at batch 8), else ring (the 4-bit types, 58 words: ring 8-10 % faster
 * than staged at batch 1, 2-7 % at batch 8; the 5- to 8-bit types, 74-109
 * words: 6-34 %), the ring holding a round of tiles where staged's
 * shared memory needs 1.4-2.3. Palette-pair BF16 at batch <= 16: palette
 * (0.88x cuBLAS at batch 1, where the exponent-only fused took 4.7x).
 * Else fused up to batch 8, full above. Before: staged up to 64 words (the
 * H200 run of 2026-12-04, before the ring held one round); before that,
 * fused for every matrix at batch <= 8. A matrix stored fixed-width or
 * zstd'd: the twin, the one it takes. */
static int pipe_default(const wr_matrix *m, int batch)
{
    if (m->stored)
        return P_TWIN;
    if (m->kind == WR_Q && batch <= 8)
        return wr_lane_depth(m) <= STAGED_MAX_DEPTH ? P_STAGED : P_RING;
    if (pipe_applies(m, P_PALETTE) && batch <= 16)
        return P_PALETTE;
    return batch <= 8 ? P_FUSED : P_FULL;
}

static int pipe_for(const wr_matrix *m, int batch)
{
    if (opt.pipe != P_AUTO)
        return opt.pipe;
    tune_ent *t = tune_find(m->name, type_name(m), m->rows, m->cols, batch, 0);
    int best = -1;
    for (int p = 0; t && p < P_COUNT; p++)
        if (t->us[p] >= 0 && pipe_applies(m, p) && (best < 0 || t->us[p] < t->us[best]))
            best = p;
    if (best >= 0) {
        t->used = 1;
        return best;
    }
    return pipe_default(m, batch);
}

static const char *type_name(const wr_matrix *m)
{
    const char *n = wp_ggml_type_name(m->type);
    return n ? n : "?";
}

static double bpw(const wr_matrix *m)
{
    return 8.0 * (double)wr_coded_bytes(m) / (double)(m->rows * m->cols);
}

/* Whether any of the n reference outputs ref is finite. */
static int any_finite(const double *ref, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isfinite(ref[i]))
            return 1;
    return 0;
}

/* "relerr E" for a GEMV check (wr_relerr_abs's E of y against ref, yabs),
 * or, where no reference output is finite (every weight row Inf or NaN),
 * what was checked instead: that each output is the reference's Inf or a
 * NaN where it is one; or, where every finite one was left out (its
 * products overflow float), that. */
static const char *relerr_str(double e, const float *y, const double *ref, const double *yabs, size_t n, char *buf,
                              size_t len)
{
    int compared = 0;   /* an output wr_relerr_abs compared: a finite ref, not left out as an overflow */
    for (size_t i = 0; i < n && !compared; i++)
        compared = isfinite(ref[i]) && !wr_relerr_overflow(y[i], ref[i], yabs[i]);
    if (n == 0 || compared)
        snprintf(buf, len, "relerr %.2e", e);
    else if (any_finite(ref, n) && e == 0)   /* it said "relerr 0.00e+00" of no output (a fresh user's find) */
        snprintf(buf, len, "relerr n/a (every finite output's products overflow float: Inf/NaN, left out)");
    else
        snprintf(buf, len, "relerr n/a (no finite output: Inf/NaN %s)", e == 0 ? "as the reference's" : "differ");
    return buf;
}

/* A GEMV check's verdict on relative error e (wr_relerr's against ref, n
 * outputs; who: "" or "twin "): "ok" below --tol; else "FAIL (WHO relerr
 * E, not below --tol T)", the error with more digits than the line's
 * relerr column so the two never read alike (2.28e-07 beside a limit of
 * 2.28e-07); plain "FAIL" where no reference output is finite (Inf/NaN
 * that differ: no limit is involved). */
static const char *verdict(double e, const double *ref, size_t n, const char *who)
{
    static char buf[96];
    if (e < opt.tol)
        return "ok";
    if (n && !any_finite(ref, n))
        return "FAIL";
    snprintf(buf, sizeof buf, "FAIL (%srelerr %.4e, not below --tol %g)", who, e, opt.tol);
    return buf;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- CPU reference ---------------------------------------------------------- */

/* The pipeline the CPU runs for p on m: p itself where it applies (twin:
 * the fixed-width GEMV on the original data), else fused (a stored
 * matrix: the twin). */
static int cpu_pipe(const wr_matrix *m, int p) { return pipe_applies(m, p) ? p : m->stored ? P_TWIN : P_FUSED; }

/* CPU pipeline run (p = cpu_pipe's): fused, staged, ring, private and recon (the fused
 * sums); full and split (the matrix decoded by the table decoder, then the
 * fixed-width GEMV); twin (the fixed-width GEMV on the original data,
 * fixed); transcode (indices decoded from the lanes) or palette (the
 * indices pidx transcoded at load, or from fixed when NULL), then the
 * palette GEMV. */
static int cpu_gemv(const wr_matrix *m, const uint8_t *fixed, const uint8_t *pidx, int pipe, const float *x,
                    int batch, float *y, char *err, size_t n)
{
    if (pipe == P_TRANSCODE || pipe == P_PALETTE) {
        uint8_t *idx = pipe == P_PALETTE && pidx ? NULL : malloc((size_t)(wr_palette_stride(m) * m->rows) + 1);
        int rc = -1;
        if (!idx && !(pipe == P_PALETTE && pidx))
            snprintf(err, n, "out of memory");
        else if (pipe == P_PALETTE && pidx)
            rc = wr_cpu_gemv_palette(m, pidx, x, batch, y, err, n);
        else if (pipe == P_TRANSCODE ? wr_cpu_transcode(m, idx, err, n) == 0 : wr_palette_index(m, fixed, idx) == 0)
            rc = wr_cpu_gemv_palette(m, idx, x, batch, y, err, n);
        else if (pipe == P_PALETTE)
            snprintf(err, n, "%s: palette indices do not rebuild from the restored bytes", m->name);
        free(idx);
        return rc;
    }
    if (pipe == P_FULL || is_split(pipe)) {
        uint8_t *dec = malloc((size_t)wr_fixed_bytes(m) + 1);
        int rc = -1;
        if (!dec)
            snprintf(err, n, "out of memory");
        else if (wr_cpu_restore(m, WR_DEC_TABLE, dec, err, n) == 0)
            rc = wr_cpu_gemv_fixed(m, dec, x, batch, y);
        free(dec);
        return rc;
    }
    if (pipe == P_TWIN)
        return wr_cpu_gemv_fixed(m, fixed, x, batch, y);
    return wr_cpu_gemv_fused(m, x, batch, y, err, n);
}

/* The matrix as FAIL lines name it: "NAME", or "NAME (FILE)" when matrices of
 * several bundles are checked. */
static int many_bundles;
static const char *mlabel(const wr_matrix *m)
{
    static char buf[4400];
    if (!many_bundles || !m->src)
        return m->name;
    snprintf(buf, sizeof buf, "%s (%s)", m->name, m->src);
    return buf;
}

/* With several bundles, a line "bundle FILE" before the first line of each bundle's
 * matrices, and "synthetic matrices (--synth)" before those: the lines name a matrix alone,
 * and two bundles of one model (a Q4_K_M and a Q8_0 one, compared) hold the same names (a
 * note's left alone). Matrices come bundle by bundle (wr_model_load appends them). */
static void bundle_heading(const wr_matrix *m)
{
    static const char *last = "";
    if (!many_bundles || m->src == last)
        return;
    last = m->src;
    if (m->src)
        printf("bundle %s\n", m->src);
    else
        printf("synthetic matrices (--synth)\n");
}

/* A matrix the library cannot restore from its bundle: the bundle is
 * corrupt. The report says FAIL, and stderr says which file (the report
 * alone left stderr empty and the file unnamed). */
static void restore_failed(const wr_matrix *m, const char *err)
{
    printf("FAIL %s: restore: %s\n", mlabel(m), err);
    fflush(stdout);
    fprintf(stderr, "wprun: %s: %s\n", m->src ? m->src : "input", err);
}

static int n_long_codes;   /* matrices --cpu found with codes over WR_LUT_MAX_BITS bits */

/* "(stored fixed-width) ", "(stored zstd'd) " or "(left uncoded) " for a stored matrix's report
   lines, else "". */
static const char *stored_tag(const wr_matrix *m)
{
    return m->stored == WR_STORED_FIXED     ? "(stored fixed-width) "
           : m->stored == WR_STORED_ZSTD    ? "(stored zstd'd) "
           : m->stored == WR_STORED_UNCODED ? "(left uncoded) "
                                            : "";
}

/* A rowmap's matrix on a gemv line: "(512 rows gathered) ", its distinct rows' outputs
   gathered (wr_cpu_gather; on the GPU k_gather) and checked as the whole tensor's, else "". */
static const char *gathered_tag(const wr_matrix *m)
{
    static char buf[64];
    if (!m->rows_all)
        return "";
    snprintf(buf, sizeof buf, "(%lld rows gathered) ", (long long)m->rows_all);
    return buf;
}

/* A rowmap's matrix on a verify line: "348 of 512 rows distinct (rowmap)  ", else "". */
static const char *rows_note(const wr_matrix *m)
{
    static char buf[96];
    if (!m->rows_all)
        return "";
    snprintf(buf, sizeof buf, "%lld of %lld rows distinct (rowmap)  ", (long long)m->rows, (long long)m->rows_all);
    return buf;
}

/* The rows a matrix's GEMV output stands for: a rowmap's all (rows_all), else its rows. */
static int64_t rows_out(const wr_matrix *m) { return m->rows_all ? m->rows_all : m->rows; }

/* The float64 reference GEMV (wr_ref_gemv64) over every row m stands for, y and yabs batch x
 * rows_out(m): a rowmap's over its tensor expanded from the restored distinct rows ref (len
 * bytes) through its rowmap (wp_rowmap_expand, as unbundle expands it), else over ref. So the
 * distinct rows' GEMV, gathered (wr_cpu_gather, k_gather), is checked against the whole tensor's. 0, or -1
 * with a message in err. */
static int ref_gemv_all(const wr_matrix *m, const uint8_t *ref, size_t len, const float *x, int batch, double *y,
                        double *yabs, char *err, size_t n)
{
    if (!m->rows_all) {
        if (!wr_ref_gemv64(m, ref, x, batch, y, yabs))
            return 0;
        snprintf(err, n, "out of memory (float64 reference)");
        return -1;
    }
    wp_record red, full;
    wp_record_init(&red);
    wp_record_init(&full);
    red.kind = WP_REC_TENSOR;
    red.type = m->type;
    red.n_dims = 2;
    red.ne[0] = m->cols;
    red.ne[1] = m->rows;
    red.payload = (uint8_t *)(uintptr_t)ref;   /* borrowed: not freed */
    red.payload_len = len;
    red.borrowed = 1;
    int rc = wp_rowmap_expand(&m->rowmap, &red, &full, err, n);
    wr_matrix all = *m;   /* the same matrix over the expanded rows (wr_ref_gemv64 reads its shape and type) */
    all.rows = m->rows_all;
    if (rc == 0 && wr_ref_gemv64(&all, full.payload, x, batch, y, yabs)) {
        snprintf(err, n, "out of memory (float64 reference)");
        rc = -1;
    }
    wp_record_free(&red);
    wp_record_free(&full);
    return rc;
}

/* One matrix on the CPU: its checks (--verify), timings (--bench, --tune).
 * Returns the failures, each a line above saying FAIL or MISMATCH (0: all passed). */
static int cpu_matrix(const wr_matrix *m, FILE *tf)
{
    char err[512];
    uint8_t *ref = NULL, *mine = NULL;
    size_t len;
    int bad = 0;
    bundle_heading(m);
    if (wr_restore_bytes(m, &ref, &len, err, sizeof err)) {
        restore_failed(m, err);
        return 1;
    }
    /* the kernels' decode takes codes of up to WR_LUT_MAX_BITS bits (the GPU upload refuses longer
       ones with its own message); counted for --bench and --tune too */
    const int dev_na = m->huf.L > WR_LUT_MAX_BITS;
    n_long_codes += dev_na;
    if (opt.verify && !m->stored) {   /* a stored matrix has no lanes: its gemv lines say so */
        mine = malloc(len + 1);
        int ok_ref = mine && wr_cpu_restore(m, WR_DEC_LIMITS, mine, err, sizeof err) == 0 && memcmp(mine, ref, len) == 0;
        int ok_fast = mine && wr_cpu_restore(m, WR_DEC_TABLE, mine, err, sizeof err) == 0 && memcmp(mine, ref, len) == 0;
        int ok_dev = dev_na ||
                     (mine && wr_cpu_restore(m, WR_DEC_DEVICE, mine, err, sizeof err) == 0 && memcmp(mine, ref, len) == 0);
        printf("verify %-6s %-40s %6lldx%-6lld %6.3f b/w  %srestore(ref) %s  restore(fast) %s  restore(device) %s\n",
               type_name(m), m->name, (long long)m->rows, (long long)m->cols, bpw(m), rows_note(m), ok_ref ? "ok" : "MISMATCH",
               ok_fast ? "ok" : "MISMATCH", dev_na ? "n/a (codes over 11 bits)" : ok_dev ? "ok" : "MISMATCH");
        bad += !ok_ref || !ok_fast || !ok_dev;
        if (wr_palette_pair(m)) {   /* run-time transcode (lanes) = load-time transcode (bytes) */
            size_t il = (size_t)(wr_palette_stride(m) * m->rows) + 1;
            uint8_t *i1 = malloc(il), *i2 = malloc(il);
            int ok = i1 && i2 && wr_cpu_transcode(m, i1, err, sizeof err) == 0 && wr_palette_index(m, ref, i2) == 0 &&
                     memcmp(i1, i2, il - 1) == 0;
            printf("verify %-6s %-40s palette indices: transcode = load-time %s\n", type_name(m), m->name,
                   ok ? "ok" : "MISMATCH");
            bad += !ok;
            free(i1);
            free(i2);
        }
        free(mine);
    }
    for (int bi = 0; bi < opt.nbatch; bi++) {
        int batch = opt.batch[bi];
        /* ny: the distinct rows' outputs the pipelines write; na: every row's, gathered (a rowmap's) */
        size_t nx = (size_t)batch * (size_t)m->cols, ny = (size_t)batch * (size_t)m->rows,
               na = (size_t)batch * (size_t)rows_out(m);
        float *x = malloc(nx * sizeof *x), *yf = malloc(ny * sizeof *yf), *yt = malloc(ny * sizeof *yt);
        float *ga = m->rows_all ? malloc(2 * na * sizeof *ga) : NULL;   /* yf and yt gathered */
        double *y64 = malloc(na * sizeof *y64), *yabs = malloc(na * sizeof *yabs);
        if (!x || !yf || !yt || !y64 || !yabs || (m->rows_all && !ga)) {
            printf("FAIL %s: out of memory\n", mlabel(m));
            bad++;
        } else {
            wr_make_x(x, nx, (uint64_t)bi + 1, m->kind == WR_EXP);
            if (opt.verify && ref_gemv_all(m, ref, len, x, batch, y64, yabs, err, sizeof err)) {
                printf("FAIL %s: %s\n", mlabel(m), err);
                bad++;
            } else if (opt.verify && !m->stored && opt.pipe != P_AUTO && !pipe_applies(m, opt.pipe)) {
                /* a pipeline named that the matrix does not take: said, as the device says it (it
                   ran fused unsaid, the pipeline column alone telling: a fresh user's find) */
                skip_line(m, batch, opt.pipe, pipe_refusal(m, opt.pipe));
                n_skipped++;
            } else if (opt.verify) {
                n_checked += !m->stored;
                const int pf = cpu_pipe(m, pipe_for(m, batch));   /* one that applies, else fused */
                if (cpu_gemv(m, ref, NULL, pf, x, batch, yf, err, sizeof err)) {
                    printf("FAIL %s: %s\n", mlabel(m), err);
                    bad++;
                } else if (wr_cpu_gemv_fixed(m, ref, x, batch, yt)) {
                    printf("FAIL %s: twin: out of memory\n", mlabel(m));
                    bad++;
                } else {
                    /* bit-equal: a coded pipeline against the twin (not the twin against itself) */
                    int same = pf != P_TWIN && memcmp(yf, yt, ny * sizeof *yf) == 0;
                    const float *of = yf, *ot = yt;   /* every row's outputs */
                    if (m->rows_all) {
                        wr_cpu_gather(m, yf, batch, ga);
                        wr_cpu_gather(m, yt, batch, ga + na);
                        of = ga;
                        ot = ga + na;
                    }
                    double ef = wr_relerr_abs(of, y64, yabs, na, m->cols), et = wr_relerr_abs(ot, y64, yabs, na, m->cols);
                    int ok = ef < opt.tol && et < opt.tol;
                    char tw[160] = "", rf[128], rt[128];   /* the twin beside a coded pipeline, not twice */
                    if (pf != P_TWIN)
                        snprintf(tw, sizeof tw, "twin %s  ", relerr_str(et, ot, y64, yabs, na, rt, sizeof rt));
                    printf("gemv   %-6s %-40s batch %-4d %s %s  %s%s%s%s\n", type_name(m), m->name, batch, pipe_name[pf],
                           relerr_str(ef, of, y64, yabs, na, rf, sizeof rf), tw, same ? "(bit-equal) " : stored_tag(m),
                           gathered_tag(m), ef < opt.tol ? verdict(et, y64, na, "twin ") : verdict(ef, y64, na, ""));
                    bad += !ok;
                }
            }
            if (opt.bench || opt.tune) {
                /* every pipeline the matrix takes on the CPU: fused, full (decode, then the
                   fixed-width GEMV), and for palette-pair BF16 transcode (decode to indices, then
                   the palette GEMV) and palette (the GEMV on indices transcoded once, at load,
                   outside the timing, as on the device) */
                uint8_t *pidx = NULL;
                if (wr_palette_pair(m) && (pidx = malloc((size_t)(wr_palette_stride(m) * m->rows) + 1)) &&
                    wr_palette_index(m, ref, pidx)) {
                    free(pidx);
                    pidx = NULL;
                }
                double t[P_COUNT];
                int bestp = -1;   /* the fastest that ran; none when every one failed */
                for (int p = 0; p < P_COUNT; p++) {
                    t[p] = NAN;
                    /* (the twin of a coded matrix: --bench's baseline, not a pipeline to choose) */
                    if ((p == P_TWIN && !m->stored && !opt.bench) || p == P_STAGED || p == P_RING || p == P_PRIVATE || p == P_RECON || is_split(p) ||
                        !pipe_applies(m, p) || (p == P_PALETTE && !pidx))
                        continue;   /* staged, ring, private and recon compute fused's sums on the CPU, split full's:
                                       not timed twice */
                    double *s = malloc((size_t)opt.runs * sizeof *s);
                    int failed = !s;
                    for (int r = 0; r < opt.runs && !failed; r++) {
                        double t0 = wr_now();
                        failed = cpu_gemv(m, ref, pidx, p, x, batch, yf, err, sizeof err);
                        if (m->rows_all)   /* every row's outputs, as on the GPU (k_gather) */
                            wr_cpu_gather(m, yf, batch, ga);
                        s[r] = 1e6 * (wr_now() - t0);
                    }
                    if (failed) {
                        /* neither timed nor tuned (a pipeline that stopped early was timed, could
                           win and went into the tuning file: a reviewer's find) */
                        printf("FAIL %s: %s: %s\n", mlabel(m), pipe_name[p], s ? err : "out of memory");
                        bad++;
                        free(s);
                        continue;
                    }
                    qsort(s, (size_t)opt.runs, sizeof *s, cmp_double);
                    t[p] = s[opt.runs / 2];
                    free(s);
                    if ((p != P_TWIN || m->stored) && (bestp < 0 || t[p] < t[bestp]))
                        bestp = p;
                    if (tf && p != P_TWIN)   /* a stored matrix's one pipeline: nothing to choose */
                        tuning_put(tf, m, batch, p, t[p], 1);
                }
                if (bestp < 0)
                    ;   /* every pipeline failed: its FAIL lines said so */
                else if (opt.bench && m->stored)
                    printf("bench  %-6s %-40s batch %-4d cpu twin %10.1f us  %s(the one pipeline it takes)\n",
                           type_name(m), m->name, batch, t[P_TWIN], stored_tag(m));
                else if (opt.bench) {
                    /* "-" for a pipeline the matrix does not take (it read "nan us", as a failure would) */
                    char ts[5][16];
                    const int tp[5] = {P_FUSED, P_FULL, P_TRANSCODE, P_PALETTE, P_TWIN};
                    for (int k = 0; k < 5; k++) {
                        if (isnan(t[tp[k]]))
                            snprintf(ts[k], sizeof ts[k], "%10s   ", "-");
                        else
                            snprintf(ts[k], sizeof ts[k], "%10.1f us", t[tp[k]]);
                    }
                    /* the twin beside them, and best/twin, as the GPU's table has it (a coded
                       matrix had no baseline on the CPU: a helper's nit) */
                    char ratio[16] = "-";
                    if (!isnan(t[P_TWIN]) && t[P_TWIN] > 0)
                        snprintf(ratio, sizeof ratio, "%.2f", t[bestp] / t[P_TWIN]);
                    printf("bench  %-6s %-40s batch %-4d cpu fused %s  full %s  transcode %s  palette %s  twin %s  "
                           "best %s  best/twin %s\n", type_name(m), m->name, batch, ts[0], ts[1], ts[2], ts[3], ts[4],
                           pipe_name[bestp], ratio);
                }
                if (opt.tune && bestp >= 0)
                    printf("tune   %-40s batch %-4d -> %s%s\n", m->name, batch, pipe_name[bestp],
                           m->stored ? "  (its one pipeline: not in the tuning file)" : "");
                free(pidx);
            }
        }
        free(x);
        free(yf);
        free(yt);
        free(ga);
        free(y64);
        free(yabs);
    }
    free(ref);
    return bad;
}

/* ---- GPU ---------------------------------------------------------------------- */

#ifndef WPACK_NO_CUDA
typedef struct {
    char name[64];
    char type[8];
    const char *src;   /* its bundle (wr_matrix.src), for the table's "# FILE" lines */
    int batch;
    double t[P_COUNT];
    double wps, bound;
} bench_row;

/* Whether the device restore of d (lut: the table kernel) into mine (len
 * bytes) gives the library's bytes ref; when not, err says why: the device's
 * own error, or where the bytes first differ (it printed an earlier message,
 * or stack bytes, when the restore ran but its bytes differed). */
static int device_restore_ok(wr_gpu *g, wr_dmat *d, int lut, uint8_t *mine, const uint8_t *ref, size_t len,
                             char *err, size_t errlen)
{
    if (!mine) {
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    if (wr_gpu_restore(g, d, lut, mine, err, errlen))
        return 0;
    size_t k = 0;
    while (k < len && mine[k] == ref[k])
        k++;
    if (k == len)
        return 1;
    snprintf(err, errlen, "restored bytes differ from the library's, first at byte %zu of %zu", k, len);
    return 0;
}

/* Every matrix on the GPU, as cpu_matrix, and the graph pass (--graph).
 * Returns the failures (0: all passed). */
static int gpu_run(wr_model *md, FILE *tf)
{
    char err[512];
    int bad = 0;
    wr_gpu *g = wr_gpu_open(err, sizeof err);
    if (!g) {
        fprintf(stderr, "wprun: %s\n", err);
        return 1;
    }
    printf("device %s, HBM %.0f GB/s\n", wr_gpu_name(g), wr_gpu_hbm_gbs(g));
    wr_dmat **dm = calloc((size_t)md->n + 1, sizeof *dm);
    bench_row *rows = calloc((size_t)(md->n * opt.nbatch) + 1, sizeof *rows);
    int nrows = 0;
    if (!dm || !rows) {
        fprintf(stderr, "wprun: out of memory (%d matrices)\n", md->n);
        bad++;
    }
    for (int i = 0; i < md->n && dm && rows; i++) {
        const wr_matrix *m = &md->m[i];
        uint8_t *ref = NULL, *mine = NULL;
        size_t len;
        bundle_heading(m);
        if (wr_restore_bytes(m, &ref, &len, err, sizeof err)) {
            restore_failed(m, err);
            bad++;
            continue;
        }
        if (!(dm[i] = wr_gpu_upload(g, m, ref, err, sizeof err))) {
            printf("FAIL %s: %s\n", mlabel(m), err);
            free(ref);
            bad++;
            continue;
        }
        if (opt.verify && !m->stored) {   /* a stored matrix has no lanes to restore */
            mine = malloc(len + 1);
            int ok = device_restore_ok(g, dm[i], 0, mine, ref, len, err, sizeof err);
            if (!ok)
                printf("  (%s)\n", err);
            int ok_lut = ok;
            if (m->kind == WR_EXP && m->type == WP_BF16) {   /* the table restore kernel is BF16's */
                ok_lut = device_restore_ok(g, dm[i], 1, mine, ref, len, err, sizeof err);
                if (!ok_lut)
                    printf("  (%s)\n", err);
            }
            printf("verify %-6s %-40s %6lldx%-6lld %6.3f b/w  %sdevice restore (limits) %s (table) %s\n",
                   type_name(m), m->name, (long long)m->rows, (long long)m->cols, bpw(m), rows_note(m), ok ? "ok" : "MISMATCH",
                   ok_lut ? "ok" : "MISMATCH");
            bad += !ok || !ok_lut;
            free(mine);
        }
        for (int bi = 0; bi < opt.nbatch; bi++) {
            int batch = opt.batch[bi];
            /* na: every row's outputs, as the device gives them (a rowmap's gathered by k_gather) */
            size_t nx = (size_t)batch * (size_t)m->cols, na = (size_t)batch * (size_t)rows_out(m);
            float *x = malloc(nx * sizeof *x), *y = malloc(na * sizeof *y);
            double *y64 = malloc(na * sizeof *y64), *yabs = malloc(na * sizeof *yabs);
            if (!x || !y || !y64 || !yabs) {
                printf("FAIL %s: out of memory\n", mlabel(m));
                bad++;
                free(x);
                free(y);
                free(y64);
                free(yabs);
                continue;
            }
            wr_make_x(x, nx, (uint64_t)bi + 1, m->kind == WR_EXP);
            if (opt.verify && ref_gemv_all(m, ref, len, x, batch, y64, yabs, err, sizeof err)) {
                printf("FAIL %s: %s\n", mlabel(m), err);
                bad++;
            } else if (opt.verify) {
                const int want = m->stored ? P_TWIN : opt.pipe;   /* a stored matrix: its one pipeline */
                for (int p = 0; p < P_COUNT; p++) {
                    if (want != P_AUTO && p != want)
                        continue;
                    if (!wr_gpu_has_pipe(dm[i], p)) {
                        if (opt.pipe != P_AUTO)   /* asked for by name: say it did not run */
                            skip_line(m, batch, p,
                                      pipe_refusal(m, p) ? pipe_refusal(m, p)
                                      : p == P_TWIN      ? "no original data for the twin"
                                      : p == P_PRIVATE   ? "the device's shared memory per block is too small"
                                                         : "not on this device");
                        n_skipped += opt.pipe != P_AUTO && !m->stored;   /* (a stored one's is the twin's) */
                        continue;
                    }
                    n_checked += !m->stored;
                    if (wr_gpu_gemv(g, dm[i], p, x, batch, y, err, sizeof err)) {
                        printf("FAIL %s: %s: %s\n", mlabel(m), pipe_name[p], err);
                        bad++;
                        continue;
                    }
                    const float *o = y;   /* every row's outputs */
                    double e = wr_relerr_abs(o, y64, yabs, na, m->cols);
                    char rs[128];
                    printf("gemv   %-6s %-40s batch %-4d %-5s %s  %s%s%s\n", type_name(m), m->name, batch, pipe_name[p],
                           relerr_str(e, o, y64, yabs, na, rs, sizeof rs), stored_tag(m), gathered_tag(m),
                           verdict(e, y64, na, ""));
                    bad += !(e < opt.tol);
                }
            }
            if (opt.bench || opt.tune) {
                bench_row *br = &rows[nrows++];
                snprintf(br->name, sizeof br->name, "%.63s", m->name);   /* (memcpy read past a short name) */
                br->src = m->src;
                strncpy(br->type, type_name(m), sizeof br->type - 1);
                br->batch = batch;
                int bestp = m->stored ? P_TWIN : P_FUSED;
                for (int p = 0; p < P_COUNT; p++) {
                    br->t[p] = NAN;
                    if (!wr_gpu_has_pipe(dm[i], p))
                        continue;
                    if (wr_gpu_time(g, dm[i], p, batch, 3, opt.runs, &br->t[p], err, sizeof err)) {
                        printf("FAIL %s: time %s: %s\n", mlabel(m), pipe_name[p], err);
                        bad++;
                        br->t[p] = NAN;
                        continue;
                    }
                    if (p != P_TWIN && br->t[p] < br->t[bestp])
                        bestp = p;
                    if (tf && p != P_TWIN)
                        tuning_put(tf, m, batch, p, br->t[p], 2);
                }
                if (m->kind == WR_Q && !m->stored && opt.bench && (batch == 1 || batch == 2 || batch == 4 || batch == 8)) {
                    /* the kernels' occupancy: a last round of a few tiles can take a tile's time */
                    double wv[3];
                    const int pw[3] = {P_FUSED, P_STAGED, P_RING};
                    int sw[3];
                    for (int j = 0; j < 3; j++)
                        sw[j] = wr_gpu_sm_warps(g, dm[i], pw[j], batch, &wv[j]);
                    printf("occ    %-6s %-40s batch %-4d warps a SM (waves): fused %d (%.2f)  staged %d (%.2f)  "
                           "ring %d (%.2f)\n", type_name(m), m->name, batch, sw[0], wv[0], sw[1], wv[1], sw[2], wv[2]);
                }
                br->wps = (double)(m->rows * m->cols) / (br->t[m->stored ? P_TWIN : P_FUSED] * 1e-6);
                br->bound = wr_gpu_hbm_gbs(g) * 1e9 / ((double)wr_coded_bytes(m) / (double)(m->rows * m->cols));
                if (opt.bench && m->stored) {   /* the twin alone: a line, not a row of the coded pipelines' table */
                    printf("bench  %-6s %-40s batch %-4d twin %9.2f us  %s(the one pipeline it takes)\n", type_name(m),
                           m->name, batch, br->t[P_TWIN], stored_tag(m));
                    nrows--;
                }
                if (opt.tune)
                    printf("tune   %-40s batch %-4d -> %s%s\n", m->name, batch, pipe_name[bestp],
                           m->stored ? "  (its one pipeline: not in the tuning file)" : "");
            }
            free(x);
            free(y);
            free(y64);
            free(yabs);
        }
        free(ref);
    }
    if (opt.graph && dm) {
        /* each matrix through auto's choice at batch 1 (the tuning file's, else pipe_default's), or
           --pipeline's, where the graph takes it (wr_gpu_graph_pipe) */
        int nd = 0, nout = 0, *gp = malloc((size_t)md->n * sizeof *gp), used[P_COUNT] = {0};
        for (int i = 0; i < md->n && gp; i++)
            if (dm[i]) {
                const int p = pipe_for(&md->m[i], 1), pg = wr_gpu_graph_pipe(dm[i], p);
                if (pg < 0) {   /* a stored float matrix: cuBLAS, not captured */
                    wr_gpu_free(dm[i]);
                    nout++;
                    continue;
                }
                gp[nd] = p;
                used[pg]++;
                dm[nd++] = dm[i];
            }
        char mix[256] = "";
        for (int p = 0, o = 0; p < P_COUNT && o < (int)sizeof mix; p++)
            if (used[p])
                o += snprintf(mix + o, sizeof mix - (size_t)o, "%s%s %d", o ? ", " : "", pipe_name[p], used[p]);
        double tg, ts;
        if (!gp) {
            printf("FAIL graph pass: out of memory\n");
            bad++;
        } else if (nd == 0) {   /* (an empty graph was captured, never launched on a device: not tried) */
            if (nout)
                printf("graph  whole-model pass: nothing to capture (%d stored float %s, whose twin is cuBLAS)\n",
                       nout, nout == 1 ? "matrix" : "matrices");
            else   /* every upload failed, said above ("0 stored float matrices" said nothing: a review) */
                printf("graph  whole-model pass: nothing to capture (no matrix reached the device)\n");
        } else if (wr_gpu_graph_pass(g, dm, gp, nd, opt.runs, &tg, &ts, err, sizeof err)) {
            printf("FAIL graph pass: %s\n", err);
            bad++;
        } else {
            char out[160] = "";
            if (nout)
                snprintf(out, sizeof out, "; %d more, stored float %s, left out (their twin is cuBLAS, not captured)",
                         nout, nout == 1 ? "matrix" : "matrices");
            printf("graph  whole-model pass, %d matrices, batch 1 (%s): graph %.1f us, stream %.1f us%s\n", nd, mix, tg,
                   ts, out);
        }
        free(gp);
        for (int i = 0; i < nd; i++)
            wr_gpu_free(dm[i]);
    } else if (dm) {
        for (int i = 0; i < md->n; i++)
            wr_gpu_free(dm[i]);
    }
    if (nrows && opt.bench) {
        /* fused/twin: the fused kernel against the same GEMV on fixed-width data (the twin,
           or cuBLAS BF16 for exponent-coded matrices); best/twin: the fastest coded pipeline */
        printf("\n%-34s %-6s %5s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s %8s %8s %9s\n", "matrix", "type", "batch",
               "fused_us", "staged_us", "ring_us", "priv_us", "twin_us", "full_us", "tcode_us", "pal_us", "recon_us", "split_us", "fus/twin",
               "best/tw", "Gw/s", "HBM_Gw/s");
        for (int i = 0; i < nrows; i++) {
            const bench_row *r = &rows[i];
            if (many_bundles && (i == 0 || r->src != rows[i - 1].src))   /* as bundle_heading */
                printf("# %s\n", r->src ? r->src : "synthetic matrices (--synth)");
            double best = r->t[P_FUSED], split = NAN;
            for (int p = 0; p < P_COUNT; p++) {
                if (p != P_TWIN && r->t[p] < best)
                    best = r->t[p];
                if (is_split(p) && (isnan(split) || r->t[p] < split))
                    split = r->t[p];   /* the fastest of split2/4/8 */
            }
            printf("%-34.34s %-6s %5d %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %8.2f %8.2f %8.1f %9.1f\n",
                   r->name, r->type, r->batch, r->t[P_FUSED], r->t[P_STAGED], r->t[P_RING], r->t[P_PRIVATE], r->t[P_TWIN], r->t[P_FULL],
                   r->t[P_TRANSCODE], r->t[P_PALETTE], r->t[P_RECON], split, r->t[P_FUSED] / r->t[P_TWIN],
                   best / r->t[P_TWIN], r->wps * 1e-9, r->bound * 1e-9);
        }
    }
    free(rows);
    free(dm);
    wr_gpu_close(g);
    return bad;
}
#endif

/* ---- main ---------------------------------------------------------------------- */

static const uint32_t all_types[] = {WP_Q4_0, WP_Q4_1, WP_Q5_0, WP_Q5_1, WP_Q8_0, WP_IQ4_NL, WP_Q2_K,
                                     WP_Q3_K, WP_Q4_K, WP_Q5_K, WP_Q6_K, WP_IQ4_XS, WP_BF16, WP_F16, WP_F32};

/* Parse a --synth spec TYPE:ROWSxCOLS (usage error, exit 64, when bad):
 * *type = -1 for 'all', else the ggml type (F32 is 0); shape at most 2^34
 * weights, COLS rounded up to the block size (of each type, for 'all'). */
static void synth_parse(const char *spec, int *type, long long *rows, long long *cols)
{
    char tn[32];
    long long r = 0, c = 0;
    /* TYPE:ROWSxCOLS, decimal counts and the x in either case, as the type's name ("q4_k:64X512") */
    const char *colon = strchr(spec, ':');
    char *e = NULL;
    const int ok = colon && colon > spec && colon - spec < (ptrdiff_t)sizeof tn && isdigit((unsigned char)colon[1]) &&
                   (r = strtoll(colon + 1, &e, 10), *e == 'x' || *e == 'X') && isdigit((unsigned char)e[1]) &&
                   (c = strtoll(e + 1, &e, 10), !*e);
    if (!ok)
        die(WR_EXIT_USAGE, "--synth: expected TYPE:ROWSxCOLS, got '%s'", spec);
    memcpy(tn, spec, (size_t)(colon - spec));
    tn[colon - spec] = 0;
    if (r < 1 || c < 1)
        die(WR_EXIT_USAGE, "--synth: rows and cols must be at least 1: '%s'", spec);
    if (r > (1LL << 34) / c)
        die(WR_EXIT_USAGE, "--synth: shape too large (more than 2^34 weights): '%s'", spec);
    int all = !strcasecmp(tn, "all"), t = all ? -1 : wp_ggml_type_from_name(tn);
    int known = all;
    long long blk = 1;   /* the largest block of the spec's types: COLS is rounded up to it */
    for (size_t i = 0; i < sizeof all_types / sizeof *all_types; i++)
        if (all || (t >= 0 && (uint32_t)t == all_types[i])) {
            known = 1;
            const long long n = wp_ggml_blck_size(all_types[i]);
            blk = n > blk ? n : blk;
        }
    if (!known)
        die(WR_EXIT_USAGE, "--synth: type must be a coded block type, BF16, F16, F32 or all: '%s'", tn);
    /* (Q4_K:17179869184x1 passed as 2^34 weights and made 2^42) */
    if (r > (1LL << 34) / ((c + blk - 1) / blk * blk))   /* (the largest block of the spec's types) */
        die(WR_EXIT_USAGE, "--synth: shape too large (more than 2^34 weights once COLS is rounded up to the "
                           "block): '%s'", spec);
    if (type)
        *type = t, *rows = r, *cols = c;
}

/* COLS of a --synth spec rounded up to type's block (1 for the floats). */
static long long synth_cols(uint32_t type, long long cols)
{
    const long long n = wp_ggml_blck_size(type);
    return (cols + n - 1) / n * n;
}

/* Die (usage) when --synth specs a and b make a matrix of the same name
 * (synth.TYPE.ROWSxCOLS, COLS rounded up to the block): "Q4_K:64x256" and
 * "q4_k:64X250", or "all:64x256" and "BF16:64x256". The same matrix twice ran
 * and was tuned twice (as --batch 1,1 was, which is refused: a fresh user's find). */
static void synth_twice(const char *a, const char *b)
{
    int ta, tb;
    long long ra, ca, rb, cb;
    synth_parse(a, &ta, &ra, &ca);
    synth_parse(b, &tb, &rb, &cb);
    for (size_t i = 0; i < sizeof all_types / sizeof *all_types && ra == rb; i++) {
        const uint32_t t = all_types[i];
        if ((ta < 0 || (uint32_t)ta == t) && (tb < 0 || (uint32_t)tb == t) && synth_cols(t, ca) == synth_cols(t, cb)) {
            char msg[400];
            snprintf(msg, sizeof msg, "--synth: '%.100s' and '%.100s' both make synth.%s.%lldx%lld", a, b,
                     wp_ggml_type_name(t), ra, synth_cols(t, ca));
            die(WR_EXIT_USAGE, "%s", msg);
        }
    }
}

/* The matrices of a --synth spec; each one's data follows from its type and
 * shape alone (its name, synth.TYPE.ROWSxCOLS), so the same name always
 * holds the same data, whatever other specs the run has: a tuning file
 * keys matrices by name and shape. */
static void add_synth(wr_model *md, const char *spec)
{
    char err[512], msg[800];
    long long r, c;
    int t;
    synth_parse(spec, &t, &r, &c);
    const int all = t < 0;
    for (size_t i = 0; i < sizeof all_types / sizeof *all_types; i++) {
        if (!all && (uint32_t)t != all_types[i])
            continue;
        const int64_t cc = synth_cols(all_types[i], c);
        const uint64_t seed = ((uint64_t)all_types[i] << 56) ^ ((uint64_t)r << 28) ^ (uint64_t)cc;
        if (wr_model_synth(md, all_types[i], r, cc, seed, err, sizeof err)) {
            snprintf(msg, sizeof msg, "--synth %s: %s", spec, err);
            die(WR_EXIT_FAIL, "%s", msg);
        }
        if (!all)
            return;
    }
}

/* The options that take a value. */
static const char *const takes[] = {"--bundle", "--synth", "--match", "--tuning", "--runs", "--tol", "--batch", "--pipeline"};

/* eq_value[i]: word i of split_eq's argv was the VALUE of a --name=VALUE. */
static unsigned char *eq_value;

/* The option of takes that is the first len bytes of a, or NULL. */
static const char *value_option(const char *a, size_t len)
{
    for (size_t k = 0; k < sizeof takes / sizeof *takes; k++)
        if (strlen(takes[k]) == len && !strncmp(a, takes[k], len))
            return takes[k];
    return NULL;
}

/* GNU style "--name=value" for the options that take a value: argv with each
 * such word split in two ("--runs=5" -> "--runs" "5"), so the parser below
 * sees one form; *argc updated. Never freed (lives as long as main). */
static char **split_eq(int *argc, char **argv)
{
    char **av = malloc(((size_t)*argc * 2 + 1) * sizeof *av);
    eq_value = calloc((size_t)*argc * 2 + 1, 1);
    if (!av || !eq_value)
        die(WR_EXIT_FAIL, "%s", "out of memory");
    int n = 0, opts = 1;   /* after "--", words are bundles, split not */
    for (int i = 0; i < *argc; i++) {
        const char *eq = i > 0 && opts ? strchr(argv[i], '=') : NULL;
        opts = opts && strcmp(argv[i], "--");
        const char *name = eq ? value_option(argv[i], (size_t)(eq - argv[i])) : NULL;
        if (name) {
            if (!eq[1])   /* --bundle= opened "" (": No such file or directory"), --match= matched all */
                die(WR_EXIT_USAGE, "%s: needs a value (see --help)", name);
            av[n++] = (char *)name;
            eq_value[n] = 1;
            av[n++] = (char *)eq + 1;
        } else {
            av[n++] = argv[i];
        }
    }
    av[n] = NULL;
    *argc = n;
    return av;
}

/* A bundle cut short while it is mapped (wr_model_load): its pages past the new end are a
 * SIGBUS, which ended wprun with no word, exit 135 (a review). One line, exit 1; --tune's
 * temporary file removed as on any failure. */
static void on_sigbus(int sig)
{
    (void)sig;
    static const char msg[] = "wprun: a bundle was cut short while wprun ran (it reads its bundles in place, "
                              "mapped): run it again on the whole bundle\n";
    wp_out_abort_now();
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(WR_EXIT_FAIL);
}

/* The summary line's note of n GEMV checks skipped (pipeline p named, not run): " (2 GEMV
 * checks of recon skipped: the skipped lines above say why)". */
static const char *skipped_note(int n, int p)
{
    static char buf[160];
    snprintf(buf, sizeof buf, " (%d GEMV %s of %s skipped: the skipped lines above say why)", n,
             n == 1 ? "check" : "checks", pipe_name[p]);
    return buf;
}

static const char *only_bundle;   /* the run's one input, when it is one bundle, for messages */

/* For bundles[i] named NAME.dist.bundle (laneinterleave --dist's, as lazyweights and unweight
 * name it), the bundle of the run (among the nb) that is its NAME.bundle, the same file by
 * device and inode, else NULL: the one wprun loads when both are given, as `wprun *.bundle`
 * gives them (the .dist.bundle failed the whole run). */
static const char *plain_in_run(const char *const *bundles, int nb, int i)
{
    static const char dist[] = ".dist.bundle";
    const size_t pl = strlen(bundles[i]), dl = sizeof dist - 1;
    char plain[PATH_MAX + 8];
    struct stat a, b;
    if (pl <= dl || pl - dl + 8 > sizeof plain || strcmp(bundles[i] + pl - dl, dist))
        return NULL;
    snprintf(plain, sizeof plain, "%.*s.bundle", (int)(pl - dl), bundles[i]);
    if (stat(plain, &a) || !S_ISREG(a.st_mode))
        return NULL;
    for (int k = 0; k < nb; k++)
        if (k != i && stat(bundles[k], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return bundles[k];
    return NULL;
}

/* The matrices md keeps after --match (wr_model_keep), checked: none (no matrix in the input, or
 * --match named none that runs: what it named said) or a --match that names none of them dies
 * with the reason, exit 1. */
static void match_check(const wr_model *md)
{
    if (md->n == 0) {   /* (nothing run: no matrix, or --match named none that runs) */
        char kinds[200];   /* what it matched that is not run, said (it was "no coded matrix" alone) */
        char pats[600] = "";   /* the substrings, whole: 'a' or 'a' or 'b' ... or N more (the
                                  first cut at 400 bytes, marked ...) */
        if (opt.nmatch)
            snprintf(pats, sizeof pats, "'%.400s%s'", opt.match[0], strlen(opt.match[0]) > 400 ? "..." : "");
        for (int i = 1; i < opt.nmatch; i++) {
            const size_t at = strlen(pats);
            if (at + strlen(opt.match[i]) + 6 + 16 >= sizeof pats) {   /* room for it and " or N more" */
                snprintf(pats + at, sizeof pats - at, " or %d more", opt.nmatch - i);
                break;
            }
            snprintf(pats + at, sizeof pats - at, " or '%s'", opt.match[i]);
        }
        const int n = md->n_shared + md->n_other + md->n_empty;
        if (opt.nmatch && n) {
            char msg[1024];   /* its words, pats and kinds whole (800: gcc -O1's -Wformat-truncation, a breaker's find) */
            not_run_kinds(md, kinds, sizeof kinds);
            snprintf(msg, sizeof msg, "no matrix wprun runs matches --match %s: %s not run (%s)", pats,
                     n > 1 ? "the ones it matches are" : "the matrix it matches is", kinds);
            die(WR_EXIT_FAIL, "%s", msg);
        }
        if (opt.nmatch)
            die(WR_EXIT_FAIL, "no matrix matches --match %s", pats);
        if (only_bundle)   /* the bundle named (a new user's trial) */
            die(WR_EXIT_FAIL, "%s: no matrices in it", only_bundle);
        die(WR_EXIT_FAIL, "%s", "no matrices in the input");
    }
    for (int i = 0; i < opt.nmatch; i++) {   /* each --match names a matrix it runs, as one alone must */
        int hit = 0;
        for (int j = 0; j < md->n && !hit; j++)
            hit = strstr(md->m[j].name, opt.match[i]) != NULL;
        if (!hit) {   /* a typo beside a --match that matched went unnoticed (a fresh user's find) */
            char msg[600];
            snprintf(msg, sizeof msg, "no matrix wprun runs matches --match '%.400s%s' (the others match %d)",
                     opt.match[i], strlen(opt.match[i]) > 400 ? "..." : "", md->n);
            die(WR_EXIT_FAIL, "%s", msg);
        }
    }
}

/* Bundle file f, given as opt ("--bundle: ", or "" for a bare word), to bundles[*nb]: 64 at most,
 * and a name ("wprun: : No such file or directory" it said; then a bare one was said as
 * "--bundle: ...", an option not typed) as the filters say it (wp_cli_input_name, wp_arg_file). */
static void add_bundle(const char **bundles, int *nb, const char *f, const char *opt)
{
    if (*nb == 64)
        die(WR_EXIT_USAGE, "%s", "--bundle: at most 64 bundles");
    if (!*f)
        die(WR_EXIT_USAGE, "%san empty file name", opt);
    bundles[(*nb)++] = f;
}

int main(int argc, char **argv)
{
    /* line by line: a run killed by a timeout (gpucheck.sh's steps) keeps what it printed, and
       stderr's warnings fall between lines, not inside them */
    setvbuf(stdout, NULL, _IOLBF, 0);
    wp_cli_init("wprun");   /* INT, TERM, HUP and PIPE remove --tune's temporary file (lib/cli.h) */
    signal(SIGBUS, on_sigbus);
    wr_model md;
    memset(&md, 0, sizeof md);
    const char *bundles[64], *synths[64];
    int nb = 0, ns = 0;
    argv = split_eq(&argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {   /* the options end (GNU, zstd): the words after it are bundles, "-b" too */
            while (++i < argc)
                add_bundle(bundles, &nb, argv[i], "");
            break;
        }
        wp_cli_info(a, usage);   /* --help, -h, --version: exit here, as every program */
        if (!strcmp(a, "--cpu")) {
            opt.cpu = 1;
        } else if (!strcmp(a, "--verify")) {
            opt.verify = 1;
        } else if (!strcmp(a, "--bench")) {
            opt.bench = 1;
        } else if (!strcmp(a, "--tune")) {
            opt.tune = 1;
        } else if (!strcmp(a, "--graph")) {
            opt.graph = 1;
        } else if (v && value_option(a, strlen(a)) && !eq_value[i + 1] && wp_cli_is_option(v)) {
            /* an option word where the value belongs (--bundle --cpu opened a file named --cpu):
               a missing value, as wpack(7) says; "-1" is a number, --name=VALUE takes it as given */
            static char msg[600];
            snprintf(msg, sizeof msg, "%.200s: missing value (got the option %.200s)", a, v);
            die(WR_EXIT_USAGE, "%s", msg);
        } else if (a[0] != '-' || !strcmp(a, "-")) {   /* a bare FILE is --bundle FILE */
            add_bundle(bundles, &nb, a, "");
        } else if (v && !strcmp(a, "--bundle")) {
            add_bundle(bundles, &nb, argv[++i], "--bundle: ");
        } else if (!v && value_option(a, strlen(a))) {   /* said as --runs= is (it was "unknown option or
                                                           missing value": a fresh user's find) */
            die(WR_EXIT_USAGE, "%s: needs a value (see --help)", a);
        } else if (!strcmp(a, "--synth")) {
            if (ns == 64)
                die(WR_EXIT_USAGE, "%s", "--synth: at most 64 specs");
            synth_parse(v, NULL, NULL, NULL);   /* a bad spec is a usage error before anything runs */
            for (int k = 0; k < ns; k++)
                synth_twice(synths[k], v);
            synths[ns++] = v, i++;
        } else if (!strcmp(a, "--match")) {
            if (!*v)   /* as --match=: an empty substring matches every name */
                die(WR_EXIT_USAGE, "%s", "--match: needs a value (see --help)");
            if (opt.nmatch == 64)
                die(WR_EXIT_USAGE, "%s", "--match: at most 64 substrings");
            opt.match[opt.nmatch++] = v, i++;   /* one more: a name may match any (a second replaced the first) */
        } else if (!strcmp(a, "--tuning")) {
            if (!*v)
                die(WR_EXIT_USAGE, "%s", "--tuning: an empty file name");
            opt.tuning = v, opt.tuning_given = 1, i++;
        } else if (!strcmp(a, "--runs")) {
            /* a long: 4294967297 wrapped to 1 in an int */
            char *e;
            const long r = count_at(v, &e);
            i++;
            if (!r || *e || r > 100000)
                die(WR_EXIT_USAGE, "--runs: expected 1..100000, got '%s'", v);
            opt.runs = (int)r;
        } else if (!strcmp(a, "--tol")) {
            char *e;
            /* decimal only: strtod took a leading blank (" 1e-3"), a sign ("+1e-5") and hex ("0x1p-3") */
            const int dec = wp_plain_decimal(v);   /* (a '-' one is no positive number: said below) */
            errno = 0;
            opt.tol = dec ? strtod(v, &e) : 0, i++;
            if (dec && !*e && errno == ERANGE)   /* 1e400, 1e-400: said so (it was "expected a positive number") */
                die(WR_EXIT_USAGE, "--tol: '%s' is out of range (a double holds about 2.2e-308 to 1.8e308)", v);
            if (!(opt.tol > 0) || *e || !isfinite(opt.tol))   /* inf: --verify could not fail */
                die(WR_EXIT_USAGE, "--tol: expected a positive number, got '%s'", v);
        } else if (!strcmp(a, "--batch")) {
            const char *q = v;
            i++;
            opt.nbatch = 0;
            for (;;) {   /* sizes separated by single commas: an empty item is an error */
                char *e;
                const long b = count_at(q, &e);
                if (e == q || (*e && *e != ',') || b < 1 || b > 65536 || opt.nbatch == 32)
                    die(WR_EXIT_USAGE, "--batch: expected sizes 1..65536 separated by commas (at most 32), got '%s'", v);
                for (int k = 0; k < opt.nbatch; k++)   /* (1,1 ran and tuned batch 1 twice: a fresh user's find) */
                    if (opt.batch[k] == (int)b) {
                        char msg[160];
                        snprintf(msg, sizeof msg, "--batch: size %ld given twice in '%.100s'", b, v);
                        die(WR_EXIT_USAGE, "%s", msg);
                    }
                opt.batch[opt.nbatch++] = (int)b;
                if (!*e)
                    break;
                q = e + 1;
            }
        } else if (!strcmp(a, "--pipeline")) {
            i++;
            /* any case, as --synth takes type names */
            opt.pipe = !strcasecmp(v, "auto") ? P_AUTO : !strcasecmp(v, "exp") ? P_FUSED : -2;
            for (int p = 0; p < P_COUNT && opt.pipe == -2; p++)
                if (!strcasecmp(v, pipe_name[p]))
                    opt.pipe = p;
            if (opt.pipe == -2)
                die(WR_EXIT_USAGE, "--pipeline: expected auto, fused, exp, staged, ring, private, recon, split2, split4, split8, "
                    "full, twin, transcode or palette, got '%s'",
                    v);
        } else {
            /* a flag given a value (--cpu=1), said as the filters say it (it was "unknown option") */
            const char *eq = strchr(a, '=');
            static const char *const flags[] = {"--cpu", "--verify", "--bench", "--tune", "--graph"};
            for (size_t k = 0; eq && k < sizeof flags / sizeof *flags; k++)
                if (!strncmp(a, flags[k], (size_t)(eq - a)) && !flags[k][eq - a]) {
                    static char msg[80];
                    snprintf(msg, sizeof msg, "%s: takes no value (see --help)", flags[k]);
                    die(WR_EXIT_USAGE, "%s", msg);
                }
            die(WR_EXIT_USAGE, "unknown option: %s (see --help)", a);
        }
    }
    if (!nb && !ns)
        die(WR_EXIT_USAGE, "%s", "no input: give --bundle FILE or --synth SPEC (see --help)");
    if (wr_palette_ahead_env() < 0)
        fprintf(stderr, "wprun: warning: WPRUN_PALETTE_AHEAD=%s ignored (1 or 2)\n", getenv("WPRUN_PALETTE_AHEAD"));
    if (!opt.nbatch)
        opt.batch[opt.nbatch++] = 1;
    if (!opt.verify && !opt.bench && !opt.tune)
        opt.verify = 1;
    if (opt.graph && opt.cpu)
        fprintf(stderr, "wprun: warning: --graph times a CUDA graph: ignored with --cpu\n");
    /* (ignored unsaid, where --pipeline and --graph were said: a new user's trial) */
    if (opt.tol > 0 && !opt.verify)
        fprintf(stderr, "wprun: warning: --tol is --verify's tolerance: ignored with --bench or --tune alone\n");
    if (opt.runs && !opt.bench && !opt.tune && !(opt.graph && !opt.cpu))
        fprintf(stderr, "wprun: warning: --runs counts the timed runs of --bench, --tune and the GPU's --graph: this "
                        "run times nothing\n");
    if (opt.pipe != P_AUTO && !opt.verify && !(opt.graph && !opt.cpu))
        fprintf(stderr, "wprun: warning: --pipeline picks the pipeline of --verify%s; --bench and --tune time every "
                        "pipeline\n", opt.cpu ? "" : " and --graph");
    if (!opt.runs)
        opt.runs = opt.cpu ? 3 : 20;
    if (!(opt.tol > 0))
        opt.tol = opt.cpu ? 1e-5 : 1e-4;
    char err[3 * 4 * 4096 + 1024];   /* a message may name the bundle three times, quoted (model.c) */
    many_bundles = nb > 1;
    only_bundle = nb == 1 && !ns ? bundles[0] : NULL;
    for (int i = 0; i < nb; i++)
        wp_cli_input(bundles[i]);   /* --tuning onto one of them is refused (wp_out_open) */
    for (int i = 0; i < nb; i++) {
        int lrc;
        if ((lrc = wr_model_load(&md, bundles[i], opt.nmatch ? opt.match : NULL, err, sizeof err))) {
            /* only a --dist bundle's refusals: one that is missing, cut or junk fails the run as
               any other (it was "skipped", exit 0: a breaker's find) */
            const char *plain = lrc == WR_LOAD_DIST ? plain_in_run(bundles, nb, i) : NULL;
            if (plain) {   /* `wprun *.bundle` beside a pipeline's outputs (a new user's trial) */
                fprintf(stderr, "wprun: %s: a --dist bundle, skipped: its inference bundle, %s, is in this run\n",
                        bundles[i], plain);
                continue;
            }
            char msg[sizeof err + 4096 + 8];
            size_t pl = strlen(bundles[i]);
            /* one line naming the file, whichever layer wrote the message */
            if (strncmp(err, bundles[i], pl) || err[pl] != ':')
                snprintf(msg, sizeof msg, "%s: %s", bundles[i], err);
            else
                snprintf(msg, sizeof msg, "%s", err);
            die(WR_EXIT_FAIL, "%s", msg);
        }
    }
    /* --match checked here when the bundles hold every matrix of the run: before the device is
       asked for (a typo on a machine without a GPU got exit 3, "no CUDA device found": a note's
       left alone) */
    if (ns == 0) {
        wr_model_keep(&md, opt.nmatch ? opt.match : NULL);
        match_check(&md);
    }
    /* the device asked for after the bundles are read, so a bundle's fault is said first (a missing
       bundle read "no CUDA device found" on a machine without one: a fresh user's find), and before
       the synthetic matrices are made (a 4096x14336 one takes seconds) */
#ifdef WPACK_NO_CUDA
    /* (it said "no CUDA device found" on a machine that may well have one) */
    if (!opt.cpu) {
        fprintf(stderr, "wprun: built without CUDA (no nvcc, or WPACK_NO_CUDA=1): use --cpu for the CPU reference\n");
        return WR_EXIT_NODEV;
    }
    int ndev = 0;
#else
    int ndev = opt.cpu ? 0 : wr_gpu_count();
#endif
    if (!opt.cpu && ndev == 0) {
        fprintf(stderr, "wprun: no CUDA device found (use --cpu for the CPU reference)\n");
        return WR_EXIT_NODEV;
    }
    if (ns) {
        for (int i = 0; i < ns; i++)
            add_synth(&md, synths[i]);
        wr_model_keep(&md, opt.nmatch ? opt.match : NULL);   /* --match: the synthetic matrices too */
        match_check(&md);
    }
    /* auto picks the pipeline of the CPU's --verify GEMV checks and of the GPU's --graph pass (the
       GPU's --verify checks every pipeline) */
    if (opt.pipe == P_AUTO && !opt.tune && (opt.cpu ? opt.verify : opt.graph))
        tuning_read(opt.tuning);
    FILE *tf = NULL;
    if (opt.tune) {
        /* written as every wpack output is (lib/cli.h): a temporary file beside it, renamed
           when complete; a link's file replaced, the link kept; its permission bits kept; a
           FIFO or device written in place; one of the run's bundles refused. "-" is a file. */
        tf = wp_out_open(strcmp(opt.tuning, "-") ? opt.tuning : "./-");
        /* the folder of the file it replaces (the lock resolved links itself, as wp_out_open) */
        tuning_lock(wp_out_target());
        tuning_keep(strcmp(opt.tuning, "-") ? opt.tuning : "./-");   /* after wp_out_open's refusals */
        signal(SIGPIPE, tune_sigpipe);   /* `wprun --tune ... | head` */
        fprintf(tf, TUNING_HEAD "%s): matrix type shape batch pipeline microseconds\n", opt.cpu ? "cpu" : "gpu");
    }
    int bad = 0;
    if (opt.cpu) {
        for (int i = 0; i < md.n; i++)
            bad += cpu_matrix(&md.m[i], tf);
    } else {
#ifndef WPACK_NO_CUDA
        bad = gpu_run(&md, tf);
#endif
    }
    /* the pipeline --pipeline named ran on no matrix (every lane-coded matrix's check skipped; a
       stored one's twin ran), a CI job green while checking it nowhere (a new user's trial; the
       stored matrices' twin made a real bundle "ok": a breaker's find) */
    const int ran_nowhere = !bad && n_skipped && !n_checked;
    if (tf && (bad || ran_nowhere || !n_tuned)) {   /* a failed check, or nothing tuned: the old tuning file stays */
        wp_out_abort();
        tuning_put_kept(NULL);
        struct stat st;
        const int kept = stat(opt.tuning, &st) == 0;
        if (bad || ran_nowhere)   /* (replaced under a run that exits 1: a breaker's find) */
            fprintf(stderr, "wprun: %s%s: the tuning file %s is %s\n", bad ? "a check failed" : pipe_name[opt.pipe],
                    bad ? "" : " ran on no matrix", opt.tuning, kept ? "left as it was" : "not written");
        else   /* it replaced the file with its header alone (a fresh user's find) */
            fprintf(stderr, "wprun: warning: nothing to tune: the %s run %s not lane-coded (the twin is %s one "
                            "pipeline); the tuning file %s is %s\n", md.n == 1 ? "matrix" : "matrices",
                    md.n == 1 ? "is" : "are", md.n == 1 ? "its" : "their", opt.tuning,
                    kept ? "left as it was" : "not written");
    } else if (tf) {
        /* the report lost (a full disk): the run fails, the old file left as it was (it was
           replaced under a run that exited 1: a breaker's find); a reader gone (| head) is
           no error, and the file is written */
        stdout_close();
        const int nk = tuning_put_kept(tf);
        wp_out_commit();   /* dies, the temporary file removed, on a write error */
        /* the file named, before the verdict (--tune said nothing of it: a helper's nit) */
        /* (the file - as ./-, and no word of auto for a FIFO or device: a breaker's finds) */
        struct stat st;
        const int file = stat(opt.tuning, &st) == 0 && S_ISREG(st.st_mode);
        printf("wrote %s%s: %d %s tuned in this run%s\n", strcmp(opt.tuning, "-") ? "" : "./", opt.tuning, n_tuned,
               n_tuned == 1 ? "line" : "lines",
               !file ? "" : opt.tuning_given ? " (auto reads it given --tuning FILE)" : " (auto reads it in runs from this folder)");
        if (nk)
            fprintf(stderr, "wprun: %s: %d %s of matrices or batches not tuned in this run kept\n", opt.tuning, nk,
                    nk == 1 ? "line" : "lines");
    }
    int n_used = 0;
    for (int i = 0; i < ntunes; i++)
        n_used += tunes[i].used;
    if (n_used && !opt.tuning_given)   /* the current folder's file steered auto unsaid (a fresh user's find) */
        fprintf(stderr, "wprun: auto took %d %s from %s, the default tuning file, in the current folder (--pipeline "
                        "overrides it)\n", n_used, n_used == 1 ? "pick" : "picks", opt.tuning);
    if (n_long_codes)   /* the CPU checks pass them; a GPU run refuses them at upload */
        fprintf(stderr, "wprun: warning: %d of %d %s codes over %d bits, which the GPU decoder does not "
                        "take (huffbuild --max-len %d)\n", n_long_codes, md.n,
                md.n == 1 ? "matrix has" : n_long_codes == 1 ? "matrices has" : "matrices have", WR_LUT_MAX_BITS,
                WR_LUT_MAX_BITS);
    /* the matrices the twin alone ran, and those not run, said (they went unsaid, as if the run
       were the whole model) */
    const int n_st = md.n_fixed + md.n_zstd + md.n_uncoded, n_not = md.n_shared + md.n_other + md.n_empty;
    if (n_st) {   /* ("1 of the 1 matrix is", a fresh user's find) */
        char kinds[200], who[80];
        stored_kinds(&md, kinds, sizeof kinds);
        if (n_st < md.n)
            snprintf(who, sizeof who, "%d of the %d matrices %s", n_st, md.n, n_st == 1 ? "is" : "are");
        else if (md.n == 1)
            snprintf(who, sizeof who, "the matrix is");
        else
            snprintf(who, sizeof who, "none of the %d matrices is", md.n);
        printf("wprun: %s%s (%s): the twin alone ran %s\n", who, n_st < md.n || md.n == 1 ? " not lane-coded" : " lane-coded",
               kinds, n_st == 1 ? "it" : "them");
    }
    if (n_not) {
        char kinds[200];
        not_run_kinds(&md, kinds, sizeof kinds);
        printf("wprun: %d more %s not run (%s); %s checksums ok\n", n_not, n_not == 1 ? "matrix" : "matrices", kinds,
               n_not == 1 ? "its" : "their");
    }
    /* the failures counted (it said FAILED alone, which a long run's output hid) */
    if (bad)
        printf("wprun: %d %s (%s): FAILED (%d %s above)\n", md.n, md.n == 1 ? "matrix" : "matrices",
               opt.cpu ? "cpu" : "gpu", bad, bad == 1 ? "failure" : "failures");
    else if (ran_nowhere) {
        printf("wprun: %d %s (%s): FAILED: %s ran on no matrix%s\n", md.n, md.n == 1 ? "matrix" : "matrices",
               opt.cpu ? "cpu" : "gpu", pipe_name[opt.pipe], skipped_note(n_skipped, opt.pipe));
        bad = 1;
    } else   /* (a run whose every GEMV check was skipped said "ok" alone: a fresh user's find) */
        printf("wprun: %d %s (%s): ok%s\n", md.n, md.n == 1 ? "matrix" : "matrices", opt.cpu ? "cpu" : "gpu",
               n_skipped ? skipped_note(n_skipped, opt.pipe) : "");
    wr_model_free(&md);
    free(tunes);
    stdout_close();
    return bad ? WR_EXIT_FAIL : WR_EXIT_OK;
}
