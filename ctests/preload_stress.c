/* preload_stress.c — a program linked against plain LAPACK only, run by CTest
 * under LD_PRELOAD=libhylapack_preload.so: 8 threads each make many DSTEBZ
 * calls at once (sizes 1..600, RANGE 'A' and 'I', ORDER 'E' and 'B'), and
 * every answer is checked against the one the system LAPACK gave for the same
 * input, computed beforehand on one thread.
 *
 * The reference is the system LAPACK's own dstebz_, found among the loaded
 * objects (the first one in load order that defines dstebz_ and is not the
 * preload library), so it is LAPACK's even while dstebz_ is interposed.
 * M, NSPLIT, IBLOCK, ISPLIT and INFO must be equal; W within 1e-13 ||T||
 * (hylapack's bisection is expected to match LAPACK's bit for bit on the CPU).
 *
 * With --expect-preload, it also fails unless the program's dstebz_ resolves
 * into the preload library (the one that defines hylapack_preload_version).
 *
 * Environment: HYLAPACK_TEST_SEED (default 20261122), STRESS_CALLS (calls per
 * thread, default 200). Failed checks print lines starting with "FAIL". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void stebz_fn(const char *range, const char *order, const int *n, const double *vl,
                      const double *vu, const int *il, const int *iu, const double *abstol,
                      const double *d, const double *e, int *m, int *nsplit, double *w,
                      int *iblock, int *isplit, double *work, int *iwork, int *info,
                      size_t range_len, size_t order_len);

extern stebz_fn dstebz_;

#define NTHREADS 8
#define NPROBLEMS 48
#define MAXN 600

struct problem {
    int n, il, iu;
    char range, order;
    double tnorm;
    double *d, *e;
    /* the system LAPACK's answer */
    int info, m, nsplit;
    double *w;
    int *iblock, *isplit;
};

static struct problem problems[NPROBLEMS];
static int calls_per_thread = 200;

/* ------------------------------------------------------------------ random */
static uint64_t rng_state;

static uint64_t splitmix64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(void) /* [-1, 1) */
{
    return (double)(splitmix64() >> 11) * 0x1.0p-52 - 1.0;
}

static int below(int k) /* 0 .. k-1 */
{
    return (int)(splitmix64() % (uint64_t)k);
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) { perror("malloc"); exit(2); }
    return p;
}

/* ------------------------------------------------ which object is which */
struct lookup {
    const char *skip_marker; /* objects that define this are skipped */
    void *found;
    char name[4096];
};

/* Is `sym` (looked up through `handle`) defined in the object named `name` itself? */
static void *own_symbol(void *handle, const char *name, const char *sym)
{
    Dl_info info;
    void *p = dlsym(handle, sym);
    if (!p || !dladdr(p, &info) || !info.dli_fname) return NULL;
    return strcmp(info.dli_fname, name) == 0 ? p : NULL;
}

static int find_reference(struct dl_phdr_info *info, size_t size, void *data)
{
    struct lookup *l = data;
    void *handle, *p;
    (void)size;
    if (l->found || !info->dlpi_name || !info->dlpi_name[0]) return 0;
    handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return 0;
    p = own_symbol(handle, info->dlpi_name, "dstebz_");
    if (p && !own_symbol(handle, info->dlpi_name, l->skip_marker)) {
        l->found = p;
        snprintf(l->name, sizeof l->name, "%s", info->dlpi_name);
    }
    dlclose(handle);
    return 0;
}

/* ---------------------------------------------------------------- problems */
static void make_problem(struct problem *q, int index)
{
    static const int fixed_sizes[] = {1, 2, 3, 4, 17, 255, 256, 257, 300, 599, 600};
    int n, i, kind;
    const int nfixed = (int)(sizeof fixed_sizes / sizeof fixed_sizes[0]);

    n = index < nfixed ? fixed_sizes[index] : 1 + below(MAXN);
    q->n = n;
    q->d = xmalloc((size_t)n * sizeof *q->d);
    q->e = xmalloc((size_t)n * sizeof *q->e);
    kind = index % 4;
    for (i = 0; i < n; i++) {
        switch (kind) {
        case 0: /* random */
            q->d[i] = 4.0 * uniform();
            q->e[i] = uniform();
            break;
        case 1: /* random, split in several places */
            q->d[i] = uniform();
            q->e[i] = below(40) == 0 ? 0.0 : uniform();
            break;
        case 2: /* tridiag(-1, 2, -1), scaled */
            q->d[i] = 2.0e3;
            q->e[i] = -1.0e3;
            break;
        default: /* graded, with tiny off-diagonals that split by tolerance */
            q->d[i] = (double)(i % 7) + 0.5 * uniform();
            q->e[i] = below(9) == 0 ? 1e-300 : 1e-3 * uniform();
            break;
        }
    }
    q->e[n - 1] = 0.0;
    q->tnorm = 0.0;
    for (i = 0; i < n; i++) {
        double row = fabs(q->d[i]) + fabs(q->e[i]) + (i > 0 ? fabs(q->e[i - 1]) : 0.0);
        if (row > q->tnorm) q->tnorm = row;
    }
    q->order = (index / 2) % 2 ? 'B' : 'E';
    if (index % 3 == 1) {
        q->range = 'I';
        q->il = 1 + below(n);
        q->iu = q->il + below(n - q->il + 1);
    } else {
        q->range = 'A';
        q->il = q->iu = 0;
    }
}

struct answer {
    int info, m, nsplit;
    double *w, *work;
    int *iblock, *isplit, *iwork;
};

static void answer_alloc(struct answer *a, int n)
{
    a->w = xmalloc((size_t)n * sizeof *a->w);
    a->work = xmalloc((size_t)4 * n * sizeof *a->work);
    a->iblock = xmalloc((size_t)n * sizeof *a->iblock);
    a->isplit = xmalloc((size_t)n * sizeof *a->isplit);
    a->iwork = xmalloc((size_t)3 * n * sizeof *a->iwork);
}

static void answer_free(struct answer *a)
{
    free(a->w); free(a->work); free(a->iblock); free(a->isplit); free(a->iwork);
}

static void solve(stebz_fn *f, const struct problem *q, struct answer *a)
{
    const double vl = 0.0, vu = 0.0, abstol = 0.0;
    char range[2] = {q->range, 0}, order[2] = {q->order, 0};
    a->info = a->m = a->nsplit = -12345;
    f(range, order, &q->n, &vl, &vu, &q->il, &q->iu, &abstol, q->d, q->e, &a->m, &a->nsplit,
      a->w, a->iblock, a->isplit, a->work, a->iwork, &a->info, 1, 1);
}

/* 0 if the answer matches the reference, else prints why and returns 1. */
static int compare(const struct problem *q, const struct answer *a, int thread, int call)
{
    int i;
    const double tol = 1e-13 * q->tnorm;
    if (a->info != q->info || a->m != q->m || a->nsplit != q->nsplit) {
        fprintf(stderr,
                "FAIL: thread %d call %d: n=%d range %c order %c: info/m/nsplit %d/%d/%d, "
                "LAPACK %d/%d/%d\n",
                thread, call, q->n, q->range, q->order, a->info, a->m, a->nsplit, q->info,
                q->m, q->nsplit);
        return 1;
    }
    for (i = 0; i < q->nsplit; i++) {
        if (a->isplit[i] != q->isplit[i]) {
            fprintf(stderr, "FAIL: thread %d call %d: n=%d: isplit[%d] %d, LAPACK %d\n", thread,
                    call, q->n, i, a->isplit[i], q->isplit[i]);
            return 1;
        }
    }
    for (i = 0; i < q->m; i++) {
        if (a->iblock[i] != q->iblock[i] || !(fabs(a->w[i] - q->w[i]) <= tol)) {
            fprintf(stderr,
                    "FAIL: thread %d call %d: n=%d range %c order %c: w[%d] %.17g iblock %d, "
                    "LAPACK %.17g iblock %d\n",
                    thread, call, q->n, q->range, q->order, i, a->w[i], a->iblock[i], q->w[i],
                    q->iblock[i]);
            return 1;
        }
    }
    return 0;
}

struct thread_result {
    int bad, calls;
    long bitwise_diff; /* eigenvalues that were not bitwise LAPACK's (allowed) */
};

static struct thread_result results[NTHREADS];

static void *worker(void *arg)
{
    int id = (int)(size_t)arg, call;
    struct answer a;
    answer_alloc(&a, MAXN);
    for (call = 0; call < calls_per_thread; call++) {
        const struct problem *q = &problems[(call * 7 + id * 13) % NPROBLEMS];
        int i;
        solve(dstebz_, q, &a);
        results[id].calls++;
        if (compare(q, &a, id, call)) {
            results[id].bad++;
            continue;
        }
        for (i = 0; i < q->m; i++)
            if (memcmp(&a.w[i], &q->w[i], sizeof a.w[i]) != 0) results[id].bitwise_diff++;
    }
    answer_free(&a);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *env;
    int expect_preload = argc > 1 && strcmp(argv[1], "--expect-preload") == 0;
    int p, t, bad = 0, calls = 0, failures = 0;
    long bitwise_diff = 0;
    unsigned long long seed = 20261122ULL;
    struct lookup ref = {"hylapack_preload_version", NULL, ""};
    stebz_fn *lapack;
    Dl_info used;
    void *self, *hylapack_marker;
    pthread_t threads[NTHREADS];

    if ((env = getenv("HYLAPACK_TEST_SEED")) && *env) seed = strtoull(env, NULL, 10);
    if ((env = getenv("STRESS_CALLS")) && *env) calls_per_thread = atoi(env);
    rng_state = seed;
    printf("preload_stress: seed %llu (set HYLAPACK_TEST_SEED to change), %d threads x %d "
           "calls\n", seed, NTHREADS, calls_per_thread);

    /* Which dstebz_ does this program call, and where is LAPACK's own? */
    {
        stebz_fn *called = dstebz_;
        void *called_p;
        memcpy(&called_p, &called, sizeof called_p);
        if (!dladdr(called_p, &used) || !used.dli_fname) {
            fprintf(stderr, "FAIL: dladdr(dstebz_) failed\n");
            return 1;
        }
        self = dlopen(used.dli_fname[0] ? used.dli_fname : NULL, RTLD_LAZY | RTLD_NOLOAD);
        hylapack_marker = self ? own_symbol(self, used.dli_fname, "hylapack_preload_version")
                               : NULL;
        if (self) dlclose(self);
    }
    dl_iterate_phdr(find_reference, &ref);
    printf("preload_stress: dstebz_ resolves to %s (%s)\n", used.dli_fname,
           hylapack_marker ? "hylapack's preload library" : "not hylapack");
    if (!ref.found) {
        fprintf(stderr, "FAIL: no LAPACK dstebz_ found among the loaded objects\n");
        return 1;
    }
    printf("preload_stress: reference: LAPACK's dstebz_ in %s\n", ref.name);
    if (expect_preload && !hylapack_marker) {
        fprintf(stderr, "FAIL: --expect-preload, but dstebz_ is not the preload library's "
                        "(is LD_PRELOAD set?)\n");
        return 1;
    }
    memcpy(&lapack, &ref.found, sizeof lapack);

    /* Serial reference answers from LAPACK itself. */
    for (p = 0; p < NPROBLEMS; p++) {
        struct problem *q = &problems[p];
        struct answer a;
        make_problem(q, p);
        answer_alloc(&a, q->n);
        solve(lapack, q, &a);
        if (a.info != 0) {
            fprintf(stderr, "FAIL: LAPACK reference, problem %d (n=%d): info %d\n", p, q->n,
                    a.info);
            failures++;
        }
        q->info = a.info;
        q->m = a.m;
        q->nsplit = a.nsplit;
        q->w = a.w;
        q->iblock = a.iblock;
        q->isplit = a.isplit;
        free(a.work);
        free(a.iwork);
    }
    if (failures) return 1;

    for (t = 0; t < NTHREADS; t++) {
        if (pthread_create(&threads[t], NULL, worker, (void *)(size_t)t) != 0) {
            fprintf(stderr, "FAIL: pthread_create\n");
            return 1;
        }
    }
    for (t = 0; t < NTHREADS; t++) {
        pthread_join(threads[t], NULL);
        bad += results[t].bad;
        calls += results[t].calls;
        bitwise_diff += results[t].bitwise_diff;
    }

    for (p = 0; p < NPROBLEMS; p++) {
        free(problems[p].d); free(problems[p].e); free(problems[p].w);
        free(problems[p].iblock); free(problems[p].isplit);
    }
    printf("preload_stress: %d calls, %d wrong, %ld eigenvalues not bitwise LAPACK's "
           "(allowed within 1e-13 ||T||)\n",
           calls, bad, bitwise_diff);
    if (bad != 0 || calls != NTHREADS * calls_per_thread) {
        fprintf(stderr, "FAIL: %d of %d calls wrong\n", bad, calls);
        return 1;
    }
    printf("preload_stress: OK\n");
    return 0;
}
