// launch_counts: a known number of kernel launches through every API path the
// recorder probes, on several threads, with the program's own count as ground
// truth (scripts/gpu-validate.sh, parts b and c; docs/gpu-validation.md).
//
// Each launching thread, on its own stream, makes --per-path calls of each path:
//   chevron                      kernel<<<grid, block, 0, stream>>>(...)
//   cudaLaunchKernel             the runtime's C entry point, called directly
//   cudaLaunchKernelEx           the C++ template, which calls cudaLaunchKernelExC
//   cudaLaunchCooperativeKernel  (skipped, and said so, where the device cannot)
//   cudaGraphLaunch              an instantiated graph of --graph-kernels kernel nodes
// syncing the stream every --sync-every calls. The graph is built with
// cudaGraphAddKernelNode, not stream capture: a captured launch enters the
// driver's launch entry point too, and would be a launch nobody counted.
//
// Three counts must agree: the calls each thread made (written to --counts as
// JSON), the kernels the GPU ran (each kernel adds one to its thread's device
// counter), and the launches a trace recorded.
//
// Built by scripts/gpu-validate.sh with plain `nvcc` (the runtime linked
// statically, nvcc's default), so the runtime's entry points live inside this
// executable, as in most CUDA programs.

#include <cuda_runtime.h>

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr unsigned kBlockThreads = 32;  // one warp: the cheapest kernel a launch can carry

__global__ void tick(unsigned long long *counter) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        atomicAdd(counter, 1ULL);
    }
}

// One API path: what the program calls, the runtime symbol that call enters,
// and the driver entry point the recorder expects it to reach.
struct Path {
    const char *name;
    const char *runtime_api;
    const char *driver_api;
};

constexpr Path kPaths[] = {
    {"chevron", "cudaLaunchKernel", "cuLaunchKernel"},
    {"cudaLaunchKernel", "cudaLaunchKernel", "cuLaunchKernel"},
    {"cudaLaunchKernelEx", "cudaLaunchKernelExC", "cuLaunchKernelEx"},
    {"cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernel", "cuLaunchCooperativeKernel"},
    {"cudaGraphLaunch", "cudaGraphLaunch", "cuGraphLaunch"},
};
constexpr int kPathCount = sizeof(kPaths) / sizeof(kPaths[0]);
enum PathIndex { kChevron, kRuntimeLaunch, kLaunchEx, kCooperative, kGraph };

struct Options {
    int threads = 2;
    long per_path = 2000;
    int graph_kernels = 4;
    long sync_every = 64;
    std::vector<int> pin;  // CPU per thread, empty: unpinned
    std::string counts_path;
};

struct ThreadResult {
    int index = 0;
    long tid = 0;
    int cpu = -1;
    long calls[kPathCount] = {};
    long failed[kPathCount] = {};
    bool skipped[kPathCount] = {};
    unsigned long long gpu_kernels = 0;
    long long elapsed_ns = 0;
    std::string error;
};

[[noreturn]] void usage(const char *message) {
    if (message) {
        std::fprintf(stderr, "launch_counts: %s\n", message);
    }
    std::fprintf(stderr,
                 "usage: launch_counts [--threads N] [--per-path N] [--graph-kernels N] [--sync-every N]\n"
                 "                     [--pin CPU,CPU,...] [--counts FILE]\n");
    std::exit(2);
}

long parse_positive(const char *flag, const char *text) {
    char *end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (!*text || *end || value <= 0) {
        std::fprintf(stderr, "launch_counts: %s wants a positive integer, not '%s'\n", flag, text);
        std::exit(2);
    }
    return value;
}

Options parse_options(int argc, char **argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        std::string flag = argv[i];
        if (flag == "-h" || flag == "--help") {
            usage(nullptr);
        }
        if (i + 1 >= argc) {
            usage(("missing value after " + flag).c_str());
        }
        const char *value = argv[++i];
        if (flag == "--threads") {
            options.threads = static_cast<int>(parse_positive("--threads", value));
        } else if (flag == "--per-path") {
            options.per_path = parse_positive("--per-path", value);
        } else if (flag == "--graph-kernels") {
            options.graph_kernels = static_cast<int>(parse_positive("--graph-kernels", value));
        } else if (flag == "--sync-every") {
            options.sync_every = parse_positive("--sync-every", value);
        } else if (flag == "--pin") {
            std::string list = value;
            size_t start = 0;
            while (start <= list.size()) {
                size_t comma = list.find(',', start);
                std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                char *end = nullptr;
                long cpu = std::strtol(item.c_str(), &end, 10);
                if (item.empty() || *end || cpu < 0) {
                    usage(("--pin wants a comma-separated CPU list, not '" + list + "'").c_str());
                }
                options.pin.push_back(static_cast<int>(cpu));
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        } else if (flag == "--counts") {
            options.counts_path = value;
        } else {
            usage(("unknown option " + flag).c_str());
        }
    }
    if (!options.pin.empty() && static_cast<int>(options.pin.size()) != options.threads) {
        usage("--pin needs one CPU per thread");
    }
    return options;
}

// Starts every launching thread at once, so their launches overlap.
class StartLine {
  public:
    explicit StartLine(int count) : waiting_(count) {}
    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        if (--waiting_ == 0) {
            cv_.notify_all();
        } else {
            cv_.wait(lock, [this] { return waiting_ == 0; });
        }
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    int waiting_;
};

bool check(cudaError_t err, ThreadResult &result, const char *what) {
    if (err == cudaSuccess) return true;
    if (result.error.empty()) {
        result.error = std::string(what) + ": " + cudaGetErrorString(err);
    }
    return false;
}

cudaGraphExec_t build_graph(unsigned long long *counter, int kernels, ThreadResult &result) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (!check(cudaGraphCreate(&graph, 0), result, "cudaGraphCreate")) return nullptr;
    void *args[] = {&counter};
    cudaKernelNodeParams params = {};
    params.func = reinterpret_cast<void *>(tick);
    params.gridDim = dim3(1);
    params.blockDim = dim3(kBlockThreads);
    params.kernelParams = args;
    cudaGraphNode_t previous = nullptr;
    for (int i = 0; i < kernels; ++i) {
        cudaGraphNode_t node = nullptr;
        if (!check(cudaGraphAddKernelNode(&node, graph, previous ? &previous : nullptr, previous ? 1 : 0, &params),
                   result, "cudaGraphAddKernelNode")) {
            return nullptr;
        }
        previous = node;
    }
    if (!check(cudaGraphInstantiate(&exec, graph, 0), result, "cudaGraphInstantiate")) return nullptr;
    cudaGraphDestroy(graph);
    return exec;
}

void pin_to(int cpu, ThreadResult &result) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    if (err != 0) {
        result.error = "cannot pin to CPU " + std::to_string(cpu) + ": " + std::strerror(err);
    }
}

void launching_thread(const Options &options, bool cooperative_ok, StartLine &start, ThreadResult &result) {
    result.tid = static_cast<long>(syscall(SYS_gettid));
    if (!options.pin.empty()) {
        pin_to(options.pin[result.index], result);
    }
    cudaStream_t stream = nullptr;
    unsigned long long *counter = nullptr;
    cudaGraphExec_t graph = nullptr;
    bool ready = check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), result, "cudaStreamCreate") &&
                 check(cudaMalloc(&counter, sizeof(*counter)), result, "cudaMalloc") &&
                 check(cudaMemset(counter, 0, sizeof(*counter)), result, "cudaMemset") &&
                 check(cudaDeviceSynchronize(), result, "cudaDeviceSynchronize");
    if (ready) {
        graph = build_graph(counter, options.graph_kernels, result);
        ready = graph != nullptr;
    }
    start.arrive_and_wait();
    if (!ready) return;
    result.cpu = sched_getcpu();

    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1);
    config.blockDim = dim3(kBlockThreads);
    config.stream = stream;
    void *args[] = {&counter};
    const void *kernel = reinterpret_cast<const void *>(tick);

    auto began = std::chrono::steady_clock::now();
    for (int path = 0; path < kPathCount; ++path) {
        if (path == kCooperative && !cooperative_ok) {
            result.skipped[path] = true;
            continue;
        }
        for (long i = 0; i < options.per_path; ++i) {
            cudaError_t err = cudaSuccess;
            switch (path) {
                case kChevron:
                    tick<<<1, kBlockThreads, 0, stream>>>(counter);
                    err = cudaGetLastError();
                    break;
                case kRuntimeLaunch:
                    err = cudaLaunchKernel(kernel, dim3(1), dim3(kBlockThreads), args, 0, stream);
                    break;
                case kLaunchEx:
                    err = cudaLaunchKernelEx(&config, tick, counter);
                    break;
                case kCooperative:
                    err = cudaLaunchCooperativeKernel(kernel, dim3(1), dim3(kBlockThreads), args, 0, stream);
                    break;
                case kGraph:
                    err = cudaGraphLaunch(graph, stream);
                    break;
            }
            if (err == cudaSuccess) {
                ++result.calls[path];
            } else {
                ++result.failed[path];
                check(err, result, kPaths[path].name);
            }
            if ((i + 1) % options.sync_every == 0) {
                check(cudaStreamSynchronize(stream), result, "cudaStreamSynchronize");
            }
        }
        check(cudaStreamSynchronize(stream), result, "cudaStreamSynchronize");
    }
    result.elapsed_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began).count();
    check(cudaMemcpy(&result.gpu_kernels, counter, sizeof(*counter), cudaMemcpyDeviceToHost), result, "cudaMemcpy");
    cudaGraphExecDestroy(graph);
    cudaFree(counter);
    cudaStreamDestroy(stream);
}

unsigned long long kernels_expected(const ThreadResult &result, int graph_kernels) {
    unsigned long long total = 0;
    for (int path = 0; path < kPathCount; ++path) {
        total += static_cast<unsigned long long>(result.calls[path]) * (path == kGraph ? graph_kernels : 1);
    }
    return total;
}

void write_counts(const Options &options, const std::vector<ThreadResult> &results, FILE *out) {
    std::fprintf(out, "{\n  \"schema\": \"launchgap-gpu-launch-counts/1\",\n  \"program\": \"launch_counts\",\n");
    std::fprintf(out, "  \"pid\": %ld,\n  \"per_path\": %ld,\n  \"graph_kernels\": %d,\n  \"sync_every\": %ld,\n",
                 static_cast<long>(getpid()), options.per_path, options.graph_kernels, options.sync_every);
    std::fprintf(out, "  \"threads\": [\n");
    for (size_t t = 0; t < results.size(); ++t) {
        const ThreadResult &r = results[t];
        std::fprintf(out, "    {\"index\": %d, \"tid\": %ld, \"cpu\": %d, \"pinned\": %s, \"elapsed_ns\": %lld,\n",
                     r.index, r.tid, r.cpu, options.pin.empty() ? "false" : "true", r.elapsed_ns);
        std::fprintf(out, "     \"gpu_kernels\": %llu, \"kernels_expected\": %llu, \"error\": \"", r.gpu_kernels,
                     kernels_expected(r, options.graph_kernels));
        for (char c : r.error) {
            std::fputc(c == '"' || c == '\\' ? '\'' : c, out);
        }
        std::fprintf(out, "\",\n     \"paths\": [\n");
        for (int p = 0; p < kPathCount; ++p) {
            std::fprintf(out,
                         "       {\"path\": \"%s\", \"runtime_api\": \"%s\", \"driver_api\": \"%s\", "
                         "\"calls\": %ld, \"failed\": %ld, \"skipped\": %s, \"kernels_per_call\": %d}%s\n",
                         kPaths[p].name, kPaths[p].runtime_api, kPaths[p].driver_api, r.calls[p], r.failed[p],
                         r.skipped[p] ? "true" : "false", p == kGraph ? options.graph_kernels : 1,
                         p + 1 < kPathCount ? "," : "");
        }
        std::fprintf(out, "     ]}%s\n", t + 1 < results.size() ? "," : "");
    }
    std::fprintf(out, "  ]\n}\n");
}

}  // namespace

int main(int argc, char **argv) {
    Options options = parse_options(argc, argv);

    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) {
        std::fprintf(stderr, "launch_counts: no CUDA device (%s)\n", cudaGetErrorString(err));
        return 1;
    }
    int cooperative = 0;
    cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, 0);
    // the primary context, made once here so the threads share it and their
    // first launches are not the context's creation
    if ((err = cudaFree(nullptr)) != cudaSuccess) {
        std::fprintf(stderr, "launch_counts: cannot create a context (%s)\n", cudaGetErrorString(err));
        return 1;
    }

    std::vector<ThreadResult> results(options.threads);
    StartLine start(options.threads);
    std::vector<std::thread> threads;
    for (int t = 0; t < options.threads; ++t) {
        results[t].index = t;
        threads.emplace_back(launching_thread, std::cref(options), cooperative != 0, std::ref(start),
                             std::ref(results[t]));
    }
    for (auto &thread : threads) thread.join();

    bool ok = true;
    for (const ThreadResult &r : results) {
        long launches = 0;
        std::printf("thread %d (tid %ld, cpu %d):", r.index, r.tid, r.cpu);
        for (int p = 0; p < kPathCount; ++p) {
            launches += r.calls[p];
            std::printf(" %s %ld%s%s", kPaths[p].name, r.calls[p], r.skipped[p] ? " (skipped: no cooperative launch)" : "",
                        p + 1 < kPathCount ? "," : "");
        }
        unsigned long long expected = kernels_expected(r, options.graph_kernels);
        double seconds = r.elapsed_ns / 1e9;
        std::printf("; %ld launches in %.3f s (%.0f launches/s); GPU ran %llu of %llu kernels\n", launches, seconds,
                    seconds > 0 ? launches / seconds : 0.0, r.gpu_kernels, expected);
        if (!r.error.empty()) {
            std::printf("thread %d error: %s\n", r.index, r.error.c_str());
            ok = false;
        }
        ok = ok && r.gpu_kernels == expected;
    }
    if (!options.counts_path.empty()) {
        FILE *out = std::fopen(options.counts_path.c_str(), "w");
        if (!out) {
            std::fprintf(stderr, "launch_counts: cannot write %s: %s\n", options.counts_path.c_str(), std::strerror(errno));
            return 1;
        }
        write_counts(options, results, out);
        std::fclose(out);
    }
    return ok ? 0 : 1;
}
