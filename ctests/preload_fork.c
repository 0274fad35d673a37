/* preload_fork.c — a program linked against plain LAPACK, run with the preload library and
 * HYLAPACK_LOG=info: four threads call DSTEBZ (order 40, which hylapack runs and logs) without
 * pause while the main thread forks 1000 times; each child makes one logged call itself and
 * exits. A child that blocks on a lock some parent thread held at the fork (the standard-error
 * lock, once) is stopped by its alarm after 5 s and counted as a hang.
 *
 * Standard error goes to /dev/null: the log lines are still written (the path under test),
 * only not kept. Results go to standard output. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

void dstebz_(const char *range, const char *order, const int *n, const double *vl,
             const double *vu, const int *il, const int *iu, const double *abstol,
             const double *d, const double *e, int *m, int *nsplit, double *w, int *iblock,
             int *isplit, double *work, int *iwork, int *info, size_t range_len,
             size_t order_len);

enum { N = 40, FORKS = 1000, THREADS = 4 };

static volatile int stop;

/* One DSTEBZ call on tridiag(-1, 2, -1) of order N; returns M (N when all is well). */
static int one_call(void)
{
    double d[N], e[N], w[N], work[4 * N];
    int iblock[N], isplit[N], iwork[3 * N];
    int n = N, il = 0, iu = 0, m = 0, nsplit = 0, info = 0;
    double vl = 0, vu = 0, abstol = 0;
    for (int i = 0; i < N; i++) {
        d[i] = 2;
        e[i] = -1;
    }
    dstebz_("A", "E", &n, &vl, &vu, &il, &iu, &abstol, d, e, &m, &nsplit, w, iblock, isplit,
            work, iwork, &info, 1, 1);
    return info == 0 ? m : -1;
}

static void *caller(void *arg)
{
    (void)arg;
    while (!stop)
        one_call();
    return NULL;
}

int main(void)
{
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull < 0 || dup2(devnull, 2) < 0) {
        printf("FAIL: cannot send standard error to /dev/null\n");
        return 1;
    }
    /* One call before the threads start: the first call initialises hylapack (symbol lookups
     * under the loader's lock, settings), and a fork in the middle of that one-time work is
     * not what this test is about (POSIX leaves such a child undefined). */
    if (one_call() != N) {
        printf("FAIL: DSTEBZ before forking\n");
        return 1;
    }
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, caller, NULL);
    int passed = 0, hung = 0, wrong = 0;
    for (int k = 0; k < FORKS; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(5);
            _exit(one_call() == N ? 0 : 3);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0) {
            wrong++;
            continue;
        }
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
            hung++;
            printf("fork %d hung\n", k);
        }
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            passed++;
        else
            wrong++;
    }
    stop = 1;
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    if (hung)
        printf("FAIL: %d of %d children hung\n", hung, FORKS);
    if (wrong)
        printf("FAIL: %d of %d children failed otherwise\n", wrong, FORKS);
    printf("preload_fork: %d passed, %d failed\n", passed, hung + wrong);
    return hung + wrong == 0 ? 0 : 1;
}
