/*
 * The checks cudasim's C unit tests share: each counts a pass or prints the
 * failure (file, line, what was expected and what came), and a test program
 * ends with the plain "NAME: N passed, N failed" line the CI reads.
 */
#ifndef CUDASIM_TESTS_CHECK_H
#define CUDASIM_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, what)                                                      \
    do {                                                                       \
        if (cond) {                                                            \
            passed++;                                                          \
        } else {                                                               \
            failed++;                                                          \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, what);     \
        }                                                                      \
    } while (0)

#define CHECK_U64(got, expected, what)                                                         \
    do {                                                                                       \
        uint64_t got_ = (got), expected_ = (expected);                                         \
        if (got_ == expected_) {                                                               \
            passed++;                                                                          \
        } else {                                                                               \
            failed++;                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: got %" PRIu64 ", expected %" PRIu64 "\n",         \
                    __FILE__, __LINE__, what, got_, expected_);                                \
        }                                                                                      \
    } while (0)

#define CHECK_STR(got, expected, what)                                                         \
    do {                                                                                       \
        const char *got_ = (got), *expected_ = (expected);                                     \
        if (strcmp(got_, expected_) == 0) {                                                    \
            passed++;                                                                          \
        } else {                                                                               \
            failed++;                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s\n--- got:\n%s\n--- expected:\n%s\n", __FILE__,     \
                    __LINE__, what, got_, expected_);                                          \
        }                                                                                      \
    } while (0)

/* The line the CI reads, and the exit status make sees. */
static int report(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, passed, failed);
    return failed || !passed ? 1 : 0;
}

#endif
