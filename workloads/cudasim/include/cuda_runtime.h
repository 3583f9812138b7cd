/*
 * The subset of the CUDA runtime API that host-side launch tracing cares
 * about. dim3 is passed by value exactly as in the real runtime (a 12-byte
 * struct split across two integer registers on x86-64).
 */
#ifndef CUDASIM_CUDA_RUNTIME_H
#define CUDASIM_CUDA_RUNTIME_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int cudaError_t;
#define cudaSuccess 0
#define cudaErrorInvalidValue 1
#define cudaErrorInitializationError 3
#define cudaErrorInvalidConfiguration 9

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;

typedef struct dim3 {
    unsigned int x, y, z;
} dim3;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};

typedef struct cudaLaunchAttribute_st {
    int id;
    char pad[4];
    char val[64];
} cudaLaunchAttribute;

typedef struct cudaLaunchConfig_st {
    dim3 gridDim;
    dim3 blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    cudaLaunchAttribute *attrs;
    unsigned int numAttrs;
} cudaLaunchConfig_t;

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                             size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                  size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func,
                                     void **args);
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                        void **args, size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
                                             void **args, size_t sharedMem, cudaStream_t stream);
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);

cudaError_t cudaStreamCreate(cudaStream_t *pStream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);

#ifdef __cplusplus
}
#endif
#endif
