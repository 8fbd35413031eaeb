"""Wire format: exact round trips, refusals that name the field, size = encoded length."""

import re
import sys
import threading

import msgpack
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from netemu.wire import PartialModel, WireError, decode, encode
from netemu.wire.codec import decode_envelope, encode_envelope, fresh, header_size

DTYPES = st.one_of(
    hnp.integer_dtypes(endianness="="),
    hnp.unsigned_integer_dtypes(endianness="="),
    hnp.floating_dtypes(endianness="="),
    hnp.complex_number_dtypes(endianness="="),
    hnp.boolean_dtypes(),
    hnp.floating_dtypes(endianness=">"),
    hnp.integer_dtypes(endianness=">"),
)
ARRAYS = hnp.arrays(DTYPES, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))


def assert_same_array(a, b):
    assert isinstance(b, np.ndarray)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == np.ascontiguousarray(b).tobytes()  # bit-exact, NaNs included


@given(ARRAYS)
def test_arrays_round_trip_exactly_with_dtype_byte_order_and_shape(arr):
    assert_same_array(arr, decode(encode(arr)))


@given(hnp.arrays(np.float64, (6, 8)), st.sampled_from([np.s_[::2, 1::3], np.s_[:, ::-1], np.s_[3, :]]))
def test_non_contiguous_arrays_round_trip(arr, view):
    sub = arr[view]
    assert_same_array(np.ascontiguousarray(sub), decode(encode(sub)))
    assert_same_array(np.asfortranarray(arr), decode(encode(np.asfortranarray(arr))))


@given(ARRAYS)
def test_an_array_payload_is_the_bytes_msgpack_packs_it_into(arr):
    """`encode` makes a top-level array's extension itself; the bytes are msgpack's own."""
    from netemu.wire.pack import _default

    assert encode(arr) == msgpack.packb(arr, default=_default, use_bin_type=True)


@given(st.sampled_from([0, 1, 2, 3, 4, 5, 8, 15, 16, 17, 255, 256, 65_535, 65_536, 70_000]), st.integers(0, 127))
def test_an_extension_is_framed_as_msgpack_frames_it_at_every_size_boundary(n, code):
    from netemu.wire.codec import _ext_body
    from netemu.wire.pack import _ext_bytes

    body = bytes(range(256)) * (n // 256) + bytes(range(n % 256))
    framed = _ext_bytes(code, body)
    assert framed == msgpack.packb(msgpack.ExtType(code, body))
    assert _ext_body(framed) == (code, len(framed) - n)
    assert _ext_body(framed + b"\x00") is None and _ext_body(framed[:-1] if n else b"") is None


def _outcome(decoder, data):
    """What decoding `data` gives: ("ok", dtype, shape, bytes) or the value, or ("error", message)."""
    try:
        value = decoder(data)
    except WireError as exc:
        return ("error", str(exc))
    if isinstance(value, np.ndarray):
        return ("ok", value.dtype.str, value.shape, value.tobytes())
    return ("ok", repr(value))


def _general(data):
    """`decode` without its fast path for a lone array: the outer unpacker reads everything."""
    from netemu.wire import codec

    try:
        return codec._unpack_ext(data)
    except WireError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, msgpack.UnpackException) as exc:
        raise WireError(f"cannot decode {len(data)} bytes: {type(exc).__name__}: {str(exc)[:120]}") from None


_HEADERS = st.sampled_from([b"\xd4", b"\xd5", b"\xd6", b"\xd7", b"\xd8", b"\xc7", b"\xc8", b"\xc9"])


@given(ARRAYS, st.data())
def test_the_fast_path_for_a_lone_array_decodes_whatever_bytes_as_the_general_path(arr, data):
    """Valid arrays, then the same bytes truncated, extended, bit-flipped or with another
    extension header: the fast path returns what the general path returns, or the same error."""
    raw = encode(arr)
    cut = data.draw(st.integers(0, len(raw)))
    flip = data.draw(st.integers(0, 8 * len(raw) - 1))
    flipped = bytearray(raw)
    flipped[flip // 8] ^= 1 << (flip % 8)
    header = data.draw(_HEADERS) + data.draw(st.binary(max_size=5))
    for variant in (raw, raw[:cut], raw + data.draw(st.binary(min_size=1, max_size=4)), bytes(flipped),
                    header + raw[3:], bytearray(raw), memoryview(raw)):
        assert _outcome(decode, variant) == _outcome(_general, variant)


@pytest.mark.parametrize("cut", [1, 2, 3, 10])
def test_a_truncated_or_padded_array_payload_is_refused_as_before(cut):
    data = encode(np.arange(40.0))
    for bad in (data[:-cut], data[:cut], data + b"\x00" * cut):
        with pytest.raises(WireError, match=f"cannot decode {len(bad)} bytes"):
            decode(bad)


def test_decoded_arrays_are_writable_copies():
    out = decode(encode(np.arange(4.0)))
    out[0] = 9.0
    assert out.flags.writeable


@given(st.one_of(st.integers(-(2**31), 2**31 - 1).map(np.int32), st.floats(width=32).map(np.float32), st.booleans().map(np.bool_)))
def test_numpy_scalars_round_trip_as_scalars(x):
    y = decode(encode(x))
    assert type(y) is type(x)
    assert np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)


@given(
    st.integers(1, 300).flatmap(
        lambda d: st.tuples(
            st.just(d),
            st.lists(st.integers(0, d - 1), unique=True, max_size=d),
        )
    ),
    st.sampled_from([np.float32, np.float64]),
)
def test_partial_models_round_trip_and_cost_only_their_entries(dim_idx, dtype):
    dim, idx = dim_idx
    vec = np.linspace(-1, 1, dim).astype(dtype)
    pm = PartialModel.take(vec, np.array(idx, dtype=np.int64))
    back = decode(encode(pm))
    assert back == pm
    assert np.array_equal(back.to_dense()[idx], vec[idx])
    assert len(encode(pm)) < 64 + len(idx) * (4 + np.dtype(dtype).itemsize)


def test_a_partial_model_is_much_smaller_than_the_full_model():
    w = np.zeros(200)
    full = len(encode(w))
    part = len(encode(PartialModel.take(w, np.arange(4))))
    assert part < 0.1 * full


def test_nested_payloads_round_trip():
    payload = {"w": np.ones((2, 3)), "meta": {"n": 5, "ids": [1, 2]}, "pm": PartialModel(10, [1, 3], np.array([0.5, -0.5]))}
    back = decode(encode(payload))
    assert_same_array(payload["w"], back["w"])
    assert back["meta"] == payload["meta"] and back["pm"] == payload["pm"]


def _mutables(obj):
    """Every mutable object (containers, arrays) reachable in a decoded payload."""
    if isinstance(obj, dict):
        return [obj, *(x for v in obj.values() for x in _mutables(v))]
    if isinstance(obj, list):
        return [obj, *(x for v in obj for x in _mutables(v))]
    if isinstance(obj, PartialModel):
        return [obj, obj.indices, obj.values]
    if isinstance(obj, np.ndarray):
        return [obj]
    return []


PAYLOADS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(), st.text(max_size=5), st.binary(max_size=5),
              ARRAYS, st.integers(-5, 5).map(np.int16)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=8,
)


@given(PAYLOADS)
def test_fresh_gives_what_a_second_decode_gives_and_shares_nothing_mutable(payload):
    data = encode(payload)
    decoded = decode(data)
    copy, again = fresh(decoded), decode(data)
    assert encode(copy) == encode(again) == data  # equal values, dtypes, byte orders and shapes
    shared = {id(x) for x in _mutables(decoded)}
    assert not any(id(x) in shared for x in _mutables(copy))
    assert all(a.flags.writeable for a in _mutables(copy) if isinstance(a, np.ndarray))


def test_fresh_copies_a_partial_model_into_arrays_of_its_own():
    pm = decode(encode(PartialModel(10, [1, 3], np.array([0.5, -0.5]))))
    copy = fresh(pm)
    assert copy == pm and copy.indices is not pm.indices and copy.values is not pm.values
    assert copy.indices.dtype == pm.indices.dtype


def test_object_arrays_are_refused_naming_the_field():
    bad = {"model": {"layers": [np.zeros(2), np.array([{}, None], dtype=object)]}}
    with pytest.raises(WireError, match=r"client-3 sending 'update'.*payload\['model'\]\['layers'\]\[1\].*object dtype"):
        encode(bad, context="client-3 sending 'update'")


def test_unencodable_python_objects_are_refused_naming_the_field():
    with pytest.raises(WireError, match=r"payload\['f'\].*type function"):
        encode({"f": lambda: 0})


def test_a_refused_payload_leaves_nothing_behind_for_the_next_one():
    with pytest.raises(WireError):
        encode([1, 2, np.array([None], dtype=object)])
    assert encode([1, np.arange(2.0)]) == msgpack.packb([1, msgpack.ExtType(1, msgpack.packb(["<f8", [2], np.arange(2.0).tobytes()]))])


def test_threads_encoding_at_once_each_get_their_own_bytes():
    # the payload packer runs Python code (the extension hook) mid-pack, where another thread
    # may run: each thread must pack with its own packer
    payloads = [{"w": np.full(64, float(i)), "b": [np.arange(i % 7), np.float32(i)]} for i in range(8)]
    expected = [encode(p) for p in payloads]
    errors: list[str] = []

    def work(k: int) -> None:
        for j in range(3000):
            i = (k + j) % len(payloads)
            if encode(payloads[i]) != expected[i]:
                errors.append(f"thread {k}, payload {i}")
                return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, inside the packer's hook too
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    assert errors == []


def test_envelope_size_is_its_encoded_length_and_it_decodes_to_its_fields():
    payload = encode({"w": np.arange(3.0)})
    data = encode_envelope(12, "client-1", "server", "update", 4, 2.5, payload)
    fields = decode_envelope(data)
    assert fields[:6] == [12, "client-1", "server", "update", 4, 2.5]
    assert_same_array(np.arange(3.0), fields[6]["w"])
    # the envelope is a plain msgpack array: any msgpack reader can parse it
    assert len(msgpack.unpackb(data, strict_map_key=False)) == 7


_INT_EDGES = [0, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1,
              -1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, -(2**63)]
_NAME_EDGES = ["", "x" * 31, "x" * 32, "é" * 15, "é" * 16, "é" * 127, "é" * 128, "x" * 255, "x" * 256, "x" * 65535, "x" * 65536]
_ints = st.integers(-(2**63), 2**64 - 1) | st.sampled_from(_INT_EDGES)
_names = st.text(max_size=40) | st.sampled_from(_NAME_EDGES)


@pytest.mark.parametrize("value", _INT_EDGES)
def test_the_header_size_is_exact_at_every_int_size_boundary(value):
    for msg_id, round in ((value, 3), (70_000, value)):
        assert header_size(msg_id, "a", "b", "m", round, 1.5) == len(encode_envelope(msg_id, "a", "b", "m", round, 1.5, b""))


@pytest.mark.parametrize("name", _NAME_EDGES, ids=lambda n: f"{len(n)} chars")
def test_the_header_size_is_exact_at_every_str_size_boundary(name):
    assert header_size(7, name, "b", name, 1, 0.0) == len(encode_envelope(7, name, "b", name, 1, 0.0, b""))


@given(msg_id=_ints, src=_names, dst=_names, kind=_names, round=_ints | st.booleans(),
       sent_at=st.floats(allow_nan=False) | st.integers(0, 2**40))
def test_the_header_size_is_the_length_of_the_encoded_header(msg_id, src, dst, kind, round, sent_at):
    assert header_size(msg_id, src, dst, kind, round, sent_at) == len(
        encode_envelope(msg_id, src, dst, kind, round, sent_at, b""))


# ------------------------------------------------------------- crafted messages


def ndarray_ext(dtype, shape, raw):
    return msgpack.packb(msgpack.ExtType(1, msgpack.packb([dtype, shape, raw])))


@pytest.mark.parametrize(
    "data, message",
    [
        (ndarray_ext("<f8", [10**12], b"\x00" * 8), "needs 8000000000000 bytes .*the message holds 8"),
        (ndarray_ext("<f8", [2**40, 2**40], b""), "needs .* bytes"),
        (ndarray_ext("(3,)f8", [1], b"\x00" * 24), "is refused"),
        (ndarray_ext("O", [1], b"\x00" * 8), "is refused"),
        (ndarray_ext("no-such-type", [1], b"\x00"), "is not a NumPy dtype"),
        (ndarray_ext("<f8", [-1], b"\x00" * 8), "sizes >= 0"),
        (ndarray_ext("<f8", "x", b"\x00" * 8), "must be \\[dtype string, shape list, bytes\\]"),
        (msgpack.packb(msgpack.ExtType(3, msgpack.packb([5, 1, 2]))), "PartialModel extension must be"),
        (b"\xdd\xff\xff\xff\xff", "cannot decode 5 bytes"),  # an array declaring 2**32 - 1 items
        (b"\xdf\xff\xff\xff\xff", "cannot decode 5 bytes"),
        (b"\xc1", "cannot decode 1 bytes"),
    ],
    ids=["huge-shape", "overflowing-shape", "subarray-dtype", "object", "bad-dtype", "negative", "shape-type",
         "partial", "huge-array", "huge-map", "reserved-byte"],
)
def test_a_crafted_message_is_refused_without_allocating_what_it_declares(data, message):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(WireError, match=message):
            decode(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20


@given(dim=st.integers(0, 300) | st.just(2**32 + 5), ints=st.lists(st.integers(-3, 300), max_size=6),
       dtype=st.sampled_from(["i1", "i8", "u2", "u4", "u8"]), two_d=st.booleans(), extra=st.sampled_from([0, 0, 0, 1]))
def test_a_partial_model_from_the_wire_is_the_checked_constructor(dim, ints, dtype, two_d, extra):
    indices = np.array(ints, dtype=np.int64).astype(dtype)  # negatives wrap around in unsigned dtypes
    if two_d:
        indices = indices[None, :]
    values = np.arange(float(len(ints) + extra))  # mostly as many values as indices
    try:
        expected = PartialModel(dim, indices, values)
    except ValueError as exc:
        with pytest.raises(ValueError, match=re.escape(str(exc))):
            PartialModel.from_wire(dim, indices, values)
        return
    got = PartialModel.from_wire(dim, indices, values)
    assert got == expected and got.indices.dtype == expected.indices.dtype


def test_a_partial_model_with_indices_outside_its_dimension_is_refused():
    pm = PartialModel(4, np.array([0, 3]), np.array([1.0, 2.0]))
    body = msgpack.packb([2, msgpack.ExtType(1, msgpack.packb(["<u4", [2], pm.indices.tobytes()])),
                          msgpack.ExtType(1, msgpack.packb(["<f8", [2], pm.values.tobytes()]))])
    with pytest.raises(WireError, match="PartialModel extension: .*indices must lie in \\[0, 2\\)"):
        decode(msgpack.packb(msgpack.ExtType(3, body)))
