/* The benchmark's clock of the threaded kernel's critical path (benchmarks/kernel_clock.py puts it
 * in a kernel unit before octalgen/kernel.h, whose KERNEL_CLOCK_* points it fills; never a build
 * that computes values).
 *
 * Ticks per heap from a block's last baton's arrival (after its last stage) to its own baton's
 * departure, counted per heap in buckets of CLOCK_TICKS (the last one: longer); then the threads'
 * work (their CPU nanoseconds less those from the start of the stages to the arrival: the waits for
 * batons and the stages' marks; a clock read there adds to the critical path), the heaps clocked,
 * and the ticks and nanoseconds the threads ran.  Ticks are the time-stamp counter on x86
 * (clock_gettime is coarser in a virtual machine), nanoseconds elsewhere.  octalgen_baton_clock
 * reads and clears it.
 */
static int64_t nanoseconds(void);

#if defined(__x86_64__) || defined(__i386__)
#define CLOCK_NOW() __builtin_ia32_rdtsc()
#else
#define CLOCK_NOW() (uint64_t)nanoseconds()
#endif
#define CLOCK_TICKS 4u
#define CLOCK_BUCKETS 2048u
static uint64_t baton_clock[CLOCK_BUCKETS + 4];

/* The CPU time of the calling thread: what it spends waiting for batons is taken from it. */
static int64_t cpu_nanoseconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return (int64_t)now.tv_sec * 1000000000L + now.tv_nsec;
}
static pthread_mutex_t baton_clock_lock = PTHREAD_MUTEX_INITIALIZER;

void octalgen_baton_clock(uint64_t *counts)
{
    pthread_mutex_lock(&baton_clock_lock);
    memcpy(counts, baton_clock, sizeof baton_clock);
    memset(baton_clock, 0, sizeof baton_clock);
    pthread_mutex_unlock(&baton_clock_lock);
}

#define KERNEL_CLOCK_START()                                                                  \
    uint64_t clock[CLOCK_BUCKETS + 4] = {0}, arrived = 0, began = CLOCK_NOW();                \
    int64_t began_ns = nanoseconds(), began_cpu = cpu_nanoseconds()
#define KERNEL_CLOCK_STAGES() int64_t staged = cpu_nanoseconds()
#define KERNEL_CLOCK_ARRIVAL()                                                                \
    do {                                                                                      \
        clock[CLOCK_BUCKETS] += (uint64_t)(cpu_nanoseconds() - staged);                       \
        arrived = CLOCK_NOW();                                                                \
    } while (0)
#define KERNEL_CLOCK_DEPARTURE()                                                              \
    do {                                                                                      \
        if (k > 0) { /* the first block waits for no baton */                                 \
            uint64_t took = (CLOCK_NOW() - arrived) / CLOCK_TICKS / count;                    \
            clock[took < CLOCK_BUCKETS - 1 ? took : CLOCK_BUCKETS - 1] += count;              \
            clock[CLOCK_BUCKETS + 1] += count;                                                \
        }                                                                                     \
    } while (0)
#define KERNEL_CLOCK_END()                                                                    \
    do {                                                                                      \
        clock[CLOCK_BUCKETS + 2] = CLOCK_NOW() - began;                                       \
        clock[CLOCK_BUCKETS + 3] = (uint64_t)(nanoseconds() - began_ns);                      \
        clock[CLOCK_BUCKETS] = (uint64_t)(cpu_nanoseconds() - began_cpu) - clock[CLOCK_BUCKETS]; \
        pthread_mutex_lock(&baton_clock_lock);                                                \
        for (uint32_t k_ = 0; k_ < CLOCK_BUCKETS + 4; k_++)                                   \
            baton_clock[k_] += clock[k_];                                                     \
        pthread_mutex_unlock(&baton_clock_lock);                                              \
    } while (0)
