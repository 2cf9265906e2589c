"""The scanner every run folds its proven values through (in C): the FNV-1a-64 digests, the
rolling CRC of the last W values and each value's first and last heap against their definitions,
and the anchors at powers of two where a repeated window shows a candidate period."""

from __future__ import annotations

import numpy as np
import pytest

from octalgen.checksum import fnv1a64
from octalgen.engine.scan import ANCHORED, HASH_MATCH, Scanner, crc_of_window


@pytest.mark.parametrize("window", [1, 5, 64])
def test_scanner_digests_and_rolling_crc_match_their_definitions(window):
    values = np.random.default_rng(window).integers(0, 700, 3000).astype(np.uint16)
    scanner = Scanner(window, digest_from=1000)
    for part in np.array_split(values, 5):  # any split: the hash only depends on the last W values
        list(scanner.fold(part))
        assert int(scanner.state.crc) == crc_of_window(values[: scanner.position], window)
    assert scanner.digest() == fnv1a64(values)
    assert scanner.range_digest() == fnv1a64(values[1000:])
    assert np.array_equal(scanner.counts[:700], np.bincount(values, minlength=700))
    assert scanner.first_seen[int(values[0])] == 0
    for v in np.unique(values):  # the first and last heap of every value, by their definition
        heaps = np.flatnonzero(values == v)
        assert (scanner.first_seen[v], scanner.last_seen[v]) == (heaps[0], heaps[-1])


@pytest.mark.parametrize("step", [7, 1 << 22], ids=["in-pieces", "at-once"])
def test_a_new_window_gives_the_hash_of_its_definition(monkeypatch, step):
    """A new plan's window (a far term's: m values) is folded into H in pieces of the scan's step."""
    monkeypatch.setattr("octalgen.engine.scan._STEP", step)
    values = np.random.default_rng(3).integers(0, 700, 500).astype(np.uint16)
    scanner = Scanner(16)
    list(scanner.fold(values[:200]))
    scanner.rewindow(64, values[200 - 64 : 200])
    assert int(scanner.state.crc) == crc_of_window(values[:200], 64)
    list(scanner.fold(values[200:]))
    assert int(scanner.state.crc) == crc_of_window(values, 64)


def test_scanner_anchors_at_powers_of_two_and_finds_repeated_windows():
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.integers(0, 50, 300), np.tile(rng.integers(0, 50, 37), 40)]).astype(np.uint16)
    events = [(e.kind, e.heap) for e in Scanner(16).fold(values)]
    anchors = [heap for kind, heap in events if kind == ANCHORED]
    assert anchors == [16, 32, 64, 128, 256, 512, 1024]
    matches = [heap for kind, heap in events if kind == HASH_MATCH]
    assert matches[0] == 512 + 37  # the window ending at the anchor 512 recurs one period later
    assert all((heap - 512) % 37 == 0 for heap in matches if heap < 1024)


@pytest.mark.parametrize("parity", [None, 0, 1], ids=["range", "positions-0", "positions-1"])
@pytest.mark.parametrize("first", [1_000_000, 1_000_001])
def test_the_c_decoding_of_codes_is_the_encodings(parity, first):
    """The engine decodes every proven chunk in C: the values are those of the encoding's own
    decoding, heap by heap (positional rarity: by each heap's class), for an odd count."""
    from octalgen.engine.scan import decode_codes
    from octalgen.plan import Encoding

    encoding = Encoding("u8", 0x1EE, 1, parity)
    codes = np.random.default_rng(first).integers(0, 256, 5001).astype(np.uint8)
    expected = [encoding.decode(int(c), first + i) for i, c in enumerate(codes)]
    assert decode_codes(encoding, codes, first).tolist() == expected
