/*
 * Writes cudasim's ground truth (documented in docs/cudasim.md) from the
 * driver's shared log: what every launching thread actually called, in
 * order, with arguments and timings.
 */
#include "truth.h"

#include <inttypes.h>
#include <string.h>

#include "cudasim.h"

static const char *launch_kind_name(enum launch_kind k)
{
    static const char *const names[] = {"kernel", "ex", "coop", "graph", "mixed"};
    return names[k];
}

static const char *sync_kind_name(enum sync_kind k)
{
    static const char *const names[] = {"memcpy", "stream", "device", "event", "mixed"};
    return names[k];
}

static void write_api_or_null(FILE *out, int api)
{
    if (api == CUSIM_API_NONE)
        fputs("null", out);
    else
        fprintf(out, "\"%s\"", cusim_api_name(api));
}

/* {"name": count, ...} over the APIs with a non-zero count. */
static void write_api_counts(FILE *out, const uint64_t counts[CUSIM_API_COUNT])
{
    int first = 1;
    fputc('{', out);
    for (int api = 1; api < CUSIM_API_COUNT; api++) {
        if (!counts[api])
            continue;
        fprintf(out, "%s\"%s\": %" PRIu64, first ? "" : ", ", cusim_api_name(api), counts[api]);
        first = 0;
    }
    fputc('}', out);
}

struct tally {
    uint64_t launches, syncs, kernels, sync_wait_ns, runtime_errors;
    uint64_t runtime_errors_by_api[CUSIM_API_COUNT];
    uint64_t by_api[CUSIM_API_COUNT];
    uint64_t by_runtime_api[CUSIM_API_COUNT];
    uint64_t syncs_by_api[CUSIM_API_COUNT];
};

static void tally_add(struct tally *t, const struct cusim_record *r)
{
    if (r->kind == CUSIM_KIND_LAUNCH) {
        t->launches++;
        t->kernels += r->graph_nodes ? r->graph_nodes : 1;
        t->by_api[r->api]++;
        if (r->runtime_api != CUSIM_API_NONE)
            t->by_runtime_api[r->runtime_api]++;
    } else if (r->kind == CUSIM_KIND_SYNC) {
        t->syncs++;
        t->sync_wait_ns += r->t_exit_ns - r->t_enter_ns;
        t->syncs_by_api[r->api]++;
        if (r->runtime_api != CUSIM_API_NONE)
            t->by_runtime_api[r->runtime_api]++;
    } else if (r->kind == CUSIM_KIND_RUNTIME_ERROR) {
        t->runtime_errors++;
        t->runtime_errors_by_api[r->runtime_api]++;
    }
}

/* One schedstat reading as "NAME": {...}, (the kernel's counts and when they were read). */
static void write_schedstat(FILE *out, const char *name, const struct schedstat_reading *reading)
{
    fprintf(out,
            "\"%s\": {\"on_cpu_ns\": %" PRIu64 ", \"run_delay_ns\": %" PRIu64 ", \"timeslices\": %" PRIu64
            ", \"read_start_ns\": %" PRIu64 ", \"read_end_ns\": %" PRIu64 "}, ",
            name, reading->on_cpu_ns, reading->run_delay_ns, reading->timeslices, reading->read_start_ns,
            reading->read_end_ns);
}

static void write_tally(FILE *out, const struct tally *t)
{
    fprintf(out, "\"launches\": %" PRIu64 ", \"kernels\": %" PRIu64 ", \"syncs\": %" PRIu64
                 ", \"sync_wait_ns\": %" PRIu64 ", \"launches_by_api\": ",
            t->launches, t->kernels, t->syncs, t->sync_wait_ns);
    write_api_counts(out, t->by_api);
    fputs(", \"syncs_by_api\": ", out);
    write_api_counts(out, t->syncs_by_api);
    fputs(", \"calls_by_runtime_api\": ", out);
    write_api_counts(out, t->by_runtime_api);
    fprintf(out, ", \"runtime_errors\": %" PRIu64 ", \"runtime_errors_by_api\": ", t->runtime_errors);
    write_api_counts(out, t->runtime_errors_by_api);
}

static void write_config(FILE *out, const struct decode_config *cfg, const char *binary)
{
    fprintf(out,
            "  \"config\": {\"mode\": \"decode\", \"binary\": \"%s\", \"api\": \"%s\", "
            "\"launch\": \"%s\", \"sync\": \"%s\", \"ptsz\": %s, \"tokens\": %d, \"layers\": %d, "
            "\"kernels_per_layer\": %d, \"threads\": %d, \"procs\": %d, \"seed\": %" PRIu64 ", "
            "\"host_step_ns\": %" PRIu64 ", \"launch_cost_ns\": %" PRIu64
            ", \"kernel_min_ns\": %" PRIu64 ", \"kernel_max_ns\": %" PRIu64
            ", \"stall_ns\": %" PRIu64 ", \"stall_every\": %d, \"invalid_every\": %d, "
            "\"launches_per_token\": %" PRIu64,
            binary, cfg->api == API_RUNTIME ? "runtime" : "driver", launch_kind_name(cfg->launch),
            sync_kind_name(cfg->sync), cfg->per_thread_stream ? "true" : "false", cfg->tokens,
            cfg->layers, cfg->kernels_per_layer, cfg->threads, cfg->procs, cfg->seed,
            cfg->host_step_ns, cfg->launch_cost_ns, cfg->kernel_min_ns, cfg->kernel_max_ns,
            cfg->stall_ns, cfg->stall_every, cfg->invalid_every, launches_per_token(cfg));
    if (cfg->ranks) {
        /* only with --ranks, so every other run's truth stays as it was */
        fprintf(out, ", \"ranks\": %d, \"collective_ns\": %" PRIu64 ", \"collective_timeout_ns\": %" PRIu64
                     ", \"comm_ids\": [",
                cfg->ranks, cfg->collective_ns, cfg->collective_timeout_ns);
        for (int c = 0; c < cfg->comms; c++)
            fprintf(out, "%s%" PRIu64, c ? ", " : "", cfg->comm_ids[c]);
        fputs("], \"rank_cpus\": ", out);
        if (cfg->rank_cpus) {
            /* one list a rank, as given (digits, '-' and ',' only: parse_rank_cpus checked) */
            const char *at = cfg->rank_cpus;
            fputs("[\"", out);
            for (; *at; at++)
                fputs(*at == ':' ? "\", \"" : (char[2]){*at, 0}, out);
            fputs("\"]", out);
        } else {
            fputs("null", out);
        }
        fprintf(out, ", \"stall_rank\": ");
        fprintf(out, cfg->stall_rank >= 0 ? "%d" : "null", cfg->stall_rank);
        fputs(", \"skip_collective\": ", out);
        if (cfg->skip_rank >= 0)
            fprintf(out, "[%d, %d]", cfg->skip_rank, cfg->skip_index);
        else
            fputs("null", out);
        fprintf(out, ", \"collective_stream\": \"%s\"",
                (const char *const[]){"same", "own", "overlap"}[cfg->collective_stream]);
        if (cfg->job) /* --rank I --job NAME: the name is letters, digits, '.', '_' and '-' (main checks) */
            fprintf(out, ", \"rank\": %d, \"job\": \"%s\"", cfg->rank, cfg->job);
    }
    fputs("},\n", out);
}

/*
 * --ranks: one row a rank's collective kernel, in launch order: its communicator and number, its start,
 * the last rank's start (when every rank had arrived), the wait inside the kernel between the two, the
 * transfer after, its end. The launch itself is the launches row at launch_seq.
 */
static void write_collective_rows(FILE *out, const struct cusim_record *recs, uint64_t n)
{
    int first = 1;
    fputs("  \"collective_columns\": [\"launch_seq\", \"comm_id\", \"seq\", \"rank\", \"pid\", \"tid\", "
          "\"name\", \"gpu_start_ns\", \"last_arrival_ns\", \"last_rank\", \"wait_ns\", \"transfer_ns\", "
          "\"gpu_end_ns\"],\n  \"collectives\": [\n",
          out);
    for (uint64_t i = 0; i < n; i++) {
        const struct cusim_record *r = &recs[i];
        if (r->kind != CUSIM_KIND_LAUNCH || !r->collective)
            continue;
        fprintf(out,
                "%s    [%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %d, %d, %d, \"%s\", %" PRIu64 ", %" PRIu64
                ", %d, %" PRIu64 ", %" PRIu64 ", %" PRIu64 "]",
                first ? "" : ",\n", i, r->comm_id, r->coll_seq, r->rank, r->pid, r->tid,
                cusim_function_name(r->func), r->gpu_start_ns, r->last_arrival_ns, r->last_rank,
                r->last_arrival_ns - r->gpu_start_ns, r->gpu_end_ns - r->last_arrival_ns, r->gpu_end_ns);
        first = 0;
    }
    fputs("\n  ],\n", out);
}

static void write_launch_rows(FILE *out, const struct cusim_record *recs, uint64_t n)
{
    int first = 1;
    fputs("  \"launch_columns\": [\"seq\", \"t_enter_ns\", \"t_exit_ns\", \"pid\", \"tid\", "
          "\"api\", \"runtime_api\", \"func\", \"grid_x\", \"grid_y\", \"grid_z\", \"block_x\", "
          "\"block_y\", \"block_z\", \"shared_mem\", \"stream\", \"graph_nodes\", "
          "\"gpu_start_ns\", \"gpu_end_ns\"],\n  \"launches\": [\n",
          out);
    for (uint64_t i = 0; i < n; i++) {
        const struct cusim_record *r = &recs[i];
        if (r->kind != CUSIM_KIND_LAUNCH)
            continue;
        fprintf(out, "%s    [%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %d, %d, \"%s\", ",
                first ? "" : ",\n", i, r->t_enter_ns, r->t_exit_ns, r->pid, r->tid,
                cusim_api_name(r->api));
        write_api_or_null(out, r->runtime_api);
        fprintf(out,
                ", %" PRIu64 ", %u, %u, %u, %u, %u, %u, %u, %" PRIu64 ", %u, %" PRIu64
                ", %" PRIu64 "]",
                r->func, r->grid[0], r->grid[1], r->grid[2], r->block[0], r->block[1],
                r->block[2], r->shared_mem, r->stream, r->graph_nodes, r->gpu_start_ns,
                r->gpu_end_ns);
        first = 0;
    }
    fputs("\n  ],\n", out);
}

static void write_sync_rows(FILE *out, const struct cusim_record *recs, uint64_t n)
{
    int first = 1;
    fputs("  \"sync_columns\": [\"seq\", \"t_enter_ns\", \"t_exit_ns\", \"pid\", \"tid\", "
          "\"api\", \"runtime_api\", \"stream\", \"bytes\", \"waited_for_ns\", \"copy_start_ns\"],\n  \"syncs\": [\n",
          out);
    for (uint64_t i = 0; i < n; i++) {
        const struct cusim_record *r = &recs[i];
        if (r->kind != CUSIM_KIND_SYNC)
            continue;
        fprintf(out, "%s    [%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %d, %d, \"%s\", ",
                first ? "" : ",\n", i, r->t_enter_ns, r->t_exit_ns, r->pid, r->tid,
                cusim_api_name(r->api));
        write_api_or_null(out, r->runtime_api);
        fprintf(out, ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", ", r->stream, r->bytes, r->gpu_end_ns);
        /* copies: when the copy began on the virtual GPU; anything else has no GPU work of its own */
        if (r->gpu_start_ns)
            fprintf(out, "%" PRIu64 "]", r->gpu_start_ns);
        else
            fputs("null]", out);
        first = 0;
    }
    fputs("\n  ],\n", out);
}

static void write_runtime_error_rows(FILE *out, const struct cusim_record *recs, uint64_t n)
{
    int first = 1;
    fputs("  \"runtime_error_columns\": [\"seq\", \"t_ns\", \"pid\", \"tid\", \"runtime_api\", "
          "\"return_code\"],\n  \"runtime_errors\": [\n",
          out);
    for (uint64_t i = 0; i < n; i++) {
        const struct cusim_record *r = &recs[i];
        if (r->kind != CUSIM_KIND_RUNTIME_ERROR)
            continue;
        fprintf(out, "%s    [%" PRIu64 ", %" PRIu64 ", %d, %d, \"%s\", %d]", first ? "" : ",\n", i,
                r->t_enter_ns, r->pid, r->tid, cusim_api_name(r->runtime_api), r->return_code);
        first = 0;
    }
    fputs("\n  ],\n", out);
}

/* Per process, then per launching thread, in the order the workers were created. */
static void write_processes(FILE *out, const struct cusim_record *recs, uint64_t n,
                            const struct worker_summary *workers, int n_workers)
{
    fputs("  \"processes\": [", out);
    for (int w = 0; w < n_workers; w++) {
        const struct worker_summary *ws = &workers[w];
        int new_process = (w == 0 || workers[w - 1].pid != ws->pid);
        int last_of_process = (w == n_workers - 1 || workers[w + 1].pid != ws->pid);
        struct tally thread_tally;

        if (new_process) {
            struct tally proc_tally;
            memset(&proc_tally, 0, sizeof(proc_tally));
            for (uint64_t i = 0; i < n; i++)
                if (recs[i].pid == ws->pid)
                    tally_add(&proc_tally, &recs[i]);
            fprintf(out, "%s\n    {\"pid\": %d, \"proc_index\": %d, ", w == 0 ? "" : ",", ws->pid,
                    ws->proc_index);
            write_tally(out, &proc_tally);
            fputs(", \"threads\": [", out);
        }
        memset(&thread_tally, 0, sizeof(thread_tally));
        for (uint64_t i = 0; i < n; i++)
            if (recs[i].pid == ws->pid && recs[i].tid == ws->tid)
                tally_add(&thread_tally, &recs[i]);
        fprintf(out,
                "%s\n      {\"tid\": %d, \"thread_index\": %d, \"tokens\": %" PRId64
                ", \"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64 ", \"failed\": %s, "
                "\"kernel_switches\": {\"voluntary\": %" PRIu64 ", \"nonvoluntary\": %" PRIu64
                ", \"read_start_ns\": %" PRIu64 ", \"read_end_ns\": %" PRIu64 "}, ",
                new_process ? "" : ",", ws->tid, ws->thread_index, ws->tokens, ws->start_ns,
                ws->end_ns, ws->failed ? "true" : "false", ws->voluntary_switches,
                ws->nonvoluntary_switches, ws->counters_read_start_ns, ws->counters_read_end_ns);
        if (ws->schedstat.read && ws->schedstat_at_start.read) {
            write_schedstat(out, "kernel_schedstat", &ws->schedstat);
            write_schedstat(out, "kernel_schedstat_at_start", &ws->schedstat_at_start);
        }
        write_tally(out, &thread_tally);
        fputc('}', out);
        if (last_of_process)
            fputs("\n    ]}", out);
    }
    fputs("\n  ],\n", out);
}

int truth_write_json(FILE *out, const struct decode_config *cfg, const char *binary,
                     const struct worker_summary *workers, int n_workers, uint64_t start_ns,
                     uint64_t end_ns, const struct kineto_clock *kineto, const char *kineto_path,
                     const struct cupti_client_result *client)
{
    const struct cusim_record *recs = cusim_log_records();
    uint64_t n = cusim_log_count();
    struct tally total;
    int64_t tokens = 0;
    double wall_s = (double)(end_ns - start_ns) / 1e9;

    memset(&total, 0, sizeof(total));
    for (uint64_t i = 0; i < n; i++)
        tally_add(&total, &recs[i]);
    for (int w = 0; w < n_workers; w++)
        tokens += workers[w].tokens;

    fprintf(out, "{\n  \"schema\": \"%s\",\n  \"clock\": \"CLOCK_MONOTONIC\",\n", CUDASIM_TRUTH_SCHEMA);
    write_config(out, cfg, binary);
    fprintf(out,
            "  \"start_ns\": %" PRIu64 ",\n  \"end_ns\": %" PRIu64 ",\n  \"wall_s\": %.6f,\n"
            "  \"tokens\": %" PRId64 ",\n  \"tokens_per_s\": %.3f,\n  \"log_overflow\": %" PRIu64
            ",\n  \"totals\": {",
            start_ns, end_ns, wall_s, tokens, wall_s > 0 ? (double)tokens / wall_s : 0.0,
            cusim_log_overflow());
    write_tally(out, &total);
    fputs("},\n", out);
    write_processes(out, recs, n, workers, n_workers);
    write_launch_rows(out, recs, n);
    write_sync_rows(out, recs, n);
    write_runtime_error_rows(out, recs, n);
    if (cfg->ranks)
        write_collective_rows(out, recs, n);
    if (kineto) {
        /* the profiler files --kineto wrote, and how their clock maps the truth's (kineto.c) */
        fprintf(out, "  \"kineto\": {\"layout\": \"%s\", \"offset_ns\": %" PRId64 ", \"t0_ns\": %" PRIu64
                     ", \"drift_ppm\": %.3f, \"jitter_ns\": %" PRIu64 ", \"files\": [",
                kineto->relative ? "relative" : "absolute", kineto->offset_ns, kineto->t0_ns, kineto->drift_ppm,
                kineto->jitter_ns);
        for (int p = 0; p < cfg->procs; p++) {
            char file[4096];
            int pid = -1, device = kineto->first_device + p;
            for (int w = 0; w < n_workers; w++)
                if (workers[w].proc_index == device)
                    pid = workers[w].pid;
            kineto_path_of(kineto_path, device, cfg->procs, file, sizeof(file));
            fprintf(out, "%s{\"pid\": %d, \"device\": %d, \"path\": \"", p ? ", " : "", pid, device);
            for (const char *c = file; *c; c++) /* the path as a JSON string */
                fprintf(out, (*c == '"' || *c == '\\') ? "\\%c" : ((unsigned char)*c < 0x20 ? "\\u%04x" : "%c"),
                        (unsigned char)*c);
            fputs("\"}", out);
        }
        fputs("]},\n", out);
    }
    if (client)
        /* the second CUPTI client's window (--cupti-client) and what it got (cupti_client.c) */
        fprintf(out,
                "  \"cupti_client\": {\"subscribe_result\": %d, \"start_ns\": %" PRIu64 ", \"stop_ns\": %" PRIu64
                ", \"kernels\": %" PRIu64 ", \"runtime_calls\": %" PRIu64 ", \"other_records\": %" PRIu64
                ", \"first_kernel_start\": %" PRIu64 ", \"last_kernel_start\": %" PRIu64
                ", \"start_realtime_ns\": %" PRIu64 ", \"stop_realtime_ns\": %" PRIu64 "},\n",
                client->subscribe_result, client->start_ns, client->stop_ns, client->kernels, client->runtime_calls,
                client->other_records, client->first_kernel_start, client->last_kernel_start,
                client->start_realtime_ns, client->stop_realtime_ns);
    fprintf(out, "  \"records\": %" PRIu64 "\n}\n", n);
    return ferror(out) ? -1 : 0;
}
