/* octalgen/exact.h: the exact solver (octalgen_exact.c), the same for every game.
 *
 * The unit that includes it defines, before it, the game's moves:
 *   TAKE_PARITY                        the parity of the beans every two-heap move takes
 *   NONE_TAKES[], NONE_TAKE_COUNT      takes k that leave no heap (a spare 0 ends each table)
 *   ONE_HEAP_TAKES[], ONE_HEAP_TAKE_COUNT   takes k that may leave one heap
 *   TAKES[], TWO_HEAP_TAKES, LARGEST_TAKE   takes k that may leave two heaps
 * and the declarations of octalgen_exact_*.
 */
#ifndef OCTALGEN_EXACT_H
#define OCTALGEN_EXACT_H

#if defined(__AVX2__) && !defined(OCTALGEN_PORTABLE)
#define EXACT_AVX2 1
#endif

/*
 * Exact Grundy values by the rare-value algorithm (Grossman, Figure 2), for any mask:
 *
 *   1. mark every option that involves a heap at a rare position (every common-valued option
 *      does, since common ^ common is rare);
 *   2. the candidate is the least common value not marked;
 *   3. scan all options G(x) ^ G(rest - x) until every rare value below the candidate is
 *      marked: then G(n) is the candidate, else G(n) is the least rare value left unmarked.
 *
 * With mask 0 every value is rare and this is the plain mex over all options.
 *
 * With position parity (when every two-heap move takes the same parity of beans, k = TAKE_PARITY
 * mod 2) rarity depends on the heap too: v is rare at heap n when popcount(v & mask) + n + k is
 * even, and position p is rare when G(p) is rare at p.  Two positions common at theirs give an
 * option rare at n (their parities sum to n - k), so the algorithm is unchanged; a game such as
 * .104 has this kind of sparse space only (Flammenkamp's sparse and common positions).
 *
 * Two methods compute the same values:
 *
 * CLASSIC, one heap at a time, exactly as above (the baseline).
 *
 * BLOCKED, the same steps arranged for the memory system and for vectors:
 *   1. BLOCK heaps n0 ... n0 + BLOCK - 1 at a time: for a rare position p (mask 0: every p up to
 *      half the heap) the partners n0 + j - k - p of the BLOCK heaps are consecutive, so one
 *      vector load gives BLOCK options, marked in BLOCK mark arrays (one per heap).  Each value
 *      of the history is read once per block instead of once per heap.  Pairs whose partner is
 *      not known before n0 (small p, rare positions near n0) are marked heap by heap.
 *   2. the candidate, as above (mask 0: the least unmarked value is G(n));
 *   3. the proof scan reads G(x) forwards and G(rest - x) forwards in a reversed copy of the
 *      values, so both are vector loads.  While many rare values are missing it marks every
 *      option and recounts the missing ones now and then; once at most MISSING_VECTOR are left
 *      it compares 16 options at a time with them (no stores) and stops when none is missing.
 */

/* Options are XORs of 16-bit values, so marks covers every option value and one more (the mex). */
#define VALUE_LIMIT 65536u

/* marks[v] = mark for the options of heap n that leave no heap or one heap. */
#define MARK_ONE_HEAP_OPTIONS(marks, G, n, mark)                                                      \
    do {                                                                                              \
        for (int t_ = 0; t_ < NONE_TAKE_COUNT; t_++)                                                  \
            if ((n) == NONE_TAKES[t_])                                                                \
                (marks)[0] = (mark);                                                                  \
        for (int t_ = 0; t_ < ONE_HEAP_TAKE_COUNT; t_++)                                              \
            if ((n) > ONE_HEAP_TAKES[t_])                                                             \
                (marks)[(G)[(n) - ONE_HEAP_TAKES[t_]]] = (mark);                                      \
    } while (0)

/* Is value rare at heap n (position_parity: 0 or 1)? */
static int is_rare(uint64_t value, uint64_t n, uint64_t mask, uint64_t position_parity)
{
    return ((__builtin_popcountll(value & mask) + (position_parity & (n + TAKE_PARITY))) & 1) == 0;
}

/* ---- CLASSIC ---------------------------------------------------------------------------------- */

/* G(n) as the mex of every option (mask 0). */
static uint64_t mex_of_all_options(const uint16_t *G, uint64_t n, uint64_t *marks, uint64_t stamp,
                                   uint64_t *scanned)
{
    MARK_ONE_HEAP_OPTIONS(marks, G, n, stamp);
    for (int t = 0; t < TWO_HEAP_TAKES; t++)
        if (n >= TAKES[t] + 2) {
            uint64_t rest = n - TAKES[t];
            for (uint64_t x = 1; x <= rest / 2; x++)
                marks[G[x] ^ G[rest - x]] = stamp;
            *scanned += rest / 2;
        }
    (void)scanned;  /* games without two-heap moves */
    uint64_t v = 0;
    while (v < VALUE_LIMIT && marks[v] == stamp)
        v++;
    return v;
}

/* G(n) by the rare-value algorithm; rare[0:rare_count] are the rare positions below n, ascending. */
static uint64_t rare_value_step(const uint16_t *G, uint64_t n, uint64_t mask, uint64_t position_parity,
                                const uint64_t *rare, uint64_t rare_count, uint64_t *marks, uint64_t stamp,
                                uint64_t *scanned)
{
    (void)rare, (void)rare_count, (void)scanned;  /* games without two-heap moves */
    /* 1. Options involving a heap at a rare position p (p = 0: the one-heap options). */
    MARK_ONE_HEAP_OPTIONS(marks, G, n, stamp);
    for (int t = 0; t < TWO_HEAP_TAKES; t++)
        if (n >= TAKES[t] + 2) {
            uint64_t rest = n - TAKES[t];
            for (uint64_t i = 0; i < rare_count && rare[i] < rest; i++)
                if (rare[i] >= 1)
                    marks[G[rare[i]] ^ G[rest - rare[i]]] = stamp;
        }

    /* 2. The candidate: the least common value that is not an option. */
    uint64_t candidate = 0;
    while (candidate < VALUE_LIMIT && (is_rare(candidate, n, mask, position_parity) || marks[candidate] == stamp))
        candidate++;

    /* 3. Every rare value below the candidate must be an option. */
    uint64_t missing = 0;
    for (uint64_t v = 0; v < candidate; v++)
        missing += marks[v] != stamp;  /* commons below the candidate are all marked */
    for (int t = 0; t < TWO_HEAP_TAKES; t++)
        if (missing && n >= TAKES[t] + 2) {
            uint64_t rest = n - TAKES[t];
            for (uint64_t x = 1; x <= rest / 2; x++) {
                uint64_t v = G[x] ^ G[rest - x];
                if (v < candidate && marks[v] != stamp) {
                    marks[v] = stamp;
                    if (--missing == 0) {
                        *scanned += x;
                        break;
                    }
                }
            }
            if (missing)
                *scanned += rest / 2;
        }
    if (missing == 0)
        return candidate;
    uint64_t v = 0;  /* a new rare value: the least one no option reaches */
    while (marks[v] == stamp)
        v++;
    return v;
}

/* ---- BLOCKED ---------------------------------------------------------------------------------- */

/* Heaps per block: one 256-bit vector of 16-bit values. */
#define BLOCK 16u
/* Smaller heaps go the CLASSIC way (their history is too short to fill a block's pairs). */
#define BLOCKED_FROM 1024u
/* Values below 2^MAX_BITS only, so that a block's marks stay small (larger ones: CLASSIC). */
#define MAX_BITS 15u
/* Bytes between the mark arrays of a block's heaps: room for 2^MAX_BITS + 1 marks and vector
   overreads.  The extra 2 KiB shift each array by half the L1 sets: 16 arrays of 2 KiB (values
   below 2^11) take 8 ways of each set, not 16 of some. */
#define STRIDE ((1u << MAX_BITS) + 2048u)
/* The proof scan compares options with the missing values once at most this many are left. */
#define MISSING_VECTOR 16
/* While more are missing, it marks at least this many pairs between recounts. */
#define MARK_CHUNK 512u

/* scratch: two sets of BLOCK mark arrays (the second for the helper thread), two tables
   (common[v] = 0xff for values common at even, then at odd heaps), the missing values of the heap
   being proven. */
#define SCRATCH_MARKS 0u
#define SCRATCH_COMMON (2u * BLOCK * STRIDE)
#define SCRATCH_MISSING (SCRATCH_COMMON + 2u * STRIDE)
#define SCRATCH_SIZE (SCRATCH_MISSING + 2u * STRIDE)

uint64_t octalgen_exact_scratch_size(void)
{
    return SCRATCH_SIZE;
}

/* Mark options G(p) ^ G(n0 + j - k - p), j < BLOCK, for the heaps' mark arrays marks + j * STRIDE
   (partners = G + n0 - k - p, all known). */
static inline void mark_block_options(const uint16_t *partners, uint16_t value, uint8_t *marks)
{
#ifdef EXACT_AVX2
    uint16_t v[BLOCK] __attribute__((aligned(32)));
    _mm256_store_si256((__m256i *)v, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)partners),
                                                      _mm256_set1_epi16((short)value)));
    /* Constant displacements: one load and one store per option. */
    marks[0 * STRIDE + v[0]] = 1;    marks[1 * STRIDE + v[1]] = 1;
    marks[2 * STRIDE + v[2]] = 1;    marks[3 * STRIDE + v[3]] = 1;
    marks[4 * STRIDE + v[4]] = 1;    marks[5 * STRIDE + v[5]] = 1;
    marks[6 * STRIDE + v[6]] = 1;    marks[7 * STRIDE + v[7]] = 1;
    marks[8 * STRIDE + v[8]] = 1;    marks[9 * STRIDE + v[9]] = 1;
    marks[10 * STRIDE + v[10]] = 1;  marks[11 * STRIDE + v[11]] = 1;
    marks[12 * STRIDE + v[12]] = 1;  marks[13 * STRIDE + v[13]] = 1;
    marks[14 * STRIDE + v[14]] = 1;  marks[15 * STRIDE + v[15]] = 1;
#else
    for (uint32_t j = 0; j < BLOCK; j++)
        marks[j * STRIDE + (uint16_t)(partners[j] ^ value)] = 1;
#endif
}

/* The least v < limit with marks[v] == 0 and (select == 0 or select[v] != 0); limit if none.
   Both arrays are readable up to limit rounded up to 32. */
static uint64_t first_unmarked(const uint8_t *marks, const uint8_t *select, uint64_t limit)
{
    for (uint64_t v = 0; v < limit; v += 32) {
#ifdef EXACT_AVX2
        __m256i free = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(marks + v)), _mm256_setzero_si256());
        if (select)
            free = _mm256_and_si256(free, _mm256_loadu_si256((const __m256i *)(select + v)));
        uint32_t bits = (uint32_t)_mm256_movemask_epi8(free);
#else
        uint32_t bits = 0;
        for (uint32_t i = 0; i < 32; i++)
            bits |= (uint32_t)(marks[v + i] == 0 && (!select || select[v + i])) << i;
#endif
        if (bits) {
            uint64_t found = v + (uint64_t)__builtin_ctz(bits);
            return found < limit ? found : limit;
        }
    }
    return limit;
}

/* Mark the options G(x) ^ G(rest - x), x in [x, end); b[x] = G(rest - x). */
static void mark_pairs(uint8_t *marks, const uint16_t *a, const uint16_t *b, uint64_t x, uint64_t end)
{
#ifdef EXACT_AVX2
    for (; x + 16 <= end; x += 16) {
        uint16_t v[16] __attribute__((aligned(32)));
        _mm256_store_si256((__m256i *)v, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(a + x)),
                                                          _mm256_loadu_si256((const __m256i *)(b + x))));
        for (int i = 0; i < 16; i++)
            marks[v[i]] = 1;
    }
#endif
    for (; x < end; x++)
        marks[a[x] ^ b[x]] = 1;
}

/* Drop the missing values that are marked now; returns how many are left. */
static uint32_t still_missing(const uint8_t *marks, uint16_t *missing, uint32_t count)
{
    uint32_t left = 0;
    for (uint32_t i = 0; i < count; i++)
        if (!marks[missing[i]])
            missing[left++] = missing[i];
    return left;
}

#ifdef EXACT_AVX2
/* Compare the options of pairs [x, end) with the K missing values (K >= count; the spare slots
   repeat the first) until one of them is an option; mark that vector's options, update the
   missing values and return where the scan stands. */
#define COMPARE_MISSING(K)                                                                           \
static uint64_t compare_missing_##K(uint8_t *marks, const uint16_t *a, const uint16_t *b, uint64_t x, \
                                    uint64_t end, uint16_t *missing, uint32_t *count)               \
{                                                                                                    \
    __m256i target[K];                                                                               \
    for (int i = 0; i < K; i++)                                                                      \
        target[i] = _mm256_set1_epi16((short)missing[(uint32_t)i < *count ? i : 0]);                 \
    for (; x + 16 <= end; x += 16) {                                                                 \
        __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(a + x)),                   \
                                     _mm256_loadu_si256((const __m256i *)(b + x)));                  \
        __m256i hit = _mm256_cmpeq_epi16(v, target[0]);                                              \
        for (int i = 1; i < K; i++)                                                                  \
            hit = _mm256_or_si256(hit, _mm256_cmpeq_epi16(v, target[i]));                            \
        if (!_mm256_testz_si256(hit, hit)) {                                                         \
            mark_pairs(marks, a, b, x, x + 16);                                                      \
            *count = still_missing(marks, missing, *count);                                          \
            return x + 16;                                                                           \
        }                                                                                            \
    }                                                                                                \
    return x;                                                                                        \
}
COMPARE_MISSING(1)
COMPARE_MISSING(2)
COMPARE_MISSING(4)
COMPARE_MISSING(8)
COMPARE_MISSING(16)
#endif

/* The proof scan of one two-heap take: pairs x = 1 ... rest / 2 until nothing is missing.
   Returns the pairs looked at. */
static uint64_t prove_pairs(uint8_t *marks, const uint16_t *a, const uint16_t *b, uint64_t rest,
                            uint16_t *missing, uint32_t *count)
{
    uint64_t end = rest / 2 + 1, x = 1;
    while (*count > MISSING_VECTOR && x < end) {
        uint64_t chunk = 8u * *count > MARK_CHUNK ? 8u * *count : MARK_CHUNK;
        uint64_t stop = x + chunk < end ? x + chunk : end;
        mark_pairs(marks, a, b, x, stop);
        x = stop;
        *count = still_missing(marks, missing, *count);
    }
#ifdef EXACT_AVX2
    while (*count && x + 16 <= end) {
        if (*count <= 1)
            x = compare_missing_1(marks, a, b, x, end, missing, count);
        else if (*count <= 2)
            x = compare_missing_2(marks, a, b, x, end, missing, count);
        else if (*count <= 4)
            x = compare_missing_4(marks, a, b, x, end, missing, count);
        else if (*count <= 8)
            x = compare_missing_8(marks, a, b, x, end, missing, count);
        else
            x = compare_missing_16(marks, a, b, x, end, missing, count);
    }
#endif
    for (; *count && x < end; x++) {
        uint16_t v = a[x] ^ b[x];
        if (!marks[v]) {
            marks[v] = 1;
            *count = still_missing(marks, missing, *count);
        }
    }
    return x - 1;
}

/* The state of one call: where values live and what is known about them. */
typedef struct {
    uint16_t *values, *reversed;  /* reversed[capacity - 1 - i] = values[i] */
    uint64_t capacity, mask, position_parity;
    uint64_t *rare, *rare_count, rare_capacity;
    uint8_t *scratch;
    uint64_t bits;                /* every value so far is below 2^bits */
    uint64_t *scanned;
} state_t;

/* Index of the first rare position >= p. */
static uint64_t first_rare_from(const state_t *s, uint64_t p)
{
    uint64_t lo = 0, hi = *s->rare_count;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (s->rare[mid] < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* G(n) for one heap of a block whose bulk pairs are marked in marks (span values, cleared). */
static uint64_t finish_heap(state_t *s, uint64_t n, uint8_t *marks, const uint64_t *from, const uint64_t *to)
{
    const uint16_t *G = s->values;
    uint64_t limit = (uint64_t)1 << s->bits;  /* every option is below it */
    MARK_ONE_HEAP_OPTIONS(marks, G, n, 1);
    /* Pairs the bulk did not mark: positions (mask 0) or rare positions (indices) outside
       [from[t], to[t]) of take t. */
    for (int t = 0; t < TWO_HEAP_TAKES; t++) {
        if (n < TAKES[t] + 2)
            continue;
        uint64_t rest = n - TAKES[t];
        if (s->mask == 0) {
            for (uint64_t p = 1; p < from[t] && p <= rest / 2; p++)
                marks[G[p] ^ G[rest - p]] = 1;
            for (uint64_t p = to[t] > 1 ? to[t] : 1; p <= rest / 2; p++)
                marks[G[p] ^ G[rest - p]] = 1;
            *s->scanned += rest / 2;
            continue;
        }
        for (uint64_t i = 0; i < from[t] && s->rare[i] < rest; i++)
            if (s->rare[i] >= 1)
                marks[G[s->rare[i]] ^ G[rest - s->rare[i]]] = 1;
        for (uint64_t i = to[t]; i < *s->rare_count && s->rare[i] < rest; i++)
            marks[G[s->rare[i]] ^ G[rest - s->rare[i]]] = 1;
    }
    if (s->mask == 0)
        return first_unmarked(marks, 0, limit);
    /* limit is not an option, so it serves as the candidate when no common value below it is free. */
    uint64_t candidate = first_unmarked(marks, s->scratch + SCRATCH_COMMON + (n & 1) * STRIDE, limit);
    uint16_t *missing = (uint16_t *)(s->scratch + SCRATCH_MISSING);
    uint32_t count = 0;
    for (uint64_t v = 0; v < candidate; v++)
        if (!marks[v])
            missing[count++] = (uint16_t)v;  /* commons below the candidate are all marked */
    for (int t = 0; count && t < TWO_HEAP_TAKES; t++)
        if (n >= TAKES[t] + 2) {
            uint64_t rest = n - TAKES[t];
            *s->scanned += prove_pairs(marks, G, s->reversed + (s->capacity - 1 - rest), rest, missing, &count);
        }
    return count ? first_unmarked(marks, 0, candidate) : candidate;
}

/* The bulk of a block: per two-heap take t, the positions (mask 0) or rare indices [from[t], to[t])
   whose pairs it marks for every heap of the block. */
typedef struct {
    uint64_t n0;
    uint64_t from[TWO_HEAP_TAKES + 1], to[TWO_HEAP_TAKES + 1];
} bulk_t;

/* The bulk of block n0 when the values below `known` and the first `rare_known` rare positions are
   established: partners n0 + j - k - p must lie in [1, known) for every j < BLOCK, so
   p in [n0 + BLOCK - k - known, n0 - k - 1] (mask 0: only up to half the largest heap). */
static bulk_t bulk_of(const state_t *s, uint64_t n0, uint64_t known, uint64_t rare_known)
{
    bulk_t b;
    b.n0 = n0;
    for (int t = 0; t < TWO_HEAP_TAKES; t++) {
        uint64_t k = TAKES[t];
        uint64_t lo = n0 + BLOCK > k + known + 1 ? n0 + BLOCK - k - known : 1, hi = n0 - k - 1;
        if (s->mask == 0) {
            uint64_t half = (n0 + BLOCK - 1 - k) / 2;
            hi = hi < half ? hi : half;
            b.from[t] = lo, b.to[t] = hi >= lo ? hi + 1 : lo;
        } else {
            b.from[t] = first_rare_from(s, lo);
            b.to[t] = first_rare_from(s, hi + 1);
            b.to[t] = b.to[t] < rare_known ? b.to[t] : rare_known;
            b.to[t] = b.to[t] > b.from[t] ? b.to[t] : b.from[t];
        }
    }
    return b;
}

/* Clear BLOCK mark arrays up to `clear` bytes and mark the pairs of part [from, to) of a bulk. */
static void mark_bulk(const state_t *s, const bulk_t *b, const uint64_t *from, const uint64_t *to,
                      uint8_t *marks, uint64_t clear)
{
    for (uint64_t j = 0; j < BLOCK; j++)
        memset(marks + j * STRIDE, 0, clear);
    for (int t = 0; t < TWO_HEAP_TAKES; t++) {
        const uint16_t *partners = s->values + b->n0 - TAKES[t];
        if (s->mask == 0)
            for (uint64_t p = from[t]; p < to[t]; p++)
                mark_block_options(partners - p, s->values[p], marks);
        else
            for (uint64_t i = from[t]; i < to[t]; i++)
                mark_block_options(partners - s->rare[i], s->values[s->rare[i]], marks);
    }
}

/* A second thread that marks bulks: the next block's while this one's heaps are finished (a
   mask: the heaps take most of the time), or half of this block's (mask 0: the bulk is all). */
typedef struct {
    const state_t *s;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t posted, finished;
    int busy, quit;
    bulk_t bulk;                  /* the job */
    uint64_t from[TWO_HEAP_TAKES + 1], to[TWO_HEAP_TAKES + 1], clear;
    uint8_t *marks;
} helper_t;

static void *helper_main(void *argument)
{
    helper_t *h = argument;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->busy && !h->quit)
            pthread_cond_wait(&h->posted, &h->lock);
        if (!h->busy)
            break;
        pthread_mutex_unlock(&h->lock);
        mark_bulk(h->s, &h->bulk, h->from, h->to, h->marks, h->clear);
        pthread_mutex_lock(&h->lock);
        h->busy = 0;
        pthread_cond_signal(&h->finished);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

static void helper_post(helper_t *h, const bulk_t *b, const uint64_t *from, const uint64_t *to, uint64_t clear)
{
    pthread_mutex_lock(&h->lock);
    h->bulk = *b;
    memcpy(h->from, from, sizeof h->from);
    memcpy(h->to, to, sizeof h->to);
    h->clear = clear;
    h->busy = 1;
    pthread_cond_signal(&h->posted);
    pthread_mutex_unlock(&h->lock);
}

static void helper_wait(helper_t *h)
{
    pthread_mutex_lock(&h->lock);
    while (h->busy)
        pthread_cond_wait(&h->finished, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

/* Heaps n0 ... n0 + size - 1 (size <= BLOCK) whose bulk is marked in marks (cleared up to 2^bits).
   Returns how many were stored: fewer when a value reaches 2^bits (later heaps need wider marks)
   or the rare array is full (*status = 1). */
static uint64_t finish_block(state_t *s, const bulk_t *b, uint8_t *marks, uint64_t size, int *status)
{
    uint64_t limit = (uint64_t)1 << s->bits;
    for (uint64_t j = 0; j < size; j++) {
        uint64_t n = b->n0 + j;
        uint64_t value = finish_heap(s, n, marks + j * STRIDE, b->from, b->to);
        if (s->mask != 0 && is_rare(value, n, s->mask, s->position_parity)) {
            if (*s->rare_count == s->rare_capacity) {
                *status = 1;
                return j;
            }
            s->rare[(*s->rare_count)++] = n;
        }
        s->values[n] = (uint16_t)value;
        s->reversed[s->capacity - 1 - n] = (uint16_t)value;
        if (value >= limit)
            return j + 1;
    }
    return size;
}

/* Heaps have ... want - 1 by blocks (have >= BLOCKED_FROM + LARGEST_TAKE); stops early where a
   value reaches 2^MAX_BITS or the rare array is full (*status = 1).  Returns where it stopped. */
static uint64_t blocked_heaps(state_t *s, uint64_t have, uint64_t want, int threads, int *status)
{
    uint8_t *marks[2] = {s->scratch + SCRATCH_MARKS, s->scratch + SCRATCH_MARKS + BLOCK * STRIDE};
    helper_t h = {.s = s, .busy = 0, .quit = 0};
    int helping = threads > 1 && pthread_mutex_init(&h.lock, NULL) == 0;
    helping = helping && pthread_cond_init(&h.posted, NULL) == 0 && pthread_cond_init(&h.finished, NULL) == 0;
    helping = helping && pthread_create(&h.thread, NULL, helper_main, &h) == 0;
    int ahead = 0;                /* the helper marks the bulk of block n into marks[next] */
    int next = 1;
    uint64_t n = have, cleared = 0;
    while (n < want && s->bits <= MAX_BITS) {
        uint64_t size = want - n < BLOCK ? want - n : BLOCK, clear = ((uint64_t)1 << s->bits) + 1;
        bulk_t b;
        uint8_t *current;
        if (ahead && h.bulk.n0 == n) {
            helper_wait(&h);
            b = h.bulk, current = marks[next], next ^= 1;
            for (uint64_t j = 0; j < BLOCK && cleared < clear; j++)
                memset(current + j * STRIDE + cleared, 0, clear - cleared);  /* a value grew since */
        } else {
            if (ahead)
                helper_wait(&h);      /* marked for a block that does not start here: unused */
            b = bulk_of(s, n, n, *s->rare_count);
            current = marks[next ^ 1];
            if (helping && s->mask == 0) {
                uint64_t middle[TWO_HEAP_TAKES + 1];
                for (int t = 0; t < TWO_HEAP_TAKES; t++)
                    middle[t] = b.from[t] + (b.to[t] - b.from[t]) / 2;
                h.marks = marks[next];
                helper_post(&h, &b, middle, b.to, clear);
                mark_bulk(s, &b, b.from, middle, current, clear);
                helper_wait(&h);
                for (uint64_t j = 0; j < size; j++)
                    for (uint64_t v = 0; v < clear; v++)
                        current[j * STRIDE + v] |= marks[next][j * STRIDE + v];
            } else {
                mark_bulk(s, &b, b.from, b.to, current, clear);
            }
        }
        ahead = 0;
        if (helping && s->mask != 0 && size == BLOCK && n + BLOCK < want) {
            bulk_t following = bulk_of(s, n + BLOCK, n, *s->rare_count);
            h.marks = marks[next];
            cleared = clear;
            helper_post(&h, &following, following.from, following.to, clear);
            ahead = 1;
        }
        uint64_t stored = finish_block(s, &b, current, size, status);
        for (uint64_t i = n; i < n + stored; i++)
            while (((uint64_t)1 << s->bits) <= s->values[i])
                s->bits++;
        n += stored;
        if (*status)
            break;
    }
    if (helping) {
        helper_wait(&h);
        pthread_mutex_lock(&h.lock);
        h.quit = 1;
        pthread_cond_signal(&h.posted);
        pthread_mutex_unlock(&h.lock);
        pthread_join(h.thread, NULL);
        pthread_cond_destroy(&h.posted);
        pthread_cond_destroy(&h.finished);
        pthread_mutex_destroy(&h.lock);
    }
    return n;
}

/* ---- entry point ------------------------------------------------------------------------------ */

int octalgen_exact_extend(uint16_t *values, uint16_t *reversed, uint64_t capacity, uint64_t have,
                          uint64_t want, uint64_t largest, uint64_t mask, int position_parity,
                          uint64_t *rare, uint64_t *rare_count, uint64_t rare_capacity,
                          uint64_t *marks, uint8_t *scratch, int method, int threads, uint64_t *done,
                          uint64_t *options_scanned)
{
    uint64_t parity = mask != 0 && position_parity;
    state_t s = {values, reversed, capacity, mask, parity, rare, rare_count, rare_capacity, scratch, 1,
                 options_scanned};
    while (((uint64_t)1 << s.bits) <= largest)
        s.bits++;
    for (uint64_t v = 0; v < STRIDE; v++)
        for (uint64_t odd = 0; odd < 2; odd++)
            scratch[SCRATCH_COMMON + odd * STRIDE + v] = mask != 0 && !is_rare(v, odd, mask, parity) ? 0xff : 0;
    uint64_t n = have;
    while (n < want) {
        if (method == OCTALGEN_EXACT_BLOCKED && TWO_HEAP_TAKES && n >= BLOCKED_FROM + LARGEST_TAKE
            && s.bits <= MAX_BITS) {
            int status = 0;
            n = blocked_heaps(&s, n, want, threads, &status);
            if (status) {
                *done = n;
                return status;
            }
            continue;
        }
        /* A fresh stamp per heap: marks never need clearing (the caller zeroes them once). */
        uint64_t stamp = n + 1;
        uint64_t value = mask == 0 ? mex_of_all_options(values, n, marks, stamp, options_scanned)
                                   : rare_value_step(values, n, mask, parity, rare, *rare_count, marks,
                                                     stamp, options_scanned);
        if (value >= VALUE_LIMIT) {
            *done = n;
            return 2;
        }
        if (mask != 0 && is_rare(value, n, mask, parity)) {
            if (*rare_count == rare_capacity) {
                *done = n;
                return 1;
            }
            rare[(*rare_count)++] = n;
        }
        values[n] = (uint16_t)value;
        reversed[capacity - 1 - n] = (uint16_t)value;
        while (((uint64_t)1 << s.bits) <= value)
            s.bits++;
        n++;
    }
    *done = want;
    return 0;
}

#endif /* OCTALGEN_EXACT_H */
