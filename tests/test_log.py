"""The message log: record layout and rendering (docs/formats.md)."""

import io

import numpy as np
import pytest

from netemu.log import MessageLog


def test_a_record_starts_with_time_and_event_then_context_then_fields():
    f = io.BytesIO()
    MessageLog(f, algorithm="fedavg").bind(run=2)(t=1.5, event="send", id=7, src="a")
    assert f.getvalue() == b'{"t":1.5,"event":"send","algorithm":"fedavg","run":2,"id":7,"src":"a"}\n'


def test_a_field_named_like_the_context_replaces_its_value_in_place():
    f = io.BytesIO()
    MessageLog(f, run=0, algorithm="x")(t=0.0, event="metric", run=3, value=1)
    assert f.getvalue() == b'{"t":0.0,"event":"metric","run":3,"algorithm":"x","value":1}\n'


def test_numpy_values_render_as_json_numbers_and_lists():
    f = io.BytesIO()
    MessageLog(f)(t=np.float64(0.25), event="metric", value=np.float32(0.5), w=np.array([1, 2]))
    assert f.getvalue() == b'{"t":0.25,"event":"metric","value":0.5,"w":[1,2]}\n'


def test_binding_leaves_the_parent_log_unchanged():
    f = io.BytesIO()
    parent = MessageLog(f, a=1)
    parent.bind(b=2)
    parent(t=0.0, event="e")
    assert f.getvalue() == b'{"t":0.0,"event":"e","a":1}\n'


def test_records_are_counted_even_without_a_sink():
    log = MessageLog(None).bind(run=0)
    log(t=0.0, event="send")
    log(t=1.0, event="deliver")
    assert log.records == 2


def test_records_stay_in_the_buffer_until_flushed(tmp_path):
    path = tmp_path / "messages.jsonl"
    with open(path, "wb") as f:
        log = MessageLog(f)
        log(t=0.0, event="send")
        assert path.read_bytes() == b""
        log.flush()
        assert path.read_bytes() == b'{"t":0.0,"event":"send"}\n'


@pytest.mark.parametrize("context", [{}, {"algorithm": "fedavg", "run": 2}, {"round": 9, "run": 1}, {"t": 5.0, "event": "x"}],
                         ids=["none", "algorithm and run", "a context key that the record replaces",
                              "a context binding t and event"])
@pytest.mark.parametrize("key", ["payload_bytes", "round"], ids=["own key", "key of a fixed field"])
def test_a_message_record_is_written_byte_for_byte_as_the_keyword_call_writes_it(context, key):
    fast, keywords = io.BytesIO(), io.BytesIO()
    log = MessageLog(fast, **context)
    for t in (1.5, 2.5):  # the second record reuses the first one's template
        log.message(t, "send", 7, "a", "b", "model", 3, 120, "uplink", key, 100)
        MessageLog(keywords, **context)(t=t, event="send", **{"id": 7, "src": "a", "dst": "b", "kind": "model",
                                                              "round": 3, "bytes": 120, "link": "uplink", key: 100})
    assert fast.getvalue() == keywords.getvalue() and fast.getvalue().count(b"\n") == 2


def test_message_with_writes_what_the_keyword_call_writes():
    import io

    from netemu import MessageLog

    a, b = io.BytesIO(), io.BytesIO()
    MessageLog(a, algorithm="x", run=0).message_with(1.5, "drop", 3, "s", "d", "k", 2, 99, "uplink", {"reason": "loss", "hop": "s->r", "hops": 2})
    MessageLog(b, algorithm="x", run=0)(t=1.5, event="drop", id=3, src="s", dst="d", kind="k", round=2, bytes=99, link="uplink",
                                        reason="loss", hop="s->r", hops=2)
    assert a.getvalue() == b.getvalue()
