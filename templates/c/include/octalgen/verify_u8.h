/* octalgen/verify_u8.h: the verifier's proof scan and marks for u8 codes (octalgen/verify.h holds
 * the rest), the same for every plan.
 *
 * The unit that includes it defines, before it, beside what octalgen/marks.h needs: DECODE[][]
 * (the value common at heaps of class c stored as each code), NEED_BELOW[][] (for each class and
 * candidate code, the codes of the rare values below the candidate, in need's layout below) and
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
 * The rare values still missing are a set of codes, need, in the layout the vector look-up
 * reads: code c is bit (c >> 4) & 7 of byte (c >> 7) * 16 + (c & 15).  A 16-byte shuffle
 * (pshufb) of either half by an option's low nibble then gives the byte that holds its bit, for
 * 32 or 64 options at once, and 0 from the other half (an index with bit 7 set reads 0).  A
 * block of 64 options costs the same however many values are missing.  Blocks with hits take
 * their codes off need at once (an OR of one-bit sets), not one by one: a take that branches on
 * the last one costs more than the look-up.  Where the last missing value is taken the block is
 * gone through again pair by pair, so that every path counts the pairs up to that one, as the
 * plain path, which takes every pair in turn, does.
 */
#define NEED_BYTE(c) ((((c) >> 7) << 4) | ((c) & 15u))
#define NEED_BIT(c) ((uint8_t)(1u << (((c) >> 4) & 7u)))

/* The vector path: AVX2, or AVX-512BW where the CPU has it (the build's -march decides, and the
   module cache is keyed by flags and CPU); SCAN_VECTOR_BYTES=32 asks for AVX2 on an AVX-512 CPU.
   OCTALGEN_PORTABLE or OCTALGEN_PLAIN_SCAN, or a CPU without AVX2, selects the plain path. */
#if !defined(OCTALGEN_PORTABLE) && !defined(OCTALGEN_PLAIN_SCAN) && defined(__AVX2__)
#define VECTOR_SCAN 1
#if defined(__AVX512BW__) && (!defined(SCAN_VECTOR_BYTES) || SCAN_VECTOR_BYTES >= 64)
#define VECTOR_BYTES 64
typedef __m512i vec_t;
#define VEC_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define VEC_HALF(v, h) _mm512_broadcast_i32x4(_mm256_extracti128_si256(v, h))
#define VEC_SET1(b) _mm512_set1_epi8((char)(b))
#define VEC_AND _mm512_and_si512
#define VEC_OR _mm512_or_si512
#define VEC_XOR _mm512_xor_si512
#define VEC_SHUFFLE _mm512_shuffle_epi8
#define VEC_NIBBLES(v) _mm512_and_si512(_mm512_srli_epi16(v, 4), VEC_SET1(15))
#define VEC_SIGNS(v) ((uint64_t)_mm512_movepi8_mask(v))
#define VEC_TEST(a, b) ((uint64_t)_mm512_test_epi8_mask(a, b))
#define VEC_REVERSED(v) _mm512_shuffle_i64x2(VEC_SHUFFLE(v, REVERSE_BYTES), VEC_SHUFFLE(v, REVERSE_BYTES), 0x1b)
#define REVERSE_BYTES _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)REVERSE_TABLE))
#define LOW_BITS _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)BIT_TABLE))
#else
#define VECTOR_BYTES 32
typedef __m256i vec_t;
#define VEC_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#define VEC_HALF(v, h) _mm256_permute2x128_si256(v, v, (h) ? 0x11 : 0x00)
#define VEC_SET1(b) _mm256_set1_epi8((char)(b))
#define VEC_AND _mm256_and_si256
#define VEC_OR _mm256_or_si256
#define VEC_XOR _mm256_xor_si256
#define VEC_SHUFFLE _mm256_shuffle_epi8
#define VEC_NIBBLES(v) _mm256_and_si256(_mm256_srli_epi16(v, 4), VEC_SET1(15))
#define VEC_SIGNS(v) ((uint64_t)(uint32_t)_mm256_movemask_epi8(v))
#define VEC_TEST(a, b) ((uint64_t)(uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(a, b), \
                                                                                _mm256_setzero_si256())))
#define VEC_REVERSED(v) _mm256_permute4x64_epi64(VEC_SHUFFLE(v, REVERSE_BYTES), 0x4e)
#define REVERSE_BYTES _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)REVERSE_TABLE))
#define LOW_BITS _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)BIT_TABLE))
#endif
/* In every 16-byte lane: bytes 15 ... 0, and 1 << (h & 7) at h = 0 ... 15. */
static const uint8_t REVERSE_TABLE[16] __attribute__((aligned(16))) = {15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
static const uint8_t BIT_TABLE[16] __attribute__((aligned(16))) = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};

/* CODE_BIT[c]: the set {c} in need's layout, to take a block's codes by OR, not bit by bit. */
#define CODE_BIT(c) [c] = {[NEED_BYTE(c)] = NEED_BIT(c)}
#define CODE_BIT_4(c) CODE_BIT(c), CODE_BIT((c) + 1), CODE_BIT((c) + 2), CODE_BIT((c) + 3)
#define CODE_BIT_16(c) CODE_BIT_4(c), CODE_BIT_4((c) + 4), CODE_BIT_4((c) + 8), CODE_BIT_4((c) + 12)
#define CODE_BIT_64(c) CODE_BIT_16(c), CODE_BIT_16((c) + 16), CODE_BIT_16((c) + 32), CODE_BIT_16((c) + 48)
static const uint8_t CODE_BIT[256][32] __attribute__((aligned(32))) = {
    CODE_BIT_64(0), CODE_BIT_64(64), CODE_BIT_64(128), CODE_BIT_64(192),
};
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
    uint64_t missing;      /* rare values still missing */
    uint64_t scanned;
    int incomplete;        /* some pair was skipped: a heap of it is in neither array */
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
   less the one-heap options rare there. */
static void need_below(scan_t *s, uint64_t n, uint32_t code, const code_t *g)
{
    memcpy(s->need, NEED_BELOW[CLASS(n)] + 32 * code, 32);
    for (int t = 0; t < RARE_OPTION_COUNT; t++) {
        /* G(n - k), one heap left by taking k beans, is rare at n (no term marks it); the value rare
           at n stored as its code is that value */
        const code_t c = g[-(int64_t)RARE_OPTIONS[t]];
        s->need[NEED_BYTE(c)] &= (uint8_t)~NEED_BIT(c);
    }
    for (int t = 0; t < NONE_TAKE_COUNT; t++)
        if (n == NONE_TAKES[t] && RARE_VALUE[CLASS(n)][0] == 0)  /* taking all k beans leaves 0, rare at n */
            s->need[0] &= (uint8_t)~1u;
    s->missing = count_missing(s);
    s->incomplete = 0;
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
/* Bit k: the option of pair i + k, xs[i + k] ^ ys[-(i + k)] for k in [0, 64), is in need, whose
   halves low and high fill every 16-byte lane; pairs whose x is a rare position (xf[k] set) are
   left out.  options (if not NULL) gets the 64 options. */
static inline uint64_t block_hits(const code_t *xs, const code_t *ys, const uint8_t *xf, vec_t low, vec_t high,
                                  vec_t *options)
{
    uint64_t hits = 0;
    for (uint32_t j = 0; j < 64; j += VECTOR_BYTES) {
        vec_t option = VEC_XOR(VEC_LOAD(xs + j), VEC_REVERSED(VEC_LOAD(ys - j - (VECTOR_BYTES - 1))));
        vec_t index = VEC_AND(option, VEC_SET1(0x8f));
        vec_t row = VEC_OR(VEC_SHUFFLE(low, index), VEC_SHUFFLE(high, VEC_XOR(index, VEC_SET1(0x80))));
        uint64_t found = VEC_TEST(row, VEC_SHUFFLE(LOW_BITS, VEC_NIBBLES(option)));
        if (xf)
            found &= ~VEC_SIGNS(VEC_LOAD(xf + j));
        hits |= found << j;
        if (options)
            options[j / VECTOR_BYTES] = option;
    }
    return hits;
}

/* With AVX-512 VBMI2 a block's hit options are listed by one compress (vpcompressb), without a
   branch, and a group's codes taken in one loop, not a loop a block, whose ends mispredict often;
   groups are then longer, and only the first block goes alone. */
#if VECTOR_BYTES == 64 && defined(__AVX512VBMI2__)
#define COMPRESS_HITS 1
#else
#define COMPRESS_HITS 0
#endif

/* A group: GROUP_BLOCKS blocks whose hits are found with need as it was before the group, so that
   one branch, not one a block, asks whether any block found one (most blocks find none, and such a
   branch mispredicts often); a code found twice is taken twice, to no effect. */
#define GROUP_BLOCKS (COMPRESS_HITS ? 8u : 4u)
/* ... except the first blocks of a run: nearly every block there has hits, and those taken before
   the next block is looked up are not found again. */
#define SINGLE_BLOCKS (COMPRESS_HITS ? 1u : 2u)

/* A group that leaves nothing missing (need before it: now) is gone through again in order, taking
   code by code, to count the pairs up to the one that took the last missing value (the plain
   path's count).  Once a run at most. */
static inline int take_in_order(scan_t *s, const code_t *xs, const code_t *ys, const uint64_t *hits, uint64_t i,
                                __m256i now)
{
    for (uint32_t b = 0;; b++)
        for (uint64_t rest = hits[b]; rest; rest &= rest - 1) {
            uint64_t k = i + 64 * b + (uint64_t)__builtin_ctzll(rest);
            now = _mm256_andnot_si256(_mm256_load_si256((const __m256i *)CODE_BIT[xs[k] ^ ys[-(int64_t)k]]), now);
            if (_mm256_testz_si256(now, now)) {
                _mm256_store_si256((__m256i *)s->need, now);
                s->missing = 0;
                s->scanned += k + 1;
                return 1;
            }
        }
}

/* Takes the codes of a group's hits (hits[b] bit k: pair i + 64 b + k; taken: their codes as a
   set) off *need at once (an OR of one-bit sets, not one by one: a take that branches on the last
   one costs more than the look-up); returns 1 once nothing is missing, else keeps *low, *high as
   need's halves. */
static inline int take_group(scan_t *s, const code_t *xs, const code_t *ys, const uint64_t *hits, uint64_t i,
                             __m256i taken, __m256i *need, vec_t *low, vec_t *high)
{
    __m256i left = _mm256_andnot_si256(taken, *need);
    if (_mm256_testz_si256(left, left))
        return take_in_order(s, xs, ys, hits, i, *need);
    *need = left;
    *low = VEC_HALF(left, 0);
    *high = VEC_HALF(left, 1);
    return 0;
}

#if COMPRESS_HITS
/* The group of blocks i, i + 64, ... (blocks of them), its hits found with need as it was before
   it, listed by the compress. */
static inline int scan_group(scan_t *s, const code_t *xs, const code_t *ys, const uint8_t *xf, uint64_t i,
                             uint32_t blocks, __m256i *need, vec_t *low, vec_t *high)
{
    uint64_t hits[GROUP_BLOCKS];
    uint8_t list[64 * GROUP_BLOCKS + 64];  /* the hits' codes, and room for a store's spill */
    uint32_t listed = 0;
    for (uint32_t b = 0; b < blocks; b++) {
        vec_t options;
        hits[b] = block_hits(xs + i + 64 * b, ys - i - 64 * b, xf ? xf + i + 64 * b : NULL, *low, *high, &options);
        _mm512_storeu_si512((void *)(list + listed), _mm512_maskz_compress_epi8(hits[b], options));
        listed += (uint32_t)__builtin_popcountll(hits[b]);
    }
    /* two look-ups a step (one more at an odd count, of a code already listed: no effect) */
    list[listed] = listed ? list[0] : 0;
    __m256i taken = _mm256_setzero_si256(), other = _mm256_setzero_si256();
    for (uint32_t j = 0; j < listed; j += 2) {
        taken = _mm256_or_si256(taken, _mm256_load_si256((const __m256i *)CODE_BIT[list[j]]));
        other = _mm256_or_si256(other, _mm256_load_si256((const __m256i *)CODE_BIT[list[j + 1]]));
    }
    return take_group(s, xs, ys, hits, i, _mm256_or_si256(taken, other), need, low, high);
}
#else
/* The codes of the hits, a loop a block; out of line, which keeps the scan's loop small. */
static __attribute__((noinline)) int take_hits(scan_t *s, const code_t *xs, const code_t *ys, const uint64_t *hits,
                                               uint64_t i, uint32_t blocks, __m256i *need, vec_t *low, vec_t *high)
{
    __m256i taken = _mm256_setzero_si256();
    for (uint32_t b = 0; b < blocks; b++)
        for (uint64_t rest = hits[b]; rest; rest &= rest - 1) {
            uint64_t k = i + 64 * b + (uint64_t)__builtin_ctzll(rest);
            taken = _mm256_or_si256(taken, _mm256_load_si256((const __m256i *)CODE_BIT[xs[k] ^ ys[-(int64_t)k]]));
        }
    return take_group(s, xs, ys, hits, i, taken, need, low, high);
}

/* The group of blocks i, i + 64, ... (blocks of them), its hits found with need as it was before it. */
static inline int scan_group(scan_t *s, const code_t *xs, const code_t *ys, const uint8_t *xf, uint64_t i,
                             uint32_t blocks, __m256i *need, vec_t *low, vec_t *high)
{
    uint64_t hits[GROUP_BLOCKS], any = 0;
    for (uint32_t b = 0; b < blocks; b++) {
        hits[b] = block_hits(xs + i + 64 * b, ys - i - 64 * b, xf ? xf + i + 64 * b : NULL, *low, *high, NULL);
        any |= hits[b];
    }
    return any ? take_hits(s, xs, ys, hits, i, blocks, need, low, high) : 0;  /* most groups have none */
}
#endif
#endif

/* Pairs (xs[i], ys[-i]) for i in [0, count); xf, yf: the heaps' rare flags where they lie below
   rare_length, else NULL.  Returns 1 once nothing is missing. */
static int scan_run(scan_t *s, const code_t *xs, const code_t *ys, uint64_t count, const uint8_t *xf,
                    const uint8_t *yf)
{
    uint64_t i = 0;
#if VECTOR_SCAN
    if (!yf && count >= 64) {  /* (yf: both heaps lie below rare_length, only for rest < 2 rare_length) */
        __m256i need = _mm256_load_si256((const __m256i *)s->need);
        vec_t low = VEC_HALF(need, 0), high = VEC_HALF(need, 1);
        for (; i < 64 * SINGLE_BLOCKS && i + 64 <= count; i += 64)  /* the first blocks one by one */
            if (scan_group(s, xs, ys, xf, i, 1, &need, &low, &high))
                return 1;
        for (; i + 64 * GROUP_BLOCKS <= count; i += 64 * GROUP_BLOCKS)
            if (scan_group(s, xs, ys, xf, i, GROUP_BLOCKS, &need, &low, &high))
                return 1;
        for (; i + 64 <= count; i += 64)  /* the blocks after the last group */
            if (scan_group(s, xs, ys, xf, i, 1, &need, &low, &high))
                return 1;
        _mm256_store_si256((__m256i *)s->need, need);
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

/* ---- u8: (a), the kernel's marks, for MARK_LANES heaps at once (octalgen/marks.h's mark_lanes) ---- */
#if defined(VECTOR_MARKS)
/* Bit j set: the code of heap n + j (g = G(n)) is the mex of its marks: every code below it is
   marked and it is not.  A lane that does not pass is marked again by the scalar path. */
static uint32_t marks_agree(const code_t *g)
{
    uint32_t top = 0;
    for (uint32_t j = 0; j < MARK_LANES; j++)
        top = g[j] > top ? g[j] : top;
    const uint32_t ranges = top / 32u + 1u;
    mvec_t acc[8];
    for (uint32_t r = 0; r < ranges; r++)
        acc[r] = MV_ZERO;
    mark_ranges(g, acc, ranges, 0, TERMS);
    const mvec_t v = MV_CODES(g), one = MV_SET1(1);
    uint32_t bad = 0;
    for (uint32_t r = 0; r < ranges; r++) {
        const mvec_t low = MV_SET1(32u * r);
        const mvec_t bit = MV_SLLV(one, MV_SUB(v, low));  /* the code's own bit; 0 past this range */
        const mvec_t below = MV_SUB(bit, one);             /* the bits below it; all 32 past this range */
        bad |= MV_GE(v, low) & (MV_NE(MV_AND(acc[r], below), below) | MV_NONZERO(MV_AND(acc[r], bit)));
    }
    return ~bad & ((1u << MARK_LANES) - 1u);
}
#endif

#endif /* OCTALGEN_VERIFY_U8_H */
