/*
 * libcudart stand-in, built both as libcudart.so.12 and as the static
 * archive libcudart_static.a that nvcc links by default. Like the real
 * runtime it reaches the driver through dlopen("libcuda.so.1"), and every
 * runtime launch ends in exactly one driver launch.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda.h"
#include "cuda_runtime.h"
#include "cudasim.h"

#define CUSIM_EXPORT __attribute__((visibility("default")))

typedef CUresult (*launch_kernel_fn)(CUfunction, unsigned int, unsigned int, unsigned int,
                                     unsigned int, unsigned int, unsigned int, unsigned int,
                                     CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*launch_coop_fn)(CUfunction, unsigned int, unsigned int, unsigned int,
                                   unsigned int, unsigned int, unsigned int, unsigned int,
                                   CUstream, void **);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*stream_fn)(CUstream);
typedef CUresult (*void_fn)(void);
typedef CUresult (*event_fn)(CUevent);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned int);
typedef CUresult (*event_create_fn)(CUevent *, unsigned int);
typedef CUresult (*event_record_fn)(CUevent, CUstream);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);
typedef void (*note_fn)(int);
typedef void (*refusal_fn)(int, int);
typedef CUresult (*init_fn)(unsigned int);
typedef struct cusim_call (*call_begin_fn)(int);
typedef int (*call_end_fn)(const struct cusim_call *, int);

static struct driver {
    launch_kernel_fn launch, launch_ptsz;
    launch_ex_fn launch_ex, launch_ex_ptsz;
    launch_coop_fn launch_coop, launch_coop_ptsz;
    graph_launch_fn graph_launch, graph_launch_ptsz;
    stream_fn stream_sync, stream_sync_ptsz, stream_destroy;
    void_fn ctx_sync;
    event_fn event_sync, event_destroy;
    stream_create_fn stream_create;
    event_create_fn event_create;
    event_record_fn event_record;
    alloc_fn mem_alloc;
    free_fn mem_free;
    htod_fn htod, htod_ptds;
    dtoh_fn dtoh, dtoh_ptds;
    note_fn note_runtime_api;
    refusal_fn log_runtime_error;
    init_fn init;
    call_begin_fn call_begin;
    call_end_fn call_end;
} drv;

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static int driver_ok;

#define RESOLVE(field, symbol)                                              \
    do {                                                                    \
        *(void **)(&drv.field) = dlsym(handle, symbol);                     \
        if (!drv.field) {                                                   \
            fprintf(stderr, "cudart(sim): libcuda.so.1 lacks %s\n", symbol); \
            return;                                                         \
        }                                                                   \
    } while (0)

static void load_driver(void)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
        fprintf(stderr, "cudart(sim): cannot load libcuda.so.1: %s\n", dlerror());
        return;
    }
    RESOLVE(launch, "cuLaunchKernel");
    RESOLVE(launch_ptsz, "cuLaunchKernel_ptsz");
    RESOLVE(launch_ex, "cuLaunchKernelEx");
    RESOLVE(launch_ex_ptsz, "cuLaunchKernelEx_ptsz");
    RESOLVE(launch_coop, "cuLaunchCooperativeKernel");
    RESOLVE(launch_coop_ptsz, "cuLaunchCooperativeKernel_ptsz");
    RESOLVE(graph_launch, "cuGraphLaunch");
    RESOLVE(graph_launch_ptsz, "cuGraphLaunch_ptsz");
    RESOLVE(stream_sync, "cuStreamSynchronize");
    RESOLVE(stream_sync_ptsz, "cuStreamSynchronize_ptsz");
    RESOLVE(stream_destroy, "cuStreamDestroy_v2");
    RESOLVE(ctx_sync, "cuCtxSynchronize");
    RESOLVE(event_sync, "cuEventSynchronize");
    RESOLVE(event_destroy, "cuEventDestroy_v2");
    RESOLVE(stream_create, "cuStreamCreate");
    RESOLVE(event_create, "cuEventCreate");
    RESOLVE(event_record, "cuEventRecord");
    RESOLVE(mem_alloc, "cuMemAlloc_v2");
    RESOLVE(mem_free, "cuMemFree_v2");
    RESOLVE(htod, "cuMemcpyHtoD_v2");
    RESOLVE(htod_ptds, "cuMemcpyHtoD_v2_ptds");
    RESOLVE(dtoh, "cuMemcpyDtoH_v2");
    RESOLVE(dtoh_ptds, "cuMemcpyDtoH_v2_ptds");
    RESOLVE(note_runtime_api, "cusim_note_runtime_api");
    RESOLVE(log_runtime_error, "cusim_log_runtime_error");
    RESOLVE(init, "cuInit");
    RESOLVE(call_begin, "cusim_call_begin");
    RESOLVE(call_end, "cusim_call_end");
    /* as the real runtime does on its first call: cuInit, where the driver loads CUDA_INJECTION64_PATH */
    driver_ok = drv.init(0) == CUDA_SUCCESS;
}

static int driver_ready(void)
{
    pthread_once(&driver_once, load_driver);
    return driver_ok;
}

static cudaError_t to_runtime_error(CUresult r)
{
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

/*
 * A runtime call reaching the driver through EXPR: named in the driver's ground truth,
 * and reported to the stand-in libcupti's hooks around it (a runtime API record, whose
 * correlation id the driver call's own record does not share, as in CUPTI). Calls the
 * runtime refuses before the driver are not reported.
 */
#define RUNTIME_CALL(api, expr)                             \
    ({                                                      \
        struct cusim_call call_ = drv.call_begin(api);      \
        cudaError_t result_;                                \
        drv.note_runtime_api(api);                          \
        result_ = to_runtime_error(expr);                   \
        (cudaError_t)drv.call_end(&call_, result_);         \
    })

#define REQUIRE_DRIVER()                      \
    do {                                      \
        if (!driver_ready())                  \
            return cudaErrorInitializationError; \
    } while (0)

/* ---- launches -------------------------------------------------------- */

/*
 * Like the real runtime, a launch with an empty grid or block is refused
 * before the driver is called (cudaErrorInvalidConfiguration): a launch
 * attempt no driver probe sees. The refusal goes into the ground truth.
 */
static int refuse_empty_geometry(int api, dim3 grid, dim3 block)
{
    if (grid.x && grid.y && grid.z && block.x && block.y && block.z)
        return 0;
    drv.log_runtime_error(api, cudaErrorInvalidConfiguration);
    return 1;
}

#define REFUSE_EMPTY_GEOMETRY(api, grid, block)              \
    do {                                                     \
        if (refuse_empty_geometry(api, grid, block))         \
            return cudaErrorInvalidConfiguration;            \
    } while (0)

CUSIM_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
                                          size_t shared_mem, cudaStream_t stream)
{
    REQUIRE_DRIVER();
    REFUSE_EMPTY_GEOMETRY(CUSIM_API_cudaLaunchKernel, grid, block);
    return RUNTIME_CALL(CUSIM_API_cudaLaunchKernel, drv.launch((CUfunction)func, grid.x, grid.y, grid.z, block.x, block.y,
                                       block.z, (unsigned int)shared_mem, stream, args, NULL));
}

CUSIM_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block,
                                               void **args, size_t shared_mem,
                                               cudaStream_t stream)
{
    REQUIRE_DRIVER();
    REFUSE_EMPTY_GEOMETRY(CUSIM_API_cudaLaunchKernel_ptsz, grid, block);
    return RUNTIME_CALL(CUSIM_API_cudaLaunchKernel_ptsz, drv.launch_ptsz((CUfunction)func, grid.x, grid.y, grid.z, block.x,
                                            block.y, block.z, (unsigned int)shared_mem, stream,
                                            args, NULL));
}

static CUlaunchConfig driver_config(const cudaLaunchConfig_t *config)
{
    CUlaunchConfig out = {
        .gridDimX = config->gridDim.x,
        .gridDimY = config->gridDim.y,
        .gridDimZ = config->gridDim.z,
        .blockDimX = config->blockDim.x,
        .blockDimY = config->blockDim.y,
        .blockDimZ = config->blockDim.z,
        .sharedMemBytes = (unsigned int)config->dynamicSmemBytes,
        .hStream = config->stream,
        .attrs = NULL,
        .numAttrs = 0,
    };
    return out;
}

CUSIM_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
                                             void **args)
{
    CUlaunchConfig cu;
    REQUIRE_DRIVER();
    if (!config)
        return cudaErrorInvalidValue;
    REFUSE_EMPTY_GEOMETRY(CUSIM_API_cudaLaunchKernelExC, config->gridDim, config->blockDim);
    cu = driver_config(config);
    return RUNTIME_CALL(CUSIM_API_cudaLaunchKernelExC, drv.launch_ex(&cu, (CUfunction)func, args, NULL));
}

CUSIM_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config,
                                                  const void *func, void **args)
{
    CUlaunchConfig cu;
    REQUIRE_DRIVER();
    if (!config)
        return cudaErrorInvalidValue;
    REFUSE_EMPTY_GEOMETRY(CUSIM_API_cudaLaunchKernelExC_ptsz, config->gridDim, config->blockDim);
    cu = driver_config(config);
    return RUNTIME_CALL(CUSIM_API_cudaLaunchKernelExC_ptsz, drv.launch_ex_ptsz(&cu, (CUfunction)func, args, NULL));
}

CUSIM_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 grid, dim3 block,
                                                     void **args, size_t shared_mem,
                                                     cudaStream_t stream)
{
    REQUIRE_DRIVER();
    REFUSE_EMPTY_GEOMETRY(CUSIM_API_cudaLaunchCooperativeKernel, grid, block);
    return RUNTIME_CALL(CUSIM_API_cudaLaunchCooperativeKernel, drv.launch_coop((CUfunction)func, grid.x, grid.y, grid.z, block.x,
                                            block.y, block.z, (unsigned int)shared_mem, stream,
                                            args));
}

CUSIM_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 grid,
                                                          dim3 block, void **args,
                                                          size_t shared_mem, cudaStream_t stream)
{
    REQUIRE_DRIVER();
    REFUSE_EMPTY_GEOMETRY(CUSIM_API_cudaLaunchCooperativeKernel_ptsz, grid, block);
    return RUNTIME_CALL(CUSIM_API_cudaLaunchCooperativeKernel_ptsz, drv.launch_coop_ptsz((CUfunction)func, grid.x, grid.y, grid.z,
                                                 block.x, block.y, block.z,
                                                 (unsigned int)shared_mem, stream, args));
}

CUSIM_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    REQUIRE_DRIVER();
    return RUNTIME_CALL(CUSIM_API_cudaGraphLaunch, drv.graph_launch(exec, stream));
}

CUSIM_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream)
{
    REQUIRE_DRIVER();
    return RUNTIME_CALL(CUSIM_API_cudaGraphLaunch_ptsz, drv.graph_launch_ptsz(exec, stream));
}

/* ---- streams, events, syncs ----------------------------------------- */

CUSIM_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    REQUIRE_DRIVER();
    return to_runtime_error(drv.stream_create(stream, 0));
}

CUSIM_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    REQUIRE_DRIVER();
    return to_runtime_error(drv.stream_destroy(stream));
}

CUSIM_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    REQUIRE_DRIVER();
    return RUNTIME_CALL(CUSIM_API_cudaStreamSynchronize, drv.stream_sync(stream));
}

CUSIM_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    REQUIRE_DRIVER();
    return RUNTIME_CALL(CUSIM_API_cudaStreamSynchronize_ptsz, drv.stream_sync_ptsz(stream));
}

CUSIM_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    REQUIRE_DRIVER();
    return RUNTIME_CALL(CUSIM_API_cudaDeviceSynchronize, drv.ctx_sync());
}

CUSIM_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    REQUIRE_DRIVER();
    return to_runtime_error(drv.event_create(event, 0));
}

CUSIM_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    REQUIRE_DRIVER();
    return to_runtime_error(drv.event_destroy(event));
}

CUSIM_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    REQUIRE_DRIVER();
    return to_runtime_error(drv.event_record(event, stream));
}

CUSIM_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    REQUIRE_DRIVER();
    return RUNTIME_CALL(CUSIM_API_cudaEventSynchronize, drv.event_sync(event));
}

/* ---- memory ---------------------------------------------------------- */

CUSIM_EXPORT cudaError_t cudaMalloc(void **ptr, size_t size)
{
    CUdeviceptr dptr = 0;
    CUresult r;
    REQUIRE_DRIVER();
    if (!ptr)
        return cudaErrorInvalidValue;
    r = drv.mem_alloc(&dptr, size);
    *ptr = (void *)(uintptr_t)dptr;
    return to_runtime_error(r);
}

CUSIM_EXPORT cudaError_t cudaFree(void *ptr)
{
    REQUIRE_DRIVER();
    return to_runtime_error(drv.mem_free((CUdeviceptr)(uintptr_t)ptr));
}

static cudaError_t memcpy_via_driver(int api, int per_thread, void *dst, const void *src,
                                     size_t count, enum cudaMemcpyKind kind)
{
    REQUIRE_DRIVER();
    if (kind == cudaMemcpyHostToDevice) {
        return RUNTIME_CALL(api, (per_thread ? drv.htod_ptds : drv.htod)(
            (CUdeviceptr)(uintptr_t)dst, src, count));
    }
    if (kind == cudaMemcpyDeviceToHost) {
        return RUNTIME_CALL(api, (per_thread ? drv.dtoh_ptds : drv.dtoh)(
            dst, (CUdeviceptr)(uintptr_t)src, count));
    }
    return cudaErrorInvalidValue; /* the simulation models host<->device copies only */
}

CUSIM_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                                    enum cudaMemcpyKind kind)
{
    return memcpy_via_driver(CUSIM_API_cudaMemcpy, 0, dst, src, count, kind);
}

CUSIM_EXPORT cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                                         enum cudaMemcpyKind kind)
{
    return memcpy_via_driver(CUSIM_API_cudaMemcpy_ptds, 1, dst, src, count, kind);
}
