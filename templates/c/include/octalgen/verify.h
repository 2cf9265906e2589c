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
 *   (b) every rare value below it is an option: the scan over G(x) ^ G(rest - x), x = 1, 2, ...
 *       (and the one-heap options that are rare at n: RARE_OPTION below).
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
 */



static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

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
        if (scan_run(s, xs, ys, stop - x, xf, yf))
            return 1;
        x = stop;
    }
    return 0;
}

/* Scan every pair option of heap n, in growing chunks of x across the moves (one chunk for one
   move: the same pairs in the same order, in one run). */
#define FIRST_CHUNK (TWO_HEAP_TAKES > 1 ? 256u : UINT64_C(1) << 62)
static int scan_all(scan_t *s, uint64_t n)
{
    for (uint64_t lo = 1, chunk = FIRST_CHUNK, more = 1; more; lo += chunk, chunk *= 2) {
        more = 0;
        for (int t = 0; t < TWO_HEAP_TAKES; t++)
            if (n >= TAKES[t] + 2) {
                uint64_t rest = n - TAKES[t], hi = lo + chunk < rest / 2 + 1 ? lo + chunk : rest / 2 + 1;
                if (lo < hi) {
                    if (scan_pairs(s, rest, lo, hi))
                        return 1;
                    more |= hi < rest / 2 + 1;
                }
            }
    }
    return 0;
}

void octalgen_verify(const code_t *prefix, uint64_t prefix_length, const uint8_t *rare, uint64_t rare_length,
                     const code_t *values, uint64_t base, uint64_t length,
                     uint64_t first, uint64_t end, int64_t *result)
{
    uint8_t marks[MARK_SIZE] __attribute__((aligned(64)));
    uint8_t stamp = 0;
    memset(marks, 0, MARK_SIZE);
    /* Pairs of heaps below end only: values after it are never read. */
    length = end - base < length ? end - base : length;
    scan_t s = {.prefix = prefix, .prefix_length = prefix_length, .rare = rare, .rare_length = rare_length,
                .values = values, .base = base, .length = length};
    result[0] = 0;
    result[1] = (int64_t)end;
    result[2] = -1;
#if defined(VECTOR_MARKS)
    uint64_t batch = first, batch_end = first, agree = 0;  /* marks_agree of the heaps batch ... batch_end - 1 */
#endif
    for (uint64_t n = first; n < end; n++) {
        const code_t *g = values + (n - base);
        uint32_t code;
#if defined(VECTOR_MARKS)
        if (n >= batch_end && n + MARK_LANES <= end) {
            batch = n;
            batch_end = n + MARK_LANES;
            agree = marks_agree(g);
        }
        if (n < batch_end && (agree >> (n - batch) & 1u)) {
            code = *g;
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
        int proven = s.missing == 0 || scan_all(&s, n);
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
