/* octalgen/kernel.h: the speculative kernel (Grossman, sections 3.1-3.3), the same for every plan:
 * one thread, and threads that hand each other blocks of heaps.
 *
 * It marks with octalgen/marks.h.  The unit that includes it defines, before it, MAX_BLOCK_HEAPS
 * and RECENT (the most threads), LATE_ENTRY[] (without VECTOR_MARKS; see mark_own_block) and the
 * declaration of octalgen_kernel_fill; and after it, unrolled over the terms (without VECTOR_MARKS):
 *   mark_terms_above  the early pass of one heap, the terms of offsets above a bound
 *   mark_own_block    the late pass of one heap, the terms whose source is in its own block
 */
#ifndef OCTALGEN_KERNEL_H
#define OCTALGEN_KERNEL_H

/* Points where a benchmark's build of the kernel clocks the threads (none here). */
#ifndef KERNEL_CLOCK_START
#define KERNEL_CLOCK_START() ((void)0)
#define KERNEL_CLOCK_STAGES() ((void)0)
#define KERNEL_CLOCK_ARRIVAL() ((void)0)
#define KERNEL_CLOCK_DEPARTURE() ((void)0)
#define KERNEL_CLOCK_END() ((void)0)
#endif

/* ---- one thread ------------------------------------------------------------------------------
 * Heap by heap: the unrolled terms' marks, then the mex.  With VECTOR_MARKS (u8 codes, AVX2 or
 * AVX-512), MARK_LANES heaps at once first: the terms whose sources precede the batch (offsets of
 * MARK_LANES or more: all but a few) are marked as one-bit sets in each heap's lane
 * (octalgen/marks.h's mark_words), in the first ranges of 32 codes; then heap by heap the terms
 * whose sources lie in the batch, and the least unmarked code (lane_value).  A heap whose marks fill
 * every range marked is marked again heap-wise: a byte store a term, where a range costs MARK_LANES
 * heaps a vector instruction a term.  How many ranges the lanes mark is chosen from the codes of the
 * heaps computed lately (range_tally_t): the count that costs least, the heaps whose codes lie past
 * them marked again. */

#if defined(VECTOR_MARKS)
/* The codes of the heaps computed lately, by their range of 32 (halved every TALLY_HEAPS heaps, so that
   it follows the values as they change).  A heap whose code lies past the ranges marked costs
   REMARK_RANGES ranges' worth of lane work (its every term a byte store): the ratio that the kernel's
   times on .6, .014 and .172, with at most 3, 4 and 5 ranges, imply lies between 10 and 12. */
#define TALLY_HEAPS 4096u
#define REMARK_RANGES 11u
typedef struct {
    uint32_t heaps[8], total;
} range_tally_t;

static inline void tally_code(range_tally_t *tally, uint32_t code)
{
    tally->heaps[code / 32u]++;
    if (++tally->total == TALLY_HEAPS) {
        tally->total = 0;
        for (uint32_t r = 0; r < 8; r++) {
            tally->heaps[r] /= 2u;
            tally->total += tally->heaps[r];
        }
    }
}

/* The ranges to mark: the count R that costs least, R ranges for every heap and REMARK_RANGES for each
   whose code lies past them, by the tally (the most, 8, while it is empty). */
static inline uint32_t tally_ranges(const range_tally_t *tally)
{
    uint32_t best = 8, past = 0;
    uint64_t least = 8ull * tally->total;
    for (uint32_t r = 7; r >= 1; r--) {
        past += tally->heaps[r];  /* heaps whose code lies past r ranges */
        const uint64_t cost = (uint64_t)r * tally->total + (uint64_t)REMARK_RANGES * past;
        if (cost < least) {
            least = cost;
            best = r;
        }
    }
    return best;
}
#endif

static int64_t fill_one_thread(code_t *buffer, uint64_t count, uint64_t first_heap)
{
    uint8_t marks[MARK_SIZE] __attribute__((aligned(64)));
    uint8_t stamp = 0;
    memset(marks, 0, MARK_SIZE);
    code_t *g = buffer + WINDOW;
    uint64_t i = 0;
#if defined(VECTOR_MARKS)
    const uint32_t near = first_term_above(MARK_LANES - 1u);  /* terms 0 ... near - 1 read the batch */
    range_tally_t tally = {{0}, 0};
    for (; i + MARK_LANES <= count; i += MARK_LANES, g += MARK_LANES) {
        lane_words_t words __attribute__((aligned(64)));
        const uint32_t ranges = tally_ranges(&tally);
        mark_words(g, words, ranges, near, TERMS, 1);
        uint32_t v = g[-1];
        for (uint32_t j = 0; j < MARK_LANES; j++) {
            v = lane_value(g + j, words, j, ranges, v, marks, &stamp);
            if (v >= MEX_SIZE)
                return (int64_t)(i + j);
            g[j] = (code_t)v;
            tally_code(&tally, v);
        }
    }
#endif
    for (; i < count; i++, g++) {
        uint32_t v = heap_mex(g, marks, &stamp, COMMON_ROW(first_heap + i));
        if (v >= MEX_SIZE)
            return (int64_t)i;
        *g = (code_t)v;
    }
    return -1;
}

/* ---- m threads: blocks of heaps (Grossman 3.3, a block at a time) ------------------------------
 * The heaps are cut into blocks of `block` heaps, chosen per call up to MAX_BLOCK_HEAPS (the first
 * one longer, so that every later block starts on a cache line of the output); thread j computes
 * the blocks k = j (mod m).  A block is marked in three passes, each as soon as its inputs are final:
 *   1. early: every term whose source is before `known`, the end of this thread's previous block
 *      (k - m): it received that block's baton, so every value before it is final.  At heap
 *      start + i these are the terms with offsets above start + i - known ((m - 1) blocks + i),
 *      the bulk of them, unrolled, while the m - 1 blocks between are in flight;
 *   2. stages: for each block still in flight before this one, once its baton is out, the
 *      terms whose source lies in it (copied from the output into the thread's history);
 *   3. late, heap by heap: the terms whose source lies in this block, then the mex.
 * Only the stage of the block just before and pass 3 follow the previous thread's baton: the
 * critical path per block is its hop, the terms reaching into the previous block and into this
 * one (offsets up to block + i at heap i of the block) and `block` mexes; the rest, the
 * bulk of the terms, overlaps the other threads' blocks.  With VECTOR_MARKS (u8, AVX2 or AVX-512)
 * every pass marks MARK_LANES heaps at once as one-bit sets, as the one thread does: a batch of
 * them takes each term once its sources are final for the whole batch (mark_batch), so the late
 * pass is the one thread's loop, the terms of offsets below MARK_LANES heap by heap, and the early
 * and staged terms are ORed into the same words.  Without it each heap of the block has its own
 * row of marks (BLOCK_ROW bytes), stamped once per block.
 * No cache line of the output is written by two threads (blocks end on line boundaries); a
 * block is written from the thread's history once done, then its baton is released.
 */

#define LINE_CODES (64u / sizeof(code_t))
#define BATON_SLOTS 256u   /* a slot is reused only after every thread has passed it */
#define PRIVATE_HEAPS 65536u

#if !defined(VECTOR_MARKS)
/* The scalar passes (no VECTOR_MARKS): each heap of a block has a row of marks, stamped once a block. */
#if MARK_SIZE == MEX_SIZE
/* u8: every code is a mark the mex reads. */
#define BLOCK_ROW MARK_SIZE
#define BLOCK_MARK(off, k) MARK(off, k)
#define BLOCK_MARK0(off) MARK0(off)
#define CLAMP(v) (v)
#else
/* u16: codes at or above MEX_SIZE are never taken; their marks go to one spare byte of the row,
   so that a row is MEX_SIZE (+ a line), not MARK_SIZE, bytes. */
#define BLOCK_ROW (MEX_SIZE + 64u)
#define CLAMP(v) ((v) < MEX_SIZE ? (v) : MEX_SIZE)
#define BLOCK_MARK(off, k)                                                                    \
    do {                                                                                      \
        uint32_t v_ = (uint32_t)(g[-(long)(off)] ^ (k));                                      \
        marks[CLAMP(v_)] = stamp;                                                             \
    } while (0)
#define BLOCK_MARK0(off) BLOCK_MARK(off, 0u)
#endif

/* Of the terms 0 ... n-1, marks those with offsets above `above`, from the largest down. */
static __attribute__((noinline)) void mark_rest_above(const code_t *g, uint8_t *marks, uint8_t stamp, uint32_t n,
                                                      uint64_t above)
{
    for (; n > 0 && TERM_OFFSET[n - 1] > above; n--) {
        uint32_t v = (uint32_t)(g[-(long)TERM_OFFSET[n - 1]] ^ TERM_CODE[n - 1]);
        marks[CLAMP(v)] = stamp;
    }
}

static void mark_terms_above(const code_t *g, uint8_t *marks, uint8_t stamp, uint64_t above);
static void mark_own_block(const code_t *g, uint8_t *marks, uint8_t stamp, uint32_t i);

/* Stage: for the heaps start ... start+count-1 (g points at start's value, rows one per heap),
   marks every term whose source is in [from, to) (to <= start), term by term: a run of the output a
   term, where heap by heap would walk the term table once a heap. */
static void mark_sources(const code_t *g, uint8_t *rows, uint8_t stamp, uint64_t start, uint64_t count,
                         uint64_t from, uint64_t to)
{
    for (uint32_t t = first_term_above(start - to); t < TERMS; t++) {
        uint64_t o = TERM_OFFSET[t];
        if (from + o >= start + count)
            break;  /* this term and all later ones reach before `from` */
        uint64_t i = from + o > start ? from + o - start : 0, stop = to + o - start;
        if (stop > count)
            stop = count;
        const code_t *source = g + i - o;
        uint8_t *row = rows + i * BLOCK_ROW;
        const uint32_t k = TERM_CODE[t];
        for (; i < stop; i++, source++, row += BLOCK_ROW) {
            uint32_t v = (uint32_t)(*source ^ k);
            row[CLAMP(v)] = stamp;
        }
    }
}
#endif

typedef struct {
    _Atomic uint64_t end;  /* end of the newest block announced here: every heap before it is in the output */
    _Atomic int32_t core;  /* the core of the thread that computes that block, when it began (-1: unknown) */
    char pad[64 - sizeof(uint64_t) - sizeof(int32_t)];
} __attribute__((aligned(64))) baton_t;

/* The core the calling thread runs on, -1 where that cannot be asked (Python's headers define
   _GNU_SOURCE on Linux, and cffi includes them first). */
#if defined(__linux__) && defined(_GNU_SOURCE)
#define CURRENT_CORE() sched_getcpu()
#else
#define CURRENT_CORE() (-1)
#endif

/* What the threads share.  A thread that waited long for its baton sleeps on wake (the machine
   may be busy with other work, and spinning would keep the thread it waits for off a core); so
   does one whose baton's thread runs on its own core. */
typedef struct {
    baton_t batons[BATON_SLOTS];
    _Atomic uint64_t stop;      /* the first heap that could not be computed, or UINT64_MAX */
    _Atomic uint32_t sleepers;  /* threads asleep (or about to be) on wake */
    _Atomic uint64_t sleeps;    /* waits that ended in sleep, in this run */
    _Atomic int busy;           /* the threads stopped because they slept too often */
    int patient;                /* never stop for that */
    pthread_mutex_t lock;
    pthread_cond_t wake;
} shared_t;

typedef struct {
    const code_t *window;
    code_t *out;
    uint64_t count, first_heap, head;  /* head: the first block's extra heaps, up to a line boundary */
    uint64_t block;                    /* heaps per block: a multiple of a line, up to MAX_BLOCK_HEAPS */
    uint64_t ramped;                   /* the start of block `threads`, after the ramp (block_start) */
    uint32_t threads, index;
    shared_t *shared;
} worker_t;

/* A thread spins this long for its baton before it sleeps: longer than waking a sleeping thread
   takes, so that two threads do not keep putting each other to sleep.  After YIELD_NANOSECONDS
   (several blocks' critical paths) it yields between looks: the thread it waits for may be ready
   to run on this very core (a busy machine), and spinning would keep it off. */
#define NS_PER_SECOND 1000000000L
#define SPIN_NANOSECONDS 200000
#define YIELD_NANOSECONDS 20000
/* Threads that sleep on more than one heap in BUSY_RATIO (after BUSY_MINIMUM sleeps) are losing
   their cores to other work: the run stops so that the caller can go on with one thread. */
#define BUSY_MINIMUM 64u
#define BUSY_RATIO 256u

static int64_t nanoseconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * NS_PER_SECOND + now.tv_nsec;
}

static void wake_all(shared_t *shared)
{
    pthread_mutex_lock(&shared->lock);
    pthread_cond_broadcast(&shared->wake);
    pthread_mutex_unlock(&shared->lock);
}

static void stop_at(shared_t *shared, uint64_t heap)
{
    uint64_t seen = atomic_load(&shared->stop);
    while (heap < seen && !atomic_compare_exchange_weak(&shared->stop, &seen, heap))
        ;
    wake_all(shared);
}

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    __asm__ volatile("" ::: "memory");
#endif
}

/* Waits until baton announces every heap before `end` (acquire: their values are then in the
   output); 0 if the run stopped before end.  `mine` is the first heap of the waiting thread's
   block: where it stops the run when the threads are too busy. */
static int wait_for_baton(shared_t *shared, baton_t *baton, uint64_t end, uint64_t mine)
{
    int64_t sleep_at = -1, yield_at = -1;
    for (uint32_t spins = 1; atomic_load_explicit(&baton->end, memory_order_acquire) < end; spins++) {
        if (atomic_load_explicit(&shared->stop, memory_order_relaxed) < end)
            return 0;
        spin_pause();
        if (spins % 64)
            continue;  /* read the clock only now and then: most waits are far shorter */
        int64_t now = nanoseconds();
        if (sleep_at < 0) {
            sleep_at = now + SPIN_NANOSECONDS;
            yield_at = now + YIELD_NANOSECONDS;
        }
        /* The thread it waits for on this very core: the scheduler moved one of them there (other
           work took the other core for a moment) and left them so; spinning would keep that thread
           from running, and a woken thread goes to an idle core. */
        const int32_t core = atomic_load_explicit(&baton->core, memory_order_relaxed);
        const int crowded = core >= 0 && core == CURRENT_CORE();
        if (now < sleep_at && !crowded) {
            if (now >= yield_at)
                sched_yield();
            continue;
        }
        uint64_t sleeps = atomic_fetch_add(&shared->sleeps, 1) + 1;
        if (!shared->patient && sleeps >= BUSY_MINIMUM && sleeps * BUSY_RATIO > mine) {
            atomic_store(&shared->busy, 1);
            stop_at(shared, mine);  /* every block before this one is still computed */
            return 0;
        }
        pthread_mutex_lock(&shared->lock);
        atomic_fetch_add(&shared->sleepers, 1);
        while (atomic_load(&baton->end) < end && atomic_load(&shared->stop) >= end) {
            struct timespec until;  /* a timeout as well, so a lost wake-up costs a millisecond */
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += NS_PER_SECOND / 1000;
            if (until.tv_nsec >= NS_PER_SECOND) {
                until.tv_sec++;
                until.tv_nsec -= NS_PER_SECOND;
            }
            pthread_cond_timedwait(&shared->wake, &shared->lock, &until);
        }
        atomic_fetch_sub(&shared->sleepers, 1);
        pthread_mutex_unlock(&shared->lock);
    }
    return 1;
}

/* The first heap of block k (count past the last block).  The first m blocks ramp up: block k < m
   holds (k + 1) / m of a block (in whole lines; block 0 the head too), so that the threads' first
   batons leave about a block's time / m apart, as later ones do.  Blocks of one length would send
   the first m batons out together behind block 0, and each thread would then find its baton late
   by a little at most blocks. */
static uint64_t ramp_start(uint64_t head, uint64_t block, uint64_t m, uint64_t k)
{
    uint64_t start = k == 0 ? 0 : head;
    for (uint64_t j = 0; j < k && j < m; j++)
        start += (block / LINE_CODES * (j + 1) + m - 1) / m * LINE_CODES;
    return start;
}

static inline uint64_t block_start(const worker_t *w, uint64_t k)
{
    uint64_t start = k < w->threads ? ramp_start(w->head, w->block, w->threads, k)
                                    : w->ramped + (k - w->threads) * w->block;
    return start < w->count ? start : w->count;
}

#if defined(VECTOR_MARKS)
/* With VECTOR_MARKS a block's passes mark its heaps MARK_LANES at once, as one-bit sets: batch b,
   the heaps start + i ... start + i + MARK_LANES - 1 (i = MARK_LANES b; the last batch may reach
   past the block, and its extra lanes are never read), holds its marks in words[b] (ranges of 32
   codes below 32 ranges) and its terms marked so far are marked[b] ... TERMS - 1.  A term can be
   marked in every lane once its sources are final for every lane: its offset exceeds
   start + i + MARK_LANES - 1 - to, where every heap before `to` is final.  This adds the terms that
   became so since the batch's last pass: the terms first ... marked[b] - 1, where first is
   first_term_above that limit. */
static inline void mark_batch(const code_t *g, uint32_t (*words)[MARK_LANES], uint32_t *marked, uint32_t ranges,
                              uint32_t first)
{
    if (first < *marked) {
        mark_words(g, words, ranges, first, *marked, 0);
        *marked = first;
    }
}
#endif

static void *worker(void *argument)
{
    worker_t *w = argument;
    shared_t *shared = w->shared;
    const uint32_t m = w->threads;
    const uint64_t capacity = WINDOW + PRIVATE_HEAPS + (m + 1) * (w->head + w->block);
    code_t *history = malloc(capacity * sizeof(code_t));
#if defined(VECTOR_MARKS)
    const uint64_t batches = (w->head + w->block + MARK_LANES - 1u) / MARK_LANES;
    const uint32_t near = first_term_above(MARK_LANES - 1u);  /* terms 0 ... near - 1 read their batch */
    lane_words_t *words = aligned_alloc(64, batches * sizeof(lane_words_t));
    uint32_t *marked = malloc(batches * sizeof(uint32_t));
    uint8_t marks[MARK_SIZE] __attribute__((aligned(64)));  /* a heap whose ranges fill up, bytewise */
    range_tally_t tally = {{0}, 0};
    uint32_t ranges = 8;
    memset(marks, 0, MARK_SIZE);
    int ready = words && marked && history;
#else
    const uint64_t rows_size = (w->head + w->block) * (uint64_t)BLOCK_ROW;
    uint8_t *rows = aligned_alloc(64, (rows_size + 63) / 64 * 64);
    int ready = rows && history;
    if (ready)
        memset(rows, 0, rows_size);
#endif
    uint8_t stamp = 0;
    if (!ready)
        goto release;
    memcpy(history, w->window, WINDOW * sizeof(code_t));
    int64_t first = -(int64_t)WINDOW;  /* the heap at history[0] */
    uint64_t known = 0, known_block = 0;  /* history holds all before known, the start of known_block */
    KERNEL_CLOCK_START();
    for (uint64_t k = w->index;; k += m) {
        const uint64_t start = block_start(w, k), end = block_start(w, k + 1);
        if (start >= end)
            break;
        if ((int64_t)end - first > (int64_t)capacity) {  /* slide: keep what the next heaps read */
            memmove(history, history + ((int64_t)known - (int64_t)WINDOW - first), WINDOW * sizeof(code_t));
            first = (int64_t)known - (int64_t)WINDOW;
        }
        code_t *g = history + ((int64_t)start - first);  /* G(start) */
        const uint64_t count = end - start;
        atomic_store_explicit(&shared->batons[k % BATON_SLOTS].core, CURRENT_CORE(), memory_order_relaxed);
        /* 1. early: the sources before known. */
#if defined(VECTOR_MARKS)
        uint32_t t = first_term_above(start + MARK_LANES - 1u - known);
        for (uint64_t b = 0, i = 0; i < count; b++, i += MARK_LANES) {
            marked[b] = t = next_term_above(t, start + i + MARK_LANES - 1u - known);
            mark_words(g + i, words[b], ranges, t, TERMS, 1);
        }
#else
        if (++stamp == 0) {
            memset(rows, 0, rows_size);
            stamp = 1;
        }
        for (uint64_t i = 0; i < count; i++)
            mark_terms_above(g + i, rows + i * BLOCK_ROW, stamp, start + i - known);
#endif
        /* 2. stages: each block in flight before this one, once its baton is out. */
        KERNEL_CLOCK_STAGES();
        while (known < start) {
            uint64_t to = block_start(w, known_block + 1);
            if (!wait_for_baton(shared, &shared->batons[known_block % BATON_SLOTS], to, start))
                goto done;
            memcpy(history + ((int64_t)known - first), w->out + known, (to - known) * sizeof(code_t));
#if defined(VECTOR_MARKS)
            t = first_term_above(start + MARK_LANES - 1u - to);
            for (uint64_t b = 0, i = 0; i < count; b++, i += MARK_LANES) {
                t = next_term_above(t, start + i + MARK_LANES - 1u - to);
                mark_batch(g + i, words[b], &marked[b], ranges, t);
            }
#else
            mark_sources(g, rows, stamp, start, count, known, to);
#endif
            known = to;
            known_block++;
        }
        KERNEL_CLOCK_ARRIVAL();
        /* 3. late: this block's own sources, heap by heap, and the mex. */
#if defined(VECTOR_MARKS)
        uint32_t v = g[-1];
        for (uint64_t b = 0, i = 0; i < count; b++, i += MARK_LANES) {
            mark_batch(g + i, words[b], &marked[b], ranges, near);  /* the sources before start + i */
            for (uint32_t j = 0; j < MARK_LANES && i + j < count; j++) {
                v = lane_value(g + i + j, words[b], j, ranges, v, marks, &stamp);
                if (v >= MEX_SIZE) {
                    memcpy(w->out + start, g, (i + j) * sizeof(code_t));
                    stop_at(shared, start + i + j);
                    goto done;
                }
                g[i + j] = (code_t)v;
                tally_code(&tally, v);
            }
        }
        ranges = tally_ranges(&tally);  /* the next block's */
#else
        for (uint64_t i = 0; i < count; i++) {
            uint8_t *row = rows + i * BLOCK_ROW;
            mark_own_block(g + i, row, stamp, (uint32_t)i);
            uint32_t v = mex(row, stamp, COMMON_ROW(w->first_heap + start + i));
            if (v >= MEX_SIZE) {
                memcpy(w->out + start, g, i * sizeof(code_t));
                stop_at(shared, start + i);
                goto done;
            }
            g[i] = (code_t)v;
        }
#endif
        /* Whole lines of the output (the block ends on a line boundary or at the end), then the
           baton: sequentially consistent, so ordered before reading sleepers. */
        memcpy(w->out + start, g, count * sizeof(code_t));
        atomic_store(&shared->batons[k % BATON_SLOTS].end, end);
        KERNEL_CLOCK_DEPARTURE();
        if (atomic_load(&shared->sleepers))
            wake_all(shared);
        known = end;
        known_block = k + 1;
    }
done:
    KERNEL_CLOCK_END();
release:
#if defined(VECTOR_MARKS)
    free(words);
    free(marked);
#else
    free(rows);
#endif
    free(history);
    if (!ready)
        stop_at(shared, 0);
    return (void *)(uintptr_t)!ready;
}

static int fill_threads(code_t *buffer, uint64_t count, uint64_t first_heap, uint32_t threads, uint32_t block,
                        int patient, uint64_t *done)
{
    shared_t *shared = aligned_alloc(64, sizeof(shared_t));
    worker_t *workers = calloc(threads, sizeof(worker_t));
    pthread_t *ids = calloc(threads, sizeof(pthread_t));
    int result = -1;
    if (!shared || !workers || !ids)
        goto out;
    for (uint32_t s = 0; s < BATON_SLOTS; s++) {
        atomic_init(&shared->batons[s].end, 0);
        atomic_init(&shared->batons[s].core, -1);
    }
    atomic_init(&shared->stop, UINT64_MAX);
    atomic_init(&shared->sleepers, 0);
    atomic_init(&shared->sleeps, 0);
    atomic_init(&shared->busy, 0);
    shared->patient = patient;
    pthread_mutex_init(&shared->lock, 0);
    pthread_cond_init(&shared->wake, 0);
    code_t *out = buffer + WINDOW;
    uint64_t head = (64u - (uintptr_t)out % 64u) % 64u / sizeof(code_t);  /* codes up to a line boundary */
    /* The calling thread is worker 0 and starts the others: one thread fewer to start at each call,
       and no core left to a caller that only waits for them. */
    for (uint32_t j = 0; j < threads; j++)
        workers[j] = (worker_t){buffer, out, count, first_heap, head, block,
                                ramp_start(head, block, threads, threads), threads, j, shared};
    uint32_t started = 1;
    for (; started < threads; started++)
        if (pthread_create(&ids[started], 0, worker, &workers[started])) {
            stop_at(shared, 0);
            break;
        }
    int failed = started < threads;
    if (!failed)
        failed |= worker(&workers[0]) != 0;
    for (uint32_t j = 1; j < started; j++) {
        void *status = 0;
        pthread_join(ids[j], &status);
        failed |= status != 0;
    }
    uint64_t first = atomic_load(&shared->stop);
    *done = first == UINT64_MAX ? count : first;
    result = failed ? -1 : first == UINT64_MAX ? 0 : atomic_load(&shared->busy) ? 2 : 1;
    pthread_mutex_destroy(&shared->lock);
    pthread_cond_destroy(&shared->wake);
out:
    free(shared);
    free(workers);
    free(ids);
    return result;
}

/* The rare flags of octalgen_kernel_fill_crossing: rare[h], h < length, nonzero at a rare position. */
typedef struct {
    const uint8_t *rare;
    uint64_t length;
} rare_flags_t;

static int flagged_rare(const void *flags, uint64_t h)
{
    const rare_flags_t *f = (const rare_flags_t *)flags;
    return h < f->length && f->rare[h] != 0;
}

int64_t octalgen_kernel_fill_crossing(code_t *buffer, uint64_t count, uint64_t first_heap, const uint8_t *rare,
                                      uint64_t rare_length, const uint64_t *crossings, uint64_t crossing_count)
{
    uint8_t marks[MARK_SIZE] __attribute__((aligned(64)));
    uint8_t stamp = 0;
    memset(marks, 0, MARK_SIZE);
    const rare_flags_t flags = {rare, rare_length};
    code_t *g = buffer + WINDOW;
    uint64_t crossing = 0;  /* the next of crossings[] */
    for (uint64_t i = 0; i < count; i++) {
        const uint64_t n = first_heap + i;
        const int crossed = crossing < crossing_count && crossings[crossing] == n;
        crossing += (uint64_t)crossed;
        const uint32_t v = crossed ? crossing_mex(g + i, n, flagged_rare, &flags, marks, &stamp)
                                   : heap_mex(g + i, marks, &stamp, COMMON_ROW(n));
        if (v >= MEX_SIZE)
            return (int64_t)i;
        g[i] = (code_t)v;
    }
    return -1;
}

int octalgen_kernel_fill(code_t *buffer, uint64_t count, uint64_t first_heap, uint32_t threads, uint32_t block,
                         int patient, uint64_t *done)
{
    if (threads > RECENT)
        threads = RECENT;
    if (block == 0 || block > MAX_BLOCK_HEAPS || block % LINE_CODES)  /* the caller checks; never a wrong block */
        block = MAX_BLOCK_HEAPS;
    if (threads > 1 && count >= 2)
        return fill_threads(buffer, count, first_heap, threads, block, patient, done);
    int64_t stopped = fill_one_thread(buffer, count, first_heap);
    *done = stopped < 0 ? count : (uint64_t)stopped;
    return stopped >= 0;
}

#endif /* OCTALGEN_KERNEL_H */
