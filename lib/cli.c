/* cli.c - program name, fatal errors, atomic outputs (see cli.h). */
#include "cli.h"
#include "par.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static const char *prog = "wpack";
static FILE *out_f;
static char out_path[4096], out_tmp[4200];
static char out_target[4096];   /* the file out_tmp replaces: out_path, or what its symbolic link names */
static volatile sig_atomic_t out_is_stdout_file;
static off_t out_start;
static atomic_llong out_own = -1;   /* bytes this process wrote to a redirected stdout; -1: not counted */
static char **inputs;   /* the regular files read, by real path (wp_cli_input) */
static atomic_int progress_shown;   /* a wp_progress line is on the terminal (wp_progress) */
static int n_inputs;

/* Whether a redirected stdout holds this run's bytes alone after out_start:
 * its size is out_start plus what this process wrote. Another writer of the
 * file (the jobs of `make -j > build.log`, a `>> log` appended to beside this
 * run) keeps its lines: a failed run cut them away (a breaker's find). */
static int out_cut_back_ok(void)
{
    struct stat st;
    const long long own = atomic_load(&out_own);
    return own >= 0 && fstat(STDOUT_FILENO, &st) == 0 && st.st_size == out_start + (off_t)own;
}

/* Cut a redirected stdout back to where the run started, when it holds this
 * run's bytes alone (out_cut_back_ok). Async-signal-safe. */
static void out_cut_back(void)
{
    if (out_is_stdout_file && out_cut_back_ok() && ftruncate(STDOUT_FILENO, out_start) == 0)
        lseek(STDOUT_FILENO, out_start, SEEK_SET);   /* shared with a `2>&1` stderr: no hole before its line */
}

/* Remove the temporary output, or cut a redirected stdout back to where
 * the run started, without touching its FILE (a signal handler, another
 * thread). Only async-signal-safe calls. */
static void out_abort_raw(void)
{
    if (out_tmp[0])
        unlink(out_tmp);
    else
        out_cut_back();
}

/* The stream a redirected stdout is written through: each write(2) counted in
 * out_own, so that an abort knows whether the file holds anything else
 * (fopencookie's write: the bytes written, 0 with errno set on an error). */
static ssize_t counted_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    size_t done = 0;
    while (done < n) {
        const ssize_t k = write(STDOUT_FILENO, buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        done += (size_t)k;
        atomic_fetch_add(&out_own, (long long)k);
    }
    return (ssize_t)done;
}

void wp_out_abort_now(void) { out_abort_raw(); }

/* Interrupted (Ctrl-C, kill, a closed pipe): remove the temporary output,
 * then die of the same signal. */
static void on_signal(int sig)
{
    out_abort_raw();
    if (atomic_load(&progress_shown))   /* (a Ctrl-C left it, the prompt after it: a breaker's find) */
        (void)!write(STDERR_FILENO, "\r\033[K", 4);
    signal(sig, SIG_DFL);
    raise(sig);
}

void wp_cli_init(const char *name)
{
    const char *s = strrchr(name, '/');
    prog = s ? s + 1 : name;
    /* A closed standard descriptor (prog 2>&-) gets /dev/null opened the other way round
       (stdin write-only, stdout and stderr read-only), so its use still fails with "Bad file
       descriptor" and no file opened later lands on it: -o FILE's temporary file took
       descriptor 2 and gptq wrote its progress lines into its own output, exit 0 (a
       re-tester's find; gnulib's stdopen does the same). */
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            const int n = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
            if (n < 0)   /* (no /dev/null, as in a bare chroot: going on would bring the bug back) */
                _exit(127);
            if (n != fd) {   /* (the lowest free descriptor: fd itself) */
                dup2(n, fd);
                close(n);
            }
        }
    /* A closed pipe downstream ends the program quietly with SIGPIPE's status,
       after removing the temporary output as the other signals do. A signal the
       program was started with ignored stays ignored, as gzip leaves it: nohup's
       SIGHUP, a script's background job's SIGINT (a HUP killed `nohup gptq ...` and
       `nohup make model`'s hessian: a breaker's find) */
    const int sigs[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        signal(sigs[i], on_signal);
    }
    /* A file-size limit (ulimit -f) makes the write that passes it fail with EFBIG, "write
       error: File too large", said and undone as every write error: SIGXFSZ's default killed
       the program silently, a partial stdout file or -o's temporary file left behind (a
       breaker's find) */
    signal(SIGXFSZ, SIG_IGN);
}

/* on_exit's handler of wp_cli_skip_destructors: stdio flushed as exit would, then out. */
static void exit_now(int status, void *arg)
{
    (void)arg;
    fflush(NULL);
    _exit(status);
}

void wp_cli_skip_destructors(void) { on_exit(exit_now, NULL); }

const char *wp_prog(void) { return prog; }

void wp_out_abort(void)
{
    if (out_tmp[0]) {
        if (out_f)
            fclose(out_f);
        out_f = NULL;
        unlink(out_tmp);
        out_tmp[0] = 0;
    } else if (out_is_stdout_file) {
        fflush(stdout);
        out_cut_back();
    }
}

/* Print one message line: control bytes (a key or name read from a damaged
 * file may hold escape sequences or newlines) are written as \xNN, so the
 * message stays one line and cannot drive the terminal; UTF-8 passes. */
const char *wp_printable(const char *s, char *buf, size_t n)
{
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && k + 5 <= n; p++) {
        if (*p < 0x20 || *p == 0x7f)
            k += (size_t)snprintf(buf + k, n - k, "\\x%02x", *p);
        else
            buf[k++] = (char)*p;
    }
    if (n)
        buf[k < n ? k : n - 1] = 0;
    return buf;
}

/* wp_shell_word and wp_shell_arg: s quoted, a name starting with '-' as ./-x when path is
 * set (a command would take it for an option) */
static const char *shell_quote(const char *s, char *buf, size_t n, int path)
{
    if (!n)
        return buf;
    const char *dot = path && s[0] == '-' ? "./" : "";
    const size_t plain = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-");
    if (*s && !s[plain]) {
        snprintf(buf, n, "%s%s", dot, s);
        return buf;
    }
    int ctl = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        ctl |= *p < 0x20 || *p == 0x7f;
    /* control bytes: $'...' with \n, \t, \NNN (octal, 3 digits: \xNN before a hex digit is
       unspecified) (bash, ksh, zsh, POSIX.1-2024 sh); a message escapes them, so in '...' the
       command named another file (a re-tester's find); ./ before the $ (./$'-a\nb') */
    size_t k = (size_t)snprintf(buf, n, "%s%s'", dot, ctl ? "$" : "");
    for (const unsigned char *p = (const unsigned char *)s; *p && k + 6 < n; p++) {
        if (ctl && (*p < 0x20 || *p == 0x7f || *p == '\\' || *p == '\''))
            k += (size_t)(*p == '\n'   ? snprintf(buf + k, n - k, "\\n")
                          : *p == '\t' ? snprintf(buf + k, n - k, "\\t")
                          : *p == '\\' || *p == '\'' ? snprintf(buf + k, n - k, "\\%c", *p)
                                                     : snprintf(buf + k, n - k, "\\%03o", *p));
        else if (*p == '\'') {
            memcpy(buf + k, "'\\''", 4);
            k += 4;
        } else {
            buf[k++] = (char)*p;
        }
    }
    if (k + 1 < n)
        buf[k++] = '\'';
    buf[k < n ? k : n - 1] = 0;
    return buf;
}

const char *wp_shell_word(const char *s, char *buf, size_t n) { return shell_quote(s, buf, n, 1); }

const char *wp_shell_arg(const char *s, char *buf, size_t n) { return shell_quote(s, buf, n, 0); }

static void say_line(const char *prefix, const char *fmt, va_list ap)
{
    char buf[8192], line[4 * sizeof buf];
    if (atomic_exchange(&progress_shown, 0))
        fputs("\r\033[K", stderr);
    vsnprintf(buf, sizeof buf, fmt, ap);
    fprintf(stderr, "%s: %s%s\n", prog, prefix, wp_printable(buf, line, sizeof line));
}

/* The output is undone before the message is written: with `> log 2>&1` the
 * message goes to the same file, and truncating after it took it along
 * (exit 1 and an empty log: a fresh user's find). */
void wp_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wp_out_abort();
    say_line("", fmt, ap);
    va_end(ap);
    exit(1);
}

void wp_die_now(const char *fmt, ...)
{
    static atomic_flag dying = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&dying))
        for (;;)
            pause();   /* the first caller's _exit ends this thread too */
    va_list ap;
    va_start(ap, fmt);
    out_abort_raw();   /* before the message, as wp_die */
    say_line("", fmt, ap);
    va_end(ap);
    _exit(1);
}

void wp_progress(const char *fmt, ...)
{
    if (!isatty(STDERR_FILENO))
        return;
    /* a process outside the terminal's foreground group (a pipeline's step: jobs.sh runs each
       in a group of its own) is stopped by SIGTTOU when it writes there under stty tostop:
       no line then (lazyweights exited 150, nothing said: a breaker's find) */
    struct termios tio;
    if (tcgetpgrp(STDERR_FILENO) != getpgrp() && (tcgetattr(STDERR_FILENO, &tio) != 0 || (tio.c_lflag & TOSTOP)))
        return;
    char buf[512], line[4 * sizeof buf + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "%s: ", prog);
    const size_t pl = strlen(line);
    wp_printable(buf, line + pl, sizeof line - pl);
    /* within one row of the terminal, less its last column: a longer line wrapped, and each
       update left a row behind (a breaker's find); a UTF-8 character is never cut */
    struct winsize ws;
    const size_t cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1u : 79u;
    size_t seen = 0, i = 0;
    for (; line[i]; i++) {
        if (((unsigned char)line[i] & 0xC0) == 0x80)
            continue;   /* a continuation byte: no column of its own */
        if (seen++ == cols)
            break;
    }
    line[i] = 0;
    /* "\r", the line, the rest of the row erased, "\r": the cursor left at the row's start, so
       another process's message (a pipeline's other step) starts there too rather than after
       the line (a breaker's find) */
    fprintf(stderr, "\r%s\033[K\r", line);
    atomic_store(&progress_shown, 1);
}

void wp_progress_end(void)
{
    if (atomic_exchange(&progress_shown, 0))
        fputs("\r\033[K", stderr);
}

void wp_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say_line("warning: ", fmt, ap);
    va_end(ap);
}

void wp_cli_input(const char *path)
{
    char real[PATH_MAX];
    struct stat st;
    /* standard input: the file it was opened from, when it is one */
    const char *p = !path || !strcmp(path, "-") ? "/proc/self/fd/0" : path;
    if (stat(p, &st) || !S_ISREG(st.st_mode))
        return;
    /* standard output onto the input (`ggufcat x.gguf >> x.gguf`, `1<>`): what the program
       writes would grow or overwrite what it reads, as cat refuses ("input file is output
       file"); it exited 0 with the input damaged (a tester's find). Inodes compared: the shell
       opened standard output, there is no name. */
    struct stat so;
    if (fstat(STDOUT_FILENO, &so) == 0 && S_ISREG(so.st_mode) && so.st_dev == st.st_dev && so.st_ino == st.st_ino)
        wp_die("%s: is also standard output: what this run writes would overwrite or grow it (write elsewhere)",
               p == path ? path : "stdin");
    if (!realpath(p, real))
        return;
    char **grown = realloc(inputs, (size_t)(n_inputs + 1) * sizeof *inputs);
    if (!grown || !(grown[n_inputs] = strdup(real)))
        wp_die("out of memory");
    inputs = grown;
    n_inputs++;
}

/* Die when the file an output replaces (target, a path whose links are
 * followed) is one of the inputs: -o onto the input replaced it (unbundle -o
 * m.bundle m.bundle left a GGUF). Names are compared, not inodes: renaming
 * over a hard link of an input leaves the input's own name as it was. */
static void out_check_inputs_as(const char *target, const char *name)
{
    char real[PATH_MAX];
    if (!realpath(target, real))
        return;
    for (int i = 0; i < n_inputs; i++)
        if (!strcmp(inputs[i], real))
            wp_die("%s: is also an input of this run: writing it would replace that input (write elsewhere)",
                   name);
}
static void out_check_inputs(const char *target) { out_check_inputs_as(target, out_path); }

/* An output file that is one of the inputs noted so far, or write-protected: refused. The
 * output replaces the file by a rename, which its mode does not stop: a 0444 model was
 * replaced, root or not (a new user's trial; `echo x > f` is refused, zstd asks). */
static void out_protect_check(const char *path)
{
    struct stat st;
    out_check_inputs_as(path, path);   /* the more telling line, first */
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
        ((st.st_mode & 0222) == 0 || (access(path, W_OK) != 0 && errno == EACCES)))
        wp_die("%s: write-protected: not replaced (make it writable, or remove it, first)", path);
    /* another user's file in a sticky folder (/tmp): writable, but the rename over it fails,
       after all the work ("cannot rename into place": a breaker's find) */
    char dir[PATH_MAX], real[PATH_MAX];
    const char *target = realpath(path, real) ? real : path;   /* a link: its file's folder */
    const char *slash = strrchr(target, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - target) + 1 : 1, slash ? target : ".");
    struct stat dst;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && stat(dir, &dst) == 0 && (dst.st_mode & S_ISVTX) &&
        geteuid() != 0 && st.st_uid != geteuid() && dst.st_uid != geteuid())
        wp_die("%s: another user's file in a sticky folder: not replaced (write elsewhere)", path);
}

size_t wp_file_head(const char *path, void *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    const size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

FILE *wp_in_open(const char *path)
{
    if (path && !*path)   /* it said ": No such file or directory" (a breaker's find) */
        wp_die("an empty file name (give a FILE, or - for standard input)");
    wp_cli_input(path);
    if (!path || !strcmp(path, "-")) {
        if (isatty(STDIN_FILENO))   /* it waited for a stream typed in (a new user's trial); as zstd */
            wp_die("stdin: a terminal, not a wpack stream (give a FILE, or pipe or redirect one in)");
        return stdin;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        wp_die("%s: %s", path, strerror(errno));
    return f;
}

/* An output named "" or a directory fails at once (it failed at the rename,
 * after all the work); `what` names the option in the first message. */
static void out_name_check(const char *path, const char *what)
{
    struct stat st;
    if (!*path)
        wp_die("%s: an empty file name", what);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        wp_die("%s: is a directory", path);
}

/* The suffix of list that name ends with (in any case, after something), or NULL. */
static const char *name_suffix(const char *name, const char *const *list)
{
    const size_t n = name ? strlen(name) : 0;
    for (const char *const *suf = list; *suf; suf++) {
        const size_t l = strlen(*suf);
        if (n > l && !strcasecmp(name + n - l, *suf) && name[n - l - 1] != '/')
            return *suf;
    }
    return NULL;
}

/* The names of another format for an output of this kind (name_suffix): ".gguf", or ".gguf"
 * and a compressor's suffix (".gguf.zst"), for a wpack stream (a --dist bundle named
 * ship.gguf.zst became a ship.gguf llama.cpp could not load after zstd -d: a new user's
 * trial); a compressor's suffix (".zst", ".gz", ".xz", ".bz2", ".lz4", ".lzma") for a GGUF or
 * a safetensors file, which are written uncompressed; ".safetensors" for a stream or a GGUF,
 * ".gguf" for a safetensors file. */
static const char *const *foreign_suffixes(wp_out_kind kind)
{
    static const char *const stream[] = {".gguf", ".gguf.zst", ".gguf.gz", ".gguf.xz", ".gguf.bz2",
                                         ".gguf.lz4", ".gguf.lzma", ".safetensors", ".safetensors.zst",
                                         ".safetensors.gz", ".safetensors.xz", ".safetensors.bz2",
                                         ".safetensors.lz4", ".safetensors.lzma", NULL};
    static const char *const gguf[] = {".zst", ".gz", ".xz", ".bz2", ".lz4", ".lzma", ".safetensors", NULL};
    /* (the compressors' before .gguf.zst's, which is a GGUF's name said as a compressed one) */
    static const char *const st[] = {".zst", ".gz", ".xz", ".bz2", ".lz4", ".lzma", ".gguf", NULL};
    static const char *const restored[] = {".zst", ".gz", ".xz", ".bz2", ".lz4", ".lzma", NULL};
    return kind == WP_OUT_GGUF ? gguf : kind == WP_OUT_SAFETENSORS ? st : kind == WP_OUT_RESTORED ? restored : stream;
}

/* The suffix of list (name_suffix) that the output's file is named with, or NULL: path given
 * (not "-"), else the file a symbolic link of that name points to; or, for standard output, the
 * regular file it is redirected to, as /proc names it. who gets the name as messages say it. */
static const char *out_suffix(const char *path, const char *const *list, char *who, size_t whon)
{
    char real[PATH_MAX];
    const char *suf = NULL;
    if (path && strcmp(path, "-")) {
        ssize_t k = readlink(path, real, sizeof real - 1);   /* a link: what it names (maybe nothing yet) */
        if (k > 0)
            real[k] = 0;
        if ((suf = name_suffix(path, list)))
            snprintf(who, whon, "%s", path);
        else if ((k > 0 && (suf = name_suffix(real, list))) ||
                 (realpath(path, real) && (suf = name_suffix(real, list))))
            snprintf(who, whon, "%s (a link to %s)", path, real);
    } else {   /* gptq ... > m-q4.gguf: the file the shell opened, named by /proc */
        struct stat st;
        ssize_t n = fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode)
                        ? readlink("/proc/self/fd/1", real, sizeof real - 1) : -1;
        if (n > 0) {
            real[n] = 0;
            if ((suf = name_suffix(real, list)))
                snprintf(who, whon, "stdout (%s)", real);
        }
    }
    return suf;
}

wp_out_kind wp_out_restored_kind(const char *path)
{
    static const char *const st[] = {".safetensors", ".safetensors.zst", ".safetensors.gz", ".safetensors.xz",
                                     ".safetensors.bz2", ".safetensors.lz4", ".safetensors.lzma", NULL};
    static const char *const gguf[] = {".gguf", ".gguf.zst", ".gguf.gz", ".gguf.xz", ".gguf.bz2", ".gguf.lz4",
                                       ".gguf.lzma", NULL};
    char who[PATH_MAX + 64];
    return out_suffix(path, st, who, sizeof who)     ? WP_OUT_SAFETENSORS
           : out_suffix(path, gguf, who, sizeof who) ? WP_OUT_GGUF
                                                     : WP_OUT_RESTORED;
}

/* The program that makes and undoes files named with suffix (".zst", ".gz", ...), as users call it. */
static const char *compressor(const char *suffix)
{
    static const char *const name[][2] = {{".zst", "zstd"}, {".gz", "gzip"}, {".xz", "xz"},
                                          {".bz2", "bzip2"}, {".lz4", "lz4"}, {".lzma", "lzma"}};
    for (size_t i = 0; i < sizeof name / sizeof name[0]; i++)
        if (!strcasecmp(suffix, name[i][0]))
            return name[i][1];
    return suffix;
}

/* "a" or "an" before a compressor's name, as it is said ("an xz name", "an lz4'd GGUF"). */
static const char *an(const char *compressor_name)
{
    return strchr("xl", compressor_name[0]) ? "an" : "a";
}

/* Die when an output of this kind would go into a file named for another format
 * (foreign_suffixes): given (path), the file a symbolic link of that name points to, or
 * standard output redirected to one (out_suffix). */
static void out_suffix_check(const char *path, wp_out_kind kind)
{
    char who[PATH_MAX + 64] = "";
    const char *suf = out_suffix(path, foreign_suffixes(kind), who, sizeof who);
    if (!suf)
        return;
    /* (Hessians were told ggufpack makes their GGUF, which it cannot: a note's left alone) */
    if (!strncmp(suf, ".gguf", 5) && kind == WP_OUT_HESSIANS)
        wp_die("%s: refusing to write Hessians under a GGUF's name: they are gptq --hessian's input, no model "
               "llama.cpp loads and no llama-imatrix GGUF (name it NAME.hess)", who);
    if (kind == WP_OUT_SAFETENSORS && !strcmp(suf, ".gguf"))
        wp_die("%s: refusing to write a safetensors file under a GGUF's name: llama.cpp could not load it (name "
               "it NAME.safetensors; unbundle --stream B | ggufpack makes a GGUF of it)", who);
    if (!strcmp(suf, ".gguf"))
        wp_die("%s: refusing to write a wpack stream under a GGUF's name: llama.cpp could not load it "
               "(name it otherwise; ggufpack makes a GGUF of a model's stream, unbundle of a bundle)", who);
    if (!strncmp(suf, ".gguf.", 6))
        wp_die("%s: refusing to write a wpack stream under %s %s'd GGUF's name: %s -d would give a .gguf "
               "llama.cpp cannot load (name it otherwise, such as NAME.dist.bundle; unbundle writes the GGUF)",
               who, an(compressor(suf + 5)), compressor(suf + 5), compressor(suf + 5));
    /* (a --dist bundle named ship.safetensors.zst became, through zstd -d, a .safetensors no
       loader reads: a publisher's trial) */
    if (!strncmp(suf, ".safetensors.", 13))
        wp_die("%s: refusing to write %s under %s %s'd safetensors file's name: %s -d would give a .safetensors "
               "that loaders cannot read (name it otherwise, such as NAME.dist.bundle; unbundle writes the file)",
               who, kind == WP_OUT_HESSIANS ? "Hessians" : "a wpack stream", an(compressor(suf + 12)),
               compressor(suf + 12), compressor(suf + 12));
    if (kind == WP_OUT_RESTORED)   /* (a GGUF's advice, for what was a safetensors file: a breaker's find) */
        wp_die("%s: refusing to write the restored file under %s %s name: it is written uncompressed (name it "
               "NAME.gguf or NAME.safetensors, as the bundle's source was, then %s it)", who, an(compressor(suf)),
               compressor(suf), compressor(suf));
    if (strcmp(suf, ".safetensors"))   /* (unbundle -o r.gguf.gz wrote it uncompressed: a note's left alone) */
        wp_die("%s: refusing to write %s under %s %s name: it is written uncompressed (name it "
               "%s, then %s it)", who, kind == WP_OUT_SAFETENSORS ? "a safetensors file" : "a GGUF file",
               an(compressor(suf)), compressor(suf), kind == WP_OUT_SAFETENSORS ? "NAME.safetensors" : "NAME.gguf",
               compressor(suf));
    /* (unbundle -o model.safetensors wrote a GGUF there, exit 0: a new user's trial) */
    wp_die("%s: refusing to write %s under a safetensors name: safetensors loaders could not read it "
           "(name it %s%s)", who,
           kind == WP_OUT_GGUF ? "a GGUF file" : kind == WP_OUT_HESSIANS ? "Hessians" : "a wpack stream",
           kind == WP_OUT_GGUF ? "NAME.gguf" : kind == WP_OUT_HESSIANS ? "NAME.hess" : "otherwise",
           kind == WP_OUT_HESSIANS ? ""
           : kind == WP_OUT_GGUF   ? "; a bundle of one safetensors file's stream gives that file back"
                                   : "; safetensorspack writes the file of one safetensors file's stream");
}

/* Whether path names a terminal (-o /dev/stdout on one, -o /dev/tty), opened without becoming
 * the process's controlling terminal or waiting on a device. */
static int path_is_tty(const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISCHR(st.st_mode))
        return 0;
    const int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    const int tty = fd >= 0 && isatty(fd);
    if (fd >= 0)
        close(fd);
    return tty;
}

void wp_out_refuse_tty(const char *path, wp_out_kind kind)
{
    const char *what = kind == WP_OUT_GGUF          ? "a GGUF file"
                       : kind == WP_OUT_SAFETENSORS ? "a safetensors file"
                       : kind == WP_OUT_RESTORED    ? "the restored file"
                                                    : "a binary wpack stream";
    if ((!path || !strcmp(path, "-")) && isatty(STDOUT_FILENO))
        wp_die("refusing to write %s to a terminal (redirect it, pipe it, or use -o FILE)", what);
    if (path && strcmp(path, "-") && path_is_tty(path))   /* (it wrote: a note's left alone) */
        wp_die("%s: refusing to write %s to a terminal (give -o a FILE)", path, what);
    if (path && strcmp(path, "-")) {   /* and what wp_out_open refuses of FILE, before the work */
        out_name_check(path, "output");
        out_protect_check(path);
    }
    /* gptq -o m-q4.gguf wrote a stream under a GGUF's name, silently, which llama.cpp then
     * called a bad magic (a fresh user's find), and so did gptq > m-q4.gguf (a second one's);
     * as gzip refuses a name ending .gz */
    out_suffix_check(path, kind);
}

FILE *wp_out_open(const char *path)
{
    struct stat st;
    if (!path || !strcmp(path, "-")) {
        snprintf(out_path, sizeof out_path, "stdout");
        out_f = stdout;
        if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode)) {
            /* `prog >> log`: writes go to the end, whatever the offset says, so
               the run starts at the file's size */
            const int fl = fcntl(STDOUT_FILENO, F_GETFL);
            out_start = fl >= 0 && (fl & O_APPEND) ? st.st_size : lseek(STDOUT_FILENO, 0, SEEK_CUR);
            if (out_start < 0)
                out_start = 0;
            /* stdout itself becomes the counting stream (glibc's stdout is assignable),
               so printf's reports are counted as the streams' records are */
            static const cookie_io_functions_t counted = {.write = counted_write};
            fflush(stdout);
            FILE *c = fopencookie(NULL, "w", counted);
            if (c && setvbuf(c, NULL, _IOFBF, (size_t)1 << 16) == 0) {
                atomic_store(&out_own, 0);
                stdout = out_f = c;
            } else if (c) {
                fclose(c);
            }
            out_is_stdout_file = 1;
        }
        return out_f;
    }
    snprintf(out_path, sizeof out_path, "%s", path);
    out_name_check(path, "output");
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a device, FIFO or socket (-o /dev/null, -o fifo): written in place;
           renaming a file over it would replace the node */
        out_f = fopen(path, "wb");
        if (!out_f)
            wp_die("%s: cannot write: %s", path, strerror(errno));
        return out_f;
    }
    /* a symbolic link: the temporary file goes beside the file it names and
       replaces that file, so the link stays a link */
    char real[4096];
    struct stat lst;
    const char *target = path;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        if (!realpath(path, real))
            wp_die("%s: cannot follow the symbolic link: %s", path, strerror(errno));
        target = real;
    }
    out_check_inputs(target);
    out_protect_check(path);
    /* TARGET.tmp.XXXXXX, the name cut to fit NAME_MAX: an output named with
       245 to 255 bytes could never be written, "File name too long" (a
       breaker's find) */
    const char *slash = strrchr(target, '/');
    const size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0, base = strlen(target) - dirlen;
    size_t keep = base + 11 > NAME_MAX ? NAME_MAX - 11 : base;
    if (dirlen + keep + 11 >= PATH_MAX)   /* (and the path within PATH_MAX: 4085 to 4095 bytes failed too) */
        keep = dirlen + 11 < PATH_MAX ? PATH_MAX - 1 - 11 - dirlen : 0;
    /* not inside a UTF-8 character: a file system that takes UTF-8 names only refuses half of one
       (a reviewer's find) */
    while (keep < base && keep > 0 && ((unsigned char)target[dirlen + keep] & 0xC0) == 0x80)
        keep--;
    snprintf(out_tmp, sizeof out_tmp, "%.*s.tmp.XXXXXX", (int)(dirlen + keep), target);
    snprintf(out_target, sizeof out_target, "%s", target);
    int fd = mkstemp(out_tmp);
    if (fd < 0) {
        out_tmp[0] = 0;
        wp_die("%s: cannot create: %s", path, strerror(errno));
    }
    /* the file it replaces keeps its permission bits, not setuid, setgid or sticky
       (as `>` keeps them and a write clears setuid; chmod 600 then -o
       made the file 644); a new file gets 0666 less the umask */
    struct stat old;
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, stat(target, &old) == 0 && S_ISREG(old.st_mode) ? old.st_mode & 0777 : 0666 & ~mask);
    out_f = fdopen(fd, "wb");
    if (!out_f)
        wp_die("%s: %s", path, strerror(errno));
    return out_f;
}

const char *wp_out_name(void) { return out_path[0] ? out_path : "stdout"; }

void wp_out_commit(void)
{
    if (!out_f)
        return;
    if (fflush(out_f) || ferror(out_f))
        wp_die("%s: write error: %s", wp_out_name(), strerror(errno));
    if (out_tmp[0]) {
        if (fclose(out_f)) {
            out_f = NULL;
            wp_die("%s: write error: %s", out_path, strerror(errno));
        }
        out_f = NULL;
        out_check_inputs(out_target);   /* an input opened after the output */
        if (rename(out_tmp, out_target))
            wp_die("%s: cannot rename into place: %s", out_path, strerror(errno));
        out_tmp[0] = 0;
    }
    out_is_stdout_file = 0;
    out_f = NULL;
}

void wp_cli_refuse_coded(const char *in, const wp_record *r, const char *takes)
{
    char what[WP_MAX_NAME + 64];
    if (r->name[0])
        snprintf(what, sizeof what, "record '%s' (%s)", r->name, wp_rec_kind_name(r->kind));
    else
        snprintf(what, sizeof what, "a %s record", wp_rec_kind_name(r->kind));
    in = in && strcmp(in, "-") ? in : "stdin";
    if (wp_rec_is_bundle(r->kind))
        wp_die("%s: %s belongs to a bundle: unbundle --stream it first", in, what);
    wp_die("%s: %s is the coding pipeline's output: %s takes %s", in, what, wp_prog(), takes);
}

wp_reader *wp_cli_reader(const char *path)
{
    char err[1024];
    wp_reader *rd = wp_reader_open(wp_in_open(path), path, err, sizeof err);
    if (!rd)
        wp_die("%s", err);
    return rd;
}

int wp_cli_next(wp_reader *rd, wp_record *r)
{
    int k = wp_reader_next(rd, r);
    if (k < 0)
        wp_die("%s", wp_reader_error(rd));
    return k;
}

wp_writer *wp_cli_writer(const char *path)
{
    return wp_cli_writer_aligned(path, 0);
}

wp_writer *wp_cli_writer_aligned(const char *path, unsigned align)
{
    return wp_cli_writer_framed(path, align, 0);
}

wp_writer *wp_cli_writer_framed(const char *path, unsigned align, int zlevel)
{
    char err[1024];
    wp_out_refuse_tty(path, WP_OUT_STREAM);
    FILE *f = wp_out_open(path);
    wp_writer *w = wp_writer_open_framed(f, wp_out_name(), align, zlevel, err, sizeof err);
    if (!w)
        wp_die("%s", err);
    return w;
}

void wp_cli_put(wp_writer *w, const wp_record *r)
{
    if (wp_writer_put(w, r))
        wp_die("%s", wp_writer_error(w));
}

void wp_cli_writer_close(wp_writer *w)
{
    char err[1024];
    if (wp_writer_close(w, err, sizeof err))
        wp_die("%s", err);
    wp_out_commit();
}

void wp_stdout_close(void)
{
    if (fflush(stdout) || ferror(stdout))
        wp_die("stdout: write error: %s", errno ? strerror(errno) : "unknown");
}

void wp_usage_exit(const char *usage)
{
    fputs(usage, stdout);
    wp_stdout_close();
    exit(0);
}

void wp_cli_info(const char *a, const char *usage)
{
    if (!strcmp(a, "--help") || !strcmp(a, "-h"))
        wp_usage_exit(usage);
    if (strcmp(a, "--version"))
        return;
    /* (there was none: a fresh user's find; zstd and llama.cpp's tools have one) */
    printf("%s (wpack) %s, wpack stream format %u\n", prog, WPACK_VERSION, WP_STREAM_VERSION);
    wp_stdout_close();
    exit(0);
}

int wp_cli_is_option(const char *v)
{
    return v[0] == '-' && v[1] && !(v[1] >= '0' && v[1] <= '9') && v[1] != '.';   /* "-1" is a number */
}

const char *wp_cli_value(char **argv, int *i)
{
    const char *opt = argv[*i], *v = argv[*i + 1];
    if (wp_cli_is_option(v))
        wp_die("%s: missing value (got the option %s)", opt, v);
    if (!*v)   /* as "OPT=": --hessian '' said ": cannot open Hessian file" (a reviewer's find) */
        wp_die(strcmp(opt, "-o") ? "%s: an empty value (try --help)" : "%s: an empty file name", opt);
    ++*i;
    return v;
}

const char *wp_cli_arg(int argc, char **argv, int *i, const char *name)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) || (a[n] && a[n] != '='))
        return NULL;
    if (a[n] == '=') {
        if (!a[n + 1])
            wp_die("%s: needs a value (try --help)", name);
        return a + n + 1;
    }
    if (*i + 1 >= argc)
        wp_die("%s: needs a value (try --help)", name);
    return wp_cli_value(argv, i);
}

void wp_cli_second_input(const char *first, const char *a, const char *what)
{
    /* a second word that names no file is most likely the output (unbundle b.bundle out.gguf,
       as cp or llama-quantize take it), told where an output goes: standard output (not "-o
       NAME", which tsinfo does not take and a name of another format's may not get: a
       breaker's find) */
    if (a[0] != '-' && access(a, F_OK))
        wp_die("one %s at a time (got '%s' too, no such file: the output goes to standard output)", what, a);
    /* the output named first (a new user's find: "got 'm.bundle' too" said nothing of it) */
    if (first && strcmp(first, "-") && first[0] && access(first, F_OK))
        wp_die("one %s at a time (got '%s' too; '%s' is no file: the output goes to standard output)", what, a,
               first);
    wp_die("one %s at a time (got '%s' too)", what, a);
}

const char *wp_cli_once(const char *opt, const char *prev, const char *v, int any_case)
{
    if (prev && (any_case ? strcasecmp(prev, v) : strcmp(prev, v)))
        wp_die("%s: given twice ('%s', then '%s'): give one", opt, prev, v);
    return v;
}

/* The input named by word a, the one a filter takes: once. */
static void cli_operand(const char *a, const char **in)
{
    if (*in)
        wp_cli_second_input(*in, a, "input");
    *in = a;
}

void wp_cli_common(int argc, char **argv, int *i, const char *usage, const char **in, const char **out)
{
    const char *a = argv[*i];
    wp_cli_info(a, usage);   /* --help, -h, --version: exit here */
    if (!strcmp(a, "-o") && *i + 1 < argc) {
        out_name_check(argv[*i + 1], "-o");   /* before any work, where wp_out_open comes at the end */
        *out = wp_cli_once("-o", *out, wp_cli_value(argv, i), 0);
    } else if (!strcmp(a, "--")) {
        /* the options end (GNU, zstd): every word after is an input, "-x.gguf" and "--help" too */
        while (*i + 1 < argc)
            cli_operand(argv[++*i], in);
    } else if (a[0] == '-' && a[1]) {
        /* an option the usage names, at the end of the line: its value is missing */
        const char *u = strstr(usage, a);
        size_t n = strlen(a);
        if (*i + 1 >= argc && u && (u[n] == ' ' || u[n] == ']'))
            wp_die("%s: needs a value (try --help)", a);
        wp_die("%s: unknown option (try --help)", a);
    } else {
        cli_operand(a, in);
    }
}

int wp_cli_flag(const char *a, const char *flag)
{
    const size_t n = strlen(flag);
    if (strncmp(a, flag, n))
        return 0;
    if (a[n] == '=')
        wp_die("%s: takes no value (try --help)", flag);
    return a[n] == 0;
}

const char *wp_cli_option_of(const char *a, const char *const *names, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const size_t l = strlen(names[k]);
        if (!strncmp(a, names[k], l) && (!a[l] || a[l] == '='))
            return names[k];
    }
    return NULL;
}

const char *wp_cli_opt(int argc, char **argv, int *i, const char *usage, const char *const *takes, size_t n,
                       const char **value)
{
    const char *a = argv[*i], *eq = strchr(a, '=');
    size_t len = strncmp(a, "--", 2) == 0 && eq ? (size_t)(eq - a) : strlen(a);
    wp_cli_info(a, usage);
    if (!strcmp(a, "--")) {
        /* the options end (GNU): nothing may follow, as these programs take no file (it said
         * "--: unknown option") */
        if (*i + 1 < argc)
            wp_die("%s: not an option: %s takes no file without its option (try --help)", argv[*i + 1], wp_prog());
        return NULL;
    }
    for (size_t k = 0; k < n; k++) {
        if (strlen(takes[k]) != len || strncmp(a, takes[k], len))
            continue;
        if (a[len] == '=') {
            if (!a[len + 1])   /* "--model=": it said ": No such file or directory" */
                wp_die("%s: needs a value (try --help)", takes[k]);
            *value = a + len + 1;
        } else {
            if (*i + 1 >= argc)
                wp_die("%s: needs a value (try --help)", takes[k]);
            *value = wp_cli_value(argv, i);
        }
        return takes[k];
    }
    /* `hessian --model m.gguf calib.txt` said "calib.txt: unknown option" (a new user's trial) */
    if (!a[0])
        wp_die("an empty argument: %s takes no file without its option (try --help)", wp_prog());
    if (a[0] != '-' || !a[1])
        wp_die("%s: not an option: %s takes no file without its option (try --help)", a, wp_prog());
    wp_die("%s: unknown option (try --help)", a);
}

int wp_plain_decimal(const char *s)
{
    s += *s == '-';
    return (isdigit((unsigned char)s[0]) || (s[0] == '.' && isdigit((unsigned char)s[1]))) && !strpbrk(s, "xX");
}

long long wp_arg_int(const char *opt, const char *val, long long lo, long long hi)
{
    char *end;
    const int plain = val && wp_plain_decimal(val);   /* checked once, as wp_arg_float does */
    errno = 0;
    long long v = plain ? strtoll(val, &end, 10) : 0;
    if (!plain || *end || errno || v < lo || v > hi)
        wp_die("%s: expected an integer from %lld to %lld, got '%s'", opt, lo, hi, val ? val : "");
    return v;
}

double wp_arg_float(const char *opt, const char *val, double lo, double hi)
{
    char *end;
    const int plain = val && wp_plain_decimal(val);
    errno = 0;
    double v = plain ? strtod(val, &end) : 0;
    if (plain && !*end && errno == ERANGE)   /* 1e-400 was taken as 0 */
        wp_die("%s: '%s' is out of range (a double holds about 2.2e-308 to 1.8e308)", opt, val);
    if (!plain || *end || !(v >= lo && v <= hi))
        wp_die("%s: expected a number from %g to %g, got '%s'", opt, lo, hi, val ? val : "");
    return v;
}

uint64_t wp_arg_bytes(const char *opt, const char *val)
{
    char *end;
    errno = 0;
    const unsigned long long x = strtoull(val, &end, 10);
    uint64_t mul = 1;
    switch (*end) {
    case 'K': case 'k': mul = 1ull << 10; end++; break;
    case 'M': case 'm': mul = 1ull << 20; end++; break;
    case 'G': case 'g': mul = 1ull << 30; end++; break;
    case 'T': case 't': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    /* digits first: strtoull skips blanks and takes a sign (" -1" was 16 EiB) */
    if (*val < '0' || *val > '9' || *end || errno || x == 0 || x > UINT64_MAX / mul)
        wp_die("%s: expected a positive byte count (suffix K, M, G or T), got '%s'", opt, val);
    return x * mul;
}

/* bytes as "N.N GiB" (MiB below 1 GiB, KiB below 1 MiB), for wp_out_room's phrase */
static const char *room_size(uint64_t b, char *buf, size_t n, int digits)
{
    if (b >= (1ull << 30))
        snprintf(buf, n, "%.*f GiB", digits, b / 1073741824.0);
    else if (b >= (1ull << 20))
        snprintf(buf, n, "%.*f MiB", digits, b / 1048576.0);
    else
        snprintf(buf, n, "%.*f KiB", digits, b / 1024.0);
    return buf;
}

int wp_out_room(uint64_t bytes, char *why, size_t n)
{
    struct stat st;
    struct statvfs vf;
    struct rlimit rl;
    char need[32], have[32];
    /* (a redirected stdout is written through the counting stream, which has no descriptor of
       its own: the check passed every stdout unseen, a CI run's find) */
    const int fd = out_is_stdout_file ? STDOUT_FILENO : out_f ? fileno(out_f) : -1;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
        return 1;
    /* where the writes start (1<> on a longer file writes from 0: its size was counted as
       used, a breaker's find) */
    const off_t at = lseek(fd, 0, SEEK_CUR);
    const uint64_t used = at > 0 ? (uint64_t)at : 0;
    uint64_t room = UINT64_MAX;
    const char *of = NULL;
    if (fstatvfs(fd, &vf) == 0 && (uint64_t)vf.f_bavail * vf.f_frsize < bytes) {
        room = (uint64_t)vf.f_bavail * vf.f_frsize;
        of = "free on its file system";
    } else if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < used + bytes) {
        room = (uint64_t)rl.rlim_cur > used ? (uint64_t)rl.rlim_cur - used : 0;
        of = "allowed by ulimit -f";
    }
    if (!of)
        return 1;
    /* (the two figures apart where one decimal rounds them alike: "1.7 MiB needed, 1.7 MiB
       free", a breaker's find) */
    room_size(bytes, need, sizeof need, 1);
    room_size(room, have, sizeof have, 1);
    if (!strcmp(need, have)) {
        room_size(bytes, need, sizeof need, 3);
        room_size(room, have, sizeof have, 3);
    }
    snprintf(why, n, "%s needed, %s %s", need, have, of);
    return 0;
}

int wp_cli_threads(int dflt)
{
    /* (WPACK_THREADS, the pipelines' variable, went unread by the programs run alone: ppl said
       "2 threads" under WPACK_THREADS=1, a new user's trial) */
    char err[128];
    const int n = wp_par_env_threads(dflt, err, sizeof err);
    if (n < 0)
        wp_die("%s", err);
    return n;
}

const char *wp_out_target(void)
{
    return out_tmp[0] ? out_target : NULL;
}
