"""The course's timing helper: the method its docstring states (warm-up, batches, interleaved
rounds, median, results waited for), checked by counting calls, never by timing them."""

from minijit.course import first_call, fmt_seconds, seconds_per_call, time_calls


class _Lazy:
    """A result whose work is 'done' only when waited for, as a JAX array's is."""

    waited = 0

    def block_until_ready(self):
        _Lazy.waited += 1
        return self


def test_every_contender_is_warmed_up_then_timed_in_the_same_rounds():
    order = []
    contenders = {name: (lambda n, name=name: order.append(name)) for name in ("a", "b")}
    seconds = time_calls(contenders, 0, rounds=3, warmup=2)
    assert set(seconds) == {"a", "b"} and all(s > 0 for s in seconds.values())
    # two warm-up calls and one estimate each, before any round
    assert order[:6] == ["a", "a", "a", "b", "b", "b"]
    rounds = order[6:]
    # each round runs one batch of a, then one of b: interleaved, never all of a first
    switches = sum(1 for x, y in zip(rounds, rounds[1:]) if x != y)
    assert switches == 2 * 3 - 1


def test_a_fast_call_is_timed_in_batches():
    calls = []
    seconds_per_call(lambda: calls.append(1), rounds=3, warmup=1)
    assert len(calls) > 2 + 3 * 10  # a batch of a do-nothing call holds many calls


def test_results_with_block_until_ready_are_waited_for():
    _Lazy.waited = 0
    result, seconds = first_call(lambda: (_Lazy(), 3))
    assert _Lazy.waited == 1 and result[1] == 3 and seconds >= 0
    time_calls({"lazy": _Lazy}, rounds=2, warmup=1)
    assert _Lazy.waited >= 1 + 1 + 2


def test_fmt_seconds_picks_the_unit():
    assert [fmt_seconds(s) for s in (2.5, 0.0123, 4.56e-6, 7e-9)] == \
        ["2.5 s", "12.3 ms", "4.56 µs", "7 ns"]
