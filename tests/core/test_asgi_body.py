"""core/asgi_body: a body read whole within a limit, a client that leaves, and the replay a route then reads."""

import asyncio

import pytest

from orientscope.core.asgi_body import BodyTooLarge, read_body, replaying


def _receive(messages):
    queue = list(messages)

    async def receive():
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    return receive


def _chunks(*parts):
    return [{"type": "http.request", "body": p, "more_body": k < len(parts) - 1} for k, p in enumerate(parts)]


def test_chunks_are_joined_and_replayed_once_then_the_client_speaks():
    receive = _receive(_chunks(b"ab", b"cd", b"e"))
    body = asyncio.run(read_body(receive, 5))
    assert body == b"abcde"
    replay = replaying(body, receive)
    first, then = asyncio.run(replay()), asyncio.run(replay())
    assert first == {"type": "http.request", "body": b"abcde", "more_body": False}
    assert then == {"type": "http.disconnect"}


def test_one_byte_past_the_limit_stops_reading_and_a_client_that_leaves_is_none():
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_body(_receive(_chunks(b"abc", b"def")), 5))
    assert asyncio.run(read_body(_receive([{"type": "http.disconnect"}]), 5)) is None
