/* test_die_now - wp_die_now (lib/cli.h), the exit of ggml's abort callback in
 * ppl and hessian (filters/llm_common.h): called from a worker thread while
 * the main thread waits, it prints one line, removes the temporary file of a
 * named output or truncates a redirected stdout back to where the run
 * started, and exits 1; a second caller does not print a second line. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "tap.h"

static void *die_thread(void *arg)
{
    wp_die_now("%s: llama.cpp cannot load this model (%s)", (const char *)arg, "x.cpp:1: GGML_ASSERT(a) failed");
    return NULL;
}

/* Run child(): fork, the child's stderr into err (NUL-terminated, n bytes),
 * its stdout onto fd out_fd when >= 0. Returns the wait status. */
static int run_child(void (*child)(const char *), const char *arg, int out_fd, char *err, size_t n)
{
    int p[2];
    if (pipe(p))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 2);
        if (out_fd >= 0)
            dup2(out_fd, 1);
        close(p[0]);
        close(p[1]);
        child(arg);
        _exit(99);
    }
    close(p[1]);
    size_t k = 0;
    ssize_t got;
    while (k + 1 < n && (got = read(p[0], err + k, n - 1 - k)) > 0)
        k += (size_t)got;
    err[k] = 0;
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

/* A named output half-written, then two threads abort at once. */
static void child_named(const char *path)
{
    wp_cli_init("ppl");
    FILE *f = wp_out_open(path);
    fputs("half a file", f);
    fflush(f);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, die_thread, (void *)"m.gguf");
    pthread_create(&t2, NULL, die_thread, (void *)"m.gguf");
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
}

/* stdout as the output, a regular file holding "old\n" opened for append. */
static void child_stdout(const char *unused)
{
    (void)unused;
    wp_cli_init("hessian");
    FILE *f = wp_out_open(NULL);
    fputs("records", f);
    fflush(f);
    pthread_t t;
    pthread_create(&t, NULL, die_thread, (void *)"m.gguf");
    pthread_join(t, NULL);
}

/* -o PATH opened while PATH did not exist, then PATH noted as an input (an
 * input opened after the output): wp_out_commit refuses to rename over it. */
static void child_commit_input(const char *path)
{
    wp_cli_init("histogram");
    FILE *f = wp_out_open(path);
    fputs("output", f);
    FILE *in = fopen(path, "w");
    if (!in)
        _exit(98);
    fputs("input\n", in);
    fclose(in);
    wp_cli_input(path);
    wp_out_commit();
    _exit(0);
}

/* Whether s is exactly one line; its newline is removed. */
static int one_line(char *s)
{
    char *nl = strchr(s, '\n');
    if (!nl || nl[1])
        return 0;
    *nl = 0;
    return 1;
}

int main(void)
{
    char dir[] = "/tmp/test_die_now.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[256], err[4096];
    snprintf(path, sizeof path, "%s/out.hess", dir);

    int st = run_child(child_named, path, -1, err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "a named output: exit status 1 (status %d)", st);
    int one = one_line(err);
    CHECK(one && !strcmp(err, "ppl: m.gguf: llama.cpp cannot load this model (x.cpp:1: GGML_ASSERT(a) failed)"),
          "one line, printed once by two aborting threads: '%s'", err);
    int left = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        left += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK(left == 0, "neither the output nor its temporary file is left (%d files)", left);

    char log[256];
    snprintf(log, sizeof log, "%s/log", dir);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0 || write(fd, "old\n", 4) != 4) {
        perror(log);
        return 1;
    }
    st = run_child(child_stdout, NULL, fd, err, sizeof err);
    close(fd);
    struct stat sb;
    if (stat(log, &sb))
        sb.st_size = -1;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "stdout >> log: exit status 1 (status %d)", st);
    CHECK(sb.st_size == 4, "stdout >> log: back to its 4 bytes (%lld)", (long long)sb.st_size);
    one = one_line(err);
    CHECK(one && !strcmp(err, "hessian: m.gguf: llama.cpp cannot load this model (x.cpp:1: GGML_ASSERT(a) failed)"),
          "stdout >> log: one line: '%s'", err);
    unlink(log);

    /* the output's check against the inputs, again before the rename */
    char in[256], want[600], got[64] = "";
    snprintf(in, sizeof in, "%s/late.wps", dir);
    st = run_child(child_commit_input, in, -1, err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "an input opened after -o: exit status 1 (status %d)", st);
    one = one_line(err);
    snprintf(want, sizeof want,
             "histogram: %s: is also an input of this run: writing it would replace that input (write elsewhere)", in);
    CHECK(one && !strcmp(err, want), "an input opened after -o: one line: '%s'", err);
    FILE *kept = fopen(in, "r");
    if (kept) {
        if (!fgets(got, sizeof got, kept))
            got[0] = 0;
        fclose(kept);
    }
    CHECK(!strcmp(got, "input\n"), "an input opened after -o: the input is kept ('%.*s')", (int)strcspn(got, "\n"), got);
    unlink(in);
    left = 0;
    d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        left += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK(left == 0, "an input opened after -o: no temporary file is left (%d files)", left);
    rmdir(dir);
    return tap_done();
}
