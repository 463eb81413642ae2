"""The cache keeps an invalidation that happened while a read was on the way, whatever the read answers."""

from stockade.client import cache as cache_module
from stockade.client.cache import ResponseCache, prompt_key

KEY = prompt_key("p", "greeting")
OTHER = prompt_key("p", "other")


def test_a_304_sent_before_an_invalidation_leaves_the_copy_invalidated():
    cache = ResponseCache()
    cache.put(KEY, "v1", '"1"')
    stamp = cache.stamp()  # the revalidation leaves
    cache.invalidate(KEY)  # our own publish lands meanwhile
    cache.confirm(KEY, stamp)  # the revalidation answers 304
    assert cache.get(KEY).invalidated


def test_a_200_sent_before_an_invalidation_is_stored_but_not_trusted():
    cache = ResponseCache()
    stamp = cache.stamp()
    cache.invalidate(KEY)  # no copy yet: still remembered for the read in flight
    cache.put(KEY, "v1", '"1"', stamp)
    entry = cache.get(KEY)
    assert (entry.value, entry.invalidated) == ("v1", True)


def test_a_read_sent_after_the_invalidation_makes_the_copy_current():
    cache = ResponseCache()
    cache.put(KEY, "v1", '"1"')
    cache.invalidate(KEY)
    stamp = cache.stamp()
    cache.confirm(KEY, stamp)
    assert not cache.get(KEY).invalidated
    cache.put(KEY, "v2", '"2"', cache.stamp())
    assert not cache.get(KEY).invalidated


def test_another_keys_invalidation_does_not_touch_this_read():
    cache = ResponseCache()
    cache.put(KEY, "v1", '"1"')
    stamp = cache.stamp()
    cache.invalidate(OTHER)
    cache.confirm(KEY, stamp)
    assert not cache.get(KEY).invalidated


def test_invalidate_all_covers_reads_in_flight():
    cache = ResponseCache()
    cache.put(KEY, "v1", '"1"')
    stamp = cache.stamp()
    cache.invalidate_all()  # a reconnect: events may have been missed
    cache.confirm(KEY, stamp)
    assert cache.get(KEY).invalidated


def test_marks_stay_bounded_and_fold_into_one_conservative_mark(monkeypatch):
    monkeypatch.setattr(cache_module, "MAX_MARKS", 5)
    cache = ResponseCache()
    cache.put(KEY, "v1", '"1"')
    stamp = cache.stamp()
    for n in range(20):  # events for prompts this client never read
        cache.invalidate(prompt_key("p", f"unread-{n}"))
    assert len(cache._marks) <= 5
    cache.confirm(KEY, stamp)  # folded: the read in flight revalidates once more, never trusts a stale copy
    assert cache.get(KEY).invalidated
    cache.confirm(KEY, cache.stamp())
    assert not cache.get(KEY).invalidated
