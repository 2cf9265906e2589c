/* octalgen/prelude.h: what every generated unit includes first.
 *
 * The units are C11 with POSIX threads and clocks: they compile with -std=c11 as with -std=gnu11
 * (-pthread where they start threads).  Under strict C11 the POSIX names (clock_gettime,
 * CLOCK_MONOTONIC, ...) are declared only when a feature-test macro asks for them before any
 * system header; a unit built by cffi comes after Python's headers, which have asked already.
 */
#ifndef OCTALGEN_PRELUDE_H
#define OCTALGEN_PRELUDE_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#endif /* OCTALGEN_PRELUDE_H */
