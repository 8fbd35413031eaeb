"""Payloads sent unencoded (netemu.wire.lazy): the size is the encoded length, the value what a
decode of the encoded bytes gives, a copy the sender cannot change, and the bytes exact when read."""

import math
import struct

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers import Sink, logged_world, records
from netemu import Actor, Constant, Link, World
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel
from netemu.wire import PartialModel, WireError, decode, encode
from netemu.wire.codec import Unencoded, encode_envelope, encode_from
from netemu.wire.lazy import unencoded


def same(a, b):
    """`a` and `b` are the same decoded value: types (at every level), dtypes, shapes, bits."""
    assert type(a) is type(b), (type(a), type(b))
    if type(a) is np.ndarray:
        assert a.dtype == b.dtype and a.dtype.type is b.dtype.type and a.shape == b.shape
        assert a.tobytes() == b.tobytes() and b.flags.c_contiguous and b.flags.writeable and b.flags.owndata
    elif type(a) is dict:
        assert [(type(k), k) for k in a] == [(type(k), k) for k in b]
        for x, y in zip(a.values(), b.values()):
            same(x, y)
    elif type(a) is list:
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif type(a) is PartialModel:
        assert a.dim == b.dim
        same(a.indices, b.indices)
        same(a.values, b.values)
    elif type(a) is float:
        assert struct.pack("<d", a) == struct.pack("<d", b)  # NaN and -0.0 too
    elif isinstance(a, np.generic):  # (through an array: a long double's padding bytes are not its value)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    else:
        assert a == b


def check(x):
    """What an `Unencoded` of `x` must be: the encoded length, the decoded value, the bytes."""
    data = encode(x)
    lazy = unencoded(x)
    assert lazy is not None, f"{type(x).__name__} should be sent unencoded"
    assert len(lazy) == len(data)
    same(decode(data), lazy.value)
    assert lazy.data == data
    return lazy


# -------------------------------------------------------------- values at msgpack's size boundaries

BOUNDARY_INTS = [0, 1, 127, 128, 255, 256, 65_535, 65_536, 2**32 - 1, 2**32, 2**63, 2**64 - 1,
                 -1, -32, -33, -128, -129, -32_768, -32_769, -2**31, -2**31 - 1, -2**63]
LENGTHS = [0, 1, 15, 16, 31, 32, 255, 256, 65_535, 65_536]  # fix forms, 8-, 16- and 32-bit headers
INTS = st.one_of(st.sampled_from(BOUNDARY_INTS), st.integers(-2**63, 2**64 - 1))
TEXT = st.one_of(st.text(max_size=40), st.builds(lambda n, c: c * n, st.sampled_from(LENGTHS), st.sampled_from("aé€😀")))
BYTES = st.one_of(st.binary(max_size=40), st.builds(bytes, st.sampled_from(LENGTHS)))
DTYPES = st.one_of(
    hnp.boolean_dtypes(),
    hnp.integer_dtypes(endianness="?"),
    hnp.unsigned_integer_dtypes(endianness="?"),
    hnp.floating_dtypes(endianness="?", sizes=(16, 32, 64, 128)),
    hnp.complex_number_dtypes(endianness="?"),
)
SHAPES = st.lists(st.sampled_from([0, 1, 1, 2, 3, 127, 128, 300, 70_000]), max_size=17).filter(
    lambda s: math.prod(s) <= 4_000 and math.prod(d for d in s if d) < 2**50)  # (NumPy refuses more, even with a 0)
ARRAYS = st.one_of(
    hnp.arrays(DTYPES, SHAPES),
    # extension bodies on both sides of ext 8 / 16 / 32 (and fixext): byte vectors of every length near them
    st.builds(lambda n: np.arange(n, dtype=np.uint8), st.one_of(st.integers(0, 20), st.integers(240, 270),
                                                                st.integers(65_500, 65_560))),
    hnp.arrays(np.float64, (4, 6)).map(lambda a: a.T),  # Fortran order
    hnp.arrays(np.int32, 12).map(lambda a: a[::3]),  # a strided view
)
SCALARS = hnp.arrays(DTYPES, ()).map(lambda a: a[()])  # NumPy scalars (an np.float64 packs as a float)
PARTIALS = st.builds(
    lambda dim, m, dt: PartialModel.take(np.arange(dim, dtype=dt), np.arange(m) * (dim // max(m, 1))),
    st.sampled_from([1, 2, 17, 1000, 70_000]), st.integers(0, 40), st.sampled_from([np.float64, np.float32, np.int8]),
).filter(lambda pm: pm.indices.size <= pm.dim)
LEAVES = st.one_of(st.none(), st.booleans(), INTS, st.floats(), TEXT, BYTES, ARRAYS, SCALARS, PARTIALS)
KEYS = st.one_of(st.none(), st.booleans(), INTS, st.floats(allow_nan=False), st.text(max_size=8), st.binary(max_size=8))
PAYLOADS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=18), st.lists(inner, max_size=18).map(tuple),
                            st.dictionaries(KEYS, inner, max_size=18)),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(PAYLOADS)
def test_the_size_is_the_encoded_length_and_the_value_what_a_decode_gives(x):
    check(x)


@pytest.mark.parametrize("n", [15, 16, 65_535, 65_536])
def test_lists_and_maps_at_their_header_boundaries(n):
    check([None] * n)
    check(dict.fromkeys(range(n)))


@given(PAYLOADS)
def test_the_value_is_a_copy_the_sender_cannot_change(x):
    lazy = check(x)
    before = encode(x)

    def scribble(v):
        if type(v) is np.ndarray and v.flags.writeable:
            v[...] = np.where(v == 0, 1, 0)  # every entry changes (a NaN too)
        elif type(v) is PartialModel:
            scribble(v.values)
        elif type(v) is list:
            for item in v:
                scribble(item)
            v.append(1)
        elif type(v) is dict:
            for item in v.values():
                scribble(item)
            v["extra"] = 1
        elif type(v) is tuple:
            for item in v:
                scribble(item)

    scribble(x)
    same(decode(before), lazy.value)
    assert lazy.data == before


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float64, ">i2"])
def test_vectors_of_every_length_around_the_extension_boundaries(dtype):
    """A vector is sized on a short path once its dtype was seen: both paths, every fixext, ext 8 / 16 / 32 edge."""
    for n in [*range(0, 300), *range(8_150, 8_210), *range(65_450, 65_560)]:
        for _ in range(2):
            check(np.ones(n, dtype=dtype))


def test_np_longlong_arrays_decode_as_int64_and_so_does_their_copy():
    lazy = check(np.arange(3, dtype=np.longlong))
    assert lazy.value.dtype.type is np.int64


def test_a_dtype_s_metadata_is_lost_as_decoding_loses_it():
    dtype = np.dtype(np.float64, metadata={"unit": "m"})
    for x in (np.zeros(3, dtype=dtype), np.zeros(3, dtype=dtype), {"x": np.zeros((2, 2), dtype=dtype)}):  # (twice: both paths)
        value = check(x).value
        assert (value if type(value) is np.ndarray else value["x"]).dtype.metadata is None


# -------------------------------------------------------------- what stays encoded at once

def nested(depth):
    x: list = []
    for _ in range(depth):
        x = [x]
    return x


@pytest.mark.parametrize("x", [
    np.longlong(3),  # a scalar that decodes as another type (int64)
    np.str_("ab"), np.array(["ab"]), np.array([1], dtype="datetime64[s]"),  # other kinds and str subclasses
    {(1, 2): 3},  # a key that does not decode (msgpack has no tuple)
    {np.int64(1): 2},  # a key of another type
    nested(150),  # deeper than the walk goes
    msgpack.ExtType(5, b"x"), memoryview(b"ab"), type("Name", (str,), {})("s"), np.ma.masked_array([1.0]),
])
def test_what_cannot_be_sized_and_copied_exactly_is_encoded_at_once(x):
    assert unencoded(x) is None
    assert type(encode_from("a", "k", x)) is bytes


@pytest.mark.parametrize("x, field", [
    ({"w": np.array([object()])}, "payload['w']"),
    ({"w": [1, {1, 2}]}, "payload['w'][1]"),
    ([2**64], "payload[0]"),
    ({"s": "\ud800"}, "payload['s']"),
])
def test_a_payload_the_codec_refuses_is_refused_at_the_send_naming_sender_kind_and_field(x, field):
    assert unencoded(x) is None
    with pytest.raises(WireError) as e:
        encode_from("client-3", "update", x, "server")
    assert "client-3 sending 'update' to 'server'" in str(e.value) and field in str(e.value)


def test_bytes_are_made_once_and_not_after_the_value_was_handed_out():
    lazy = unencoded({"w": np.arange(3.0)})
    assert isinstance(lazy, Unencoded) and bytes(lazy) is lazy.data is lazy.data
    same(decode(lazy), decode(encode({"w": np.arange(3.0)})))
    assert encode_envelope(1, "a", "b", "k", 0, 0.0, lazy) == encode_envelope(1, "a", "b", "k", 0, 0.0, lazy.data)
    other = unencoded([1, 2])
    other.take()
    with pytest.raises(RuntimeError, match="delivered before its bytes were read"):
        bytes(other)


# -------------------------------------------------------------- through the network

class Scribbler(Actor):
    """Sends, broadcasts and sends many, then changes everything it sent before it arrives."""

    def __init__(self, name):
        super().__init__(name)
        self.sent = None

    async def run(self):
        w = np.arange(4.0)
        shared = {"w": w, "t": (1, [2, 3]), "pm": PartialModel.take(w, np.array([1, 3]))}
        own = [np.arange(3) for _ in range(2)]
        self.sent = decode(encode(shared)), [decode(encode(o)) for o in own]
        self.broadcast("shared", shared, round=0)
        self.send_many(["client-0", "client-1"], "own", own, round=0)
        w[:] = -1.0
        shared["t"][1].append(4)
        for o in own:
            o += 100
        await self.sleep(5.0)


class Mutating(Sink):
    """Receives, and changes what it received at once (a broadcast's other receivers must not see it)."""

    async def run(self):
        while True:
            msg = await self.recv()
            self.got.append((self.now, msg, decode(encode(msg.payload))))
            p = msg.payload
            for arr in (p["w"], p["pm"].values) if msg.kind == "shared" else (p,):
                arr += 1000


@pytest.mark.parametrize("model", [None, NetModel(sharing="max-min")])  # the direct path; the general path (transfers)
def test_receivers_get_what_was_sent_each_a_copy_of_its_own_duplicates_included(model):
    g = T.star(2)
    links = {e: Link(Constant(0.5), duplicate=1.0 if g.edges[e]["link_class"] == "downlink" else 0.0,
                     link_class=g.edges[e]["link_class"]) for e in g.edges}
    world, buf = logged_world(g, seed=1, links=links, model=model)
    server = world.add(Scribbler("server"))
    sinks = [world.add(Mutating(f"client-{k}")) for k in range(2)]
    world.run()
    shared, own = server.sent
    for k, sink in enumerate(sinks):
        got = [(m.kind, snapshot) for _, m, snapshot in sink.got]
        assert sorted(kind for kind, _ in got) == ["own", "own", "shared", "shared"]  # each message and its duplicate
        for kind, value in got:
            same(shared if kind == "shared" else own[k], value)
    sizes = {(r["kind"], r["dst"]): r["payload_bytes"] for r in records(buf) if r["event"] == "send"}
    assert sizes[("shared", "client-0")] == len(encode(shared))
    assert sizes[("own", "client-1")] == len(encode(own[1]))


def test_a_spy_on_the_network_sees_the_exact_length_bytes_and_decode():
    """What a network hook sees of a payload (its length, its bytes, its decode) is exact."""
    g = T.star(1)
    world = World(g, seed=0)
    seen = []
    send = world.network.send

    def spy(src, dst, kind, rnd, data):
        seen.append((len(data), bytes(data), decode(data)))
        return send(src, dst, kind, rnd, data)

    world.network.send = spy

    class Once(Actor):
        async def run(self):
            self.send("client-0", "m", {"w": np.arange(5.0)})
            await self.sleep(1.0)

    world.add(Once("server"))
    sink = world.add(Sink("client-0"))
    world.run()
    (n, data, value), = seen
    assert data == encode({"w": np.arange(5.0)}) and n == len(data)
    same(value, sink.got[0][1].payload)
