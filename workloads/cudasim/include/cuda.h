/*
 * The subset of the CUDA driver API that host-side launch tracing cares
 * about, with the real entry-point names, argument order and struct layouts
 * (so a uprobe reads the same registers and offsets it would on libcuda).
 */
#ifndef CUDASIM_CUDA_H
#define CUDASIM_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int CUresult;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
/* a kernel ran past its time: here a collective whose ranks never all arrived (--ranks) */
#define CUDA_ERROR_LAUNCH_TIMEOUT 702

typedef unsigned long long CUdeviceptr;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUctx_st *CUcontext;

/* Special stream handles, as in the real cuda.h. */
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

typedef struct CUlaunchAttribute_st {
    int id;
    char pad[4];
    char value[64];
} CUlaunchAttribute;

/* Layout matters: the recorder reads these fields at these offsets. */
typedef struct CUlaunchConfig_st {
    unsigned int gridDimX;       /* offset 0 */
    unsigned int gridDimY;       /* 4 */
    unsigned int gridDimZ;       /* 8 */
    unsigned int blockDimX;      /* 12 */
    unsigned int blockDimY;      /* 16 */
    unsigned int blockDimZ;      /* 20 */
    unsigned int sharedMemBytes; /* 24 */
    CUstream hStream;            /* 32 */
    CUlaunchAttribute *attrs;    /* 40 */
    unsigned int numAttrs;       /* 48 */
} CUlaunchConfig;

CUresult cuInit(unsigned int flags);

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                               void **extra);
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX,
                                   unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                        unsigned int gridDimY, unsigned int gridDimZ,
                                        unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes,
                                        CUstream hStream, void **kernelParams);
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

CUresult cuStreamCreate(CUstream *phStream, unsigned int flags);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuCtxSynchronize(void);
CUresult cuEventCreate(CUevent *phEvent, unsigned int flags);
CUresult cuEventDestroy_v2(CUevent hEvent);
CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult cuEventSynchronize(CUevent hEvent);

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);

#ifdef __cplusplus
}
#endif
#endif
