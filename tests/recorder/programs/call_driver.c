/*
 * Calls a CUDA driver library's entry points N times each, without cuInit:
 * on NVIDIA's real libcuda.so.1 every call passes its dispatch thunk and
 * returns CUDA_ERROR_NOT_INITIALIZED at once (no GPU needed), which is all a
 * uprobe on the entry point needs. Prints how often each return code came back.
 *     call_driver LIBCUDA N
 * The arguments are fixed so a test can check every recorded one.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*stream_sync_fn)(CUstream);

#define MAX_CODE 1024
#define FUNCTION ((CUfunction)0x1234)
#define GRAPH ((CUgraphExec)0x4321)
#define STREAM ((CUstream)0x5678)

static void *must_find(void *library, const char *name)
{
    void *symbol = dlsym(library, name);
    if (!symbol) {
        fprintf(stderr, "call_driver: no %s\n", name);
        exit(2);
    }
    return symbol;
}

int main(int argc, char **argv)
{
    static int returned[MAX_CODE];
    if (argc != 3) {
        fprintf(stderr, "usage: call_driver LIBCUDA N\n");
        return 2;
    }
    void *driver = dlopen(argv[1], RTLD_NOW);
    if (!driver) {
        fprintf(stderr, "call_driver: %s\n", dlerror());
        return 2;
    }
    launch_fn launch = (launch_fn)must_find(driver, "cuLaunchKernel");
    launch_ex_fn launch_ex = (launch_ex_fn)must_find(driver, "cuLaunchKernelEx");
    graph_launch_fn graph_launch = (graph_launch_fn)must_find(driver, "cuGraphLaunch");
    stream_sync_fn stream_sync = (stream_sync_fn)must_find(driver, "cuStreamSynchronize");
    CUlaunchConfig config = {.gridDimX = 9, .gridDimY = 3, .gridDimZ = 1, .blockDimX = 256,
                             .blockDimY = 1, .blockDimZ = 1, .sharedMemBytes = 8192, .hStream = STREAM};
    int n = atoi(argv[2]);
    for (int i = 0; i < n; i++) {
        int codes[4] = {
            launch(FUNCTION, 7, 2, 1, 128, 1, 1, 4096, STREAM, NULL, NULL),
            launch_ex(&config, FUNCTION, NULL, NULL),
            graph_launch(GRAPH, STREAM),
            stream_sync(STREAM),
        };
        for (int c = 0; c < 4; c++)
            returned[codes[c] >= 0 && codes[c] < MAX_CODE ? codes[c] : MAX_CODE - 1]++;
    }
    for (int code = 0; code < MAX_CODE; code++)
        if (returned[code])
            printf("returned %d: %d\n", code, returned[code]);
    return 0;
}
