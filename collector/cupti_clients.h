/*
 * Another CUPTI client in the same process: the workload's own profiler (torch.profiler's Kineto,
 * or any program that calls CUPTI's activity API), included by cupti_collector.c.
 *
 * CUPTI's activity state is the process's: one pair of buffer callbacks (the last registered gets
 * every buffer), one set of enabled kinds (a client's cuptiActivityDisable stops them for all),
 * one timestamp callback (every record's clock), one flush period. Two clients that each set it
 * as if alone lose data: one gets no buffers, or the other's kinds vanish, or its times change
 * clock mid-run. The collector never calls cuptiSubscribe (one subscriber a process before CUDA
 * 13.3 with r610, and with V1 clients still after: the profiler's own subscribe would fail with
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED). Instead the recorder preloads the collector
 * (LD_PRELOAD beside CUDA_INJECTION64_PATH), so a client's calls to these entry points bind here
 * first (the global scope comes before a library's own), and the collector keeps the clients apart:
 * - buffer callbacks: the collector's stay registered; CUPTI's buffers are asked of the client's
 *   request callback (its own memory, as it expects), read by the collector, and handed to the
 *   client's completion callback holding only the records of the kinds it enabled;
 * - kinds: a client's enable goes to CUPTI; its disable of a kind the collector needs only stops
 *   that kind reaching the client;
 * - timestamp callback: CUPTI gets the client's (its records must be on its clock), after a forced
 *   flush of what was recorded on the old one; the collector puts records on its clock by an offset
 *   it measures against the client's callback at every buffer;
 * - flush period and cuptiFinalize: the client's are kept from CUPTI while the collector runs.
 * Each such event is a `contended` gpu_collector row with its time, and the report says so.
 * Where the collector does not run in the process, every call goes straight to CUPTI.
 */

#define CLIENT_BUFFERS 256
#define CBID_BITS 2048

static struct {
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
    CUpti_TimestampCallbackFunc timestamp;
    uint8_t kinds[64];
    uint8_t driver_cbids[CBID_BITS / 8];
    uint8_t runtime_cbids[CBID_BITS / 8];
    uint8_t *buffers[CLIENT_BUFFERS]; /* handed out by the client's request callback, not yet back */
    int said;                          /* the workload's stderr heard of it once */
} client;

/* The collector runs in this process (InitializeInjection started it here). */
static int collecting(void) { return state.pid && state.pid == getpid(); }

/* CUPTI's own entry point NAME: the next definition after this library's, else the collector's CUPTI's. */
static void *real_cupti(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    const char *path = getenv("LAUNCHGAP_CUPTI");
    if (!fn && path) {
        void *library = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        fn = library ? dlsym(library, name) : NULL;
    }
    return fn;
}

#define REAL(type, name) ((type)real_cupti(#name))

static int bit(const uint8_t *bits, uint32_t cbid) { return cbid < CBID_BITS && (bits[cbid / 8] >> (cbid % 8)) & 1; }

static void set_bit(uint8_t *bits, uint32_t cbid, int on)
{
    if (cbid < CBID_BITS)
        bits[cbid / 8] = (uint8_t)(on ? bits[cbid / 8] | (1u << (cbid % 8)) : bits[cbid / 8] & ~(1u << (cbid % 8)));
}

/* A contended row: what the other client asked and what the collector did. Lock held. */
static void note_contention(const char *what, const char *done, int kind)
{
    char detail[256];
    snprintf(detail, sizeof(detail), "{\"what\": \"%s\", \"done\": \"%s\", \"kind\": %d}", what, done, kind);
    stage_state(CONTENDED, detail);
    flush_staged();
    if (!client.said) {
        client.said = 1;
        fprintf(stderr, "launchgap collector (pid %d): another CUPTI client in this process (the workload's "
                        "profiler: torch.profiler, Nsight, ...) changed CUPTI's activity state (%s); launchgap keeps "
                        "its buffers, kinds and clock apart from its own, and the report says so\n",
                (int)getpid(), what);
    }
}

static int remember_buffer(uint8_t *buffer)
{
    for (int i = 0; i < CLIENT_BUFFERS; i++)
        if (!client.buffers[i]) {
            client.buffers[i] = buffer;
            return 1;
        }
    return 0;
}

/* Whether BUFFER was the client's, forgetting it. */
static int was_clients(uint8_t *buffer)
{
    for (int i = 0; i < CLIENT_BUFFERS; i++)
        if (client.buffers[i] == buffer) {
            client.buffers[i] = NULL;
            return 1;
        }
    return 0;
}

/* Whether the client asked for RECORD (the kinds it enabled, the API calls it asked for). */
static int clients_record(const CUpti_Activity *record)
{
    if (record->kind == CUPTI_ACTIVITY_KIND_DRIVER || record->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)record;
        return client.kinds[record->kind] ||
               bit(record->kind == CUPTI_ACTIVITY_KIND_DRIVER ? client.driver_cbids : client.runtime_cbids, a->cbid);
    }
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL)
        return client.kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] || client.kinds[CUPTI_ACTIVITY_KIND_KERNEL];
    return (unsigned)record->kind < 64 && client.kinds[record->kind];
}

/* BUFFER holding only the client's records, moved together: their new valid size. */
static size_t keep_clients_records(uint8_t *buffer, size_t valid)
{
    CUpti_Activity *record = NULL;
    size_t write = 0;
    uint8_t *previous = NULL;
    int keep_previous = 0;
    while (valid && cupti.get_next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
        uint8_t *at = (uint8_t *)record;
        if (previous && keep_previous) {
            memmove(buffer + write, previous, (size_t)(at - previous));
            write += (size_t)(at - previous);
        }
        previous = at;
        keep_previous = clients_record(record);
    }
    if (previous && keep_previous) {
        memmove(buffer + write, previous, valid - (size_t)(previous - buffer));
        write += valid - (size_t)(previous - buffer);
    }
    return write;
}

/* The offset of the client's clock from CLOCK_MONOTONIC, as measure_offset does for CUPTI's. Lock held. */
static void measure_client_clock(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t before = monotonic_ns(), reading = client.timestamp(), after = monotonic_ns();
        if (after - before < best) {
            best = after - before;
            state.clock_offset_ns = (int64_t)(reading - (before + best / 2));
            state.clock_error_ns = (best + 1) / 2;
        }
    }
}

/* ---- CUPTI's entry points, as another client in the process calls them ----------------------------- */

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                 CUpti_BuffersCallbackCompleteFunc completed)
{
    typedef CUptiResult (*fn)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    if (!requested || !completed)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    client.request = requested;
    client.complete = completed;
    if (collecting()) {
        note_contention("buffer_callbacks", "shared", -1);
        pthread_mutex_unlock(&lock);
        return CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    fn real = REAL(fn, cuptiActivityRegisterCallbacks);
    return real ? real(requested, completed) : CUPTI_ERROR_NOT_INITIALIZED;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp)
{
    typedef CUptiResult (*fn)(CUpti_TimestampCallbackFunc);
    fn real = REAL(fn, cuptiActivityRegisterTimestampCallback);
    CUptiResult r;
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!real)
        return CUPTI_ERROR_NOT_SUPPORTED;
    if (!collecting())
        return real(timestamp);
    /* what CUPTI recorded on the old clock is delivered, and put on the trace's, before the clock changes */
    flush_all_here();
    /* CUPTI called without the collector's lock held: CUPTI may hold its own while it asks for a buffer,
     * which takes the collector's (buffer_requested), so the two are never taken the other way round */
    r = real(timestamp);
    pthread_mutex_lock(&lock);
    if (r == CUPTI_SUCCESS) {
        client.timestamp = timestamp;
        state.clock_method = "client_timestamp_callback";
        measure_client_clock();
        note_contention("timestamp_callback", "followed", -1);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Whether the collector's own collection needs KIND. */
static int collector_needs(CUpti_ActivityKind kind)
{
    for (size_t i = 0; i < ACTIVITY_KINDS; i++)
        if (activity_kinds[i].kind == kind)
            return 1;
    return state.api_by_kind && (kind == CUPTI_ACTIVITY_KIND_DRIVER || kind == CUPTI_ACTIVITY_KIND_RUNTIME);
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    typedef CUptiResult (*fn)(CUpti_ActivityKind);
    fn real = REAL(fn, cuptiActivityEnable);
    CUptiResult r = real ? real(kind) : CUPTI_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    if (r == CUPTI_SUCCESS && (unsigned)kind < 64)
        client.kinds[kind] = 1;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    typedef CUptiResult (*fn)(CUpti_ActivityKind);
    pthread_mutex_lock(&lock);
    if ((unsigned)kind < 64)
        client.kinds[kind] = 0;
    if (collecting() && collector_needs(kind)) {
        note_contention("disable", "kept for launchgap, stopped for the client", (int)kind);
        pthread_mutex_unlock(&lock);
        return CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    fn real = REAL(fn, cuptiActivityDisable);
    return real ? real(kind) : CUPTI_ERROR_NOT_INITIALIZED;
}

/* The collector's own calls per callback id: one it keeps stays on whatever the client asks. */
static CUptiResult api_by_call(CUpti_CallbackDomain domain, const char *name, CUpti_CallbackId cbid, uint8_t enable)
{
    typedef CUptiResult (*fn)(CUpti_CallbackId, uint8_t);
    fn real = (fn)real_cupti(name);
    pthread_mutex_lock(&lock);
    set_bit(domain == CUPTI_CB_DOMAIN_DRIVER_API ? client.driver_cbids : client.runtime_cbids, cbid, enable);
    if (!enable && collecting() && kept(domain, cbid)) {
        pthread_mutex_unlock(&lock);
        return CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return real ? real(cbid, enable) : CUPTI_ERROR_NOT_SUPPORTED;
}

EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
    return api_by_call(CUPTI_CB_DOMAIN_DRIVER_API, "cuptiActivityEnableDriverApi", cbid, enable);
}

EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
    return api_by_call(CUPTI_CB_DOMAIN_RUNTIME_API, "cuptiActivityEnableRuntimeApi", cbid, enable);
}

EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t period_ms)
{
    typedef CUptiResult (*fn)(uint32_t);
    if (collecting())
        return CUPTI_SUCCESS; /* the collector's period stays: the client gets its buffers as often, or more */
    fn real = REAL(fn, cuptiActivityFlushPeriod);
    return real ? real(period_ms) : CUPTI_ERROR_NOT_SUPPORTED;
}

/* A profiler's flush: CUPTI delivers on the caller's thread, an application thread, which is never named the
 * collector's (name_delivering_thread) */
EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    typedef CUptiResult (*fn)(uint32_t);
    fn real = REAL(fn, cuptiActivityFlushAll);
    CUptiResult r;
    if (!real)
        return CUPTI_ERROR_NOT_INITIALIZED;
    flushing_here++;
    r = real(flag);
    flushing_here--;
    return r;
}

EXPORT CUptiResult cuptiFinalize(void)
{
    typedef CUptiResult (*fn)(void);
    if (collecting()) {
        /* everything the client is owed goes back to it; CUPTI itself stays up for the collector */
        flush_all_here();
        pthread_mutex_lock(&lock);
        note_contention("finalize", "flushed, CUPTI kept running for launchgap", -1);
        pthread_mutex_unlock(&lock);
        return CUPTI_SUCCESS;
    }
    fn real = REAL(fn, cuptiFinalize);
    return real ? real() : CUPTI_ERROR_NOT_INITIALIZED;
}
