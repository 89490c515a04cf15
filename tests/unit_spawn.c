/* Unit tests of starting the command: the child shares resmon-run's memory until its exec
 * (spawn.h), so what it is given must reach it and nothing it does may reach us. Each case runs
 * with clone3 and with glibc's clone(), the path of kernels and architectures without it. */
#include "run/spawn.h"

#include <check.h>
#include "check_run.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const bool legacy[] = {false, true};

/* A string literal as an argv entry. */
#define A(s) ((char *)(uintptr_t)(s))

/* Run argv with its stdout into a pipe; returns what it printed (static), its exit status in
 * *status. */
static const char *run(char **argv, struct spawn_config *cfg, int *status)
{
    static char out[4096];
    int p[2];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    cfg->argv = argv;
    cfg->stdout_fd = p[1];
    pid_t pid = -1;
    bool failed;
    ck_assert_int_eq(spawn_command(cfg, &pid, &failed), 0);
    ck_assert(!failed);
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(p[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(p[0]);
    ck_assert_int_eq(waitpid(pid, status, 0), pid);
    return out;
}

static struct spawn_config base(int i)
{
    return (struct spawn_config){.stdout_fd = -1, .stderr_fd = -1, .extra_fd = -1, .legacy_clone = legacy[i]};
}

/* The variables reach the command, replacing ours of the same name; our own environment and
 * memory are as they were (a setenv in the child would have changed both). */
START_TEST(test_environment)
{
    setenv("SPAWN_MARK", "old", 1);
    char **env_before = environ;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct spawn_config cfg = base(_i);
    cfg.extra_fd = fd;
    cfg.env_name = "SPAWN_FD";
    cfg.mark = "SPAWN_MARK=new";
    cfg.env_extra = "SPAWN_EXTRA=1";
    char *argv[] = {A("sh"), A("-c"), A("echo \"$SPAWN_MARK $SPAWN_EXTRA $SPAWN_FD\"; test -e /proc/self/fd/$SPAWN_FD && echo open"),
                    NULL};
    int st;
    const char *out = run(argv, &cfg, &st);
    char want[128];
    snprintf(want, sizeof want, "new 1 %d\nopen\n", fd);
    ck_assert_str_eq(out, want);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_str_eq(getenv("SPAWN_MARK"), "old");
    ck_assert_ptr_null(getenv("SPAWN_EXTRA"));
    ck_assert_ptr_null(getenv("SPAWN_FD"));
    ck_assert_ptr_eq(environ, env_before);
    ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC); /* cleared in the child only */
    close(fd);
    unsetenv("SPAWN_MARK");
}
END_TEST

/* The mask given is the command's; ours stays. */
START_TEST(test_signal_mask)
{
    sigset_t block, empty, now;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigemptyset(&empty);
    sigprocmask(SIG_BLOCK, &block, NULL);
    struct spawn_config cfg = base(_i);
    cfg.child_mask = &empty;
    char *argv[] = {A("sh"), A("-c"), A("grep '^SigBlk' /proc/self/status"), NULL};
    int st;
    const char *out = run(argv, &cfg, &st);
    ck_assert_str_eq(out, "SigBlk:\t0000000000000000\n");
    sigprocmask(SIG_BLOCK, NULL, &now);
    ck_assert(sigismember(&now, SIGUSR1));
    sigprocmask(SIG_UNBLOCK, &block, NULL);
}
END_TEST

/* A PATH search, and exec errors told apart from the command's statuses. */
START_TEST(test_exec_errors)
{
    struct spawn_config cfg = base(_i);
    char *ok[] = {A("true"), NULL};
    int st;
    run(ok, &cfg, &st);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *missing[] = {A("/nonexistent/command"), NULL};
    cfg.argv = missing;
    pid_t pid = -1;
    bool failed = false;
    ck_assert_int_eq(spawn_command(&cfg, &pid, &failed), -ENOENT);
    ck_assert(failed);
    ck_assert_int_eq(pid, -1);
    char plain[] = "/tmp/unit_spawn.plain.XXXXXX"; /* no x bit at all: EACCES, even for root */
    int fd = mkstemp(plain);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char *noexec[] = {plain, NULL};
    cfg.argv = noexec;
    failed = false;
    ck_assert_int_eq(spawn_command(&cfg, &pid, &failed), -EACCES);
    ck_assert(failed);
    unlink(plain);
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1); /* the failed children were reaped */
    ck_assert_int_eq(errno, ECHILD);
}
END_TEST

/* A long argument vector: execvpe falls back to /bin/sh for a script, copying the vector on the
 * child's stack. */
START_TEST(test_long_argv_script)
{
    char dir[] = "/tmp/unit_spawn.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char script[64];
    snprintf(script, sizeof script, "%s/count", dir);
    FILE *f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fputs("echo $#\n", f); /* no #! line: execve says ENOEXEC */
    fclose(f);
    chmod(script, 0755);
    enum { N = 100000 };
    char **argv = calloc(N + 2, sizeof *argv);
    argv[0] = script;
    for (int i = 1; i <= N; i++)
        argv[i] = A("x");
    struct spawn_config cfg = base(_i);
    int st;
    const char *out = run(argv, &cfg, &st);
    ck_assert_str_eq(out, "100000\n");
    free(argv);
    unlink(script);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("spawn");
    TCase *tc = tcase_create("spawn");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_environment, 0, 2);
    tcase_add_loop_test(tc, test_signal_mask, 0, 2);
    tcase_add_loop_test(tc, test_exec_errors, 0, 2);
    tcase_add_loop_test(tc, test_long_argv_script, 0, 2);
    suite_add_tcase(s, tc);
    return check_run(s);
}
