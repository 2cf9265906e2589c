/* octalgen/scan.h: octalgen_scan.c, the same for every game (the unit before it declares its API). */
#ifndef OCTALGEN_SCAN_H
#define OCTALGEN_SCAN_H

/*
 * The per-value work of a long run on proven values (Grossman, section 4), for any game:
 * the FNV-1a-64 digests, the count, first and last heap of every value, and the rolling CRC-64
 *
 *     H(n) = sum over j < W of  G(n - j) x^(64 + 16 j)  mod P(x)      (P: CRC-64/ECMA-182)
 *
 * updated in O(1) from H(n-1), G(n) and G(n-W):  H(n) = H(n-1) x^16 + G(n) x^64 + G(n-W) x^(64+16W),
 * i.e. two shifts, table look-ups and exclusive-ors.  Anchors sit at powers of two: H(n) is
 * compared with H(2^k) for 2^k < n < 2^(k+1).  The tables (which depend on W) come from Python.
 */

#define FNV_PRIME 1099511628211ull

int octalgen_scan(octalgen_scan_state *state, const uint16_t *leaving, const uint16_t *arriving, uint64_t count,
                  const uint64_t *tables, uint64_t *counts, uint64_t *first_seen, uint64_t *last_seen,
                  uint64_t *done)
{
    const uint64_t *in_lo = tables, *in_hi = tables + 256, *out_lo = tables + 512, *out_hi = tables + 768;
    uint64_t n = state->position, fnv = state->fnv, range = state->fnv_range, crc = state->crc;
    const uint64_t from = state->fnv_from, anchor_crc = state->anchor_crc, has_anchor = state->anchor != 0;
    uint64_t next_anchor = state->next_anchor;
    int event = 0;
    uint64_t i = 0;
    while (i < count) {
        const uint64_t v = arriving[i], old = leaving[i];
        fnv = (fnv ^ v) * FNV_PRIME;
        if (n >= from)
            range = (range ^ v) * FNV_PRIME;
        if (counts[v]++ == 0)
            first_seen[v] = n;
        last_seen[v] = n;
        const uint64_t top = (crc >> 48) ^ v;
        crc = (crc << 16) ^ in_lo[top & 255] ^ in_hi[top >> 8] ^ out_lo[old & 255] ^ out_hi[old >> 8];
        i++;
        if (n == next_anchor) {
            state->anchor = n;
            state->anchor_crc = crc;
            state->next_anchor = next_anchor << 1;
            event = 1;
        } else if (has_anchor && crc == anchor_crc) {
            state->hash_matches++;
            event = 2;
        }
        n++;
        if (event)
            break;
    }
    state->position = n;
    state->fnv = fnv;
    state->fnv_range = range;
    state->crc = crc;
    *done = i;
    return event;
}

void octalgen_mark_present(const uint16_t *values, uint64_t count, uint8_t *present)
{
    for (uint64_t i = 0; i < count; i++)
        present[values[i]] = 1;
}

void octalgen_decode_codes(const uint8_t *codes, uint64_t count, const uint16_t *rows, uint16_t *out)
{
    const uint16_t *even = rows, *odd = rows + 256;
    uint64_t i = 0;
    for (; i + 2 <= count; i += 2) {
        out[i] = even[codes[i]];
        out[i + 1] = odd[codes[i + 1]];
    }
    if (i < count)
        out[i] = even[codes[i]];
}

#endif /* OCTALGEN_SCAN_H */
