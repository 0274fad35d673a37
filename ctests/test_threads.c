/* test_threads.c — many host threads call dstebz_gpu at once (hylapack is
 * meant to be thread-safe); every call must give the answer that the system
 * LAPACK gave for the same input, computed beforehand on one thread. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hylapack.h"

extern void dstebz_(const char *range, const char *order, const int *n, const double *vl,
                    const double *vu, const int *il, const int *iu, const double *abstol,
                    const double *d, const double *e, int *m, int *nsplit, double *w,
                    int *iblock, int *isplit, double *work, int *iwork, int *info,
                    size_t range_len, size_t order_len);

#define NTHREADS 8
#define NPROBLEMS 6
#define ROUNDS 4

struct problem {
    int n, m, nsplit;
    double tol;
    double *d, *e, *w;
    int *iblock, *isplit;
};

static struct problem problems[NPROBLEMS];

static void *worker(void *arg)
{
    size_t id = (size_t)arg;
    int round, p, i, bad = 0;
    for (round = 0; round < ROUNDS; round++) {
        for (p = 0; p < NPROBLEMS; p++) {
            const struct problem *q = &problems[(p + id) % NPROBLEMS];
            size_t k = (size_t)q->n;
            double *w = malloc(k * sizeof *w);
            int *iblock = malloc(k * sizeof *iblock), *isplit = malloc(k * sizeof *isplit);
            int m = -1, nsplit = -1, info;
            if (!w || !iblock || !isplit) { bad++; break; }
            info = dstebz_gpu('A', 'B', q->n, 0.0, 0.0, 0, 0, 0.0, q->d, q->e, &m, &nsplit, w,
                              iblock, isplit);
            if (info != 0 || m != q->m || nsplit != q->nsplit) {
                bad++;
            } else {
                for (i = 0; i < m; i++)
                    if (!(fabs(w[i] - q->w[i]) <= q->tol) || iblock[i] != q->iblock[i]) bad++;
                for (i = 0; i < nsplit; i++)
                    if (isplit[i] != q->isplit[i]) bad++;
            }
            free(w); free(iblock); free(isplit);
        }
    }
    return (void *)(size_t)bad;
}

int main(void)
{
    static const int sizes[NPROBLEMS] = {5, 40, 128, 300, 511, 800};
    const char *env = getenv("HYLAPACK_TEST_SEED");
    unsigned seed = env && *env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL);
    pthread_t threads[NTHREADS];
    size_t t;
    int p, i, failures = 0;

    printf("test_threads: seed %u (set HYLAPACK_TEST_SEED=%u to repeat)\n", seed, seed);
    srand(seed);
    for (p = 0; p < NPROBLEMS; p++) {
        struct problem *q = &problems[p];
        int n = sizes[p], info = 0, il = 0, iu = 0;
        double vl = 0.0, vu = 0.0, abstol = 0.0, tnorm = 0.0;
        double *work = malloc((size_t)(4 * n) * sizeof *work);
        int *iwork = malloc((size_t)(3 * n) * sizeof *iwork);
        q->n = n;
        q->d = malloc((size_t)n * sizeof *q->d);
        q->e = malloc((size_t)n * sizeof *q->e);
        q->w = malloc((size_t)n * sizeof *q->w);
        q->iblock = malloc((size_t)n * sizeof *q->iblock);
        q->isplit = malloc((size_t)n * sizeof *q->isplit);
        if (!work || !iwork || !q->d || !q->e || !q->w || !q->iblock || !q->isplit) {
            perror("malloc");
            return 2;
        }
        for (i = 0; i < n; i++) {
            q->d[i] = 2.0 * rand() / RAND_MAX - 1.0;
            q->e[i] = 2.0 * rand() / RAND_MAX - 1.0;
            if (fabs(q->d[i]) > tnorm) tnorm = fabs(q->d[i]);
            if (i + 1 < n && fabs(q->e[i]) > tnorm) tnorm = fabs(q->e[i]);
        }
        q->tol = 4.0 * n * DBL_EPSILON * tnorm;
        dstebz_("A", "B", &n, &vl, &vu, &il, &iu, &abstol, q->d, q->e, &q->m, &q->nsplit, q->w,
                q->iblock, q->isplit, work, iwork, &info, 1, 1);
        if (info != 0) {
            fprintf(stderr, "LAPACK dstebz_ failed: info %d\n", info);
            return 2;
        }
        free(work); free(iwork);
    }

    for (t = 0; t < NTHREADS; t++)
        if (pthread_create(&threads[t], NULL, worker, (void *)t) != 0) {
            perror("pthread_create");
            return 2;
        }
    for (t = 0; t < NTHREADS; t++) {
        void *ret;
        pthread_join(threads[t], &ret);
        if ((size_t)ret != 0) {
            fprintf(stderr, "FAIL: thread %zu: %zu wrong results\n", t, (size_t)ret);
            failures++;
        }
    }
    printf("test_threads: %d passed, %d failed\n", NTHREADS - failures, failures);
    return failures == 0 ? 0 : 1;
}
