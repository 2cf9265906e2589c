/* octalgen/verify_u8.h: the verifier's proof scan and marks for u8 codes (octalgen/verify.h holds
 * the rest), the same for every plan.
 *
 * The unit that includes it defines, before it, beside what octalgen/marks.h needs: DECODE[][]
 * (the value common at heaps of class c stored as each code), NEED_BELOW[][] (for each class and
 * candidate code, the codes of the rare values below the candidate, in need's layout below), their
 * number NEED_COUNT[][] and NEED_TOP[][] (one more than the largest of them), and
 * RARE_VALUE[][] (the value rare at heaps of class c stored as each code: among them codes keep the
 * order of values, so the least code missing is the least value), and the verifier's one-heap
 * moves: NONE_TAKES[] (NONE_TAKE_COUNT), the takes that leave no heap, and RARE_OPTIONS[]
 * (RARE_OPTION_COUNT), the takes k whose option G(n - k) is rare at every heap n.
 */
#ifndef OCTALGEN_VERIFY_U8_H
#define OCTALGEN_VERIFY_U8_H

/* The value of heap n stored as code (a common value: the candidate). */
#define RAW_AT(heap, code) DECODE[CLASS(heap)][code]

/* ---- u8: the scan in codes ------------------------------------------------------------------
 * The rare values still missing are a set of codes, need, a bit each: code c is bit c & 7 of byte
 * c >> 3.  The vector path looks 64 options up in it at once, a byte of need by the option's top
 * five bits and a bit of that byte by its low three (AVX-512 VBMI: two byte permutes of 64-byte
 * tables; AVX-512BW and AVX2: 16-byte shuffles of need's halves), so that a block of 64 options
 * costs the same however many values are missing.  Blocks go in groups, looked up with need as it
 * was before the group: one branch a group asks whether any option is missing, and after the first
 * few groups the answer is nearly always no.  A group's hits are then taken off need (with AVX-512
 * VBMI2 listed by one compress a block and taken by an OR of one-bit sets, else one by one);
 * where the last missing value goes, its pair is found in order, so that every path counts the
 * pairs up to that one, as the plain path, which takes every pair in turn, does.
 */
#define NEED_BYTE(c) ((c) >> 3)
#define NEED_BIT(c) ((uint8_t)(1u << ((c) & 7u)))
#define FOUND_WORDS 8u  /* a set of codes in need's layout as 32-bit words (octalgen/verify.h's found) */

/* Blocks of 64 options looked up together with need as it was before them, one branch asking whether
   any had a hit; a heap's first group is shorter: nearly every block there has hits, and those taken
   before the next block is looked up are not found again. */
#define GROUP_BLOCKS 8u
#define FIRST_GROUP_BLOCKS 1u
/* A group's hits are taken one by one, in order, at once where at most this many values are missing
   (the group likely takes the last, which must be found in order); else all at once, and in order
   again only in the group that takes the last. */
#define IN_ORDER_FROM 8u

/* The vector path: AVX2, or AVX-512BW (with VBMI and VBMI2 where the CPU has them: the build's -march
   decides, and the module cache is keyed by flags and CPU); SCAN_VECTOR_BYTES=32 asks for AVX2 on an
   AVX-512 CPU.  OCTALGEN_PORTABLE or OCTALGEN_PLAIN_SCAN, or a CPU without AVX2, selects the plain
   path. */
#if !defined(OCTALGEN_PORTABLE) && !defined(OCTALGEN_PLAIN_SCAN) && defined(__AVX2__)
#define VECTOR_SCAN 1
#if defined(__AVX512BW__) && (!defined(SCAN_VECTOR_BYTES) || SCAN_VECTOR_BYTES >= 64)
#define VECTOR_BYTES 64
#if defined(__AVX512VBMI__)
#define PERMUTE_LOOKUP 1
#endif
#if defined(__AVX512VBMI2__)
#define COMPRESS_HITS 1
#endif
#else
#define VECTOR_BYTES 32
#endif

/* CODE_BIT[c]: the set {c} in need's layout, to take codes by OR, not bit by bit. */
#define CODE_BIT(c) [c] = {[NEED_BYTE(c)] = NEED_BIT(c)}
#define CODE_BIT_4(c) CODE_BIT(c), CODE_BIT((c) + 1), CODE_BIT((c) + 2), CODE_BIT((c) + 3)
#define CODE_BIT_16(c) CODE_BIT_4(c), CODE_BIT_4((c) + 4), CODE_BIT_4((c) + 8), CODE_BIT_4((c) + 12)
#define CODE_BIT_64(c) CODE_BIT_16(c), CODE_BIT_16((c) + 16), CODE_BIT_16((c) + 32), CODE_BIT_16((c) + 48)
static const uint8_t CODE_BIT[256][32] __attribute__((aligned(32))) = {
    CODE_BIT_64(0), CODE_BIT_64(64), CODE_BIT_64(128), CODE_BIT_64(192),
};
/* Bytes 63 ... 0 (byte permutes; 16-byte shuffles: 15 ... 0 in every 16-byte lane), and 1 << (j & 7)
   for j = 0 ... 63 (the shuffles read the first 16 in every 16-byte lane). */
#if defined(PERMUTE_LOOKUP)
static const uint8_t REVERSED_INDEX[64] __attribute__((aligned(64))) = {
    63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36,
    35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8,
    7, 6, 5, 4, 3, 2, 1, 0,
};
#else
static const uint8_t LANE_REVERSED[16] __attribute__((aligned(16))) = {15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2,
                                                                       1, 0};
#endif
static const uint8_t BIT_OF_INDEX[64] __attribute__((aligned(64))) = {
    1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128,
    1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128,
};
#else
#define VECTOR_SCAN 0
#endif
#if !defined(COMPRESS_HITS)
#define COMPRESS_HITS 0
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
    uint32_t group;        /* blocks in the next group (the vector path) */
    uint8_t need[32] __attribute__((aligned(32)));  /* the codes of the rare values not yet options */
} scan_t;


static uint64_t count_missing(const scan_t *s)
{
    uint64_t words[4];
    memcpy(words, s->need, 32);
    return (uint64_t)(__builtin_popcountll(words[0]) + __builtin_popcountll(words[1]) +
                      __builtin_popcountll(words[2]) + __builtin_popcountll(words[3]));
}

/* need: the rare values below the candidate code at heap n (whose codes before it are g[-1], ...),
   less the one-heap options rare there.  (The vector path's, below count_need, writes need in one store.) */
#if !VECTOR_SCAN
static void need_below(scan_t *s, uint64_t n, uint32_t code, const code_t *g)
{
    memcpy(s->need, NEED_BELOW[CLASS(n)] + 32 * code, 32);
    s->missing = NEED_COUNT[CLASS(n)][code];
    for (int t = 0; t < RARE_OPTION_COUNT; t++) {
        /* G(n - k), one heap left by taking k beans, is rare at n (no term marks it); the value rare
           at n stored as its code is that value */
        const code_t c = g[-(int64_t)RARE_OPTIONS[t]];
        s->missing -= (s->need[NEED_BYTE(c)] & NEED_BIT(c)) != 0;
        s->need[NEED_BYTE(c)] &= (uint8_t)~NEED_BIT(c);
    }
    for (int t = 0; t < NONE_TAKE_COUNT; t++)
        if (n == NONE_TAKES[t] && RARE_VALUE[CLASS(n)][0] == 0 && (s->need[0] & 1u)) {  /* taking all k beans leaves 0, rare at n */
            s->need[0] &= (uint8_t)~1u;
            s->missing--;
        }
    s->incomplete = 0;
    s->group = FIRST_GROUP_BLOCKS;
}
#endif

/* Takes the codes of found (in need's layout) off need. */
static inline void take_found(scan_t *s, const uint32_t *found)
{
    uint32_t words[8];
    memcpy(words, s->need, 32);
    for (uint32_t w = 0; w < 8; w++)
        words[w] &= ~found[w];
    memcpy(s->need, words, 32);
    s->missing = count_missing(s);
}

/* The options of pairs (listed by octalgen/verify.h's round_options) taken off need at once, as a set,
   without a branch on each.  Returns 1 once nothing is missing. */
static int take_options(scan_t *s, const code_t *options, uint32_t count)
{
    uint32_t found[FOUND_WORDS] = {0};
    for (uint32_t i = 0; i < count; i++)
        found[options[i] >> 5] |= 1u << (options[i] & 31);
    take_found(s, found);
    return s->missing == 0;
}

/* The least rare value still missing at heap n (need is not empty). */
static int64_t least_missing(const scan_t *s, uint64_t n)
{
    uint32_t code = 0;
    while (!(s->need[NEED_BYTE(code)] & NEED_BIT(code)))
        code++;
    return RARE_VALUE[CLASS(n)][code];
}

#if VECTOR_SCAN
/* need as the look-up reads it: with byte permutes, need's 32 bytes twice; else its halves (codes
   below 128 and from 128), each in every 16-byte lane. */
#if VECTOR_BYTES == 64
typedef __m512i vec_t;
#else
typedef __m256i vec_t;
#endif
typedef struct {
    vec_t low, high;
} table_t;

static inline table_t need_table(__m256i need)
{
#if defined(PERMUTE_LOOKUP)
    return (table_t){_mm512_broadcast_i64x4(need), _mm512_setzero_si512()};
#elif VECTOR_BYTES == 64
    return (table_t){_mm512_broadcast_i32x4(_mm256_castsi256_si128(need)),
                     _mm512_broadcast_i32x4(_mm256_extracti128_si256(need, 1))};
#else
    return (table_t){_mm256_permute2x128_si256(need, need, 0x00), _mm256_permute2x128_si256(need, need, 0x11)};
#endif
}

/* The VECTOR_BYTES bytes p[0], p[-1], p[-2], ..., in that order. */
static inline __attribute__((always_inline)) vec_t reversed_load(const uint8_t *p)
{
#if defined(PERMUTE_LOOKUP)
    return _mm512_permutexvar_epi8(_mm512_load_si512((const void *)REVERSED_INDEX), _mm512_loadu_si512((const void *)(p - 63)));
#elif VECTOR_BYTES == 64
    const __m512i y = _mm512_shuffle_epi8(_mm512_loadu_si512((const void *)(p - 63)),
                                          _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)LANE_REVERSED)));
    return _mm512_shuffle_i64x2(y, y, 0x1b);
#else
    const __m256i y = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(p - 31)),
                                          _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)LANE_REVERSED)));
    return _mm256_permute4x64_epi64(y, 0x4e);
#endif
}

/* Bit k: the option xs[k] ^ ys[-k] (k < VECTOR_BYTES) is in need; *options gets the options. */
static inline __attribute__((always_inline)) uint64_t lookup(const code_t *xs, const code_t *ys, table_t table,
                                                               vec_t *options)
{
#if defined(PERMUTE_LOOKUP)
    const __m512i o = _mm512_xor_si512(_mm512_loadu_si512((const void *)xs), reversed_load(ys));
    const __m512i byte = _mm512_permutexvar_epi8(_mm512_srli_epi16(o, 3), table.low);
    *options = o;
    return (uint64_t)_mm512_test_epi8_mask(byte, _mm512_permutexvar_epi8(o, _mm512_load_si512((const void *)BIT_OF_INDEX)));
#elif VECTOR_BYTES == 64
    const __m512i o = _mm512_xor_si512(_mm512_loadu_si512((const void *)xs), reversed_load(ys));
    /* byte index o >> 3 in the low nibble, o's bit 7 (which half) kept: a shuffle reads 0 at bit 7 */
    const __m512i index = _mm512_ternarylogic_epi32(_mm512_srli_epi16(o, 3), o, _mm512_set1_epi8(15), 0xe4);
    const __m512i byte = _mm512_or_si512(_mm512_shuffle_epi8(table.low, index),
                                         _mm512_shuffle_epi8(table.high, _mm512_xor_si512(index, _mm512_set1_epi8(-128))));
    const __m512i bit = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)BIT_OF_INDEX)),
                                            _mm512_and_si512(o, _mm512_set1_epi8(7)));
    *options = o;
    return (uint64_t)_mm512_test_epi8_mask(byte, bit);
#else
    const __m256i o = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)xs), reversed_load(ys));
    const __m256i index = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(o, 3), _mm256_set1_epi8(15)),
                                          _mm256_and_si256(o, _mm256_set1_epi8(-128)));
    const __m256i byte = _mm256_or_si256(_mm256_shuffle_epi8(table.low, index),
                                         _mm256_shuffle_epi8(table.high, _mm256_xor_si256(index, _mm256_set1_epi8(-128))));
    const __m256i bit = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)BIT_OF_INDEX)),
                                            _mm256_and_si256(o, _mm256_set1_epi8(7)));
    *options = o;
    return (uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(byte, bit), _mm256_setzero_si256()));
#endif
}

/* Bit k: the rare flag f[k] (reversed: f[-k]), k < 64. */
static inline __attribute__((always_inline)) uint64_t flag_bits(const uint8_t *f, int reversed)
{
#if VECTOR_BYTES == 64
    return (uint64_t)_mm512_movepi8_mask(reversed ? reversed_load(f) : _mm512_loadu_si512((const void *)f));
#else
    const __m256i low = reversed ? reversed_load(f) : _mm256_loadu_si256((const __m256i *)f);
    const __m256i high = reversed ? reversed_load(f - 32) : _mm256_loadu_si256((const __m256i *)(f + 32));
    return (uint64_t)(uint32_t)_mm256_movemask_epi8(low) | (uint64_t)(uint32_t)_mm256_movemask_epi8(high) << 32;
#endif
}

/* Bit k: the option of pair k of the block (xs[k] ^ ys[-k], k < 64) is in need; pairs of one rare and one
   common heap (xf[k], yf[-k]: the rare flags; NULL: every heap is common) are left out.  options[] gets the
   block's options. */
static inline __attribute__((always_inline)) uint64_t block_hits(const code_t *xs, const code_t *ys, const uint8_t *xf,
                                                                   const uint8_t *yf, table_t table, vec_t *options)
{
#if VECTOR_BYTES == 64
    uint64_t hits = lookup(xs, ys, table, options);
#else
    uint64_t hits = lookup(xs, ys, table, options) | lookup(xs + 32, ys - 32, table, options + 1) << 32;
#endif
    if (xf || yf)
        hits &= ~((xf ? flag_bits(xf, 0) : 0) ^ (yf ? flag_bits(yf, 1) : 0));
    return hits;
}

#define BLOCK_VECTORS (64u / VECTOR_BYTES)

/* The number of codes in need. */
static inline uint64_t count_need(__m256i need)
{
    return (uint64_t)(__builtin_popcountll((uint64_t)_mm256_extract_epi64(need, 0)) +
                      __builtin_popcountll((uint64_t)_mm256_extract_epi64(need, 1)) +
                      __builtin_popcountll((uint64_t)_mm256_extract_epi64(need, 2)) +
                      __builtin_popcountll((uint64_t)_mm256_extract_epi64(need, 3)));
}

/* need less the code c, and *missing less one where need held it. */
static inline __m256i take_code(__m256i need, uint32_t c, uint64_t *missing)
{
    const __m256i bit = _mm256_load_si256((const __m256i *)CODE_BIT[c]);
    *missing -= (uint64_t)!_mm256_testz_si256(need, bit);
    return _mm256_andnot_si256(bit, need);
}

/* need_below, the codes taken off in a register and need written in one 32-byte store: the next
   reads of need are 32 bytes wide, which a byte store still in flight cannot forward to (they would
   wait for it to reach the cache). */
static void need_below(scan_t *s, uint64_t n, uint32_t code, const code_t *g)
{
    __m256i need = _mm256_loadu_si256((const __m256i *)(NEED_BELOW[CLASS(n)] + 32 * code));
    uint64_t missing = NEED_COUNT[CLASS(n)][code];
    for (int t = 0; t < RARE_OPTION_COUNT; t++)  /* G(n - k) is rare at n: see the plain path's */
        need = take_code(need, g[-(int64_t)RARE_OPTIONS[t]], &missing);
    for (int t = 0; t < NONE_TAKE_COUNT; t++)
        if (n == NONE_TAKES[t] && RARE_VALUE[CLASS(n)][0] == 0)  /* taking all k beans leaves 0, rare at n */
            need = take_code(need, 0, &missing);
    _mm256_store_si256((__m256i *)s->need, need);
    s->missing = missing;
    s->incomplete = 0;
    s->group = FIRST_GROUP_BLOCKS;
}

/* need less a group's hits (hits[b] bit k: pair i + 64 b + k), taken in order: returns 1 when the last
   missing value is taken (s->scanned counts the pairs up to its pair), else 0 with *need updated. */
static inline int take_in_order(scan_t *s, const code_t *xs, const code_t *ys, const uint64_t *hits, uint32_t blocks,
                                uint64_t i, __m256i *need)
{
    __m256i now = *need;
    for (uint32_t b = 0; b < blocks; b++)
        for (uint64_t rest = hits[b]; rest; rest &= rest - 1) {
            const uint64_t k = i + 64 * b + (uint64_t)__builtin_ctzll(rest);
            now = _mm256_andnot_si256(_mm256_load_si256((const __m256i *)CODE_BIT[xs[k] ^ ys[-(int64_t)k]]), now);
            if (_mm256_testz_si256(now, now)) {
                s->missing = 0;
                s->scanned += k + 1;
                return 1;
            }
        }
    *need = now;
    s->missing = count_need(now);
    return 0;
}

#if COMPRESS_HITS
/* The codes of a group's hits listed by one compress a block (options[b]: block b's options), taken off
   need at once by an OR of one-bit sets; in order (take_in_order) where that leaves none, or where
   IN_ORDER_FROM or fewer are missing. */
static __attribute__((noinline)) int take_group(scan_t *s, const code_t *xs, const code_t *ys, const uint64_t *hits,
                                                const __m512i *options, uint32_t blocks, uint64_t i, __m256i *need)
{
    if (s->missing <= IN_ORDER_FROM)  /* a few left: this group may well take the last, so in order at once */
        return take_in_order(s, xs, ys, hits, blocks, i, need);
    uint8_t list[64 * GROUP_BLOCKS + 64] __attribute__((aligned(64)));  /* and room for a store's spill */
    uint32_t listed = 0;
    for (uint32_t b = 0; b < blocks; b++) {
        _mm512_storeu_si512((void *)(list + listed), _mm512_maskz_compress_epi8(hits[b], options[b]));
        listed += (uint32_t)__builtin_popcountll(hits[b]);
    }
    list[listed] = list[0];  /* two look-ups a step: one more at an odd count, of a code listed already */
    __m256i taken = _mm256_setzero_si256(), other = _mm256_setzero_si256();
    for (uint32_t j = 0; j < listed; j += 2) {
        taken = _mm256_or_si256(taken, _mm256_load_si256((const __m256i *)CODE_BIT[list[j]]));
        other = _mm256_or_si256(other, _mm256_load_si256((const __m256i *)CODE_BIT[list[j + 1]]));
    }
    const __m256i left = _mm256_andnot_si256(_mm256_or_si256(taken, other), *need);
    if (_mm256_testz_si256(left, left))
        return take_in_order(s, xs, ys, hits, blocks, i, need);
    *need = left;
    s->missing = count_need(left);
    return 0;
}
#else
static __attribute__((noinline)) int take_group(scan_t *s, const code_t *xs, const code_t *ys, const uint64_t *hits,
                                                const vec_t *options, uint32_t blocks, uint64_t i, __m256i *need)
{
    (void)options;
    return take_in_order(s, xs, ys, hits, blocks, i, need);
}
#endif

/* Pairs (xs[i], ys[-i]) for i in [0, count - count % 64) in groups of blocks: returns 1 once nothing is
   missing, else leaves need in s and *done the pairs gone through.  xf, yf as for block_hits. */
static inline __attribute__((always_inline)) int scan_blocks(scan_t *s, const code_t *xs, const code_t *ys,
                                                               uint64_t count, const uint8_t *xf, const uint8_t *yf,
                                                               uint64_t *done)
{
    __m256i need = _mm256_load_si256((const __m256i *)s->need);
    table_t table = need_table(need);
    uint64_t i = 0;
    while (i + 64 <= count) {
        const uint32_t blocks = count - i >= 64 * s->group ? s->group : (uint32_t)((count - i) / 64);
        s->group = GROUP_BLOCKS;
        uint64_t hits[GROUP_BLOCKS], any = 0;
        vec_t options[GROUP_BLOCKS * BLOCK_VECTORS];
        for (uint32_t b = 0; b < blocks; b++) {
            hits[b] = block_hits(xs + i + 64 * b, ys - i - 64 * b, xf ? xf + i + 64 * b : NULL,
                                 yf ? yf - i - 64 * b : NULL, table, options + b * BLOCK_VECTORS);
            any |= hits[b];
        }
        if (__builtin_expect(any != 0, 0)) {  /* most groups have no hit */
            if (take_group(s, xs, ys, hits, options, blocks, i, &need))
                return 1;
            table = need_table(need);
        }
        i += 64 * blocks;
    }
    _mm256_store_si256((__m256i *)s->need, need);
    *done = i;
    return 0;
}
#endif

/* Pairs (xs[i], ys[-i]) for i in [0, count); xf, yf: the heaps' rare flags where they lie below
   rare_length, else NULL.  Returns 1 once nothing is missing. */
static int scan_run(scan_t *s, const code_t *xs, const code_t *ys, uint64_t count, const uint8_t *xf,
                    const uint8_t *yf)
{
    uint64_t i = 0;
#if VECTOR_SCAN
    if (count >= 64) {  /* each case inlined apart: yf occurs only for rest < 2 rare_length */
        const int found = yf ? (xf ? scan_blocks(s, xs, ys, count, xf, yf, &i) : scan_blocks(s, xs, ys, count, NULL, yf, &i))
                             : (xf ? scan_blocks(s, xs, ys, count, xf, NULL, &i) : scan_blocks(s, xs, ys, count, NULL, NULL, &i));
        if (found)
            return 1;
        s->missing = count_missing(s);
    }
#endif
    for (; i < count; i++) {
        if ((xf ? xf[i] : 0) != (yf ? yf[-(int64_t)i] : 0))
            continue;  /* one rare heap and one common: a common option */
        uint32_t c = (uint32_t)(xs[i] ^ ys[-(int64_t)i]);
        uint8_t *byte = s->need + NEED_BYTE(c);
        if (*byte & NEED_BIT(c)) {
            *byte &= (uint8_t)~NEED_BIT(c);
            if (--s->missing == 0) {
                s->scanned += i + 1;
                return 1;
            }
        }
    }
    s->scanned += count;
    return 0;
}

/* ---- u8: (a), the kernel's marks, for many heaps at once (octalgen/marks.h's mark_lanes) ----------
 * Bit j of batch_marks(...) (g = G(n)) is set when the code of heap n + j is the mex of its marks: every
 * code below it is marked and it is not.  A heap that does not pass is marked again by the scalar path.
 * The marks of MARK_LANES heaps are ORed in ranges of 32 codes up to the range of the largest code
 * among them, term by term: the cost of a term is its number of ranges, a shift each.  With AVX-512
 * VBMI the heaps go AGREE_HEAPS = 128 at a time, sorted by their codes' ranges of 16 into four batches
 * of 32 lanes of 16 bits (a two-source byte permute of a term's 128 sources puts each batch's in its
 * lanes), so that a batch of small codes is not marked up to the largest code of the 128, and a shift
 * takes 32 lanes: on .6 a fifth fewer shifts and permutes a heap and term than 16 lanes of 32 bits
 * for 64 heaps sorted alike, and some half as many as 16 heaps in a row.
 *
 * The same lanes take the proof scan's round (octalgen/verify.h): its pairs (x, n - k - x) are terms
 * too, of offset k + x and code G(x) (its x are common), whose marks are the rare values' codes the
 * round finds; ORed in ranges up to the largest code a heap of the batch needs, they take most missing
 * values off each heap's need without a branch per hit.
 */
#if defined(VECTOR_MARKS)
#define BATCH_MARKS 1
/* Bits of the lanes of v (codes, 32 bits a lane) that are the mex of their marks acc[0 ... ranges - 1]. */
static inline uint32_t lanes_agree(mvec_t v, const mvec_t *acc, uint32_t ranges)
{
    const mvec_t one = MV_SET1(1);
    uint32_t bad = 0;
    for (uint32_t r = 0; r < ranges; r++) {
        const mvec_t low = MV_SET1(32u * r);
        const mvec_t bit = MV_SLLV(one, MV_SUB(v, low));  /* the code's own bit; 0 past this range */
        const mvec_t below = MV_SUB(bit, one);             /* the bits below it; all 32 past this range */
        bad |= MV_GE(v, low) & (MV_NE(MV_AND(acc[r], below), below) | MV_NONZERO(MV_AND(acc[r], bit)));
    }
    return ~bad & ((1u << MARK_LANES) - 1u);
}

#define ROUND_IN_LANES 1

/* One more than the largest code that some heap n + j needs, for j = heaps[l] (heaps NULL: j = l), l < lanes
   (g = G(n)); 0 if none needs any. */
static inline uint32_t need_top(const code_t *g, uint64_t n, const uint8_t *heaps, uint32_t lanes)
{
    uint32_t top = 0;
    for (uint32_t l = 0; l < lanes; l++) {
        const uint32_t j = heaps ? heaps[l] : l, heap_top = NEED_TOP[CLASS(n + j)][g[j]];
        top = heap_top > top ? heap_top : top;
    }
    return top;
}

/* Sorted lanes where terms are many (for a few, sorting costs more than the ranges it saves). */
#if MARK_LANES == 16 && defined(__AVX512VBMI__) && TERMS >= 256
#define AGREE_HEAPS 128u
typedef unsigned __int128 heap_mask_t;  /* bit j: heap n + j of a batch */
/* Byte 2 l of a batch's index: the heap in lane l (below 128); the permute keeps only those bytes. */
#define WORD_LOW_BYTES 0x5555555555555555ull

/* Lane l: the code p[byte 2 l of index], 16 bits. */
static inline __attribute__((always_inline)) __m512i sorted_codes(const code_t *p, __m512i index)
{
    return _mm512_maskz_permutex2var_epi8(WORD_LOW_BYTES, _mm512_loadu_si512((const void *)p), index,
                                          _mm512_loadu_si512((const void *)(p + 64)));
}

/* Each lane's mark x as a bit of the range of codes [16 r, 16 r + 16): 0 where x is in another. */
static inline __attribute__((always_inline)) __m512i word_bit(__m512i x, uint32_t r)
{
    return _mm512_sllv_epi16(_mm512_set1_epi16(1), _mm512_xor_si512(x, _mm512_set1_epi16((short)(16u * r))));
}

/* acc[r] |= the marks in the codes [16 r, 16 r + 16), r < ranges, of the terms (offset[t], code[t]),
   t < count, for the heaps g + lane (index as for sorted_codes). */
static inline __attribute__((always_inline)) void mark_sorted_lanes(const code_t *g, __m512i index,
                                                                      const uint32_t *offset, const uint32_t *code,
                                                                      uint32_t count, __m512i *acc,
                                                                      const uint32_t ranges)
{
    __m512i a[16];
    for (uint32_t r = 0; r < ranges; r++)
        a[r] = acc[r];
#define SORTED_LANES(t) _mm512_xor_si512(sorted_codes(g - offset[t], index), _mm512_set1_epi16((short)code[t]))
    uint32_t t = 0;
    for (; t + 1 < count; t += 2) {
        const __m512i x = SORTED_LANES(t), y = SORTED_LANES(t + 1);
        for (uint32_t r = 0; r < ranges; r++)
            a[r] = _mm512_ternarylogic_epi32(a[r], word_bit(x, r), word_bit(y, r), 0xfe);
    }
    for (; t < count; t++) {
        const __m512i x = SORTED_LANES(t);
        for (uint32_t r = 0; r < ranges; r++)
            a[r] = _mm512_or_si512(a[r], word_bit(x, r));
    }
#undef SORTED_LANES
    for (uint32_t r = 0; r < ranges; r++)
        acc[r] = a[r];
}

/* mark_sorted_lanes from cleared accumulators with ranges 1 ... 16, each a loop of its own. */
static void mark_sorted(const code_t *g, __m512i index, const uint32_t *offset, const uint32_t *code, uint32_t count,
                        __m512i *acc, uint32_t ranges)
{
    for (uint32_t r = 0; r < ranges; r++)
        acc[r] = _mm512_setzero_si512();
    switch (ranges) {
    case 1u: mark_sorted_lanes(g, index, offset, code, count, acc, 1u); break;
    case 2u: mark_sorted_lanes(g, index, offset, code, count, acc, 2u); break;
    case 3u: mark_sorted_lanes(g, index, offset, code, count, acc, 3u); break;
    case 4u: mark_sorted_lanes(g, index, offset, code, count, acc, 4u); break;
    case 5u: mark_sorted_lanes(g, index, offset, code, count, acc, 5u); break;
    case 6u: mark_sorted_lanes(g, index, offset, code, count, acc, 6u); break;
    case 7u: mark_sorted_lanes(g, index, offset, code, count, acc, 7u); break;
    case 8u: mark_sorted_lanes(g, index, offset, code, count, acc, 8u); break;
    case 9u: mark_sorted_lanes(g, index, offset, code, count, acc, 9u); break;
    case 10u: mark_sorted_lanes(g, index, offset, code, count, acc, 10u); break;
    case 11u: mark_sorted_lanes(g, index, offset, code, count, acc, 11u); break;
    case 12u: mark_sorted_lanes(g, index, offset, code, count, acc, 12u); break;
    case 13u: mark_sorted_lanes(g, index, offset, code, count, acc, 13u); break;
    case 14u: mark_sorted_lanes(g, index, offset, code, count, acc, 14u); break;
    case 15u: mark_sorted_lanes(g, index, offset, code, count, acc, 15u); break;
    default: mark_sorted_lanes(g, index, offset, code, count, acc, 16u); break;
    }
}

/* Bits of the lanes of v (codes, 16 bits a lane) that are the mex of their marks acc[0 ... ranges - 1]. */
static inline uint32_t words_agree(__m512i v, const __m512i *acc, uint32_t ranges)
{
    const __m512i one = _mm512_set1_epi16(1);
    uint32_t bad = 0;
    for (uint32_t r = 0; r < ranges; r++) {
        const __m512i low = _mm512_set1_epi16((short)(16u * r));
        const __m512i bit = _mm512_sllv_epi16(one, _mm512_sub_epi16(v, low));  /* the code's own bit; 0 past this range */
        const __m512i below = _mm512_sub_epi16(bit, one);                       /* the bits below it; all 16 past it */
        bad |= (uint32_t)_mm512_cmpge_epu16_mask(v, low) &
               ((uint32_t)_mm512_cmpneq_epi16_mask(_mm512_and_si512(acc[r], below), below) |
                (uint32_t)_mm512_test_epi16_mask(acc[r], bit));
    }
    return ~bad;
}

/* (a) for the heaps n ... n + 127 (g = G(n)), the result's bit j for heap n + j; with round (not NULL),
   also the round: found[j] gets the codes it finds for heap n + j below the largest its code needs (in
   need's layout). */
static heap_mask_t batch_marks(const code_t *g, uint64_t n, const round_terms_t *round,
                               uint32_t (*found)[FOUND_WORDS])
{
    /* the 128 heaps in order of their codes' ranges (a counting sort) */
    uint8_t order[128] __attribute__((aligned(64)));
    uint32_t start[17] = {0};
    for (uint32_t j = 0; j < 128; j++)
        start[(g[j] >> 4) + 1]++;
    for (uint32_t r = 1; r < 17; r++)
        start[r] += start[r - 1];
    for (uint32_t j = 0; j < 128; j++)
        order[start[g[j] >> 4]++] = (uint8_t)j;
    heap_mask_t agree = 0;
    for (uint32_t b = 0; b < 4; b++) {
        const uint8_t *heaps = order + 32 * b;
        const __m512i index = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)heaps));
        const uint32_t ranges = (g[heaps[31]] >> 4) + 1u;
        __m512i acc[16];
        mark_sorted(g, index, TERM_OFFSET, TERM_CODE, TERMS, acc, ranges);
        for (uint32_t good = words_agree(sorted_codes(g, index), acc, ranges); good; good &= good - 1)
            agree |= (heap_mask_t)1 << heaps[__builtin_ctz(good)];
        const uint32_t round_ranges = round ? (need_top(g, n, heaps, 32) + 15u) / 16u : 0;
        if (round_ranges == 0)
            continue;
        mark_sorted(g, index, round->offset, round->code, round->count, acc, round_ranges);
        uint16_t words[16][32] __attribute__((aligned(64)));  /* words[r][l]: lane l's codes [16 r, 16 r + 16) */
        for (uint32_t r = 0; r < 16; r++)
            _mm512_store_si512((void *)words[r], r < round_ranges ? acc[r] : _mm512_setzero_si512());
        for (uint32_t l = 0; l < 32; l++)
            for (uint32_t r = 0; 2 * r < round_ranges; r++)
                found[heaps[l]][r] = (uint32_t)words[2 * r][l] | (uint32_t)words[2 * r + 1][l] << 16;
    }
    return agree;
}
#else
#define AGREE_HEAPS MARK_LANES
typedef uint64_t heap_mask_t;  /* bit j: heap n + j of a batch */
/* (a) for the heaps n ... n + MARK_LANES - 1 in a row, and with round (not NULL) the round, as above. */
static heap_mask_t batch_marks(const code_t *g, uint64_t n, const round_terms_t *round,
                               uint32_t (*found)[FOUND_WORDS])
{
    uint32_t top = 0;
    for (uint32_t j = 0; j < MARK_LANES; j++)
        top = g[j] > top ? g[j] : top;
    const uint32_t ranges = top / 32u + 1u;
    mvec_t acc[8];
    for (uint32_t r = 0; r < ranges; r++)
        acc[r] = MV_ZERO;
    mark_ranges(g, acc, ranges, TERM_OFFSET, TERM_CODE, 0, TERMS);
    const uint64_t agree = lanes_agree(MV_CODES(g), acc, ranges);
    const uint32_t round_ranges = round ? (need_top(g, n, NULL, MARK_LANES) + 31u) / 32u : 0;
    if (round_ranges) {
        for (uint32_t r = 0; r < round_ranges; r++)
            acc[r] = MV_ZERO;
        mark_ranges(g, acc, round_ranges, round->offset, round->code, 0, round->count);
        uint32_t words[MARK_LANES] __attribute__((aligned(64)));
        for (uint32_t r = 0; r < round_ranges; r++) {
            MV_STORE(words, acc[r]);
            for (uint32_t l = 0; l < MARK_LANES; l++)
                found[l][r] = words[l];
        }
    }
    return agree;
}
#endif
#endif

#endif /* OCTALGEN_VERIFY_U8_H */
