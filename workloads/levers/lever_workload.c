/*
 * lever-workload: the four workload classes of the kernel-tuning study
 * (shared/seeds/kernel-tuning-hpc.md, Listings 3-7), for measuring kernel
 * levers (scheduler policy, preemption model, isolation):
 *
 *   compute  dense arithmetic: sum += i*a + j*b over an N x N loop
 *   memory   a cache-line walk over a buffer twice the last-level cache
 *            (its size read from sysfs), several passes
 *   io       buffered 4 KiB writes with fsync, to a file on a real disk
 *            (tmpfs and ramfs are refused: they would measure nothing)
 *   mixed    the compute loop with a checkpoint write (and fsync) every K rows
 *
 * Work is split over --threads worker threads, each pinned to the next CPU
 * of --cpus when given (the study pinned 2 OpenMP threads). --disturb
 * SPIN:PERIOD adds the study's disturbance: a thread that burns SPIN ms of
 * CPU at the start of every PERIOD ms. The last stdout line is the result,
 * "lever-workload key=value ...", with the work's own elapsed time.
 * Files are unlinked as soon as they are created, so none is left behind,
 * even when the process is killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S UINT64_C(1000000000)
#define NS_PER_MS UINT64_C(1000000)
#define IO_BLOCK 4096            /* the study's fwrite size */
#define DEFAULT_COMPUTE_ROWS 20000
#define DEFAULT_MIXED_ROWS 10000
#define DEFAULT_CHECKPOINT_ROWS 1000  /* the study's "if (i % 1000 == 0)" */
#define DEFAULT_IO_BYTES (256ull << 20)
#define DEFAULT_FSYNC_BYTES (16ull << 20)
#define DEFAULT_PASSES 4
#define LLC_MULTIPLE 2           /* the walked buffer is this many times the LLC */
#define DEFAULT_LINE 64
#define MAX_THREADS 256
/* --size bounds: the compute loop is N x N rows, so 1000000 rows is 2500 times the default's work already;
 * bytes beyond 64G would exhaust memory (memory) or the disk (io) rather than measure anything.
 * python/launchgap/experiments/grid.py checks the same bounds before any run. */
#define MAX_ROWS UINT64_C(1000000)
#define MAX_BYTES (UINT64_C(64) << 30)
#define EXIT_USAGE 2
#define CACHE_SYSFS "/sys/devices/system/cpu/cpu0/cache"

enum workload_class { COMPUTE, MEMORY, IO, MIXED };
static const char *const class_names[] = {"compute", "memory", "io", "mixed"};

struct options {
    enum workload_class cls;
    int threads;
    int cpus[MAX_THREADS];
    int ncpus;
    uint64_t size;            /* rows (compute, mixed) or bytes (memory, io); 0 = default */
    int passes;
    const char *dir;
    uint64_t fsync_bytes;
    uint64_t checkpoint_rows;
    uint64_t checkpoint_bytes;
    uint64_t spin_ns, period_ns;  /* disturbance; 0 = none */
    int disturb_cpu;
};

struct worker {
    pthread_t thread;
    int index;
    const struct options *opt;
    uint64_t first, last;     /* rows or bytes [first, last) */
    unsigned char *buffer;    /* memory: the shared buffer */
    uint64_t line;
    int fd;                   /* io, mixed: an unlinked file */
    double checksum;
    uint64_t bytes_written;
    uint64_t fsyncs;
    int error;
    uint64_t start_ns, end_ns;  /* CLOCK_MONOTONIC around its own work */
};

static pthread_barrier_t start_line;
/* the disturbance sleeps on this until its next period or until told to stop */
static pthread_mutex_t disturbance_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t disturbance_wake;
static bool stop_disturbance;

static void die(const char *fmt, const char *arg) {
    fprintf(stderr, "lever-workload: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(EXIT_USAGE);
}

static uint64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint64_t parse_u64(const char *text, const char *what) {
    char *end;
    errno = 0;
    /* strtoull takes "-1" as ULLONG_MAX: only digits are a number here */
    if (*text < '0' || *text > '9')
        die("bad number for %s", what);
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text)
        die("bad number for %s", what);
    int shift = 0;
    switch (*end) {  /* K, M, G suffixes for byte counts */
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    }
    if (*end || (shift && v > (ULLONG_MAX >> shift)))
        die("bad number for %s", what);
    return v << shift;
}

/* "0-3,8" -> cpus in order */
static int parse_cpu_list(const char *text, int *out, int max) {
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b;
        if (end == p || a < 0)
            die("bad CPU list %s", text);
        b = a;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p || b < a)
                die("bad CPU list %s", text);
        }
        for (long c = a; c <= b; c++) {
            if (n == max)
                die("too many CPUs in %s", text);
            out[n++] = (int)c;
        }
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            die("bad CPU list %s", text);
    }
    return n;
}

static int pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* ---- sysfs: the last-level cache --------------------------------------- */

static int read_line(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

/* The largest-level data or unified cache of CPU 0: its size in bytes and line size. */
static int last_level_cache(uint64_t *bytes, uint64_t *line) {
    int best_level = -1;
    for (int index = 0; index < 16; index++) {
        char path[256], value[64];
        snprintf(path, sizeof path, CACHE_SYSFS "/index%d/type", index);
        if (read_line(path, value, sizeof value))
            break;
        if (strcmp(value, "Instruction") == 0)
            continue;
        snprintf(path, sizeof path, CACHE_SYSFS "/index%d/level", index);
        if (read_line(path, value, sizeof value))
            continue;
        int level = atoi(value);
        if (level <= best_level)
            continue;
        snprintf(path, sizeof path, CACHE_SYSFS "/index%d/size", index);
        if (read_line(path, value, sizeof value))
            continue;
        *bytes = parse_u64(value, CACHE_SYSFS "/index*/size");  /* "491520K" */
        snprintf(path, sizeof path, CACHE_SYSFS "/index%d/coherency_line_size", index);
        *line = read_line(path, value, sizeof value) ? DEFAULT_LINE : parse_u64(value, "coherency_line_size");
        best_level = level;
    }
    return best_level < 0 ? -1 : 0;
}

/* ---- files on a real disk ---------------------------------------------- */

static void refuse_memory_filesystems(const char *dir) {
    struct statfs fs;
    if (statfs(dir, &fs) != 0)
        die("%s: cannot use this directory (does it exist?)", dir);
    if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
        fprintf(stderr, "lever-workload: %s is on %s, not a disk: buffered writes and fsync there measure "
                "nothing; choose a directory on a disk (--dir)\n", dir, fs.f_type == TMPFS_MAGIC ? "tmpfs" : "ramfs");
        exit(EXIT_USAGE);
    }
}

/* A file in DIR that no one else can see and that vanishes with the process. */
static int unlinked_file(const char *dir) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/lever-workload-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0)
        die("%s: cannot create a file there", dir);
    unlink(path);
    return fd;
}

static int write_block(struct worker *w, const unsigned char *block, size_t len) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(w->fd, block + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        done += (size_t)n;
    }
    w->bytes_written += len;
    return 0;
}

/* ---- the four classes --------------------------------------------------- */

static double compute_rows(uint64_t first, uint64_t last, uint64_t n, struct worker *w, int checkpoints) {
    double sum = 0.0;
    unsigned char block[IO_BLOCK];
    memset(block, 'c', sizeof block);
    for (uint64_t i = first; i < last; i++) {
        for (uint64_t j = 0; j < n; j++)
            sum += (double)i * 0.000001 + (double)j * 0.000002;
        if (checkpoints && (i - first) % w->opt->checkpoint_rows == 0) {
            for (uint64_t b = 0; b < w->opt->checkpoint_bytes; b += IO_BLOCK)
                if (write_block(w, block, IO_BLOCK))
                    w->error = errno;
            if (fdatasync(w->fd))
                w->error = errno;
            w->fsyncs++;
        }
    }
    return sum;
}

static void memory_walk(struct worker *w) {
    unsigned char *p = w->buffer;
    for (int pass = 0; pass < w->opt->passes; pass++)
        for (uint64_t i = w->first; i < w->last; i += w->line)
            p[i] += 1;  /* touch each cache line (Listing 4) */
    uint64_t sum = 0;
    for (uint64_t i = w->first; i < w->last; i += w->line)
        sum += p[i];
    w->checksum = (double)sum;
}

static void io_write(struct worker *w) {
    unsigned char block[IO_BLOCK];
    memset(block, 'w', sizeof block);
    uint64_t since_sync = 0;
    for (uint64_t off = w->first; off < w->last; off += IO_BLOCK) {
        if (write_block(w, block, IO_BLOCK)) {
            w->error = errno;
            return;
        }
        since_sync += IO_BLOCK;
        if (since_sync >= w->opt->fsync_bytes) {
            if (fsync(w->fd))
                w->error = errno;
            w->fsyncs++;
            since_sync = 0;
        }
    }
    if (fsync(w->fd))
        w->error = errno;
    w->fsyncs++;
}

static void *work(void *arg) {
    struct worker *w = arg;
    const struct options *opt = w->opt;
    char name[16];
    if (opt->ncpus && pin_self(opt->cpus[w->index % opt->ncpus]))
        w->error = EINVAL;
    /* named only once pinned: a thread called lg-work-N already runs where it should */
    snprintf(name, sizeof name, "lg-work-%d", w->index);
    pthread_setname_np(pthread_self(), name);
    if (opt->cls == MEMORY)  /* first touch by the thread that walks it (its NUMA node) */
        memset(w->buffer + w->first, 0, w->last - w->first);
    pthread_barrier_wait(&start_line);
    w->start_ns = clock_ns(CLOCK_MONOTONIC);
    switch (opt->cls) {
    case COMPUTE: w->checksum = compute_rows(w->first, w->last, opt->size, w, 0); break;
    case MIXED: w->checksum = compute_rows(w->first, w->last, opt->size, w, 1); break;
    case MEMORY: memory_walk(w); break;
    case IO: io_write(w); break;
    }
    w->end_ns = clock_ns(CLOCK_MONOTONIC);
    return NULL;
}

/* ---- the disturbance (Listing 7) ---------------------------------------- */

struct disturbance {
    pthread_t thread;
    const struct options *opt;
    uint64_t spikes;
    uint64_t cpu_ns;
};

static void *disturb(void *arg) {
    struct disturbance *d = arg;
    const struct options *opt = d->opt;
    if (opt->disturb_cpu >= 0)
        pin_self(opt->disturb_cpu);
    pthread_setname_np(pthread_self(), "lg-disturb");
    uint64_t next = clock_ns(CLOCK_MONOTONIC);
    pthread_mutex_lock(&disturbance_lock);
    while (!stop_disturbance) {
        pthread_mutex_unlock(&disturbance_lock);
        /* a spike of SPIN ns of this thread's own CPU time, however long the scheduler makes it take */
        uint64_t until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + opt->spin_ns;
        volatile double dummy = 0.0;
        while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
            for (int i = 0; i < 1000; i++)
                dummy += i;
        d->spikes++;
        next += opt->period_ns;
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        if (next < now)
            next = now;  /* a spike overran its period: start the next one now, do not catch up */
        struct timespec at = {.tv_sec = (time_t)(next / NS_PER_S), .tv_nsec = (long)(next % NS_PER_S)};
        pthread_mutex_lock(&disturbance_lock);
        while (!stop_disturbance && pthread_cond_timedwait(&disturbance_wake, &disturbance_lock, &at) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&disturbance_lock);
    d->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

static void start_disturbance(struct disturbance *d) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&disturbance_wake, &attr);
    if (pthread_create(&d->thread, NULL, disturb, d))
        die("cannot start the %s thread", "disturbance");
}

static void end_disturbance(struct disturbance *d) {
    pthread_mutex_lock(&disturbance_lock);
    stop_disturbance = true;
    pthread_cond_signal(&disturbance_wake);
    pthread_mutex_unlock(&disturbance_lock);
    pthread_join(d->thread, NULL);
}

/* ---- command line ------------------------------------------------------- */

static void usage(FILE *out) {
    fprintf(out,
        "usage: lever-workload compute|memory|io|mixed [options]\n"
        "  --threads N            worker threads (default 1)\n"
        "  --cpus LIST            pin worker i to the i-th CPU of LIST (e.g. 1,2), round robin\n"
        "  --size N               compute/mixed: rows of the N x N loop (default %d / %d, at most 1000000);\n"
        "                         memory: buffer bytes (default %dx the last-level cache, from sysfs);\n"
        "                         io: bytes to write (default 256M); K, M, G suffixes; at most 64G bytes\n"
        "  --passes N             memory: passes over the buffer (default %d)\n"
        "  --dir DIR              io/mixed: where to write (default .); tmpfs and ramfs are refused\n"
        "  --fsync-every BYTES    io: fsync after this many bytes (default 16M)\n"
        "  --checkpoint-every N   mixed: a checkpoint every N rows (default %d)\n"
        "  --checkpoint-bytes B   mixed: bytes per checkpoint, then fdatasync (default 4K)\n"
        "  --disturb SPIN:PERIOD  a thread burning SPIN ms of CPU every PERIOD ms (the study: 20:300)\n"
        "  --disturb-cpu CPU      pin the disturbance thread\n"
        "The last line of output: lever-workload class=... elapsed_s=... (the work alone, set-up excluded).\n",
        DEFAULT_COMPUTE_ROWS, DEFAULT_MIXED_ROWS, LLC_MULTIPLE, DEFAULT_PASSES, DEFAULT_CHECKPOINT_ROWS);
}

static void parse_args(int argc, char **argv, struct options *opt) {
    static const struct option longs[] = {
        {"threads", required_argument, 0, 't'}, {"cpus", required_argument, 0, 'c'},
        {"size", required_argument, 0, 's'}, {"passes", required_argument, 0, 'p'},
        {"dir", required_argument, 0, 'd'}, {"fsync-every", required_argument, 0, 'f'},
        {"checkpoint-every", required_argument, 0, 'k'}, {"checkpoint-bytes", required_argument, 0, 'b'},
        {"disturb", required_argument, 0, 'x'}, {"disturb-cpu", required_argument, 0, 'y'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    *opt = (struct options){.threads = 1, .passes = DEFAULT_PASSES, .dir = ".", .fsync_bytes = DEFAULT_FSYNC_BYTES,
                            .checkpoint_rows = DEFAULT_CHECKPOINT_ROWS, .checkpoint_bytes = IO_BLOCK,
                            .disturb_cpu = -1};
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        exit(argc < 2 ? EXIT_USAGE : 0);
    }
    int found = 0;
    for (int c = COMPUTE; c <= MIXED; c++)
        if (strcmp(argv[1], class_names[c]) == 0) {
            opt->cls = (enum workload_class)c;
            found = 1;
        }
    if (!found)
        die("unknown class %s (compute, memory, io, mixed)", argv[1]);
    optind = 2;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (ch) {
        case 't': opt->threads = (int)parse_u64(optarg, "--threads"); break;
        case 'c': opt->ncpus = parse_cpu_list(optarg, opt->cpus, MAX_THREADS); break;
        case 's':
            opt->size = parse_u64(optarg, "--size");
            if (opt->size == 0)
                die("--size must be at least 1%s", "");
            break;
        case 'p': opt->passes = (int)parse_u64(optarg, "--passes"); break;
        case 'd': opt->dir = optarg; break;
        case 'f': opt->fsync_bytes = parse_u64(optarg, "--fsync-every"); break;
        case 'k': opt->checkpoint_rows = parse_u64(optarg, "--checkpoint-every"); break;
        case 'b': opt->checkpoint_bytes = parse_u64(optarg, "--checkpoint-bytes"); break;
        case 'x': {
            char *colon = strchr(optarg, ':');
            if (!colon)
                die("--disturb wants SPIN_MS:PERIOD_MS, not %s", optarg);
            *colon = 0;
            opt->spin_ns = parse_u64(optarg, "--disturb") * NS_PER_MS;
            opt->period_ns = parse_u64(colon + 1, "--disturb") * NS_PER_MS;
            if (!opt->spin_ns || opt->spin_ns > opt->period_ns)
                die("--disturb: SPIN must be between 1 ms and PERIOD (%s)", "e.g. 20:300");
            break;
        }
        case 'y': opt->disturb_cpu = (int)parse_u64(optarg, "--disturb-cpu"); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(EXIT_USAGE);
        }
    }
    if (optind < argc)
        die("unexpected argument %s", argv[optind]);
    if (opt->threads < 1 || opt->threads > MAX_THREADS)
        die("--threads must be 1 to 256%s", "");
    if ((opt->cls == COMPUTE || opt->cls == MIXED) && opt->size > MAX_ROWS)
        die("--size: at most 1000000 rows for %s (the loop is N x N)", class_names[opt->cls]);
    if ((opt->cls == MEMORY || opt->cls == IO) && opt->size > MAX_BYTES)
        die("--size: at most 64G bytes for %s", class_names[opt->cls]);
    if (opt->passes < 1 || opt->checkpoint_rows < 1 || opt->fsync_bytes < IO_BLOCK)
        die("--passes and --checkpoint-every must be at least 1, --fsync-every at least 4K%s", "");
}

int main(int argc, char **argv) {
    struct options opt;
    parse_args(argc, argv, &opt);
    uint64_t llc = 0, line = DEFAULT_LINE;
    if (opt.cls == MEMORY) {
        int have_llc = last_level_cache(&llc, &line) == 0;
        if (!opt.size) {
            if (!have_llc)
                die("cannot read the last-level cache size from %s; give --size", CACHE_SYSFS);
            opt.size = LLC_MULTIPLE * llc;
        }
    } else if (!opt.size) {
        opt.size = opt.cls == COMPUTE ? DEFAULT_COMPUTE_ROWS : opt.cls == MIXED ? DEFAULT_MIXED_ROWS : DEFAULT_IO_BYTES;
    }
    if (opt.cls == IO || opt.cls == MIXED)
        refuse_memory_filesystems(opt.dir);

    struct worker *workers = calloc((size_t)opt.threads, sizeof *workers);
    unsigned char *buffer = NULL;
    if (opt.cls == MEMORY && !(buffer = malloc(opt.size)))
        die("cannot allocate the %s buffer", "memory");
    uint64_t unit = opt.cls == IO ? IO_BLOCK : opt.cls == MEMORY ? line : 1;
    uint64_t units = (opt.size + unit - 1) / unit;
    pthread_barrier_init(&start_line, NULL, (unsigned)opt.threads + 1);
    for (int t = 0; t < opt.threads; t++) {
        struct worker *w = &workers[t];
        *w = (struct worker){.index = t, .opt = &opt, .buffer = buffer, .line = line, .fd = -1,
                             .first = units * (uint64_t)t / (uint64_t)opt.threads * unit,
                             .last = units * (uint64_t)(t + 1) / (uint64_t)opt.threads * unit};
        if (w->last > opt.size && opt.cls == MEMORY)
            w->last = opt.size;
        if (opt.cls == IO || opt.cls == MIXED)
            w->fd = unlinked_file(opt.dir);
        if (pthread_create(&w->thread, NULL, work, w))
            die("cannot start a %s thread", "worker");
    }
    struct disturbance dist = {.opt = &opt};
    /* Started before the workers are released, not after: once released, a worker may run to its
     * end before this thread gets its CPU back (SCHED_FIFO workers on its CPU, or one CPU for all). */
    if (opt.spin_ns)
        start_disturbance(&dist);
    pthread_barrier_wait(&start_line);
    double checksum = 0.0;
    uint64_t written = 0, fsyncs = 0;
    int error = 0;
    /* The work's span, from the first worker's start to the last one's end, by the workers' own clocks:
     * this thread's clock would start late whenever it is not the first to run after the barrier. */
    uint64_t start = UINT64_MAX, end = 0;
    for (int t = 0; t < opt.threads; t++) {
        pthread_join(workers[t].thread, NULL);
        start = workers[t].start_ns < start ? workers[t].start_ns : start;
        end = workers[t].end_ns > end ? workers[t].end_ns : end;
        checksum += workers[t].checksum;
        written += workers[t].bytes_written;
        fsyncs += workers[t].fsyncs;
        if (workers[t].error)
            error = workers[t].error;
    }
    uint64_t elapsed = end - start;
    if (opt.spin_ns)
        end_disturbance(&dist);
    if (error) {
        fprintf(stderr, "lever-workload: %s failed: %s\n", class_names[opt.cls], strerror(error));
        return 1;
    }
    char cpus[1024] = "none";
    if (opt.ncpus) {
        size_t len = 0;
        for (int i = 0; i < opt.ncpus && len < sizeof cpus - 16; i++)
            len += (size_t)snprintf(cpus + len, sizeof cpus - len, "%s%d", i ? "," : "", opt.cpus[i]);
    }
    printf("lever-workload class=%s threads=%d cpus=%s elapsed_s=%.9f elapsed_ns=%" PRIu64 " size=%" PRIu64
           " checksum=%.6e", class_names[opt.cls], opt.threads, cpus, (double)elapsed / NS_PER_S, elapsed, opt.size,
           checksum);
    if (opt.cls == MEMORY)
        printf(" llc_bytes=%" PRIu64 " line_bytes=%" PRIu64 " passes=%d", llc, line, opt.passes);
    if (opt.cls == IO || opt.cls == MIXED)
        printf(" bytes_written=%" PRIu64 " fsyncs=%" PRIu64, written, fsyncs);
    if (opt.spin_ns)
        printf(" disturb_spin_ms=%" PRIu64 " disturb_period_ms=%" PRIu64 " disturb_spikes=%" PRIu64
               " disturb_cpu_ns=%" PRIu64, opt.spin_ns / NS_PER_MS, opt.period_ns / NS_PER_MS, dist.spikes,
               dist.cpu_ns);
    printf("\n");
    free(buffer);
    free(workers);
    return 0;
}
