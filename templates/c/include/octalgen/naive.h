/* octalgen/naive.h: the naive kernel (octalgen_naive.c), the baseline `octalgen bench` compares against:
 * Grossman's Figure 3 written plainly, a loop over the terms read from a table, a mark array cleared
 * for every heap and a scalar mex.
 *
 * The unit that includes it defines, before it: code_t, WINDOW, MEX_SIZE, TERMS, the terms
 * (OFFSET[], CONSTANT[]), COMMON_CLASSES, PARITY and COMMON_BITS[][] (bit v of row c: code v
 * stands for a value common at heaps of class c; heap n: class (n + PARITY) & 1 when there are
 * two rows, positional rarity with 16-bit codes).
 */
#ifndef OCTALGEN_NAIVE_H
#define OCTALGEN_NAIVE_H

int64_t octalgen_naive_fill(code_t *buffer, uint64_t count, uint64_t first_heap)
{
    uint8_t marks[MEX_SIZE];
    code_t *g = buffer + WINDOW;
    for (uint64_t i = 0; i < count; i++, g++) {
        memset(marks, 0, sizeof marks);
        for (uint32_t t = 0; t < TERMS; t++) {
            uint32_t v = g[-(int64_t)OFFSET[t]] ^ CONSTANT[t];
            if (v < MEX_SIZE)
                marks[v] = 1;
        }
        const uint64_t *common = COMMON_BITS[COMMON_CLASSES == 2 ? (first_heap + i + PARITY) & 1 : 0];
        uint32_t v = 0;
        while (v < MEX_SIZE && (marks[v] || !(common[v / 64] >> (v % 64) & 1)))
            v++;
        if (v == MEX_SIZE)
            return (int64_t)i;
        *g = (code_t)v;
    }
    return -1;
}

#endif /* OCTALGEN_NAIVE_H */
