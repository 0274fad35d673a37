/* preload_idle.c — a program that links no LAPACK and calls none, run under LD_PRELOAD: the
 * preload library must load no LAPACK or BLAS (no OpenBLAS mapped) and start no thread. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL: %s\n", what);
    }
}

/* Whether a mapped file's path contains `part`. */
static int mapped(const char *part)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        found |= strstr(line, part) != NULL;
    if (f)
        fclose(f);
    return found;
}

static int threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int t = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &t) == 1)
            break;
    if (f)
        fclose(f);
    return t;
}

int main(void)
{
    check(dlsym(RTLD_DEFAULT, "hylapack_preload_version") != NULL,
          "the preload library is loaded (run under LD_PRELOAD)");
    check(!mapped("openblas") && !mapped("liblapack") && !mapped("libblas"),
          "no LAPACK or BLAS mapped in a process that calls none");
    check(threads() == 1, "no thread started in a process that calls no LAPACK");
    printf("preload_idle: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
