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

/* The mex of the crossing heap g = G(n): the terms that read a common heap, marked from the term
   tables; a term that reads a rare position marks nothing. */
static uint32_t crossing_mex(const scan_t *s, const code_t *g, uint64_t n, uint8_t *marks, uint8_t *stamp)
{
    *stamp = next_stamp(*stamp, marks);
    for (uint32_t t = 0; t < TERMS; t++)
        if (!rare_heap(s, n - TERM_OFFSET[t]))
            marks[(uint32_t)(g[-(long)TERM_OFFSET[t]] ^ TERM_CODE[t])] = *stamp;
    return mex(marks, *stamp, COMMON_ROW(n));
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

/* The order of the pairs (x, rest - x), x = 1 ... rest / 2, of each two-heap take (rest = n - k).  The
   values of heaps far apart differ in kind (the small heaps' are small), so the scan goes through the x
   of REGIONS regions, from REGION_START[r] on (the unit places them), in turn, and finds the missing
   values sooner than in the order of x alone; every x in the end.  Where the scans are long (the
   first DENSE_PROBE heaps of a call need half as many pairs as the round has, or more: its pairs cost
   less, taken in lanes), round 0, the dense round,
   takes the first DENSE_PAIRS x of each region (and take) as a whole: every one of its pairs counts
   as looked at, wherever the last missing value turns up (the vector path takes the round for 64
   heaps at once, see octalgen/verify_u8.h).  Then each region a chunk a round, FIRST_CHUNK pairs
   while the first region lasts and twice as many each round after (a long scan, which more rounds
   would only slow).  Every path decides alike, from the same counts. */
#define DENSE_PROBE 64u

/* The pairs of the dense round of heap n (the x in [1, rest / 2] of it). */
static uint64_t dense_count(uint64_t n)
{
    uint64_t count = 0;
    for (int t = 0; t < TWO_HEAP_TAKES; t++) {
        if (n < TAKES[t] + 2)
            continue;
        const uint64_t half = (n - TAKES[t]) / 2 + 1;
        for (uint32_t r = 0; r < REGIONS; r++) {
            uint64_t hi = REGION_START[r] + DENSE_PAIRS;
            hi = hi < REGION_START[r + 1] ? hi : REGION_START[r + 1];
            hi = hi < half ? hi : half;
            count += hi > REGION_START[r] ? hi - REGION_START[r] : 0;
        }
    }
    return count;
}

/* Scans the pair options of heap n in that order, with the dense round or without (dense_round), the
   round done already or not (dense_done): returns 1 once nothing is missing. */
static int scan_all(scan_t *s, uint64_t n, int dense_round, int dense_done)
{
    uint64_t next[TWO_HEAP_TAKES + 1][REGIONS] = {{0}};
    const uint64_t before = s->scanned;
    int done = 0;
    for (int t = 0; t < TWO_HEAP_TAKES; t++)
        for (uint32_t r = 0; r < REGIONS; r++) {
            const uint64_t rest = n - TAKES[t], dense_end = REGION_START[r] + (dense_round ? DENSE_PAIRS : 0u);
            next[t][r] = dense_end < REGION_START[r + 1] ? dense_end : REGION_START[r + 1];
            if (!dense_round || dense_done || done || n < TAKES[t] + 2 || REGION_START[r] >= rest / 2 + 1)
                continue;
            done = scan_pairs(s, rest, REGION_START[r], next[t][r] < rest / 2 + 1 ? next[t][r] : rest / 2 + 1);
        }
    if (dense_round && !dense_done)
        s->scanned = before + dense_count(n);  /* the round as a whole */
    if (done)
        return 1;
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

#if defined(DENSE_LANES)
/* The dense round's pairs as terms (octalgen/verify_u8.h), from the prefix; 0 if the prefix lacks an x. */
static int dense_terms(dense_terms_t *dense, const code_t *prefix, uint64_t prefix_length, const uint8_t *rare,
                       uint64_t rare_length)
{
    dense->count = 0;
    for (int t = 0; t < TWO_HEAP_TAKES; t++)
        for (uint32_t r = 0; r < REGIONS; r++)
            for (uint64_t x = REGION_START[r]; x < REGION_START[r] + DENSE_PAIRS && x < REGION_START[r + 1]; x++) {
                if (x >= prefix_length)
                    return 0;
                if (x < rare_length && rare[x])
                    continue;  /* a rare x: its pairs give common options */
                dense->offset[dense->count] = (uint32_t)(TAKES[t] + x);
                dense->code[dense->count++] = prefix[x];
            }
    return 1;
}

/* Whether the dense round of every heap n ... n + AGREE_HEAPS - 1 can be taken in lanes: it is whole for
   each (rest / 2 past it), and every y = rest - x of it lies in the values, past the rare positions (a far
   one among them is taken pair by pair, by scan_pairs). */
static int dense_in_lanes(const scan_t *s, uint64_t n)
{
    const uint64_t reach = REGION_START[REGIONS - 1] + DENSE_PAIRS;  /* every x of the round is below it */
    const uint64_t low = s->base > s->rare_length ? s->base : s->rare_length;
    for (int t = 0; t < TWO_HEAP_TAKES; t++) {
        if (n < TAKES[t] + 2 * reach || n - TAKES[t] - reach + 1 < low || n + AGREE_HEAPS - TAKES[t] > s->base + s->length)
            return 0;
        for (uint64_t i = 0; i < s->far_count; i++)
            if (s->far[i] + TAKES[t] + reach > n && s->far[i] + TAKES[t] < n + AGREE_HEAPS)
                return 0;
    }
    return 1;
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
    int dense_round = 0;  /* decided after the first DENSE_PROBE heaps */
#if defined(BATCH_MARKS)
    uint64_t batch = first, batch_end = first, agree = 0, dense_done = 0;  /* (a) and the dense round of the batch */
    uint32_t found[AGREE_HEAPS][8];
#if defined(DENSE_LANES)
    dense_terms_t round_terms;
    const int dense_ready = dense_terms(&round_terms, prefix, prefix_length, rare, rare_length);
#endif
#endif
    for (uint64_t n = first; n < end; n++) {
        if (n == first + DENSE_PROBE)  /* the round where the scans are half as long as it, or longer */
            dense_round = 2 * s.scanned >= DENSE_PROBE * dense_count(n);
        const code_t *g = values + (n - base);
        uint32_t code;
        int dense = 0;
        const int crossed = crossing < crossing_count && crossings[crossing] == n;
        crossing += (uint64_t)crossed;
#if defined(BATCH_MARKS)
        if (n >= batch_end && n + AGREE_HEAPS <= end) {
            batch = n;
            batch_end = n + AGREE_HEAPS;
            dense_done = 0;
#if defined(DENSE_LANES)
            if (dense_round && dense_ready && dense_in_lanes(&s, n)) {
                memset(found, 0, sizeof found);
                dense_done = ~0ull;
                agree = batch_marks(g, n, &round_terms, found);
            } else
#endif
                agree = batch_marks(g, n, NULL, found);
        }
        if (crossed) {  /* its lane's check is not looked at, nor its dense round's finds */
            code = crossing_mex(&s, g, n, marks, &stamp);
        } else if (n < batch_end && (agree >> (n - batch) & 1u)) {  /* (a) for this heap */
            code = *g;
            dense = (int)(dense_done >> (n - batch) & 1u);
        } else
#else
        if (crossed) {
            code = crossing_mex(&s, g, n, marks, &stamp);
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
#if defined(DENSE_LANES)
        if (dense && s.missing) {  /* the dense round's finds, and its pairs */
            take_found(&s, found[n - batch]);
            s.scanned += dense_count(n);
        }
#endif
        int proven = s.missing == 0 || scan_all(&s, n, dense_round, dense);
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
