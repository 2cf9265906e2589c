"""The properties :class:`~octalgen.plan.Encoding` promises, for any mask and value (hypothesis).

The kernel, the verifier and the CUDA and HDL backends all compute on stored codes, never on
values: they rely on the byte code being XOR-linear (a term ``c ^ G(n - m)`` is marked as
``enc(c) ^ code``), one-to-one and order-preserving on the values of one class (the mex of the
codes is the code of the mex), and inverted by ``decode`` given the heap.  Each property is
checked against its definition on plain integers, not against the encoder's own arithmetic.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from octalgen.plan import Encoding

VALUES = st.integers(min_value=0, max_value=511)  # u8 storage holds common values below 512


@st.composite
def encodings(draw):
    """A u8 encoding of a random nonzero 9-bit mask, range (parity None) or positional."""
    mask = draw(st.integers(min_value=1, max_value=511))
    parity = draw(st.sampled_from([None, 0, 1]))
    dropped = (mask & -mask).bit_length() - 1  # the lowest bit of the mask, as make_plan drops it
    return Encoding("u8", mask, dropped, parity)


def common(encoding: Encoding, value: int, heap: int) -> bool:
    """Common at ``heap`` by the definition: popcount(v & mask) (+ heap + parity) is odd."""
    ones = bin(value & encoding.mask).count("1")
    if encoding.parity is not None:
        ones += heap + encoding.parity
    return ones % 2 == 1


@settings(max_examples=300, deadline=None)
@given(encodings(), VALUES, VALUES)
def test_encode_is_xor_linear(encoding, a, b):
    assert encoding.encode(a ^ b) == encoding.encode(a) ^ encoding.encode(b)


@settings(max_examples=300, deadline=None)
@given(encodings(), VALUES, VALUES, st.integers(min_value=0, max_value=1000))
def test_order_preserving_and_one_to_one_on_one_class(encoding, a, b, heap):
    # Two values of the same class at one heap (both common, or both rare) keep their order.
    if common(encoding, a, heap) != common(encoding, b, heap):
        return
    ea, eb = encoding.encode(a), encoding.encode(b)
    assert (a < b) == (ea < eb) and (a == b) == (ea == eb)


@settings(max_examples=300, deadline=None)
@given(encodings(), VALUES, st.integers(min_value=0, max_value=1000))
def test_decode_inverts_encode_on_common_values(encoding, value, heap):
    if not common(encoding, value, heap):
        value ^= 1 << encoding.dropped_bit  # its partner differs in the dropped bit only
    assert common(encoding, value, heap)
    code = encoding.encode(value)
    assert 0 <= code < 256
    assert encoding.decode(code, heap) == value


@settings(max_examples=100, deadline=None)
@given(encodings(), st.lists(VALUES, min_size=1, max_size=40), st.integers(min_value=0, max_value=1000))
def test_array_forms_agree_with_scalar_forms(encoding, values, first):
    heaps = range(first, first + len(values))
    values = [v if common(encoding, v, n) else v ^ (1 << encoding.dropped_bit) for v, n in zip(values, heaps)]
    codes = encoding.encode_array(values)
    assert codes.tolist() == [encoding.encode(v) for v in values]
    assert encoding.decode_array(codes, first).tolist() == values
    assert encoding.decode_values(codes.astype(np.uint8), first).tolist() == values


@settings(max_examples=200, deadline=None)
@given(encodings(), VALUES, VALUES, st.integers(min_value=0, max_value=1000))
def test_common_xor_common_is_rare_and_one_to_one(encoding, a, b, heap):
    # The kernel's premise under range rarity: an option c1 ^ c2 of two common values is rare,
    # so a common-valued option must involve a rare heap; its code identifies it uniquely.
    if encoding.parity is not None or not (common(encoding, a, heap) and common(encoding, b, heap)):
        return
    assert not common(encoding, a ^ b, heap)
    for other in range(512):
        if other != a ^ b and not common(encoding, other, heap):
            assert encoding.encode(other) != encoding.encode(a ^ b)


def test_u16_is_the_identity():
    raw = Encoding("u16", 0x1FE)
    values = np.arange(0, 65536, 257)
    assert raw.encode_array(values).tolist() == values.tolist()
    assert all(raw.decode(int(v)) == v for v in values)
