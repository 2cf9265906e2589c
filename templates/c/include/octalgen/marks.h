/* octalgen/marks.h: the marks of a heap's terms and its mex, which the speculative kernel
 * (octalgen/kernel.h) and the verifier (octalgen/verify.h) share.
 *
 * Heap n marks code(c_i) ^ G(n - o_i) for each term (o_i, c_i), then takes the least unmarked
 * common value.  Values are stored as codes; XOR commutes with the encoding, so the marks are
 * codes too.  The unit that includes it defines, before it, the plan: code_t, WINDOW, MARK_SIZE,
 * MEX_SIZE, STORAGE_U8, LOAD_CODE (the instruction that loads a code), HEAP_CLASSES, PARITY,
 * COMMON_CLASSES and COMMON_BITS[][] (bit v of row c: code v stands for a value common at heaps of
 * class c; the mex takes only those), TERMS and the terms by increasing offset (TERM_OFFSET[],
 * TERM_CODE[]), TAKEN_LAST_CODE where one term has offset 1; and after it, unrolled over the terms:
 *   mark_terms       every term of one heap, a byte store each (MARK, MARK0)
 *   mark_near_terms  (VECTOR_MARKS) the terms of offsets below MARK_LANES but the one of offset 1,
 *                    as bits of lane_value's vector
 */
#ifndef OCTALGEN_MARKS_H
#define OCTALGEN_MARKS_H

static void mark_terms(const code_t *g, uint8_t *marks, uint8_t stamp);

/* Terms given at run time (the verifier's round of pairs, octalgen/verify.h: offset k + x, the code of
   G(x)), marked in lanes as the plan's are. */
typedef struct {
    uint32_t count;
    uint32_t offset[TWO_HEAP_TAKES * ROUND_PAIRS], code[TWO_HEAP_TAKES * ROUND_PAIRS];
} round_terms_t;

/* CLASS(n): the class of heap n.  HEAP_CLASSES 2: positional rarity, v is rare at heap n when
   popcount(v & mask) + n + PARITY is even, so what is rare depends on the heap's class; 1: the same
   at every heap. */
#if HEAP_CLASSES == 2
#define CLASS(n) ((uint32_t)(((n) + PARITY) & 1u))
#else
#define CLASS(n) ((void)(n), 0u)
#endif

/* COMMON_ROW(n): the row of COMMON_BITS for heap n (one row when it is the same for every heap). */
#if COMMON_CLASSES == 2
#define COMMON_ROW(n) COMMON_BITS[CLASS(n)]
#else
#define COMMON_ROW(n) ((void)(n), COMMON_BITS[0])
#endif
/* The first term whose offset exceeds limit (TERMS if none). */
static uint32_t first_term_above(uint64_t limit)
{
    uint32_t lo = 0, hi = TERMS;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (TERM_OFFSET[mid] > limit)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* first_term_above(limit), searched from a term t whose offset is at most limit (for loops whose
   limit grows a little at a time, where a binary search would mispredict at every step). */
static inline uint32_t next_term_above(uint32_t t, uint64_t limit)
{
    while (t < TERMS && TERM_OFFSET[t] <= limit)
        t++;
    return t;
}

/* ---- u8 codes: the marks of MARK_LANES heaps at once -------------------------------------------
 * Heap n's code v is the mex of its marks when every code below v is marked and v is not.  The
 * codes of MARK_LANES consecutive heaps sit in the lanes of a vector, 32 bits a lane.  A term
 * marks code(c) ^ G(n + j - o) in lane j, x say; within the range of codes [32 r, 32 r + 32) its
 * mark is the bit 1 << (x ^ 32 r), a shift by 32 or more giving 0 (x is in another range).  The
 * ranges up to the largest code of the batch are ORed term by term: ALU work on MARK_LANES heaps
 * at once, where the scalar marks are a byte store per term and heap, at the store ports' limit.
 * The verifier then compares each lane's marks below and at its own code (marks_agree); the
 * kernel (one thread, and each thread's early pass) stores them as words (mark_words) to which the
 * heap's other terms are added before its least unmarked code is taken.  VECTOR_MARKS off
 * (OCTALGEN_PORTABLE, OCTALGEN_PLAIN_SCAN, no AVX2, u16 codes): the scalar marks only.
 */
#if STORAGE_U8 && !defined(OCTALGEN_PORTABLE) && !defined(OCTALGEN_PLAIN_SCAN) && defined(__AVX2__)
#define VECTOR_MARKS 1
#if defined(__AVX512F__) && (!defined(SCAN_VECTOR_BYTES) || SCAN_VECTOR_BYTES >= 64)
#define MARK_LANES 16u
typedef __m512i mvec_t;
#define MV_CODES(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p)))
#define MV_SET1(x) _mm512_set1_epi32((int)(x))
#define MV_XOR _mm512_xor_si512
#define MV_OR _mm512_or_si512
#define MV_OR3(a, b, c) _mm512_ternarylogic_epi32(a, b, c, 0xfe)
#define MV_AND _mm512_and_si512
#define MV_SUB _mm512_sub_epi32
#define MV_SLLV _mm512_sllv_epi32
#define MV_ZERO _mm512_setzero_si512()
#define MV_GE(a, b) ((uint32_t)_mm512_cmpge_epu32_mask(a, b))
#define MV_NE(a, b) ((uint32_t)_mm512_cmpneq_epi32_mask(a, b))
#define MV_NONZERO(a) ((uint32_t)_mm512_test_epi32_mask(a, a))
#define MV_STORE(p, v) _mm512_storeu_si512((void *)(p), v)
#define MV_LOAD(p) _mm512_loadu_si512((const void *)(p))
#else
#define MARK_LANES 8u
typedef __m256i mvec_t;
#define MV_CODES(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
#define MV_SET1(x) _mm256_set1_epi32((int)(x))
#define MV_XOR _mm256_xor_si256
#define MV_OR _mm256_or_si256
#define MV_OR3(a, b, c) _mm256_or_si256(_mm256_or_si256(a, b), c)
#define MV_AND _mm256_and_si256
#define MV_SUB _mm256_sub_epi32
#define MV_SLLV _mm256_sllv_epi32
#define MV_ZERO _mm256_setzero_si256()
#define MV_LANES(m) ((uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(m)))
#define MV_GE(a, b) MV_LANES(_mm256_cmpeq_epi32(_mm256_max_epu32(a, b), a))
#define MV_NE(a, b) (~MV_LANES(_mm256_cmpeq_epi32(a, b)) & 0xffu)
#define MV_NONZERO(a) (~MV_LANES(_mm256_cmpeq_epi32(a, MV_ZERO)) & 0xffu)
#define MV_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define MV_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#endif

/* A batch's marks lane by lane: words[r][j], heap n + j's marks in the codes [32 r, 32 r + 32). */
typedef uint32_t lane_words_t[8][MARK_LANES];

/* The code a term (o, c) marks in each lane: code(c) ^ G(n + j - o). */
static inline __attribute__((always_inline)) mvec_t term_lanes(const code_t *g, uint32_t offset, uint32_t code)
{
    return MV_XOR(MV_CODES(g - offset), MV_SET1(code));
}

/* Each lane's mark x as a bit of the range of codes [32 r, 32 r + 32): 0 where x is in another. */
static inline __attribute__((always_inline)) mvec_t range_bit(mvec_t x, uint32_t r)
{
    return MV_SLLV(MV_SET1(1), MV_XOR(x, MV_SET1(32u * r)));
}

/* acc[r] |= the marks of the terms (offset[t], code[t]), t = first ... last - 1, for the heaps from
   g = G(n), in the codes [32 r, 32 r + 32), r < ranges (a constant where it is inlined: one loop over
   the terms per count of ranges). */
static inline __attribute__((always_inline)) void mark_lanes(const code_t *g, mvec_t *acc, const uint32_t ranges,
                                                             const uint32_t *offset, const uint32_t *code,
                                                             uint32_t first, uint32_t last)
{
    /* In registers: the codes are bytes, which may alias anything, so ORs into acc itself would be
       stored at every step. */
    mvec_t a[8];
    for (uint32_t r = 0; r < ranges; r++)
        a[r] = acc[r];
    uint32_t t = first;
    /* Two terms a step: with AVX-512 one three-input OR (vpternlogd) adds both to a range, 2.5
       instructions a term and range where one at a time takes 3. */
    for (; t + 1 < last; t += 2) {
        const mvec_t x = term_lanes(g, offset[t], code[t]), y = term_lanes(g, offset[t + 1], code[t + 1]);
        for (uint32_t r = 0; r < ranges; r++)
            a[r] = MV_OR3(a[r], range_bit(x, r), range_bit(y, r));
    }
    for (; t < last; t++) {
        const mvec_t x = term_lanes(g, offset[t], code[t]);
        for (uint32_t r = 0; r < ranges; r++)
            a[r] = MV_OR(a[r], range_bit(x, r));
    }
    for (uint32_t r = 0; r < ranges; r++)
        acc[r] = a[r];
}

/* mark_lanes with ranges 1 ... 8, each a loop of its own. */
static void mark_ranges(const code_t *g, mvec_t *acc, uint32_t ranges, const uint32_t *offset, const uint32_t *code,
                        uint32_t first, uint32_t last)
{
    switch (ranges) {
    case 1u:
        mark_lanes(g, acc, 1u, offset, code, first, last);
        break;
    case 2u:
        mark_lanes(g, acc, 2u, offset, code, first, last);
        break;
    case 3u:
        mark_lanes(g, acc, 3u, offset, code, first, last);
        break;
    case 4u:
        mark_lanes(g, acc, 4u, offset, code, first, last);
        break;
    case 5u:
        mark_lanes(g, acc, 5u, offset, code, first, last);
        break;
    case 6u:
        mark_lanes(g, acc, 6u, offset, code, first, last);
        break;
    case 7u:
        mark_lanes(g, acc, 7u, offset, code, first, last);
        break;
    case 8u:
        mark_lanes(g, acc, 8u, offset, code, first, last);
        break;
    default:
        break;
    }
}

/* mark_ranges kept lane by lane: words[r][j] holds heap n + j's marks in the codes [32 r, 32 r + 32),
   those of the terms first ... last - 1 added to what words held (nothing if fresh: then the ranges
   from `ranges` on are cleared). */
static void mark_words(const code_t *g, uint32_t (*words)[MARK_LANES], uint32_t ranges, uint32_t first,
                       uint32_t last, int fresh)
{
    mvec_t acc[8];
    for (uint32_t r = 0; r < ranges; r++)
        acc[r] = fresh ? MV_ZERO : MV_LOAD(words[r]);
    mark_ranges(g, acc, ranges, TERM_OFFSET, TERM_CODE, first, last);
    for (uint32_t r = 0; r < ranges; r++)
        MV_STORE(words[r], acc[r]);
    for (uint32_t r = ranges; fresh && r < 8; r++)
        MV_STORE(words[r], MV_ZERO);
}

#endif /* VECTOR_MARKS */

/* ---- marking -------------------------------------------------------------------------------- */

#if defined(__x86_64__) && !defined(OCTALGEN_PORTABLE)
/* The three-instruction form: gcc re-extends the XOR result, a fourth instruction per term. */
#define MARK(off, k)                                                                          \
    __asm__ volatile(LOAD_CODE " %c[o](%[g]), %%eax\n\txorl %[c], %%eax\n\tmovb %b[s], (%[m],%%rax)"  \
                     : : [g] "r"(g), [m] "r"(marks), [s] "q"(stamp),                          \
                         [o] "i"(-(long)(off) * (long)sizeof(code_t)), [c] "i"(k)             \
                     : "rax", "memory")
#define MARK0(off)                                                                            \
    __asm__ volatile(LOAD_CODE " %c[o](%[g]), %%eax\n\tmovb %b[s], (%[m],%%rax)"                       \
                     : : [g] "r"(g), [m] "r"(marks), [s] "q"(stamp),                          \
                         [o] "i"(-(long)(off) * (long)sizeof(code_t))                         \
                     : "rax", "memory")
#else
#define MARK(off, k) (marks[g[-(long)(off)] ^ (k)] = stamp)
#define MARK0(off) (marks[g[-(long)(off)]] = stamp)
#endif

/* The least code below MEX_SIZE that is common (a bit of common) and not marked with stamp;
   MEX_SIZE if none. */
static uint32_t mex(const uint8_t *marks, uint8_t stamp, const uint64_t *common)
{
    for (uint32_t i = 0; i < MEX_SIZE; i += 64) {
#if defined(__AVX512BW__)
        uint64_t unmarked = _mm512_cmpneq_epi8_mask(_mm512_loadu_si512((const void *)(marks + i)),
                                                    _mm512_set1_epi8((char)stamp));
#elif defined(__AVX2__)
        __m256i s = _mm256_set1_epi8((char)stamp);
        uint32_t lo = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(marks + i)), s));
        uint32_t hi = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(marks + i + 32)), s));
        uint64_t unmarked = ~(((uint64_t)hi << 32) | lo);
#else
        uint64_t unmarked = 0;
        for (uint32_t j = 0; j < 64; j++)
            unmarked |= (uint64_t)(marks[i + j] != stamp) << j;
#endif
        unmarked &= common[i / 64];
        if (unmarked)
            return i + (uint32_t)__builtin_ctzll(unmarked);
    }
    return MEX_SIZE;
}

/* Stamps replace clearing: a mark counts when it equals the heap's stamp; every 255 heaps the
   array is cleared once. */
static uint8_t next_stamp(uint8_t stamp, uint8_t *marks)
{
    if (++stamp == 0) {
        memset(marks, 0, MARK_SIZE);
        stamp = 1;
    }
    return stamp;
}

/* The mex of heap g = G(n) from all its terms, marked bytewise with the next stamp. */
static inline uint32_t heap_mex(const code_t *g, uint8_t *marks, uint8_t *stamp, const uint64_t *common)
{
    *stamp = next_stamp(*stamp, marks);
    mark_terms(g, marks, *stamp);
    return mex(marks, *stamp, common);
}

/* The mex of heap g = G(n) from its terms that read a common heap, marked bytewise with the next stamp:
   a term that reads a rare position (at a crossing heap of a plan that starts early) marks nothing, its
   option, the XOR of two rare values, being rare.  rare_at(context, h): heap h is a rare position. */
static inline uint32_t crossing_mex(const code_t *g, uint64_t n, int (*rare_at)(const void *, uint64_t),
                                    const void *context, uint8_t *marks, uint8_t *stamp)
{
    *stamp = next_stamp(*stamp, marks);
    for (uint32_t t = 0; t < TERMS; t++)
        if (!rare_at(context, n - TERM_OFFSET[t]))
            marks[(uint32_t)(g[-(long)TERM_OFFSET[t]] ^ TERM_CODE[t])] = *stamp;
    return mex(marks, *stamp, COMMON_ROW(n));
}

#if defined(VECTOR_MARKS)
static inline __m256i mark_near_terms(const code_t *g, __m256i marked, __m256i one, __m256i low);

/* Heap g's code (g = G(n + j); previous = G(n + j - 1)): lane j of words holds the marks of its
   terms of offsets MARK_LANES and more in the first `ranges` ranges (the others clear); its terms
   of smaller offsets, whose sources are in its batch, are added, and the least code unmarked is
   taken.  This is the chain from heap to heap, so it takes no branch that depends on the values:
   which ranges hold an unmarked code is a mask, whose lowest bit is the range.  A single term of
   offset 1, which reads the value just found, is taken last: of the two least codes the others
   leave unmarked, the first unless that term marks it (a compare and a select after the previous
   heap).  A heap whose least unmarked code lies past its ranges lacks the lanes' terms there: it is
   marked again bytewise in marks (the next stamp; every term).  MEX_SIZE or more: no code fits. */
static inline __attribute__((always_inline)) uint32_t lane_value(const code_t *g, uint32_t (*words)[MARK_LANES],
                                                                 uint32_t j, uint32_t ranges, uint32_t previous,
                                                                 uint8_t *marks, uint8_t *stamp)
{
    /* Its marks as one vector, a range a lane; a term adds its code's bit to every lane by a shift
       (32 or more, or below 0, in the other ranges: 0).  Words in memory, ORed at an index that
       depends on the values, would put a store and a load on the chain from heap to heap. */
    const __m256i one = _mm256_set1_epi32(1), low = _mm256_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224);
    __m256i marked = _mm256_setr_epi32((int)words[0][j], (int)words[1][j], (int)words[2][j], (int)words[3][j],
                                       (int)words[4][j], (int)words[5][j], (int)words[6][j], (int)words[7][j]);
    marked = mark_near_terms(g, marked, one, low);
    uint32_t m[10] __attribute__((aligned(32)));  /* 8 and 9 (codes 256 ...) unmarked: none fits */
    _mm256_store_si256((__m256i *)m, marked);
    m[8] = m[9] = 0;
    const __m256i full = _mm256_cmpeq_epi32(marked, _mm256_set1_epi32(-1));
    const uint32_t held = (~(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(full)) & 0xffu) | 0x300u;
    const uint32_t r = (uint32_t)__builtin_ctz(held), unmarked = ~m[r];
    uint32_t v = 32u * r + (uint32_t)__builtin_ctz(unmarked);
#if defined(TAKEN_LAST_CODE)
    const uint32_t rest = unmarked & (unmarked - 1u), next = (uint32_t)__builtin_ctz(held & ~((2u << r) - 1u));
    const uint32_t second = rest ? 32u * r + (uint32_t)__builtin_ctz(rest) : 32u * next + (uint32_t)__builtin_ctz(~m[next]);
    v = (previous ^ TAKEN_LAST_CODE) == v ? second : v;
#endif
    (void)previous;
    if (__builtin_expect(v >= 32u * ranges, 0))
        v = ranges == 8u ? MEX_SIZE : heap_mex(g, marks, stamp, COMMON_ROW(0));
    return v;
}
#endif

#endif /* OCTALGEN_MARKS_H */
