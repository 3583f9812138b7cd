/*
 * The subset of NVIDIA's CUPTI activity API that cudasim's stand-in libcupti.so.12
 * implements: the names, values, signatures and record layouts of CUPTI 12.9's
 * cupti_activity.h, cupti_callbacks.h, cupti_result.h and the cbid headers
 * (PyPI nvidia-cuda-cupti-cu12 12.9.79). tests/cudasim/test_cupti_standin.py
 * compiles one program against this file and against NVIDIA's headers and
 * compares every value, every record's size and every named field's offset.
 *
 * Like the real ones, the records are packed and 8-byte aligned (cupti_common.h's
 * PACKED_ALIGNMENT on GCC), except CUpti_ActivityGraphTrace2, which the real
 * header declares without it.
 */
#ifndef CUDASIM_CUPTI_H
#define CUDASIM_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#include "cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CUPTIAPI
#define CUPTI_API_VERSION 28
#define ACTIVITY_RECORD_ALIGNMENT 8
#define CUPTI_PACKED_ALIGNMENT __attribute__((__packed__)) __attribute__((aligned(ACTIVITY_RECORD_ALIGNMENT)))

typedef enum {
    CUPTI_SUCCESS = 0,
    CUPTI_ERROR_INVALID_PARAMETER = 1,
    CUPTI_ERROR_MAX_LIMIT_REACHED = 12,
    CUPTI_ERROR_NOT_INITIALIZED = 15,
    CUPTI_ERROR_INVALID_KIND = 21,
    CUPTI_ERROR_NOT_SUPPORTED = 27,
    CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
    CUPTI_ERROR_UNKNOWN = 999,
} CUptiResult;

typedef enum {
    CUPTI_ACTIVITY_KIND_INVALID = 0,
    CUPTI_ACTIVITY_KIND_MEMCPY = 1,
    CUPTI_ACTIVITY_KIND_MEMSET = 2,
    CUPTI_ACTIVITY_KIND_KERNEL = 3,
    CUPTI_ACTIVITY_KIND_DRIVER = 4,
    CUPTI_ACTIVITY_KIND_RUNTIME = 5,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION = 38,
    CUPTI_ACTIVITY_KIND_GRAPH_TRACE = 51,
    CUPTI_ACTIVITY_KIND_FORCE_INT = 0x7fffffff
} CUpti_ActivityKind;

typedef enum {
    CUPTI_CB_DOMAIN_INVALID = 0,
    CUPTI_CB_DOMAIN_DRIVER_API = 1,
    CUPTI_CB_DOMAIN_RUNTIME_API = 2,
    CUPTI_CB_DOMAIN_FORCE_INT = 0x7fffffff
} CUpti_CallbackDomain;

typedef uint32_t CUpti_CallbackId;

typedef enum {
    CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT = 0, /* pthread_self() */
    CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM = 1,  /* gettid() */
    CUPTI_ACTIVITY_THREAD_ID_TYPE_FORCE_INT = 0x7fffffff
} CUpti_ActivityThreadIdType;

typedef enum {
    CUPTI_ACTIVITY_FLAG_NONE = 0,
    CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 << 0,
} CUpti_ActivityFlag;

typedef enum {
    CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN = 0,
    CUPTI_ACTIVITY_MEMCPY_KIND_HTOD = 1,
    CUPTI_ACTIVITY_MEMCPY_KIND_DTOH = 2,
    CUPTI_ACTIVITY_MEMCPY_KIND_FORCE_INT = 0x7fffffff
} CUpti_ActivityMemcpyKind;

typedef enum {
    CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN = 0,
    CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE = 1,
    CUPTI_ACTIVITY_MEMORY_KIND_PINNED = 2,
    CUPTI_ACTIVITY_MEMORY_KIND_DEVICE = 3,
    CUPTI_ACTIVITY_MEMORY_KIND_FORCE_INT = 0x7fffffff
} CUpti_ActivityMemoryKind;

typedef enum {
    CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN = 0,
    CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE = 1,
    CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT = 2,
    CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE = 3,
    CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE = 4,
    CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_FORCE_INT = 0x7fffffff
} CUpti_ActivitySynchronizationType;

#define CUPTI_SYNCHRONIZATION_INVALID_VALUE ((uint32_t)0xFFFFFFFFU)

typedef enum { CUPTI_FUNC_SHMEM_LIMIT_DEFAULT = 0x00, CUPTI_FUNC_SHMEM_LIMIT_FORCE_INT = 0x7fffffff } CUpti_FuncShmemLimitConfig;
typedef enum { CUPTI_CHANNEL_TYPE_INVALID = 0, CUPTI_CHANNEL_TYPE_FORCE_INT = 0x7fffffff } CUpti_ChannelType;
typedef enum {
    CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_UNKNOWN = 0,
    CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_FORCE_INT = 0x7fffffff
} CUpti_ActivityPartitionedGlobalCacheConfig;

/* The driver API callback ids the stand-in records (cupti_driver_cbid.h). */
typedef enum {
    CUPTI_DRIVER_TRACE_CBID_cuInit = 1,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize = 17,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize = 121,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize = 126,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2 = 276,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2 = 278,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel = 307,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds = 397,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds = 398,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz = 440,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz = 442,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel = 477,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz = 478,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch = 514,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz = 515,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx = 652,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz = 653,
} CUpti_driver_api_trace_cbid;

/* The runtime API callback ids the stand-in records (cupti_runtime_cbid.h). */
typedef enum {
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020 = 31,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 = 131,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020 = 137,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 = 165,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 = 211,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 = 214,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000 = 215,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000 = 239,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000 = 269,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000 = 270,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 = 311,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000 = 312,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 = 430,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 = 431,
} CUpti_runtime_api_trace_cbid;

typedef struct CUPTI_PACKED_ALIGNMENT {
    CUpti_ActivityKind kind;
} CUpti_Activity;

/* A driver or runtime API call (kinds DRIVER, RUNTIME). */
typedef struct CUPTI_PACKED_ALIGNMENT {
    CUpti_ActivityKind kind;
    CUpti_CallbackId cbid;
    uint64_t start;
    uint64_t end;
    uint32_t processId;
    uint32_t threadId;
    uint32_t correlationId;
    uint32_t returnValue;
} CUpti_ActivityAPI;

/* A kernel (kinds KERNEL, CONCURRENT_KERNEL). */
typedef struct CUPTI_PACKED_ALIGNMENT {
    CUpti_ActivityKind kind;
    uint8_t cacheConfig; /* a union of two 4-bit fields in the real header */
    uint8_t sharedMemoryConfig;
    uint16_t registersPerThread;
    CUpti_ActivityPartitionedGlobalCacheConfig partitionedGlobalCacheRequested;
    CUpti_ActivityPartitionedGlobalCacheConfig partitionedGlobalCacheExecuted;
    uint64_t start;
    uint64_t end;
    uint64_t completed;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    int32_t gridX;
    int32_t gridY;
    int32_t gridZ;
    int32_t blockX;
    int32_t blockY;
    int32_t blockZ;
    int32_t staticSharedMemory;
    int32_t dynamicSharedMemory;
    uint32_t localMemoryPerThread;
    uint32_t localMemoryTotal;
    uint32_t correlationId;
    int64_t gridId;
    const char *name;
    void *reserved0;
    uint64_t queued;
    uint64_t submitted;
    uint8_t launchType;
    uint8_t isSharedMemoryCarveoutRequested;
    uint8_t sharedMemoryCarveoutRequested;
    uint8_t padding;
    uint32_t sharedMemoryExecuted;
    uint64_t graphNodeId;
    CUpti_FuncShmemLimitConfig shmemLimitConfig;
    uint32_t graphId;
    void *pAccessPolicyWindow; /* CUaccessPolicyWindow * in the real header */
    uint32_t channelID;
    CUpti_ChannelType channelType;
    uint32_t clusterX;
    uint32_t clusterY;
    uint32_t clusterZ;
    uint32_t clusterSchedulingPolicy;
    uint64_t localMemoryTotal_v2;
    uint32_t maxPotentialClusterSize;
    uint32_t maxActiveClusters;
} CUpti_ActivityKernel9;

/* A copy (kind MEMCPY). */
typedef struct CUPTI_PACKED_ALIGNMENT {
    CUpti_ActivityKind kind;
    uint8_t copyKind;
    uint8_t srcKind;
    uint8_t dstKind;
    uint8_t flags;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t correlationId;
    uint32_t runtimeCorrelationId;
    uint32_t pad;
    void *reserved0;
    uint64_t graphNodeId;
    uint32_t graphId;
    uint32_t channelID;
    CUpti_ChannelType channelType;
    uint32_t pad2;
    uint64_t copyCount;
} CUpti_ActivityMemcpy6;

/* A memset (kind MEMSET). */
typedef struct CUPTI_PACKED_ALIGNMENT {
    CUpti_ActivityKind kind;
    uint32_t value;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t correlationId;
    uint16_t flags;
    uint16_t memoryKind;
    uint32_t pad;
    void *reserved0;
    uint64_t graphNodeId;
    uint32_t graphId;
    uint32_t channelID;
    CUpti_ChannelType channelType;
    uint32_t pad2;
} CUpti_ActivityMemset4;

/* A host thread's wait for the GPU (kind SYNCHRONIZATION). */
typedef struct CUPTI_PACKED_ALIGNMENT {
    CUpti_ActivityKind kind;
    CUpti_ActivitySynchronizationType type;
    uint64_t start;
    uint64_t end;
    uint32_t correlationId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t cudaEventId;
    uint64_t cudaEventSyncId;
    uint32_t returnValue;
    uint32_t pad;
} CUpti_ActivitySynchronization2;

/* A graph's execution as one interval (kind GRAPH_TRACE); not packed in the real header. */
typedef struct {
    CUpti_ActivityKind kind;
    uint32_t correlationId;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t graphId;
    uint32_t contextId;
    uint32_t streamId;
    void *reserved;
    uint32_t endDeviceId;
    uint32_t endContextId;
} CUpti_ActivityGraphTrace2;

typedef void(CUPTIAPI *CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size, size_t *maxNumRecords);
typedef void(CUPTIAPI *CUpti_BuffersCallbackCompleteFunc)(CUcontext context, uint32_t streamId, uint8_t *buffer,
                                                          size_t size, size_t validSize);
typedef uint64_t(CUPTIAPI *CUpti_TimestampCallbackFunc)(void);
/* The callback API's subscriber (cupti_callbacks.h): one per process before CUDA 13.3 and r610 */
typedef void(CUPTIAPI *CUpti_CallbackFunc)(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                           const void *cbdata);
typedef struct CUpti_Subscriber_st *CUpti_SubscriberHandle;

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version);
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str);
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name);
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp);
CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type);
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                                    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted);
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp);
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind);
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind);
CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable);
CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable);
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes, CUpti_Activity **record);
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t *dropped);
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag);
CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time);
CUptiResult CUPTIAPI cuptiFinalize(void);
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata);
CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber);
CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain);

#ifdef __cplusplus
}
#endif
#endif
