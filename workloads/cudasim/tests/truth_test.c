/*
 * Unit test of truth.c, which writes the ground truth every other test trusts:
 * a hand-built driver log (launches, a graph launch, a copy, a stream sync, a
 * refused runtime call, from two threads of one process and one of another)
 * written to memory, then compared, byte for byte, with the document written
 * out here by hand from docs/cudasim.md's table of keys: every row, every
 * tally per thread, per process and in all, the wall time and tokens/s. The
 * test provides the log itself (the driver's cusim_log_* functions), so what
 * truth.c is given is known exactly. The expected text parses as JSON and
 * validates against docs/cudasim-truth.schema.json (checked when it was
 * written, with python's json and jsonschema).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "cudasim.h"
#include "truth.h"

/* ---- the log truth.c reads: the driver's functions, over records made here ---- */

#define API_NAME(suffix, name, kind) name,
static const char *const names[] = {CUSIM_APIS(API_NAME)};
#undef API_NAME

const char *cusim_api_name(int api)
{
    return api >= 0 && api < CUSIM_API_COUNT ? names[api] : "?";
}

static struct cusim_record records[8];
static uint64_t record_count, overflow;

const struct cusim_record *cusim_log_records(void) { return records; }
uint64_t cusim_log_count(void) { return record_count; }
uint64_t cusim_log_overflow(void) { return overflow; }
/* names only a collective's rows (--ranks) ask for, and no record here is one */
const char *cusim_function_name(uint64_t handle) { return handle ? "kernel" : "?"; }
const char *cusim_function_demangled(uint64_t handle) { return handle ? "kernel" : "?"; }

static struct cusim_record launch(uint64_t enter, uint64_t exit, int pid, int tid, int api, int runtime_api)
{
    struct cusim_record r = {.t_enter_ns = enter, .t_exit_ns = exit, .kind = CUSIM_KIND_LAUNCH, .api = api,
                             .runtime_api = runtime_api, .pid = pid, .tid = tid};
    return r;
}

static struct cusim_record sync_call(uint64_t enter, uint64_t exit, int pid, int tid, int api, int runtime_api)
{
    struct cusim_record r = {.t_enter_ns = enter, .t_exit_ns = exit, .kind = CUSIM_KIND_SYNC, .api = api,
                             .runtime_api = runtime_api, .pid = pid, .tid = tid};
    return r;
}

static char *written(const struct decode_config *cfg, const struct worker_summary *workers, int n_workers,
                     uint64_t start_ns, uint64_t end_ns, int *status)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    *status = truth_write_json(out, cfg, "cudasim", workers, n_workers, start_ns, end_ns, NULL, NULL, NULL);
    fclose(out);
    return text;
}

/* The expected document, worked out by hand from the records below. */
static const char expected[] =
    "{\n"
    "  \"schema\": \"cudasim-truth/1\",\n"
    "  \"clock\": \"CLOCK_MONOTONIC\",\n"
    "  \"config\": {\"mode\": \"decode\", \"binary\": \"cudasim\", \"api\": \"runtime\", \"launch\": \"graph\", "
    "\"sync\": \"memcpy\", \"ptsz\": false, \"tokens\": 2, \"layers\": 3, \"kernels_per_layer\": 4, \"threads\": 2, "
    "\"procs\": 2, \"seed\": 7, \"host_step_ns\": 200000, \"launch_cost_ns\": 2000, \"kernel_min_ns\": 4000, "
    "\"kernel_max_ns\": 16000, \"stall_ns\": 0, \"stall_every\": 0, \"invalid_every\": 5, "
    "\"launches_per_token\": 5},\n"
    /* 5 tokens in 2 s of wall time */
    "  \"start_ns\": 1000000000,\n  \"end_ns\": 3000000000,\n  \"wall_s\": 2.000000,\n"
    "  \"tokens\": 5,\n  \"tokens_per_s\": 2.500,\n  \"log_overflow\": 0,\n"
    /* launches: 0, 1 (a graph of 12 nodes), 5; syncs: 2 (waited 400 - 300), 3 (waited 350 - 310) */
    "  \"totals\": {\"launches\": 3, \"kernels\": 14, \"syncs\": 2, \"sync_wait_ns\": 140, "
    "\"launches_by_api\": {\"cuLaunchKernel\": 2, \"cuGraphLaunch\": 1}, "
    "\"syncs_by_api\": {\"cuStreamSynchronize\": 1, \"cuMemcpyDtoH_v2\": 1}, "
    "\"calls_by_runtime_api\": {\"cudaLaunchKernel\": 1, \"cudaGraphLaunch\": 1, \"cudaMemcpy\": 1}, "
    "\"runtime_errors\": 1, \"runtime_errors_by_api\": {\"cudaLaunchKernel\": 1}},\n"
    "  \"processes\": [\n"
    "    {\"pid\": 500, \"proc_index\": 0, \"launches\": 2, \"kernels\": 13, \"syncs\": 2, \"sync_wait_ns\": 140, "
    "\"launches_by_api\": {\"cuLaunchKernel\": 1, \"cuGraphLaunch\": 1}, "
    "\"syncs_by_api\": {\"cuStreamSynchronize\": 1, \"cuMemcpyDtoH_v2\": 1}, "
    "\"calls_by_runtime_api\": {\"cudaLaunchKernel\": 1, \"cudaGraphLaunch\": 1, \"cudaMemcpy\": 1}, "
    "\"runtime_errors\": 1, \"runtime_errors_by_api\": {\"cudaLaunchKernel\": 1}, \"threads\": [\n"
    "      {\"tid\": 501, \"thread_index\": 0, \"tokens\": 2, \"start_ns\": 1000000100, \"end_ns\": 2900000000, "
    "\"failed\": false, \"kernel_switches\": {\"voluntary\": 9, \"nonvoluntary\": 4, "
    "\"read_start_ns\": 2900000010, \"read_end_ns\": 2900000020}, "
    "\"kernel_schedstat\": {\"on_cpu_ns\": 1500000000, \"run_delay_ns\": 70000, \"timeslices\": 13, "
    "\"read_start_ns\": 2900000001, \"read_end_ns\": 2900000002}, "
    "\"kernel_schedstat_at_start\": {\"on_cpu_ns\": 150000, \"run_delay_ns\": 3000, \"timeslices\": 2, "
    "\"read_start_ns\": 1000000050, \"read_end_ns\": 1000000060}, "
    "\"launches\": 1, \"kernels\": 1, \"syncs\": 1, \"sync_wait_ns\": 100, "
    "\"launches_by_api\": {\"cuLaunchKernel\": 1}, \"syncs_by_api\": {\"cuMemcpyDtoH_v2\": 1}, "
    "\"calls_by_runtime_api\": {\"cudaLaunchKernel\": 1, \"cudaMemcpy\": 1}, "
    "\"runtime_errors\": 1, \"runtime_errors_by_api\": {\"cudaLaunchKernel\": 1}},\n"
    "      {\"tid\": 502, \"thread_index\": 1, \"tokens\": 2, \"start_ns\": 1000000200, \"end_ns\": 2900000000, "
    "\"failed\": false, \"kernel_switches\": {\"voluntary\": 3, \"nonvoluntary\": 0, "
    "\"read_start_ns\": 2900000030, \"read_end_ns\": 2900000040}, "
    "\"launches\": 1, \"kernels\": 12, \"syncs\": 1, \"sync_wait_ns\": 40, "
    "\"launches_by_api\": {\"cuGraphLaunch\": 1}, \"syncs_by_api\": {\"cuStreamSynchronize\": 1}, "
    "\"calls_by_runtime_api\": {\"cudaGraphLaunch\": 1}, "
    "\"runtime_errors\": 0, \"runtime_errors_by_api\": {}}\n"
    "    ]},\n"
    "    {\"pid\": 600, \"proc_index\": 1, \"launches\": 1, \"kernels\": 1, \"syncs\": 0, \"sync_wait_ns\": 0, "
    "\"launches_by_api\": {\"cuLaunchKernel\": 1}, \"syncs_by_api\": {}, \"calls_by_runtime_api\": {}, "
    "\"runtime_errors\": 0, \"runtime_errors_by_api\": {}, \"threads\": [\n"
    "      {\"tid\": 601, \"thread_index\": 0, \"tokens\": 1, \"start_ns\": 1000000300, \"end_ns\": 2950000000, "
    "\"failed\": true, \"kernel_switches\": {\"voluntary\": 0, \"nonvoluntary\": 0, "
    "\"read_start_ns\": 0, \"read_end_ns\": 0}, "
    "\"launches\": 1, \"kernels\": 1, \"syncs\": 0, \"sync_wait_ns\": 0, "
    "\"launches_by_api\": {\"cuLaunchKernel\": 1}, \"syncs_by_api\": {}, \"calls_by_runtime_api\": {}, "
    "\"runtime_errors\": 0, \"runtime_errors_by_api\": {}}\n"
    "    ]}\n"
    "  ],\n"
    /* every launch row, seq being the record's place in the log */
    "  \"launch_columns\": [\"seq\", \"t_enter_ns\", \"t_exit_ns\", \"pid\", \"tid\", \"api\", \"runtime_api\", "
    "\"func\", \"grid_x\", \"grid_y\", \"grid_z\", \"block_x\", \"block_y\", \"block_z\", \"shared_mem\", "
    "\"stream\", \"graph_nodes\", \"gpu_start_ns\", \"gpu_end_ns\"],\n"
    "  \"launches\": [\n"
    "    [0, 100, 110, 500, 501, \"cuLaunchKernel\", \"cudaLaunchKernel\", 4096, 3, 16, 1, 128, 1, 1, 8192, "
    "93824992215040, 0, 120, 130],\n"
    "    [1, 200, 205, 500, 502, \"cuGraphLaunch\", \"cudaGraphLaunch\", 8192, 0, 0, 0, 0, 0, 0, 0, 0, 12, "
    "210, 300],\n"
    "    [5, 500, 520, 600, 601, \"cuLaunchKernel\", null, 12288, 1, 1, 1, 32, 1, 1, 0, 7, 0, 530, 540]\n"
    "  ],\n"
    "  \"sync_columns\": [\"seq\", \"t_enter_ns\", \"t_exit_ns\", \"pid\", \"tid\", \"api\", \"runtime_api\", "
    "\"stream\", \"bytes\", \"waited_for_ns\", \"copy_start_ns\"],\n"
    "  \"syncs\": [\n"
    "    [2, 300, 400, 500, 501, \"cuMemcpyDtoH_v2\", \"cudaMemcpy\", 0, 65536, 390, 380],\n"
    "    [3, 310, 350, 500, 502, \"cuStreamSynchronize\", null, 93824992215040, 0, 300, null]\n"
    "  ],\n"
    "  \"runtime_error_columns\": [\"seq\", \"t_ns\", \"pid\", \"tid\", \"runtime_api\", \"return_code\"],\n"
    "  \"runtime_errors\": [\n"
    "    [4, 410, 500, 501, \"cudaLaunchKernel\", 9]\n"
    "  ],\n"
    "  \"records\": 6\n"
    "}\n";

static void a_hand_built_log_is_written_as_worked_out(void)
{
    const uint64_t stream = 0x555555550000ull; /* a stream handle as a pointer prints: 93824992215040 */
    struct cusim_record r;

    r = launch(100, 110, 500, 501, CUSIM_API_cuLaunchKernel, CUSIM_API_cudaLaunchKernel);
    r.func = 4096, r.grid[0] = 3, r.grid[1] = 16, r.grid[2] = 1, r.block[0] = 128, r.block[1] = 1, r.block[2] = 1;
    r.shared_mem = 8192, r.stream = stream, r.gpu_start_ns = 120, r.gpu_end_ns = 130;
    records[0] = r;
    r = launch(200, 205, 500, 502, CUSIM_API_cuGraphLaunch, CUSIM_API_cudaGraphLaunch);
    r.func = 8192, r.graph_nodes = 12, r.gpu_start_ns = 210, r.gpu_end_ns = 300;
    records[1] = r;
    r = sync_call(300, 400, 500, 501, CUSIM_API_cuMemcpyDtoH_v2, CUSIM_API_cudaMemcpy);
    r.bytes = 65536, r.gpu_start_ns = 380, r.gpu_end_ns = 390;
    records[2] = r;
    r = sync_call(310, 350, 500, 502, CUSIM_API_cuStreamSynchronize, CUSIM_API_NONE);
    r.stream = stream, r.gpu_end_ns = 300;
    records[3] = r;
    memset(&r, 0, sizeof(r));
    r.kind = CUSIM_KIND_RUNTIME_ERROR, r.t_enter_ns = 410, r.pid = 500, r.tid = 501;
    r.api = CUSIM_API_NONE, r.runtime_api = CUSIM_API_cudaLaunchKernel, r.return_code = 9;
    records[4] = r;
    r = launch(500, 520, 600, 601, CUSIM_API_cuLaunchKernel, CUSIM_API_NONE);
    r.func = 12288, r.grid[0] = r.grid[1] = r.grid[2] = 1, r.block[0] = 32, r.block[1] = r.block[2] = 1;
    r.stream = 7, r.gpu_start_ns = 530, r.gpu_end_ns = 540;
    records[5] = r;
    record_count = 6;
    overflow = 0;

    struct decode_config cfg = {.tokens = 2, .layers = 3, .kernels_per_layer = 4, .threads = 2, .procs = 2,
                                .seed = 7, .api = API_RUNTIME, .launch = LAUNCH_GRAPH, .sync = SYNC_MEMCPY,
                                .host_step_ns = 200000, .launch_cost_ns = 2000, .kernel_min_ns = 4000,
                                .kernel_max_ns = 16000, .invalid_every = 5};
    struct worker_summary workers[3] = {
        {.pid = 500, .tid = 501, .proc_index = 0, .thread_index = 0, .tokens = 2, .start_ns = 1000000100,
         .end_ns = 2900000000, .voluntary_switches = 9, .nonvoluntary_switches = 4,
         .counters_read_start_ns = 2900000010, .counters_read_end_ns = 2900000020, 
         .schedstat = {.on_cpu_ns = 1500000000, .run_delay_ns = 70000, .timeslices = 13,
                       .read_start_ns = 2900000001, .read_end_ns = 2900000002, .read = 1},
         .schedstat_at_start = {.on_cpu_ns = 150000, .run_delay_ns = 3000, .timeslices = 2,
                                .read_start_ns = 1000000050, .read_end_ns = 1000000060, .read = 1}},
        {.pid = 500, .tid = 502, .proc_index = 0, .thread_index = 1, .tokens = 2, .start_ns = 1000000200,
         .end_ns = 2900000000, .voluntary_switches = 3, .counters_read_start_ns = 2900000030,
         .counters_read_end_ns = 2900000040},
        {.pid = 600, .tid = 601, .proc_index = 1, .thread_index = 0, .tokens = 1, .start_ns = 1000000300,
         .end_ns = 2950000000, .failed = 1},
    };
    int status;
    char *text = written(&cfg, workers, 3, 1000000000, 3000000000, &status);
    CHECK(status == 0, "truth_write_json reports success");
    CHECK_STR(text, expected, "the truth written from the hand-built log");
    free(text);
}

static void an_overflowed_log_says_how_many_records_did_not_fit(void)
{
    record_count = 0;
    overflow = 17;
    struct decode_config cfg = {.tokens = 1, .layers = 1, .kernels_per_layer = 1, .threads = 1, .procs = 1};
    struct worker_summary worker = {.pid = 9, .tid = 9, .tokens = 0, .start_ns = 10, .end_ns = 10};
    int status;
    char *text = written(&cfg, &worker, 1, 10, 10, &status);
    CHECK(status == 0, "truth_write_json reports success");
    /* no wall time: tokens/s is 0, not a division by zero */
    CHECK(strstr(text, "\"wall_s\": 0.000000,\n  \"tokens\": 0,\n  \"tokens_per_s\": 0.000,\n"
                       "  \"log_overflow\": 17,\n") != NULL, "overflow and a zero wall time as written");
    CHECK(strstr(text, "\"launches\": [\n\n  ],\n") != NULL, "no launch rows");
    CHECK(strstr(text, "\"records\": 0\n}\n") != NULL, "no records");
    free(text);
}

int main(void)
{
    a_hand_built_log_is_written_as_worked_out();
    an_overflowed_log_says_how_many_records_did_not_fit();
    return report("truth");
}
