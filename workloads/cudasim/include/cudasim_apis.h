/* generated from schema/trace.toml by scripts/gen_schema.py; do not edit */
/*
 * The CUDA entry points launchgap probes (schema/trace.toml's [cuda] apis), in its order:
 * every API cudasim's driver logs, named once.
 */
#ifndef CUDASIM_APIS_H
#define CUDASIM_APIS_H

/* X(enum_suffix, "name", kind): NONE (no API), then each entry point */
#define CUSIM_APIS(X)                                                                          \
    X(NONE, "", CUSIM_KIND_NONE)                                                               \
    X(cuLaunchKernel, "cuLaunchKernel", CUSIM_KIND_LAUNCH)                                     \
    X(cuLaunchKernel_ptsz, "cuLaunchKernel_ptsz", CUSIM_KIND_LAUNCH)                           \
    X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", CUSIM_KIND_LAUNCH)               \
    X(cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel_ptsz", CUSIM_KIND_LAUNCH)     \
    X(cuLaunchKernelEx, "cuLaunchKernelEx", CUSIM_KIND_LAUNCH)                                 \
    X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx_ptsz", CUSIM_KIND_LAUNCH)                       \
    X(cuGraphLaunch, "cuGraphLaunch", CUSIM_KIND_LAUNCH)                                       \
    X(cuGraphLaunch_ptsz, "cuGraphLaunch_ptsz", CUSIM_KIND_LAUNCH)                             \
    X(cuStreamSynchronize, "cuStreamSynchronize", CUSIM_KIND_SYNC)                             \
    X(cuStreamSynchronize_ptsz, "cuStreamSynchronize_ptsz", CUSIM_KIND_SYNC)                   \
    X(cuCtxSynchronize, "cuCtxSynchronize", CUSIM_KIND_SYNC)                                   \
    X(cuEventSynchronize, "cuEventSynchronize", CUSIM_KIND_SYNC)                               \
    X(cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2", CUSIM_KIND_SYNC)                                     \
    X(cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2", CUSIM_KIND_SYNC)                                     \
    X(cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD_v2_ptds", CUSIM_KIND_SYNC)                           \
    X(cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH_v2_ptds", CUSIM_KIND_SYNC)                           \
    X(cudaLaunchKernel, "cudaLaunchKernel", CUSIM_KIND_LAUNCH)                                 \
    X(cudaLaunchKernel_ptsz, "cudaLaunchKernel_ptsz", CUSIM_KIND_LAUNCH)                       \
    X(cudaLaunchKernelExC, "cudaLaunchKernelExC", CUSIM_KIND_LAUNCH)                           \
    X(cudaLaunchKernelExC_ptsz, "cudaLaunchKernelExC_ptsz", CUSIM_KIND_LAUNCH)                 \
    X(cudaLaunchCooperativeKernel, "cudaLaunchCooperativeKernel", CUSIM_KIND_LAUNCH)           \
    X(cudaLaunchCooperativeKernel_ptsz, "cudaLaunchCooperativeKernel_ptsz", CUSIM_KIND_LAUNCH) \
    X(cudaGraphLaunch, "cudaGraphLaunch", CUSIM_KIND_LAUNCH)                                   \
    X(cudaGraphLaunch_ptsz, "cudaGraphLaunch_ptsz", CUSIM_KIND_LAUNCH)                         \
    X(cudaDeviceSynchronize, "cudaDeviceSynchronize", CUSIM_KIND_SYNC)                         \
    X(cudaStreamSynchronize, "cudaStreamSynchronize", CUSIM_KIND_SYNC)                         \
    X(cudaStreamSynchronize_ptsz, "cudaStreamSynchronize_ptsz", CUSIM_KIND_SYNC)               \
    X(cudaEventSynchronize, "cudaEventSynchronize", CUSIM_KIND_SYNC)                           \
    X(cudaMemcpy, "cudaMemcpy", CUSIM_KIND_SYNC)                                               \
    X(cudaMemcpy_ptds, "cudaMemcpy_ptds", CUSIM_KIND_SYNC)

/*
 * Each as CUPTI's callbacks name it: DRIVER(api) for CUPTI_DRIVER_TRACE_CBID_<api>, RUNTIME(api,
 * version) for CUPTI_RUNTIME_TRACE_CBID_<api>_<version>
 */
#define CUSIM_CUPTI_CALLBACKS(DRIVER, RUNTIME)       \
    DRIVER(cuLaunchKernel)                           \
    DRIVER(cuLaunchKernel_ptsz)                      \
    DRIVER(cuLaunchCooperativeKernel)                \
    DRIVER(cuLaunchCooperativeKernel_ptsz)           \
    DRIVER(cuLaunchKernelEx)                         \
    DRIVER(cuLaunchKernelEx_ptsz)                    \
    DRIVER(cuGraphLaunch)                            \
    DRIVER(cuGraphLaunch_ptsz)                       \
    DRIVER(cuStreamSynchronize)                      \
    DRIVER(cuStreamSynchronize_ptsz)                 \
    DRIVER(cuCtxSynchronize)                         \
    DRIVER(cuEventSynchronize)                       \
    DRIVER(cuMemcpyHtoD_v2)                          \
    DRIVER(cuMemcpyDtoH_v2)                          \
    DRIVER(cuMemcpyHtoD_v2_ptds)                     \
    DRIVER(cuMemcpyDtoH_v2_ptds)                     \
    RUNTIME(cudaLaunchKernel, v7000)                 \
    RUNTIME(cudaLaunchKernel_ptsz, v7000)            \
    RUNTIME(cudaLaunchKernelExC, v11060)             \
    RUNTIME(cudaLaunchKernelExC_ptsz, v11060)        \
    RUNTIME(cudaLaunchCooperativeKernel, v9000)      \
    RUNTIME(cudaLaunchCooperativeKernel_ptsz, v9000) \
    RUNTIME(cudaGraphLaunch, v10000)                 \
    RUNTIME(cudaGraphLaunch_ptsz, v10000)            \
    RUNTIME(cudaDeviceSynchronize, v3020)            \
    RUNTIME(cudaStreamSynchronize, v3020)            \
    RUNTIME(cudaStreamSynchronize_ptsz, v7000)       \
    RUNTIME(cudaEventSynchronize, v3020)             \
    RUNTIME(cudaMemcpy, v3020)                       \
    RUNTIME(cudaMemcpy_ptds, v7000)

#endif
