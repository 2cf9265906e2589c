/* octalgen/verify.h: the exact verifier, the same for every plan (octalgen_verify).
 *
 * It marks with octalgen/marks.h and scans with octalgen/verify_u8.h or octalgen/verify_u16.h,
 * whichever the unit included before it; the unit defines TAKES[] (TWO_HEAP_TAKES), the takes
 * that may leave two heaps, and declares octalgen_verify.
 */
#ifndef OCTALGEN_VERIFY_H
#define OCTALGEN_VERIFY_H

/* ---- the exact verifier ---------------------------------------------------------------------
 * For n in [first, end) the speculation G(n) = values[n - base] is proven when
 *   (a) the kernel's marks, recomputed here, give exactly that code (every common option
 *       involves a rare position, and those are the terms), and
 *   (b) every rare value below it is an option: the scan over G(x) ^ G(rest - x), x = 1 ... rest / 2
 *       in the order below, and the one-heap options that are rare at n (RARE_OPTIONS).
 * The terms are only right if the rare positions below n are those of the table: the caller
 * checks the prefix against the table, and values past the prefix are codes of common values.
 * Pairs are scanned only where both heaps are available: prefix[0:prefix_length] and
 * values[0:length] (heaps base ...); a value that needs more is "undecided", never proven.
 *
 * Both arrays hold stored codes.  A pair of two common heaps, or of two rare ones, gives a value
 * rare at n, and a pair of one rare and one common heap a common value, which no scan needs
 * (octalgen.sparse.Rarity).  u16 codes are the values: the scan compares values.  u8 codes are
 * XOR-linear and one-to-one on the values rare at n (octalgen.plan.Encoding), so
 * code(x) ^ code(y) names the option of every pair that matters: the scan compares codes, a
 * byte per option, never decoding, and leaves out the pairs of one rare and one common heap by
 * the prefix's rare flags (rare[x] is 0xff where heap x < rare_length is a rare position, else
 * 0; every heap past rare_length is common), whose code would name a rare value that is no
 * option.
 *
 * A rare position found far out, past the prefix (far[]: the table's few), has no flag: the u8
 * scan takes its pairs one by one, counting the option only where the other heap is rare too.
 * Where a term reads a rare position (a *crossing* heap of a plan that starts early, listed in
 * crossings[]), it marks nothing: its option, the XOR of two rare values, is rare (crossing_mex).
 *
 * The heaps go AGREE_HEAPS at a time (BATCH_MARKS: their marks in vector lanes; else one by one), a
 * heap that the batch's check does not pass marked again by itself (heap_mex), which finds its value.
 */

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Heap h is a rare position: flagged in the prefix (u8), or a far one. */
static int rare_heap(const scan_t *s, uint64_t h)
{
    if (h < s->rare_length)
        return s->rare[h] != 0;
    for (uint64_t i = 0; i < s->far_count; i++)
        if (s->far[i] == h)
            return 1;
    return 0;
}

/* rare_heap for crossing_mex (octalgen/marks.h). */
static int scan_rare_at(const void *s, uint64_t h)
{
    return rare_heap((const scan_t *)s, h);
}

#if STORAGE_U8
/* The first x in [x, stop) whose pair (x, rest - x) holds a far rare position (stop if none). */
static uint64_t far_pair(const scan_t *s, uint64_t x, uint64_t stop, uint64_t rest)
{
    for (uint64_t i = 0; i < s->far_count; i++) {
        const uint64_t f = s->far[i];
        if (f >= x && f < stop)
            stop = f;
        if (f <= rest && rest - f >= x && rest - f < stop)
            stop = rest - f;
    }
    return stop;
}

/* The pair of heaps x and y (codes cx, cy) that holds a far rare position: its option is rare, and
   taken off need, only where both heaps are rare.  Returns 1 once nothing is missing. */
static int take_far_pair(scan_t *s, uint64_t x, uint64_t y, uint32_t cx, uint32_t cy)
{
    s->scanned++;
    if (rare_heap(s, x) != rare_heap(s, y))
        return 0;
    uint8_t *byte = s->need + NEED_BYTE(cx ^ cy);
    if (!(*byte & NEED_BIT(cx ^ cy)))
        return 0;
    *byte &= (uint8_t)~NEED_BIT(cx ^ cy);
    return --s->missing == 0;
}
#endif

/* Scan x in [lo, hi) for the pairs (x, rest - x); returns 1 once nothing is missing.  A heap is
   read from the prefix where it has it (it is exact), else from the values. */
static int scan_pairs(scan_t *s, uint64_t rest, uint64_t lo, uint64_t hi)
{
    const uint64_t end = s->base + s->length;
    uint64_t x = lo;
    while (x < hi) {
        uint64_t y = rest - x, stop = hi;
        const code_t *xs, *ys;
        const uint8_t *xf = NULL, *yf = NULL;
        if (x < s->rare_length) {
            xs = s->prefix + x;
            xf = s->rare + x;
            stop = min_u64(stop, s->rare_length);
        } else if (x < s->prefix_length) {
            xs = s->prefix + x;
            stop = min_u64(stop, s->prefix_length);
        } else if (x >= s->base && x < end) {
            xs = s->values + (x - s->base);
            stop = min_u64(stop, end);
        } else {  /* x in neither array */
            s->incomplete = 1;
            x = s->base > x && s->base < hi ? s->base : hi;
            continue;
        }
        /* y falls as x rises: the run ends where y would leave its array */
        if (y < s->rare_length) {
            ys = s->prefix + y;
            yf = s->rare + y;
        } else if (y < s->prefix_length) {
            ys = s->prefix + y;
            stop = min_u64(stop, rest - s->rare_length + 1);
        } else if (y >= s->base && y < end) {
            ys = s->values + (y - s->base);
            stop = min_u64(stop, rest - (s->base > s->prefix_length ? s->base : s->prefix_length) + 1);
        } else {  /* y in neither array until it drops below the prefix */
            s->incomplete = 1;
            x = min_u64(rest - s->prefix_length + 1, hi);
            continue;
        }
#if STORAGE_U8
        if (s->far_count) {
            const uint64_t cut = far_pair(s, x, stop, rest);
            if (cut == x) {
                if (take_far_pair(s, x, y, xs[0], ys[0]))
                    return 1;
                x++;
                continue;
            }
            stop = cut;
        }
#endif
        if (scan_run(s, xs, ys, stop - x, xf, yf))
            return 1;
        x = stop;
    }
    return 0;
}

/* The order of the pairs (x, rest - x), x = 1 ... rest / 2, of each two-heap take (rest = n - k).
   First, where the scans are long (the first ROUND_PROBE heaps of a call need ROUND_MIN pairs a take or
   more), the round: the same x for every heap and take (round_t), the common heaps below ROUND_SPAN taken
   by their codes in turn, the first heap of each code, then the second of each, and so on, cut to about
   as many as a heap of the probe needed a take (fit_round; at most ROUND_PAIRS).  A pair's option is
   G(x) ^ G(rest - x), and x of every value meet every missing value far sooner than x in order, whose
   values are alike (the small heaps' are small): the round proves most heaps by itself.  It is taken as
   a whole, every one of its pairs counted as looked at wherever the last missing value turns up, so a
   path may take its pairs in any order (the vector path takes them for many heaps at once, as terms in
   lanes: octalgen/verify_u8.h).  Then the x of REGIONS regions, from REGION_START[r] on, in turn, a
   chunk of each a round, FIRST_CHUNK pairs while the first region lasts and twice as many each round
   after (a long scan, which more rounds would only slow); every x in the end.  Every path decides alike,
   from the same counts. */
#define ROUND_PROBE 64u
#define ROUND_MIN 64u
#define ROUND_BUCKETS 256u  /* the codes the round takes in turn (u16: by their low byte) */
_Static_assert(ROUND_SPAN <= 65536u, "the round's heaps are sorted as 16-bit numbers");

/* The round: its x, in order, and their stored codes. */
typedef struct {
    uint32_t count;
    uint64_t reach;  /* every x of the round is below it */
    uint32_t x[ROUND_PAIRS];
    code_t code[ROUND_PAIRS];
    uint64_t member[ROUND_SPAN / 64];  /* bit x: x is one of the round's (below ROUND_SPAN, as all are) */
} round_t;

/* reach and member from the round's first `count` x: one more than the largest (1 if none), the set. */
static void index_round(round_t *round)
{
    round->reach = 1;
    memset(round->member, 0, sizeof round->member);
    for (uint32_t i = 0; i < round->count; i++) {
        round->reach = round->x[i] + 1u > round->reach ? round->x[i] + 1u : round->reach;
        round->member[round->x[i] / 64] |= 1ull << (round->x[i] % 64);
    }
}

/* The round from the prefix: its common heaps x in [1, ROUND_SPAN), by their codes in turn. */
static void make_round(round_t *round, const scan_t *s)
{
    const uint64_t span = min_u64(ROUND_SPAN, s->prefix_length);
    uint16_t sorted[ROUND_SPAN];  /* the heaps by code (a counting sort), each code's in order */
    uint32_t start[ROUND_BUCKETS + 1] = {0}, fill[ROUND_BUCKETS];
    for (uint64_t x = 1; x < span; x++)
        start[(s->prefix[x] & (ROUND_BUCKETS - 1)) + 1] += !rare_heap(s, x);
    for (uint32_t c = 0; c < ROUND_BUCKETS; c++)
        start[c + 1] += start[c];
    memcpy(fill, start, sizeof fill);
    for (uint64_t x = 1; x < span; x++)
        if (!rare_heap(s, x))
            sorted[fill[s->prefix[x] & (ROUND_BUCKETS - 1)]++] = (uint16_t)x;
    round->count = 0;
    for (uint32_t i = 0, more = 1; more && round->count < ROUND_PAIRS; i++) {
        more = 0;
        for (uint32_t c = 0; c < ROUND_BUCKETS && round->count < ROUND_PAIRS; c++)
            if (start[c] + i < start[c + 1]) {
                const uint32_t x = sorted[start[c] + i];
                round->x[round->count] = x;
                round->code[round->count++] = s->prefix[x];
                more = 1;
            }
    }
    index_round(round);
}

/* The round cut to the pairs a take of a heap of the probe scanned (of `scanned` in all), rounded up to
   a multiple of 32: its x are in turn by code, so its first x are a round of their own.  A round far
   longer than the scans costs more than it finds, and one far shorter finds too little.  Returns whether
   to take it: where those scans are ROUND_MIN pairs or more. */
static int fit_round(round_t *round, uint64_t scanned)
{
    const uint64_t per_take = scanned / (ROUND_PROBE * (TWO_HEAP_TAKES > 0 ? (uint64_t)TWO_HEAP_TAKES : 1u));
    if (per_take < ROUND_MIN)
        return 0;
    const uint64_t fitted = (per_take + 31u) / 32u * 32u;
    if (fitted < round->count) {
        round->count = (uint32_t)fitted;
        index_round(round);
    }
    return round->count > 0;
}

/* The pairs of the round for heap n (its x below rest / 2 + 1, each take). */
static uint64_t round_count(const round_t *round, uint64_t n)
{
    uint64_t count = 0;
    for (int t = 0; t < TWO_HEAP_TAKES; t++) {
        if (n < TAKES[t] + 2)
            continue;
        const uint64_t half = (n - TAKES[t]) / 2 + 1;
        if (half >= round->reach)
            count += round->count;
        else
            for (uint32_t i = 0; i < round->count; i++)
                count += round->x[i] < half;
    }
    return count;
}

/* Whether every heap in [lo, hi] is in the prefix or in the values, none of them a far rare position. */
static int heaps_held(const scan_t *s, uint64_t lo, uint64_t hi)
{
    const uint64_t end = s->base + s->length;
    if (hi >= s->prefix_length && (hi >= end || (lo < s->base && s->base > s->prefix_length)))
        return 0;
    for (uint64_t i = 0; i < s->far_count; i++)
        if (s->far[i] >= lo && s->far[i] <= hi)
            return 0;
    return 1;
}

/* The options of the round's pairs (x, rest - x) with x < rest / 2 + 1, every heap rest - x held
   (heaps_held): listed in options, without a branch on each pair, each heap read from the prefix or
   the values as it lies; a pair whose heap rest - x is flagged rare is left out (its x is common, so
   its option is common: no value the scan needs).  Returns how many are listed. */
static uint32_t round_options(const scan_t *s, const round_t *round, uint64_t rest, code_t *options)
{
    static const uint8_t common = 0;  /* the flag read where there are none (u16) */
    const uint8_t *flags = s->rare_length ? s->rare : &common;
    const uint64_t half = rest / 2 + 1;
    uint32_t listed = 0;
    for (uint32_t i = 0; i < round->count; i++) {
        const uint64_t x = round->x[i], y = rest - (x < half ? x : 0);
        const int in_prefix = y < s->prefix_length, flagged = y < s->rare_length;
        const code_t prefix = s->prefix[in_prefix ? y : 0], value = s->values[in_prefix ? 0 : y - s->base];
        const int rare = flagged & (flags[flagged ? y : 0] != 0);
        options[listed] = (code_t)(round->code[i] ^ (in_prefix ? prefix : value));
        listed += (uint32_t)((x < half) & !rare);
    }
    return listed;
}

/* The round of heap n: returns 1 once nothing is missing.  Its options are listed and taken as a set
   where its heaps are held; the plain path takes them pair by pair, as the scan takes any pair, so
   that the proof scans compared by the tests check round_options. */
static int scan_round(scan_t *s, const round_t *round, uint64_t n)
{
    code_t options[ROUND_PAIRS];
    for (int t = 0; t < TWO_HEAP_TAKES; t++) {
        if (n < TAKES[t] + 2)
            continue;
        const uint64_t rest = n - TAKES[t], half = rest / 2 + 1;
        if (VECTOR_SCAN && heaps_held(s, rest + 1 - min_u64(round->reach, half), rest)) {
            if (take_options(s, options, round_options(s, round, rest, options)))
                return 1;
            continue;
        }
        for (uint32_t i = 0; i < round->count; i++)
            if (round->x[i] < half && scan_pairs(s, rest, round->x[i], round->x[i] + 1u))
                return 1;
    }
    return 0;
}

/* Scans the pair options of heap n in that order, with the round or without (with_round), the round
   taken already or not (round_done): returns 1 once nothing is missing. */
static int scan_all(scan_t *s, const round_t *round, uint64_t n, int with_round, int round_done)
{
    if (with_round && !round_done) {
        const uint64_t before = s->scanned;
        const int done = scan_round(s, round, n);
        s->scanned = before + round_count(round, n);  /* the round as a whole */
        if (done)
            return 1;
    }
    uint64_t next[TWO_HEAP_TAKES + 1][REGIONS];
    for (int t = 0; t < TWO_HEAP_TAKES; t++)
        for (uint32_t r = 0; r < REGIONS; r++)
            next[t][r] = REGION_START[r];
    for (uint64_t chunk = FIRST_CHUNK, more = 1; more; chunk = next[0][0] < REGION_START[1] ? chunk : 2 * chunk) {
        more = 0;
        for (int t = 0; t < TWO_HEAP_TAKES; t++) {
            if (n < TAKES[t] + 2)
                continue;
            const uint64_t rest = n - TAKES[t], half = rest / 2 + 1;  /* x < half */
            for (uint32_t r = 0; r < REGIONS; r++) {
                const uint64_t stop = REGION_START[r + 1] < half ? REGION_START[r + 1] : half, lo = next[t][r];
                if (lo >= stop)
                    continue;
                const uint64_t hi = stop - lo > chunk ? lo + chunk : stop;
                if (scan_pairs(s, rest, lo, hi))
                    return 1;
                next[t][r] = hi;
                more |= hi < stop;
            }
        }
    }
    return 0;
}

#if defined(ROUND_IN_LANES)
/* The round's pairs of each take t with x below bound[t] (bound NULL: all of them), as terms (batch_marks
   takes them in lanes): offset k + x, the code of G(x). */
static void terms_of_round(round_terms_t *terms, const round_t *round, const uint64_t *bound)
{
    terms->count = 0;
    for (int t = 0; t < TWO_HEAP_TAKES; t++)
        for (uint32_t i = 0; i < round->count; i++)
            if (!bound || round->x[i] < bound[t]) {
                terms->offset[terms->count] = (uint32_t)(TAKES[t] + round->x[i]);
                terms->code[terms->count++] = round->code[i];
            }
}

/* The round's pairs of heap n past those its batch took in lanes: x in [bound[t], rest / 2 + 1) of each
   take t, pair by pair (a few: the batch's least heap set the bound).  Returns 1 once nothing is missing. */
static int round_past_lanes(scan_t *s, const round_t *round, uint64_t n, const uint64_t *bound)
{
    for (int t = 0; t < TWO_HEAP_TAKES; t++) {
        const uint64_t rest = n - TAKES[t], stop = min_u64(rest / 2 + 1, round->reach);
        for (uint64_t x = bound[t]; x < stop; x++)
            if ((round->member[x / 64] >> (x % 64) & 1u) && scan_pairs(s, rest, x, x + 1))
                return 1;
    }
    return 0;
}

/* Bit j: x + j is one of the round's x, for j < AGREE_HEAPS (x may be below 0). */
static heap_mask_t round_members(const round_t *round, int64_t x)
{
    heap_mask_t bits = 0;
    for (uint32_t j = 0; j < AGREE_HEAPS; j += 64) {  /* 64 bits of member from x + j on */
        const int64_t at = x + (int64_t)j;
        if (at <= -64 || at >= (int64_t)ROUND_SPAN)
            continue;
        uint64_t word;
        if (at < 0) {
            word = round->member[0] << -at;
        } else {
            const uint64_t w = (uint64_t)at / 64, shift = (uint64_t)at % 64;
            word = round->member[w] >> shift;
            if (shift && w + 1 < ROUND_SPAN / 64)
                word |= round->member[w + 1] << (64 - shift);
        }
        bits |= (heap_mask_t)word << j;
    }
    return bits;
}

/* Bit j: heap n + j takes its round in lanes (batch_marks), the pairs of each take t with x below bound[t]
   (set here: the round's reach, or the least heap's rest / 2 + 1 where that is less; round_past_lanes
   takes a heap's others).  Their heaps rest - x must lie in the values, none of them far (scan_pairs
   takes those pair by pair), and none flagged rare: a common x and a rare heap give a common option,
   which the lanes would count as found.  Where the round reaches below rare_length (a plan that starts
   early) only the heaps for which some x of the round meets a flagged heap are left out: they take the
   round as a set (scan_round). */
static heap_mask_t round_in_lanes(const scan_t *s, const round_t *round, uint64_t n, uint64_t *bound)
{
    if (round->count == 0)
        return 0;
    heap_mask_t lanes = ~(heap_mask_t)0;
    for (int t = 0; t < TWO_HEAP_TAKES; t++) {
        if (n < TAKES[t] + 2)
            return 0;
        const uint64_t rest = n - TAKES[t];
        bound[t] = min_u64(round->reach, rest / 2 + 1);
        const uint64_t lo = rest + 1 - bound[t], hi = rest + AGREE_HEAPS - 1;
        if (lo < s->base || hi >= s->base + s->length || !heaps_held(s, lo, hi))
            return 0;
        const uint64_t end = min_u64(hi + 1, s->rare_length);  /* the flagged heaps y among them */
        for (uint64_t y = lo; y < end;) {
            uint64_t eight = 1;
            if (y + 8 <= end)
                memcpy(&eight, s->rare + y, 8);
            if (eight == 0) {  /* eight common heaps */
                y += 8;
                continue;
            }
            if (s->rare[y])  /* heap n + j pairs y with x = rest + j - y */
                lanes &= ~round_members(round, (int64_t)rest - (int64_t)y);
            y++;
        }
    }
    return lanes;
}
#endif

void octalgen_verify(const code_t *prefix, uint64_t prefix_length, const uint8_t *rare, uint64_t rare_length,
                     const code_t *values, uint64_t base, uint64_t length, const uint64_t *far, uint64_t far_count,
                     const uint64_t *crossings, uint64_t crossing_count, uint64_t scan_from, uint64_t first,
                     uint64_t end, int64_t *result)
{
    uint8_t marks[MARK_SIZE] __attribute__((aligned(64)));
    uint8_t stamp = 0;
    memset(marks, 0, MARK_SIZE);
    /* Pairs of heaps below end only: values after it are never read; nor, but for the prefix, before
       scan_from (the terms read them: a far term's window, whose pages a deep scan would all touch). */
    length = end - base < length ? end - base : length;
    const uint64_t skip = scan_from > base ? (scan_from - base < length ? scan_from - base : length) : 0;
    scan_t s = {.prefix = prefix, .prefix_length = prefix_length, .rare = rare, .rare_length = rare_length,
                .values = values + skip, .base = base + skip, .length = length - skip, .far = far,
                .far_count = far_count};
    uint64_t crossing = 0;  /* the next of crossings[], ascending, from first on */
    result[0] = 0;
    result[1] = (int64_t)end;
    result[2] = -1;
    round_t round;
    make_round(&round, &s);
    int with_round = 0;  /* decided after the first ROUND_PROBE heaps */
#if defined(BATCH_MARKS)
    uint64_t batch = first, batch_end = first;
    heap_mask_t agree = 0, round_done = 0;  /* (a) and the round of the batch's heaps */
    uint32_t found[AGREE_HEAPS][FOUND_WORDS];
#if defined(ROUND_IN_LANES)
    round_terms_t terms, part;  /* the round fitted to the probe's scans; a batch's share of it */
    uint64_t bound[TWO_HEAP_TAKES + 1] = {0};  /* the batch's x of each take below which it takes the round in lanes */
#endif
#endif
    for (uint64_t n = first; n < end; n++) {
        if (n == first + ROUND_PROBE) {
            with_round = fit_round(&round, s.scanned);
#if defined(ROUND_IN_LANES)
            terms_of_round(&terms, &round, NULL);
#endif
        }
        const code_t *g = values + (n - base);
        uint32_t code;
        int in_round = 0;
        const int crossed = crossing < crossing_count && crossings[crossing] == n;
        crossing += (uint64_t)crossed;
#if defined(BATCH_MARKS)
        if (n >= batch_end && n + AGREE_HEAPS <= end) {
            batch = n;
            batch_end = n + AGREE_HEAPS;
            round_done = 0;
#if defined(ROUND_IN_LANES)
            if (with_round && (round_done = round_in_lanes(&s, &round, n, bound)) != 0) {
                memset(found, 0, sizeof found);
                int cut = 0;  /* some take's bound below the round's reach: the batch takes part of it */
                for (int t = 0; t < TWO_HEAP_TAKES; t++)
                    cut |= bound[t] < round.reach;
                if (cut)
                    terms_of_round(&part, &round, bound);
                agree = batch_marks(g, n, cut ? &part : &terms, found);
            } else
#endif
                agree = batch_marks(g, n, NULL, found);
        }
        if (crossed) {  /* its lane's check is not looked at (a term read a rare heap); its round's finds are,
                           where it took the round in lanes (whose pairs met no rare heap) */
            code = crossing_mex(g, n, scan_rare_at, &s, marks, &stamp);
            in_round = n < batch_end && (int)(round_done >> (n - batch) & 1u);
        } else if (n < batch_end && (agree >> (n - batch) & 1u)) {  /* (a) for this heap */
            code = *g;
            in_round = (int)(round_done >> (n - batch) & 1u);
        } else
#else
        if (crossed) {
            code = crossing_mex(g, n, scan_rare_at, &s, marks, &stamp);
        } else
#endif
        {
            code = heap_mex(g, marks, &stamp, COMMON_ROW(n));
        }
        int failed = code != *g;
        if (code >= MEX_SIZE) {  /* every stored code is an option: the value does not fit */
            result[0] = 1;
            result[1] = (int64_t)n;
            break;
        }
        need_below(&s, n, code, g);
#if defined(ROUND_IN_LANES)
        if (in_round && s.missing) {  /* the round's finds, its pairs past the lanes', and the round counted */
            const uint64_t before = s.scanned;
            take_found(&s, found[n - batch]);
            if (s.missing)
                round_past_lanes(&s, &round, n, bound);
            s.scanned = before + round_count(&round, n);
        }
#endif
        int proven = s.missing == 0 || scan_all(&s, &round, n, with_round, in_round);
        if (proven && !failed)
            continue;
        result[1] = (int64_t)n;
        if (proven || !s.incomplete) {
            result[0] = 1;
            /* proven: the candidate; every option scanned: the least rare value left is G(n) */
            result[2] = proven ? (int64_t)RAW_AT(n, code) : least_missing(&s, n);
        } else {
            result[0] = failed ? 1 : 2;  /* known wrong but not what it is, or not decided */
        }
        break;
    }
    result[3] = (int64_t)s.scanned;
}

#endif /* OCTALGEN_VERIFY_H */
