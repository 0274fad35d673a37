/* test_preload_dlopen.c — libhylapack_preload.so loads (all its dependencies
 * resolve) when opened with RTLD_NOW. The path comes from the CMake package's
 * hylapack::preload target (HYLAPACK_PRELOAD_PATH) or from argv[1]. */
#include <dlfcn.h>
#include <stdio.h>

#ifndef HYLAPACK_PRELOAD_PATH
#define HYLAPACK_PRELOAD_PATH "libhylapack_preload.so"
#endif

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : HYLAPACK_PRELOAD_PATH;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: dlopen(%s): %s\n", path, dlerror());
        return 1;
    }
    printf("test_preload_dlopen: loaded %s\n", path);
    if (dlclose(h) != 0) {
        fprintf(stderr, "FAIL: dlclose(%s): %s\n", path, dlerror());
        return 1;
    }
    printf("test_preload_dlopen: 1 passed, 0 failed\n");
    return 0;
}
