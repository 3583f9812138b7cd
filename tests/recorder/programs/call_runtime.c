/*
 * Calls a real CUDA runtime's cudaLaunchKernel N times, as an application
 * would, on a machine without a GPU: each call fails inside the runtime and
 * never reaches a driver launch. Prints how often each return code came back.
 *     call_runtime LIBCUDART N
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { unsigned int x, y, z; } dim3;
typedef int (*launch_fn)(const void *func, dim3 grid, dim3 block, void **args, size_t shared_mem, void *stream);

#define MAX_CODE 1024

int main(int argc, char **argv)
{
    static int returned[MAX_CODE];
    if (argc != 3) {
        fprintf(stderr, "usage: call_runtime LIBCUDART N\n");
        return 2;
    }
    void *runtime = dlopen(argv[1], RTLD_NOW);
    if (!runtime) {
        fprintf(stderr, "call_runtime: %s\n", dlerror());
        return 2;
    }
    launch_fn launch = (launch_fn)dlsym(runtime, "cudaLaunchKernel");
    if (!launch) {
        fprintf(stderr, "call_runtime: no cudaLaunchKernel in %s\n", argv[1]);
        return 2;
    }
    int n = atoi(argv[2]);
    dim3 grid = {7, 2, 1}, block = {128, 1, 1};
    for (int i = 0; i < n; i++) {
        int code = launch((const void *)0x1234, grid, block, NULL, 4096, NULL);
        returned[code >= 0 && code < MAX_CODE ? code : MAX_CODE - 1]++;
    }
    for (int code = 0; code < MAX_CODE; code++)
        if (returned[code])
            printf("returned %d: %d\n", code, returned[code]);
    return 0;
}
