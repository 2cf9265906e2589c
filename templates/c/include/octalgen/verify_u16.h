/* octalgen/verify_u16.h: the verifier's proof scan for u16 codes, which are the values
 * (octalgen/verify.h holds the rest), the same for every plan.
 *
 * The unit that includes it defines, before it, beside what octalgen/marks.h needs: NEED_LIMIT
 * (every candidate is below it; a multiple of 64), RARE_BITS[][] (bit v of row c: the value v is
 * rare at heaps of class c), DENSE_CHUNK and SPARSE_FROM (see below), and the verifier's one-heap
 * moves: NONE_TAKES[] (NONE_TAKE_COUNT), the takes that leave no heap, and RARE_OPTIONS[]
 * (RARE_OPTION_COUNT), the takes k whose option G(n - k) is rare at every heap n.
 */
#ifndef OCTALGEN_VERIFY_U16_H
#define OCTALGEN_VERIFY_U16_H

/* The value of heap n stored as code: the code itself. */
#define RAW_AT(heap, code) ((uint32_t)(code))

/* Candidates (values) are below NEED_LIMIT. */
#define NEED_WORDS (NEED_LIMIT / 64)
#define FOUND_WORDS 16u  /* the values below 512 in 32-bit words (the round's finds in lanes) */

/* ---- u16: the scan in values --------------------------------------------------------------
 * The proof scan of one heap takes the rare values below the candidate off a need list as the
   pairs reach them.  A heap whose candidate is below TABLE_VALUES takes the table path where the
   CPU has it (AVX-512 VBMI, below).  Else, while many are missing nearly every option is one of
   them: options are marked blindly in seen, DENSE_CHUNK at a time, and folded into need.  Once at
   most SPARSE_FROM are missing (most pairs of a scan come after that), each option is compared
   with the missing values: the vector path compares LANES options at a time with every one of them
   and takes a block with a match pair by pair, in order, as the plain path takes every pair.  Every
   path therefore scans the same pairs and reports the same counts. */
_Static_assert(SPARSE_FROM >= 1 && SPARSE_FROM <= 16, "the sparse phase compares with at most 16 values");
#define GROUP_BLOCKS 8u        /* blocks of 64 options a group of the table path (as octalgen/verify_u8.h's) */
#define FIRST_GROUP_BLOCKS 2u
#define SEEN_SIZE (NEED_LIMIT + 64)
#define SEEN_INDEX(v, limit) ((v) < (limit) ? (v) : (limit))

/* The vector path: GCC/clang vector extensions, as wide as this CPU's vectors (the build's
   -march decides, and the module cache is keyed by flags and CPU), so the same source is the
   AVX-512, AVX2, SSE or NEON code.  OCTALGEN_PORTABLE or OCTALGEN_PLAIN_SCAN selects the plain
   path; SCAN_VECTOR_BYTES may be set to run a wider vector's logic on a narrower CPU. */
#if !defined(OCTALGEN_PORTABLE) && !defined(OCTALGEN_PLAIN_SCAN) && (defined(__GNUC__) || defined(__clang__))
#define VECTOR_SCAN 1
#ifndef SCAN_VECTOR_BYTES
#if defined(__AVX512BW__)
#define SCAN_VECTOR_BYTES 64
#elif defined(__AVX2__)
#define SCAN_VECTOR_BYTES 32
#else
#define SCAN_VECTOR_BYTES 16
#endif
#endif
#define LANES (SCAN_VECTOR_BYTES / 2)
#if SCAN_VECTOR_BYTES == 64 && defined(__AVX512VBMI__) && NEED_LIMIT >= 512
#define TABLE_SCAN 1
#define TABLE_VALUES 512u  /* the table path takes the heaps whose candidate is at most this */
#endif
typedef uint16_t lanes_t __attribute__((vector_size(SCAN_VECTOR_BYTES)));
typedef int16_t lane_mask_t __attribute__((vector_size(SCAN_VECTOR_BYTES)));
#if LANES == 8
#define REVERSED_LANES 7, 6, 5, 4, 3, 2, 1, 0
#elif LANES == 16
#define REVERSED_LANES 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0
#elif LANES == 32
#define REVERSED_LANES 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, \
    15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0
#else
#error "SCAN_VECTOR_BYTES must be 16, 32 or 64"
#endif
#if defined(__clang__)
#define REVERSED(v) __builtin_shufflevector(v, v, REVERSED_LANES)
#else
#define REVERSED(v) __builtin_shuffle(v, (lanes_t){REVERSED_LANES})
#endif
#else
#define VECTOR_SCAN 0
#endif

/* The scan's state: where its heaps are, what it counted, and the rare values still missing. */
typedef struct {
    const code_t *prefix;  /* the stored codes of G(0) ... G(prefix_length - 1) */
    uint64_t prefix_length;
    const uint8_t *rare;   /* rare[x]: 0xff when heap x < rare_length is a rare position, else 0 (u8 only) */
    uint64_t rare_length;
    const code_t *values;  /* the codes of heaps base ... base + length - 1 */
    uint64_t base, length;
    const uint64_t *far;   /* the rare positions past the prefix (found far out), and how many */
    uint64_t far_count;
    uint64_t missing;      /* rare values still missing */
    uint64_t scanned;
    int incomplete;        /* some pair was skipped: a heap of it is in neither array */
    uint32_t limit;        /* the candidate (at most NEED_LIMIT): options at or above it are not needed */
    uint64_t need[NEED_WORDS];  /* bit v: the rare value v is not yet an option */
    uint32_t group;    /* blocks in the next group (the table path) */
    uint8_t stamp;     /* seen[v] == stamp: v is an option of this heap (dense phase) */
    uint8_t seen[SEEN_SIZE] __attribute__((aligned(64)));
#if VECTOR_SCAN
    int listed;        /* want holds the missing values (sparse phase) */
    lanes_t want[SPARSE_FROM];  /* each missing value in every lane */
    uint8_t slot[NEED_LIMIT];   /* want[slot[v]] holds the missing value v */
#endif
} scan_t;


/* need: the rare values below the candidate at heap n (whose values before it are g[-1], ...),
   less the one-heap options rare there. */
static void need_below(scan_t *s, uint64_t n, uint32_t candidate, const code_t *g)
{
    const uint64_t *rare = RARE_BITS[CLASS(n)];
    s->missing = 0;
    for (uint32_t w = 0; w < NEED_WORDS; w++) {
        uint64_t below = w * 64 + 64 <= candidate ? ~0ull : w * 64 >= candidate ? 0 : (1ull << (candidate - w * 64)) - 1;
        s->need[w] = rare[w] & below;
        s->missing += (uint64_t)__builtin_popcountll(s->need[w]);
    }
    for (int t = 0; t < RARE_OPTION_COUNT; t++) {
        /* G(n - k), one heap left by taking k beans, is rare at n (no term marks it) */
        uint32_t v = g[-(int64_t)RARE_OPTIONS[t]];
        if (v < NEED_LIMIT && (s->need[v >> 6] >> (v & 63) & 1)) {
            s->need[v >> 6] &= ~(1ull << (v & 63));
            s->missing--;
        }
    }
    for (int t = 0; t < NONE_TAKE_COUNT; t++)
        if (n == NONE_TAKES[t] && (s->need[0] & 1)) {  /* taking all k beans leaves 0 */
            s->need[0] &= ~1ull;
            s->missing--;
        }
    s->limit = candidate < NEED_LIMIT ? candidate : NEED_LIMIT;
    s->incomplete = 0;
    s->group = FIRST_GROUP_BLOCKS;
#if VECTOR_SCAN
    s->listed = 0;
#endif
    if (++s->stamp == 0) {
        memset(s->seen, 0, sizeof s->seen);
        s->stamp = 1;
    }
}

/* The least rare value still missing at heap n (need is not empty). */
static int64_t least_missing(const scan_t *s, uint64_t n)
{
    uint32_t w = 0;
    (void)n;
    while (!s->need[w])
        w++;
    return (int64_t)(w * 64 + (uint32_t)__builtin_ctzll(s->need[w]));
}

/* need &= ~seen: takes the options marked in the dense phase off need; returns how many are missing.
   Without branches on seen: whether a value was seen is a coin toss, and mispredicting it cost more
   than the compares. */
static uint64_t fold_seen(scan_t *s, uint32_t limit)
{
    s->missing = 0;
    for (uint32_t w = 0; w < (limit + 63) / 64; w++) {
#if VECTOR_SCAN && defined(__AVX2__)
        const __m256i stamp = _mm256_set1_epi8((char)s->stamp);
        const __m256i *seen = (const __m256i *)(s->seen + 64 * w);
        uint64_t lo = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_load_si256(seen), stamp));
        uint64_t hi = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_load_si256(seen + 1), stamp));
        s->need[w] &= ~(hi << 32 | lo);
#else
        uint64_t seen = 0;
        for (uint64_t bits = s->need[w]; bits; bits &= bits - 1) {
            uint32_t b = (uint32_t)__builtin_ctzll(bits);
            seen |= (uint64_t)(s->seen[64 * w + b] == s->stamp) << b;
        }
        s->need[w] &= ~seen;
#endif
        s->missing += (uint64_t)__builtin_popcountll(s->need[w]);
    }
    return s->missing;
}

/* need less the values of found (value v: bit v & 31 of word v >> 5, for v below 32 FOUND_WORDS). */
static inline void take_found(scan_t *s, const uint32_t *found)
{
    s->missing = 0;
    for (uint32_t w = 0; w < NEED_WORDS; w++) {
        if (2 * w + 1 < FOUND_WORDS)
            s->need[w] &= ~((uint64_t)found[2 * w] | (uint64_t)found[2 * w + 1] << 32);
        s->missing += (uint64_t)__builtin_popcountll(s->need[w]);
    }
}

/* The options of pairs (listed by octalgen/verify.h's round_options), every one: marked in seen, then
   folded into need.  Returns 1 once nothing is missing. */
static int take_options(scan_t *s, const code_t *options, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        s->seen[SEEN_INDEX((uint32_t)options[i], s->limit)] = s->stamp;
    return fold_seen(s, s->limit) == 0;
}

/* Takes v off the need list: -1 if it was not on it, else the number still missing. */
static int64_t take(scan_t *s, uint32_t v)
{
    uint64_t bit = 1ull << (v & 63);
    if (!(s->need[v >> 6] & bit))
        return -1;
    s->need[v >> 6] &= ~bit;
    s->missing--;
#if VECTOR_SCAN
    uint32_t j = s->slot[v], last = s->want[s->missing][0];  /* the last entry fills v's place */
    s->want[j] = s->want[s->missing];
    s->slot[last] = (uint8_t)j;
#endif
    return (int64_t)s->missing;
}

/* Pairs (xs[i], ys[-i]) for i in [from, to), one by one: returns 1 once nothing is missing. */
static int take_pairs(scan_t *s, const uint16_t *xs, const uint16_t *ys, uint64_t from, uint64_t to,
                      uint32_t limit)
{
    for (uint64_t i = from; i < to; i++) {
        uint32_t v = (uint32_t)(xs[i] ^ ys[-(int64_t)i]);
        if (v < limit && take(s, v) == 0) {
            s->scanned += i + 1;
            return 1;
        }
    }
    return 0;
}

#if VECTOR_SCAN
/* The missing values into want, for the sparse phase. */
static void list_missing(scan_t *s, uint32_t limit)
{
    uint32_t j = 0;
    for (uint32_t w = 0; w < (limit + 63) / 64; w++)
        for (uint64_t bits = s->need[w]; bits; bits &= bits - 1, j++) {
            uint32_t v = w * 64 + (uint32_t)__builtin_ctzll(bits);
            s->want[j] = (lanes_t){0} + (uint16_t)v;
            s->slot[v] = (uint8_t)j;
        }
    s->listed = 1;
}

static inline lanes_t load_lanes(const uint16_t *p)
{
    lanes_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Lane k: the option xs[i + k] ^ ys[-(i + k)] (pair i + k). */
static inline lanes_t pair_lanes(const uint16_t *xs, const uint16_t *ys, uint64_t i)
{
    return load_lanes(xs + i) ^ REVERSED(load_lanes(ys - i - (LANES - 1)));
}

/* Bit k * LANE_BIT (bits of other positions clear): lane k of m is set. */
#if SCAN_VECTOR_BYTES == 64 && defined(__AVX512BW__)
#define LANE_BIT 1u
static inline uint64_t lane_bits(lane_mask_t m)
{
    return _mm512_movepi16_mask((__m512i)m);
}
#elif SCAN_VECTOR_BYTES == 32 && defined(__AVX2__)
#define LANE_BIT 2u  /* a byte mask: two bits per lane (pext would be one, but is slow on some CPUs) */
static inline uint64_t lane_bits(lane_mask_t m)
{
    return (uint32_t)_mm256_movemask_epi8((__m256i)m) & 0x55555555u;
}
#elif SCAN_VECTOR_BYTES == 16 && defined(__SSE2__)
#define LANE_BIT 2u
static inline uint64_t lane_bits(lane_mask_t m)
{
    return (uint32_t)_mm_movemask_epi8((__m128i)m) & 0x5555u;
}
#else
#define LANE_BIT 1u
static inline uint64_t lane_bits(lane_mask_t m)
{
    typedef uint64_t words_t __attribute__((vector_size(SCAN_VECTOR_BYTES)));
    words_t words = (words_t)m;
    uint64_t any = 0, bits = 0;
    for (uint32_t k = 0; k < SCAN_VECTOR_BYTES / 8; k++)
        any |= words[k];
    for (uint32_t k = 0; any && k < LANES; k++)  /* lane by lane only for a block with a match */
        bits |= (uint64_t)(m[k] != 0) << k;
    return bits;
}
#endif

/* Takes the values of the lanes set in bits (lane_bits of the blocks v[0], v[1]: pairs i, i + 1, ...)
   in order: returns 1 once nothing is missing. */
static int take_lanes(scan_t *s, const lanes_t v[2], uint64_t bits, uint64_t i)
{
    for (; bits; bits &= bits - 1) {
        uint32_t k = (uint32_t)__builtin_ctzll(bits) / LANE_BIT;
        if (take(s, v[k / LANES][k % LANES]) == 0) {
            s->scanned += i + k + 1;
            return 1;
        }
    }
    return 0;
}
#endif

/* The dense phase: marks the options of pairs [i, stop) in seen with stamp.  Out of line: inlined, its
   loop counter was kept in a vector register (the scan around it holds many), a round trip a store. */
static __attribute__((noinline)) void mark_seen(uint8_t *seen, uint8_t stamp, const uint16_t *xs, const uint16_t *ys,
                                                uint64_t i, uint64_t stop, uint32_t limit)
{
#if VECTOR_SCAN
    for (; i + LANES <= stop; i += LANES) {  /* the exclusive-ors LANES at a time, the marks one by one */
        lanes_t v = pair_lanes(xs, ys, i);
        for (uint32_t k = 0; k < LANES; k++)
            seen[SEEN_INDEX((uint32_t)v[k], limit)] = stamp;
    }
#endif
    for (; i + 4 <= stop; i += 4) {
        seen[SEEN_INDEX((uint32_t)(xs[i] ^ ys[-(int64_t)i]), limit)] = stamp;
        seen[SEEN_INDEX((uint32_t)(xs[i + 1] ^ ys[-(int64_t)i - 1]), limit)] = stamp;
        seen[SEEN_INDEX((uint32_t)(xs[i + 2] ^ ys[-(int64_t)i - 2]), limit)] = stamp;
        seen[SEEN_INDEX((uint32_t)(xs[i + 3] ^ ys[-(int64_t)i - 3]), limit)] = stamp;
    }
    for (; i < stop; i++)
        seen[SEEN_INDEX((uint32_t)(xs[i] ^ ys[-(int64_t)i]), limit)] = stamp;
}

#if defined(TABLE_SCAN)
/* ---- the table path: heaps whose candidate is below TABLE_VALUES (nearly all, in most games) ------
 * need's first 512 bits are a 64-byte table, and 32 options a vector are looked up in it as the u8 scan
 * looks its codes up (octalgen/verify_u8.h): a byte by the option's bits 3 to 8, a bit of it by its
 * low three, by byte permutes; an option of TABLE_VALUES or more is no hit.  Blocks of 64 options go
 * in groups with one branch asking for any hit, whose hits are then taken in order. */
static const uint16_t REVERSED_WORDS[32] __attribute__((aligned(64))) = {
    31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
};
static const uint8_t BIT_OF_INDEX[64] __attribute__((aligned(64))) = {
    1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128,
    1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128,
};
#define LOW_BYTES 0x5555555555555555ull  /* the low byte of every 16-bit lane */

/* Bit k: the option xs[k] ^ ys[-k] (k < 32) is in need (table: need's first 512 bits). */
static inline __attribute__((always_inline)) uint32_t lookup32(const uint16_t *xs, const uint16_t *ys, __m512i table)
{
    const __m512i o = _mm512_xor_si512(_mm512_loadu_si512((const void *)xs),
                                       _mm512_permutexvar_epi16(_mm512_load_si512((const void *)REVERSED_WORDS),
                                                                _mm512_loadu_si512((const void *)(ys - 31))));
    const __m512i byte = _mm512_maskz_permutexvar_epi8(LOW_BYTES, _mm512_srli_epi16(o, 3), table);
    const __m512i bit = _mm512_maskz_permutexvar_epi8(LOW_BYTES, o, _mm512_load_si512((const void *)BIT_OF_INDEX));
    return _mm512_mask_test_epi16_mask(_mm512_cmplt_epu16_mask(o, _mm512_set1_epi16((short)TABLE_VALUES)), byte, bit);
}

/* need's first 512 bits less v (below TABLE_VALUES). */
static inline __m512i without(__m512i need, uint32_t v)
{
    return _mm512_andnot_si512(_mm512_maskz_set1_epi64((__mmask8)(1u << (v >> 6)), (long long)(1ull << (v & 63))),
                               need);
}

/* Takes a group's hits (hits[b] bit k: pair i + 64 b + k) off *table (need's first 512 bits), in order:
   returns 1 when the last missing value is taken (s->scanned counts the pairs up to its pair). */
static __attribute__((noinline)) int take_hits(scan_t *s, const uint16_t *xs, const uint16_t *ys, const uint64_t *hits,
                                               uint32_t blocks, uint64_t i, __m512i *table)
{
    __m512i need = *table;
    for (uint32_t b = 0; b < blocks; b++)
        for (uint64_t rest = hits[b]; rest; rest &= rest - 1) {
            const uint64_t k = i + 64 * b + (uint64_t)__builtin_ctzll(rest);
            need = without(need, (uint32_t)(xs[k] ^ ys[-(int64_t)k]));
            if (!_mm512_test_epi64_mask(need, need)) {
                s->missing = 0;
                s->scanned += k + 1;
                return 1;
            }
        }
    *table = need;
    return 0;
}

/* The pairs (xs[i], ys[-i]), i in [0, count), by the table: returns 1 once nothing is missing. */
static int scan_table(scan_t *s, const uint16_t *xs, const uint16_t *ys, uint64_t count)
{
    __m512i table = _mm512_loadu_si512((const void *)s->need);
    uint64_t i = 0;
    while (i + 64 <= count) {
        const uint32_t blocks = count - i >= 64 * s->group ? s->group : (uint32_t)((count - i) / 64);
        s->group = GROUP_BLOCKS;
        uint64_t hits[GROUP_BLOCKS], any = 0;
        for (uint32_t b = 0; b < blocks; b++) {
            const uint64_t j = i + 64 * b;
            hits[b] = lookup32(xs + j, ys - j, table) | (uint64_t)lookup32(xs + j + 32, ys - j - 32, table) << 32;
            any |= hits[b];
        }
        if (__builtin_expect(any != 0, 0) && take_hits(s, xs, ys, hits, blocks, i, &table))  /* most groups have none */
            return 1;
        i += 64 * blocks;
    }
    _mm512_storeu_si512((void *)s->need, table);
    s->missing = 0;
    for (uint32_t w = 0; w < TABLE_VALUES / 64; w++)
        s->missing += (uint64_t)__builtin_popcountll(s->need[w]);
    for (; i < count; i++) {  /* the last pairs, one by one */
        const uint32_t v = (uint32_t)(xs[i] ^ ys[-(int64_t)i]);
        const uint64_t bit = 1ull << (v & 63);
        if (v < TABLE_VALUES && (s->need[v >> 6] & bit)) {
            s->need[v >> 6] &= ~bit;
            if (--s->missing == 0) {
                s->scanned += i + 1;
                return 1;
            }
        }
    }
    s->scanned += count;
    return 0;
}
#endif

/* Pairs (xs[i], ys[-i]) for i in [0, count): returns 1 once nothing is missing.  xf, yf (rare flags)
   are for u8 codes only. */
static int scan_run(scan_t *s, const code_t *xs, const code_t *ys, uint64_t count, const uint8_t *xf,
                    const uint8_t *yf)
{
    const uint32_t limit = s->limit;
    (void)xf, (void)yf;
#if defined(TABLE_SCAN)
    if (limit <= TABLE_VALUES)
        return scan_table(s, xs, ys, count);
#endif
    uint64_t i = 0;
    while (i < count && s->missing > SPARSE_FROM) {
        uint64_t stop = count - i < DENSE_CHUNK ? count : i + DENSE_CHUNK;
        mark_seen(s->seen, s->stamp, xs, ys, i, stop, limit);
        i = stop;
        if (fold_seen(s, limit) == 0) {
            s->scanned += i;
            return 1;
        }
    }
#if VECTOR_SCAN
    if (i < count && !s->listed)
        list_missing(s, limit);
    for (; i + 2 * LANES <= count; i += 2 * LANES) {  /* two blocks: one jump into the compares */
        const lanes_t v[2] = {pair_lanes(xs, ys, i), pair_lanes(xs, ys, i + LANES)};
        lane_mask_t hit0 = {0}, hit1 = {0};
        const lanes_t *want = s->want;
        switch (s->missing) {  /* compare with want[missing - 1] ... want[0] */
        case 16:
            hit0 |= v[0] == want[15];
            hit1 |= v[1] == want[15];
            __attribute__((fallthrough));
        case 15:
            hit0 |= v[0] == want[14];
            hit1 |= v[1] == want[14];
            __attribute__((fallthrough));
        case 14:
            hit0 |= v[0] == want[13];
            hit1 |= v[1] == want[13];
            __attribute__((fallthrough));
        case 13:
            hit0 |= v[0] == want[12];
            hit1 |= v[1] == want[12];
            __attribute__((fallthrough));
        case 12:
            hit0 |= v[0] == want[11];
            hit1 |= v[1] == want[11];
            __attribute__((fallthrough));
        case 11:
            hit0 |= v[0] == want[10];
            hit1 |= v[1] == want[10];
            __attribute__((fallthrough));
        case 10:
            hit0 |= v[0] == want[9];
            hit1 |= v[1] == want[9];
            __attribute__((fallthrough));
        case 9:
            hit0 |= v[0] == want[8];
            hit1 |= v[1] == want[8];
            __attribute__((fallthrough));
        case 8:
            hit0 |= v[0] == want[7];
            hit1 |= v[1] == want[7];
            __attribute__((fallthrough));
        case 7:
            hit0 |= v[0] == want[6];
            hit1 |= v[1] == want[6];
            __attribute__((fallthrough));
        case 6:
            hit0 |= v[0] == want[5];
            hit1 |= v[1] == want[5];
            __attribute__((fallthrough));
        case 5:
            hit0 |= v[0] == want[4];
            hit1 |= v[1] == want[4];
            __attribute__((fallthrough));
        case 4:
            hit0 |= v[0] == want[3];
            hit1 |= v[1] == want[3];
            __attribute__((fallthrough));
        case 3:
            hit0 |= v[0] == want[2];
            hit1 |= v[1] == want[2];
            __attribute__((fallthrough));
        case 2:
            hit0 |= v[0] == want[1];
            hit1 |= v[1] == want[1];
            __attribute__((fallthrough));
        case 1:
            hit0 |= v[0] == want[0];
            hit1 |= v[1] == want[0];
        }
        uint64_t bits = lane_bits(hit0) | lane_bits(hit1) << (LANES * LANE_BIT);
        if (bits && take_lanes(s, v, bits, i))
            return 1;
    }
#endif
    if (take_pairs(s, xs, ys, i, count, limit))
        return 1;
    s->scanned += count;
    return 0;
}

/* ---- u16: (a), the kernel's marks, for 64 heaps at once ----------------------------------------
 * As octalgen/verify_u8.h's batch_marks, in values: the 64 heaps sorted by their values' ranges of 32
 * into four batches of 16 lanes (a word permute of a term's 64 sources), the marks ORed range by range
 * up to the largest value of the batch, and each lane's value taken when every value below it that is
 * common at its heap is marked and it is not (and it is common).  Heaps whose values reach 512 or more
 * (more ranges than it keeps) are marked heap by heap.  A mark of a rare value (a term whose source is
 * a far rare position) marks a rare value, which the check leaves out, as heap_mex does.  The same lanes
 * take the proof scan's round (octalgen/verify.h), its pairs as terms whose marks are the options it
 * finds, in the same ranges.
 */
#if !defined(OCTALGEN_PORTABLE) && !defined(OCTALGEN_PLAIN_SCAN) && defined(__AVX512BW__) && \
    (!defined(SCAN_VECTOR_BYTES) || SCAN_VECTOR_BYTES >= 64)
#define BATCH_MARKS 1
#define ROUND_IN_LANES 1
#define AGREE_HEAPS 64u
typedef uint64_t heap_mask_t;  /* bit j: heap n + j of a batch */
#define LANE_RANGES 16u  /* values below 512 */
#define LOW_WORDS 0x55555555u  /* the low word of every 32-bit lane */

/* Lane l: the value p[word 2 l of index] (below 64), 32 bits. */
static inline __attribute__((always_inline)) __m512i sorted_values(const code_t *p, __m512i index)
{
    return _mm512_maskz_permutex2var_epi16(LOW_WORDS, _mm512_loadu_si512((const void *)p), index,
                                           _mm512_loadu_si512((const void *)(p + 32)));
}

/* The value x's bit in the range of values [32 r, 32 r + 32), each lane: 0 where x is in another. */
static inline __attribute__((always_inline)) __m512i value_bit(__m512i x, uint32_t r)
{
    return _mm512_sllv_epi32(_mm512_set1_epi32(1), _mm512_xor_si512(x, _mm512_set1_epi32((int)(32u * r))));
}

/* acc[r] |= the marks in the ranges first + r, r < ranges, of the terms (offset[t], code[t]), t < count,
   for the 16 heaps g + lane. */
static inline __attribute__((always_inline)) void mark_values(const code_t *g, __m512i index, const uint32_t *offset,
                                                                const uint32_t *code, uint32_t count, __m512i *acc,
                                                                uint32_t first, const uint32_t ranges)
{
    __m512i a[8];
    for (uint32_t r = 0; r < ranges; r++)
        a[r] = acc[r];
#define VALUE_LANES(t) _mm512_xor_si512(sorted_values(g - offset[t], index), _mm512_set1_epi32((int)code[t]))
    uint32_t t = 0;
    for (; t + 1 < count; t += 2) {
        const __m512i x = VALUE_LANES(t), y = VALUE_LANES(t + 1);
        for (uint32_t r = 0; r < ranges; r++)
            a[r] = _mm512_ternarylogic_epi32(a[r], value_bit(x, first + r), value_bit(y, first + r), 0xfe);
    }
    for (; t < count; t++) {
        const __m512i x = VALUE_LANES(t);
        for (uint32_t r = 0; r < ranges; r++)
            a[r] = _mm512_or_si512(a[r], value_bit(x, first + r));
    }
#undef VALUE_LANES
    for (uint32_t r = 0; r < ranges; r++)
        acc[r] = a[r];
}

/* mark_values from cleared accumulators for the ranges first ... first + ranges - 1 (ranges 1 ... 8). */
static void mark_value_ranges(const code_t *g, __m512i index, const uint32_t *offset, const uint32_t *code,
                              uint32_t count, __m512i *acc, uint32_t first, uint32_t ranges)
{
    for (uint32_t r = 0; r < ranges; r++)
        acc[r] = _mm512_setzero_si512();
    switch (ranges) {
    case 1u: mark_values(g, index, offset, code, count, acc, first, 1u); break;
    case 2u: mark_values(g, index, offset, code, count, acc, first, 2u); break;
    case 3u: mark_values(g, index, offset, code, count, acc, first, 3u); break;
    case 4u: mark_values(g, index, offset, code, count, acc, first, 4u); break;
    case 5u: mark_values(g, index, offset, code, count, acc, first, 5u); break;
    case 6u: mark_values(g, index, offset, code, count, acc, first, 6u); break;
    case 7u: mark_values(g, index, offset, code, count, acc, first, 7u); break;
    default: mark_values(g, index, offset, code, count, acc, first, 8u); break;
    }
}

/* (a) for the heaps n ... n + 63 (g = G(n)): bit j for heap n + j; with round (not NULL), also the round:
   found[j] gets the values it finds for heap n + j below its value. */
static heap_mask_t batch_marks(const code_t *g, uint64_t n, const round_terms_t *round,
                               uint32_t (*found)[FOUND_WORDS])
{
    uint8_t order[64];
    uint16_t heaps[16 * 2] __attribute__((aligned(64)));
    uint32_t start[LANE_RANGES + 1] = {0};
    for (uint32_t j = 0; j < 64; j++) {
        if (g[j] >= 32u * LANE_RANGES)
            return 0;
        start[(g[j] >> 5) + 1]++;
    }
    for (uint32_t r = 1; r <= LANE_RANGES; r++)
        start[r] += start[r - 1];
    for (uint32_t j = 0; j < 64; j++)
        order[start[g[j] >> 5]++] = (uint8_t)j;
    uint64_t agree = 0;
    for (uint32_t b = 0; b < 4; b++) {
        for (uint32_t l = 0; l < 16; l++) {
            heaps[2 * l] = order[16 * b + l];
            heaps[2 * l + 1] = 0;
        }
        const __m512i index = _mm512_load_si512((const void *)heaps);
        const uint32_t ranges = (g[order[16 * b + 15]] >> 5) + 1u;
        __m512i acc[LANE_RANGES];
        for (uint32_t first = 0; first < ranges; first += 8)
            mark_value_ranges(g, index, TERM_OFFSET, TERM_CODE, TERMS, acc + first, first,
                              ranges - first < 8 ? ranges - first : 8);
        /* each lane's common values (the rows of its heap's class), range by range */
        uint32_t odd = 0;
        for (uint32_t l = 0; l < 16; l++)
            odd |= (uint32_t)(COMMON_CLASSES == 2 && CLASS(n + order[16 * b + l]) == 1) << l;
        const __m512i v = sorted_values(g, index), one = _mm512_set1_epi32(1);
        uint32_t bad = 0;
        for (uint32_t r = 0; r < ranges; r++) {
            const uint32_t *row0 = (const uint32_t *)COMMON_BITS[0], *row1 = (const uint32_t *)COMMON_BITS[COMMON_CLASSES - 1];
            const __m512i common = _mm512_mask_blend_epi32((__mmask16)odd, _mm512_set1_epi32((int)row0[r]),
                                                           _mm512_set1_epi32((int)row1[r]));
            const __m512i low = _mm512_set1_epi32((int)(32u * r));
            const __m512i bit = _mm512_sllv_epi32(one, _mm512_sub_epi32(v, low));  /* 0 past this range */
            const __m512i below = _mm512_and_si512(_mm512_sub_epi32(bit, one), common);  /* common values below */
            bad |= (uint32_t)_mm512_cmpge_epu32_mask(v, low) &
                   ((uint32_t)_mm512_cmpneq_epi32_mask(_mm512_and_si512(acc[r], below), below) |
                    (uint32_t)_mm512_test_epi32_mask(acc[r], bit) | (uint32_t)_mm512_test_epi32_mask(_mm512_andnot_si512(common, bit), bit));
        }
        for (uint32_t good = ~bad & 0xffffu; good; good &= good - 1)
            agree |= 1ull << order[16 * b + __builtin_ctz(good)];
        /* the round: its options in the ranges of (a) (each heap needs those below its value) */
        const uint32_t round_ranges = round ? ranges : 0;
        for (uint32_t first = 0; first < round_ranges; first += 8)
            mark_value_ranges(g, index, round->offset, round->code, round->count, acc + first, first,
                              round_ranges - first < 8 ? round_ranges - first : 8);
        uint32_t words[16] __attribute__((aligned(64)));
        for (uint32_t r = 0; r < round_ranges; r++) {
            _mm512_store_si512((void *)words, acc[r]);
            for (uint32_t l = 0; l < 16; l++)
                found[order[16 * b + l]][r] = words[l];
        }
    }
    return agree;
}
#endif

#endif /* OCTALGEN_VERIFY_U16_H */
