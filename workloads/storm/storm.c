/*
 * storm: a context-switch storm for the recorder's loss test and
 * bench/event_rate. Pairs of threads ping-pong one byte over two pipes, so
 * every hop is a wakeup and a switch. Prints the round trips it made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct pair {
    int ping[2];
    int pong[2];
    double seconds;
    unsigned long long round_trips;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *echo(void *arg)
{
    struct pair *p = arg;
    char byte;
    while (read(p->ping[0], &byte, 1) == 1) {
        if (write(p->pong[1], &byte, 1) != 1)
            break;
    }
    return NULL;
}

static void *serve(void *arg)
{
    struct pair *p = arg;
    char byte = 'x';
    double until = now_s() + p->seconds;
    while (now_s() < until) {
        if (write(p->ping[1], &byte, 1) != 1 || read(p->pong[0], &byte, 1) != 1)
            break;
        p->round_trips++;
    }
    close(p->ping[1]); /* the echo thread sees EOF and ends */
    return NULL;
}

int main(int argc, char **argv)
{
    int pairs = 1;
    double seconds = 1.0;
    unsigned long long total = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
            pairs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: storm [--pairs N] [--seconds S]\n");
            return 2;
        }
    }
    if (pairs < 1 || pairs > 64 || seconds <= 0) {
        fprintf(stderr, "storm: --pairs must be 1..64 and --seconds positive\n");
        return 2;
    }

    struct pair *p = calloc((size_t)pairs, sizeof(*p));
    pthread_t *threads = calloc((size_t)pairs * 2, sizeof(*threads));
    if (!p || !threads)
        return 1;
    for (int i = 0; i < pairs; i++) {
        p[i].seconds = seconds;
        if (pipe(p[i].ping) || pipe(p[i].pong)) {
            perror("storm: pipe");
            return 1;
        }
        pthread_create(&threads[2 * i], NULL, echo, &p[i]);
        pthread_create(&threads[2 * i + 1], NULL, serve, &p[i]);
    }
    for (int i = 0; i < 2 * pairs; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < pairs; i++)
        total += p[i].round_trips;
    printf("round trips: %llu (%.0f/s)\n", total, (double)total / seconds);
    return 0;
}
