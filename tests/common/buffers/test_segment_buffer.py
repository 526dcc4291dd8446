"""The segment replay buffer (``sb3_acer.common.buffers.segment_buffer``) and the ``Segment`` record
(``sb3_acer.common.type_aliases``)."""

from __future__ import annotations

import copy
import dataclasses
import warnings

import numpy as np
import pytest

import sb3_acer.common.buffers.base as buffer_module
from sb3_acer.common.buffers.base import available_memory_bytes
from sb3_acer.common.buffers.frame_buffer import FrameStackReplayBuffer
from sb3_acer.common.buffers.segment_buffer import SegmentReplayBuffer
from sb3_acer.common.type_aliases import Segment

# The array fields (initial_state, the recurrent policies' (h, c) pair, is tested in test_recurrent.py).
FIELDS = [field.name for field in dataclasses.fields(Segment) if field.name != "initial_state"]
PER_ENV = ["observations", "actions", "rewards", "mu_probs", "terminated", "truncated", "episode_starts"]


def make_segment(
    rng: np.random.Generator,
    n_steps: int = 5,
    n_envs: int = 3,
    obs_shape: tuple[int, ...] = (4,),
    obs_dtype: type = np.float32,
    n_actions: int = 3,
    final: tuple[tuple[int, int], ...] = (),
) -> Segment:
    """A random segment; ``final`` lists the ``(t, e)`` truncations, in the rollout's ``(t, e)`` order."""

    def observations(*lead: int) -> np.ndarray:
        if np.dtype(obs_dtype) == np.uint8:
            return rng.integers(0, 256, size=(*lead, *obs_shape), dtype=np.uint8)
        return rng.standard_normal((*lead, *obs_shape)).astype(obs_dtype)

    terminated = rng.random((n_steps, n_envs)) < 0.2
    truncated = np.zeros((n_steps, n_envs), dtype=bool)
    for t, e in final:
        truncated[t, e], terminated[t, e] = True, False
    episode_starts = np.zeros((n_steps + 1, n_envs), dtype=bool)
    episode_starts[0] = rng.random(n_envs) < 0.5
    episode_starts[1:] = terminated | truncated
    return Segment(
        observations=observations(n_steps + 1, n_envs),
        actions=rng.integers(0, n_actions, size=(n_steps, n_envs), dtype=np.int64),
        rewards=rng.standard_normal((n_steps, n_envs)).astype(np.float32),
        mu_probs=rng.dirichlet(np.ones(n_actions), size=(n_steps, n_envs)).astype(np.float32),
        terminated=terminated,
        truncated=truncated,
        episode_starts=episode_starts,
        final_index=np.array(final, dtype=np.int64).reshape(-1, 2),
        final_observations=observations(len(final)),
    )


def make_buffer(
    buffer_size: int = 20,
    n_steps: int = 5,
    n_envs: int = 3,
    obs_shape: tuple[int, ...] = (4,),
    obs_dtype: type = np.float32,
    n_actions: int = 3,
    seed: int | None = 0,
) -> SegmentReplayBuffer:
    return SegmentReplayBuffer(
        buffer_size=buffer_size,
        n_steps=n_steps,
        n_envs=n_envs,
        obs_shape=obs_shape,
        obs_dtype=np.dtype(obs_dtype),
        n_actions=n_actions,
        seed=seed,
    )


def assert_segments_equal(actual: Segment, expected: Segment) -> None:
    for name in FIELDS:
        a, b = getattr(actual, name), getattr(expected, name)
        assert a.dtype == b.dtype, name
        assert a.shape == b.shape, name
        assert np.array_equal(a, b), name


def assert_env_column_from(batch: Segment, env: int, source: Segment) -> None:
    """Env ``env``'s part of ``batch`` is exactly env ``env``'s part of ``source``."""
    for name in PER_ENV:
        assert np.array_equal(getattr(batch, name)[:, env], getattr(source, name)[:, env]), name
    mine = batch.final_index[:, 1] == env
    theirs = source.final_index[:, 1] == env
    assert np.array_equal(batch.final_index[mine], source.final_index[theirs])
    assert np.array_equal(batch.final_observations[mine], source.final_observations[theirs])


# ---------------------------------------------------------------------------------------------------------
# Segment
# ---------------------------------------------------------------------------------------------------------


def test_segment_reports_its_size():
    segment = make_segment(np.random.default_rng(0), n_steps=7, n_envs=2)
    assert (segment.n_steps, segment.n_envs) == (7, 2)


@pytest.mark.parametrize(
    "name,value,message",
    [
        ("actions", np.zeros(5, dtype=np.int64), r"Segment.actions must be \[T, E\], got shape \(5,\)"),
        ("rewards", np.zeros((4, 3)), r"Segment.rewards must start with shape \(5, 3\), got \(4, 3\)"),
        ("observations", np.zeros((5, 3, 4)), r"Segment.observations must start with shape \(6, 3\)"),
        (
            "episode_starts",
            np.zeros((5, 3), dtype=bool),
            r"Segment.episode_starts must start with shape \(6, 3\)",
        ),
        ("mu_probs", np.zeros((5, 3)), r"Segment.mu_probs must be \[T, E, A\], got shape \(5, 3\)"),
        ("terminated", np.zeros((5, 2), dtype=bool), r"Segment.terminated must start with shape \(5, 3\)"),
        (
            "final_observations",
            np.zeros((1, 5), dtype=np.float32),
            r"Segment.final_observations must be \[K, \*obs_shape\] with obs_shape = \(4,\), got \(1, 5\)",
        ),
        ("final_index", np.zeros((2, 2), dtype=np.int64), r"Segment.final_index must be \[K, 2\] with K = 1"),
        (
            "final_index",
            np.array([[5, 0]], dtype=np.int64),
            r"Segment.final_index rows \(t, e\) must lie in \[0, 5\) x \[0, 3\), got \[\[5, 0\]\]",
        ),
        ("final_index", np.array([[0, 3]], dtype=np.int64), r"must lie in \[0, 5\) x \[0, 3\)"),
        ("final_index", np.array([[-1, 0]], dtype=np.int64), r"must lie in \[0, 5\) x \[0, 3\)"),
    ],
)
def test_segment_rejects_inconsistent_shapes(name, value, message):
    segment = make_segment(np.random.default_rng(0), final=((2, 1),))
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(segment, **{name: value})


# ---------------------------------------------------------------------------------------------------------
# Construction, capacity, memory
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("buffer_size,n_steps,capacity", [(20, 5, 4), (24, 5, 4), (5, 5, 1), (99, 20, 4)])
def test_capacity_is_buffer_size_floor_divided_by_n_steps(buffer_size, n_steps, capacity):
    buffer = make_buffer(buffer_size=buffer_size, n_steps=n_steps)
    assert buffer.capacity == capacity
    assert buffer.observations.shape == (capacity, n_steps + 1, 3, 4)
    assert buffer.mu_probs.shape == (capacity, n_steps, 3, 3)
    assert len(buffer) == 0


def test_buffer_refuses_sizes_that_cannot_hold_a_segment():
    with pytest.raises(
        ValueError, match=r"buffer_size \(4\) must be at least n_steps \(5\) to hold one segment"
    ):
        make_buffer(buffer_size=4, n_steps=5)
    with pytest.raises(ValueError, match="n_steps, n_envs and n_actions must be positive, got 0, 3, 3"):
        make_buffer(n_steps=0)
    with pytest.raises(ValueError, match="n_steps, n_envs and n_actions must be positive, got 5, 0, 3"):
        make_buffer(n_envs=0)
    with pytest.raises(ValueError, match="n_steps, n_envs and n_actions must be positive, got 5, 3, 0"):
        make_buffer(n_actions=0)


@pytest.mark.parametrize(
    "buffer_size,n_steps,n_envs,obs_shape,obs_dtype,n_actions",
    [
        (20, 5, 3, (4,), np.float32, 3),
        (7, 7, 1, (), np.int64, 2),
        (60, 20, 2, (12, 10, 3), np.uint8, 6),
        (33, 4, 5, (2, 3), np.float64, 9),
    ],
)
def test_estimate_nbytes_equals_allocated_nbytes(
    buffer_size, n_steps, n_envs, obs_shape, obs_dtype, n_actions
):
    buffer = make_buffer(buffer_size, n_steps, n_envs, obs_shape, obs_dtype, n_actions)
    estimate = SegmentReplayBuffer.estimate_nbytes(
        buffer.capacity, n_steps, n_envs, obs_shape, np.dtype(obs_dtype), n_actions
    )
    assert estimate == buffer.nbytes
    assert buffer.nbytes == sum(
        getattr(buffer, name).nbytes
        for name in (
            "observations",
            "actions",
            "rewards",
            "mu_probs",
            "terminated",
            "truncated",
            "episode_starts",
        )
    )


def test_estimate_for_sb2_atari_defaults_is_about_2_4_gb():
    """sb2-acer-behaviour.md section 2: 250 slots x 16 envs x 21 x 28224 B ~ 2.4 GB of observations."""
    estimate = SegmentReplayBuffer.estimate_nbytes(250, 20, 16, (84, 84, 4), np.dtype(np.uint8), 6)
    observations = 250 * 16 * 21 * 84 * 84 * 4
    assert observations < estimate < observations * 1.01
    assert 2.37e9 < estimate < 2.40e9


def test_resource_warning_when_the_estimate_exceeds_available_memory(monkeypatch):
    needed = SegmentReplayBuffer.estimate_nbytes(4, 5, 3, (4,), np.dtype(np.float32), 3)
    monkeypatch.setattr(buffer_module, "available_memory_bytes", lambda: needed - 1)
    with pytest.warns(
        ResourceWarning, match=r"The replay buffer needs about .* GB but only .* GB are available"
    ):
        make_buffer()
    for available in (needed, None):
        monkeypatch.setattr(buffer_module, "available_memory_bytes", lambda available=available: available)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert make_buffer().capacity == 4


def test_available_memory_bytes_reads_a_positive_number():
    available = available_memory_bytes()
    assert available is None or (isinstance(available, int) and available > 0)


# ---------------------------------------------------------------------------------------------------------
# put / get
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "obs_shape,obs_dtype,final",
    [
        ((4,), np.float32, ()),
        ((4,), np.float32, ((0, 2), (1, 0), (1, 1), (4, 2))),
        ((), np.int64, ((3, 0),)),
        ((6, 6, 3), np.uint8, ((2, 1),)),
    ],
)
def test_put_get_round_trip_is_exact(obs_shape, obs_dtype, final):
    rng = np.random.default_rng(1)
    buffer = make_buffer(obs_shape=obs_shape, obs_dtype=obs_dtype)
    segment = make_segment(rng, obs_shape=obs_shape, obs_dtype=obs_dtype, final=final)
    buffer.put(segment)
    assert (len(buffer), buffer.next_idx) == (1, 1)
    assert_segments_equal(buffer.get(np.zeros(3, dtype=np.int64)), segment)
    assert_segments_equal(buffer.sample(), segment)


def test_buffer_stores_copies_and_returns_copies():
    rng = np.random.default_rng(2)
    buffer = make_buffer()
    segment = make_segment(rng, final=((1, 2),))
    snapshot = {name: getattr(segment, name).copy() for name in FIELDS}
    buffer.put(segment)
    for name in FIELDS:
        getattr(segment, name)[...] = 0
    stored = buffer.get(np.zeros(3, dtype=np.int64))
    for name in FIELDS:
        assert np.array_equal(getattr(stored, name), snapshot[name]), name
    for name in FIELDS:
        getattr(stored, name)[...] = 1
    again = buffer.get(np.zeros(3, dtype=np.int64))
    for name in FIELDS:
        assert np.array_equal(getattr(again, name), snapshot[name]), name


def test_ring_buffer_overwrites_the_oldest_segment():
    rng = np.random.default_rng(3)
    buffer = make_buffer(buffer_size=15, n_steps=5)  # capacity 3
    segments = [make_segment(rng, final=((i % 5, i % 3),)) for i in range(5)]
    expected_state = [(1, 1), (2, 2), (3, 0), (3, 1), (3, 2)]
    for segment, (length, next_idx) in zip(segments, expected_state, strict=True):
        buffer.put(segment)
        assert (len(buffer), buffer.next_idx) == (length, next_idx)
    for slot, expected in enumerate([segments[3], segments[4], segments[2]]):
        assert_segments_equal(buffer.get(np.full(3, slot)), expected)


def test_get_takes_each_env_from_its_own_slot_and_column():
    rng = np.random.default_rng(4)
    buffer = make_buffer(buffer_size=15, n_steps=5)
    segments = [
        make_segment(rng, final=((1, 0), (3, 2))),
        make_segment(rng, final=((2, 1),)),
        make_segment(rng, final=((0, 0), (0, 1), (4, 1))),
    ]
    for segment in segments:
        buffer.put(segment)
    for slots in ([2, 0, 1], [1, 1, 0], [0, 2, 2], [2, 2, 2]):
        batch = buffer.get(np.array(slots))
        for env, slot in enumerate(slots):
            assert_env_column_from(batch, env, segments[slot])
    # Truncation observations follow their env, in the rollout's (t, e) order.
    batch = buffer.get(np.array([1, 1, 0]))
    assert batch.final_index.tolist() == [[2, 1], [3, 2]]
    assert np.array_equal(
        batch.final_observations,
        np.stack([segments[1].final_observations[0], segments[0].final_observations[1]]),
    )
    batch = buffer.get(np.array([2, 0, 1]))
    assert batch.final_index.tolist() == [[0, 0]]
    assert np.array_equal(batch.final_observations, segments[2].final_observations[:1])
    batch = buffer.get(np.array([1, 0, 1]))
    assert batch.final_index.shape == (0, 2)
    assert batch.final_observations.shape == (0, 4)
    assert batch.final_observations.dtype == np.float32


def test_uint8_images_stay_uint8():
    rng = np.random.default_rng(5)
    obs_shape = (8, 8, 4)
    buffer = make_buffer(obs_shape=obs_shape, obs_dtype=np.uint8)
    assert buffer.observations.dtype == np.uint8
    assert buffer.observations.nbytes == 4 * 6 * 3 * 8 * 8 * 4
    segment = make_segment(rng, obs_shape=obs_shape, obs_dtype=np.uint8, final=((4, 0),))
    segment.observations[0, 0, 0, 0, :] = [0, 1, 254, 255]
    buffer.put(segment)
    batch = buffer.sample()
    assert batch.observations.dtype == np.uint8
    assert batch.final_observations.dtype == np.uint8
    assert batch.observations[0, 0, 0, 0].tolist() == [0, 1, 254, 255]
    assert np.array_equal(batch.final_observations, segment.final_observations)


def test_put_rejects_mismatched_segments():
    rng = np.random.default_rng(6)
    buffer = make_buffer()
    with pytest.raises(ValueError, match=r"segment is \[T=4, E=3\] but the buffer holds \[T=5, E=3\]"):
        buffer.put(make_segment(rng, n_steps=4))
    with pytest.raises(ValueError, match=r"segment is \[T=5, E=2\] but the buffer holds \[T=5, E=3\]"):
        buffer.put(make_segment(rng, n_envs=2))
    with pytest.raises(ValueError, match=r"observation shape \(5,\) != buffer's \(4,\)"):
        buffer.put(make_segment(rng, obs_shape=(5,)))
    with pytest.raises(ValueError, match=r"mu_probs must be \[T, E, A=3\], got \(5, 3, 4\)"):
        buffer.put(make_segment(rng, n_actions=4))
    # A single action column would broadcast silently over the three actions.
    with pytest.raises(ValueError, match=r"mu_probs must be \[T, E, A=3\], got \(5, 3, 1\)"):
        buffer.put(make_segment(rng, n_actions=1))
    assert (len(buffer), buffer.next_idx) == (0, 0)


def test_get_and_sample_errors():
    rng = np.random.default_rng(7)
    buffer = make_buffer()
    with pytest.raises(RuntimeError, match="cannot sample from an empty replay buffer"):
        buffer.sample()
    buffer.put(make_segment(rng))
    buffer.put(make_segment(rng))
    with pytest.raises(ValueError, match=r"slots must have shape \(3,\), got \(2,\)"):
        buffer.get(np.array([0, 1]))
    with pytest.raises(ValueError, match=r"slots must lie in \[0, 2\), got \[0, 2, 1\]"):
        buffer.get(np.array([0, 2, 1]))  # slot 2 exists but holds nothing yet
    with pytest.raises(ValueError, match=r"slots must lie in \[0, 2\), got \[0, -1, 1\]"):
        buffer.get(np.array([0, -1, 1]))


# ---------------------------------------------------------------------------------------------------------
# has_at_least
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "replay_start,segments_needed",
    [(0, 1), (4, 1), (5, 1), (9, 1), (10, 2), (14, 2), (15, 3), (25, 5), (30, 6)],
)
def test_has_at_least_counts_whole_segments_per_env(replay_start, segments_needed):
    """SB2: ``num_in_buffer >= replay_start // T``; and never true while the buffer is empty."""
    rng = np.random.default_rng(8)
    buffer = make_buffer(buffer_size=25, n_steps=5)  # capacity 5
    results = [buffer.has_at_least(replay_start)]
    for _ in range(7):
        buffer.put(make_segment(rng))
        results.append(buffer.has_at_least(replay_start))
    expected = [min(n, 5) > 0 and min(n, 5) >= segments_needed for n in range(8)]
    assert results == expected
    if segments_needed > 5:
        assert not any(results)


# ---------------------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------------------


def _filled_buffer(seed: int | None, n_puts: int = 6, capacity: int = 4, n_envs: int = 3):
    rng = np.random.default_rng(100)
    buffer = make_buffer(buffer_size=5 * capacity, n_steps=5, n_envs=n_envs, seed=seed)
    segments = [make_segment(rng, n_envs=n_envs, final=((i % 5, i % n_envs),)) for i in range(n_puts)]
    for segment in segments:
        buffer.put(segment)
    in_slot = [segments[i] for i in range(n_puts - capacity, n_puts)]
    by_slot = {(n_puts - capacity + j) % capacity: seg for j, seg in enumerate(in_slot)}
    return buffer, by_slot


def test_same_seed_same_slots_and_reseeding_restarts():
    a, _ = _filled_buffer(seed=7)
    b, _ = _filled_buffer(seed=7)
    c, _ = _filled_buffer(seed=8)
    draws_a = [a.sample_slots().tolist() for _ in range(50)]
    assert draws_a == [b.sample_slots().tolist() for _ in range(50)]
    assert draws_a != [c.sample_slots().tolist() for _ in range(50)]
    a.seed(7)
    assert [a.sample_slots().tolist() for _ in range(50)] == draws_a


def test_each_env_draws_from_its_own_generator():
    """Env e's slot stream comes from its own seeded generator, whatever the number of envs beside it."""
    seed, n_draws = 5, 40
    streams = {}
    for n_envs in (1, 2, 4):
        buffer, _ = _filled_buffer(seed=seed, n_envs=n_envs)
        streams[n_envs] = np.array([buffer.sample_slots() for _ in range(n_draws)])
    assert np.array_equal(streams[1][:, 0], streams[4][:, 0])
    assert np.array_equal(streams[2], streams[4][:, :2])
    children = np.random.SeedSequence(seed).spawn(4)
    for env, child in enumerate(children):
        rng = np.random.default_rng(child)
        assert streams[4][:, env].tolist() == [int(rng.integers(4)) for _ in range(n_draws)]


def test_sample_is_get_of_sample_slots():
    a, _ = _filled_buffer(seed=3)
    b, _ = _filled_buffer(seed=3)
    for _ in range(10):
        assert_segments_equal(a.sample(), b.get(b.sample_slots()))


def test_each_env_is_sampled_from_its_own_column_of_a_stored_segment():
    buffer, by_slot = _filled_buffer(seed=11)
    for _ in range(30):
        slots = buffer.sample_slots()
        batch = buffer.get(slots)
        for env, slot in enumerate(slots.tolist()):
            assert_env_column_from(batch, env, by_slot[slot])


def test_sampling_is_uniform_and_independent_across_envs():
    n_draws, capacity, n_envs = 4000, 4, 3
    buffer, _ = _filled_buffer(seed=0, capacity=capacity, n_envs=n_envs)
    draws = np.array([buffer.sample_slots() for _ in range(n_draws)])
    assert draws.shape == (n_draws, n_envs)
    for env in range(n_envs):
        counts = np.bincount(draws[:, env], minlength=capacity)
        assert counts.shape == (capacity,)
        # Expected 1000 per slot, standard deviation about 27.
        assert bool((np.abs(counts - n_draws / capacity) < 150).all()), counts
    for e1, e2 in ((0, 1), (0, 2), (1, 2)):
        same = float(np.mean(draws[:, e1] == draws[:, e2]))
        assert 0.2 < same < 0.3, (e1, e2, same)  # 1/capacity if independent, 1 if shared


def test_sampling_only_draws_filled_slots():
    rng = np.random.default_rng(9)
    buffer = make_buffer(buffer_size=25, n_steps=5)  # capacity 5
    buffer.put(make_segment(rng))
    buffer.put(make_segment(rng))
    draws = np.array([buffer.sample_slots() for _ in range(200)])
    assert set(np.unique(draws).tolist()) == {0, 1}


# ---------------------------------------------------------------------------------------------------------
# check_values (a restored buffer's contents)
# ---------------------------------------------------------------------------------------------------------


def test_check_values_accepts_actions_up_to_n_actions_minus_one_only() -> None:
    """Actions index the n_actions columns of mu and Q: n_actions itself is one past the last column."""
    buffer = make_buffer(n_actions=3)
    buffer.put(make_segment(np.random.default_rng(10), n_actions=3))
    buffer.actions[0, 0, 0] = 2
    buffer.check_values()
    buffer.actions[0, 0, 0] = 3
    with pytest.raises(ValueError, match=r"^actions outside \[0, 3\): 3$"):
        buffer.check_values()
    buffer.actions[0, 0, 0] = -1
    with pytest.raises(ValueError, match=r"^actions outside \[0, 3\): -1$"):
        buffer.check_values()


@pytest.mark.parametrize(
    ("index", "valid"), [((4, 2), True), ((5, 2), False), ((4, 3), False), ((-1, 2), False), ((4, -1), False)]
)
def test_check_values_accepts_final_indices_inside_the_segment_only(
    index: tuple[int, int], valid: bool
) -> None:
    """A truncation happens at a step t in [0, T) of an env e in [0, E): t == T or e == E is one past the
    segment (and would index out of range, or silently wrap for -1, in the update)."""
    buffer = make_buffer(n_steps=5, n_envs=3)
    buffer.put(make_segment(np.random.default_rng(11), n_steps=5, n_envs=3, final=((4, 2),)))
    buffer.final[0] = (np.array([index], dtype=np.int64), buffer.final[0][1])
    if valid:
        buffer.check_values()
    else:
        with pytest.raises(ValueError, match=r"^final\[0\] indexes outside the segment \[T=5, E=3\]$"):
            buffer.check_values()


# ---------------------------------------------------------------------------------------------------------
# FrameStackReplayBuffer with one slot
# ---------------------------------------------------------------------------------------------------------


def _frame_stream_segment(frames: np.ndarray, first: int, n_steps: int, n_stack: int) -> Segment:
    """Env 0's observations x_0 .. x_T of one frame stream without episode starts: x_t stacks the
    ``n_stack`` frames ending at ``frames[first + t]`` (oldest first), each frame ``[1, 1, 1]``."""
    observations = np.stack(
        [
            frames[first + t - n_stack + 1 : first + t + 1].reshape(1, n_stack, 1, 1)
            for t in range(n_steps + 1)
        ]
    )
    return Segment(
        observations=observations,
        actions=np.zeros((n_steps, 1), dtype=np.int64),
        rewards=np.zeros((n_steps, 1), dtype=np.float32),
        mu_probs=np.full((n_steps, 1, 2), 0.5, dtype=np.float32),
        terminated=np.zeros((n_steps, 1), dtype=bool),
        truncated=np.zeros((n_steps, 1), dtype=bool),
        episode_starts=np.zeros((n_steps + 1, 1), dtype=bool),
        final_index=np.zeros((0, 2), dtype=np.int64),
        final_observations=np.zeros((0, n_stack, 1, 1), dtype=np.uint8),
    )


def test_frame_buffer_of_one_slot_reads_back_a_continuing_segment_exactly() -> None:
    """With buffer_size == n_steps the only slot is overwritten by each put: the older frames of its x_0
    cannot come from a previous slot, even where the new segment continues the last one's frame stream."""
    n_steps, n_stack = 2, 3
    buffer = FrameStackReplayBuffer(
        buffer_size=n_steps,
        n_steps=n_steps,
        n_envs=1,
        obs_shape=(n_stack, 1, 1),
        n_stack=n_stack,
        n_actions=2,
    )
    assert buffer.capacity == 1
    frames = np.arange(10, 30, dtype=np.uint8)
    first, second = (_frame_stream_segment(frames, k, n_steps, n_stack) for k in (2, 2 + n_steps))
    assert np.array_equal(second.observations[0], first.observations[-1])  # one stream
    for segment in (first, second):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # one frame stream: nothing stored whole, no warning
            buffer.put(segment)
        assert_segments_equal(buffer.get(np.array([0])), segment)
    assert buffer.get(np.array([0])).observations[:, 0, :, 0, 0].tolist() == [
        [12, 13, 14],
        [13, 14, 15],
        [14, 15, 16],
    ]


# ---------------------------------------------------------------------------------------------------------
# state_dict / load_state_dict
# ---------------------------------------------------------------------------------------------------------


def assert_states_equal(a: dict, b: dict) -> None:
    """Two state dicts hold the same entries: arrays equal in dtype, shape and content."""
    assert list(a) == list(b)
    for name in a:
        x, y = a[name], b[name]
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray) and (x.dtype, x.shape) == (y.dtype, y.shape), name
            np.testing.assert_array_equal(x, y, err_msg=name)
        elif name == "final":
            assert len(x) == len(y)
            for (index_x, obs_x), (index_y, obs_y) in zip(x, y, strict=True):
                np.testing.assert_array_equal(index_x, index_y)
                assert obs_x.dtype == obs_y.dtype
                np.testing.assert_array_equal(obs_x, obs_y)
        elif name == "heads":
            assert x.keys() == y.keys()
            for key in x:
                np.testing.assert_array_equal(x[key], y[key])
        else:
            assert x == y, name


def _recurrent_segment(rng: np.random.Generator) -> Segment:
    h, c = rng.standard_normal((2, 3, 2)).astype(np.float32)
    return dataclasses.replace(make_segment(rng, final=((1, 0), (3, 2))), initial_state=(h, c))


def _recurrent_buffer(seed: int) -> SegmentReplayBuffer:
    """A wrapped ring (7 segments in 4 slots) of a recurrent policy, with truncation rows."""
    buffer = SegmentReplayBuffer(20, 5, 3, (4,), np.dtype(np.float32), 3, seed=seed, state_size=2)
    rng = np.random.default_rng(seed)
    for _ in range(7):
        buffer.put(_recurrent_segment(rng))
    return buffer


def _frame_buffer(seed: int, n_puts: int = 5) -> FrameStackReplayBuffer:
    """One env's frame stream in 3 slots, wrapped: ``heads`` holds the oldest slot's first observation."""
    buffer = FrameStackReplayBuffer(6, 2, 1, (3, 1, 1), n_stack=3, n_actions=2, seed=seed)
    frames = np.arange(10, 40, dtype=np.uint8)
    for k in range(n_puts):
        buffer.put(_frame_stream_segment(frames, 2 + 2 * k, n_steps=2, n_stack=3))
    assert buffer.heads and buffer._last_tail is not None
    return buffer


def _assert_same_batches(a, b, n: int = 6) -> None:
    for _ in range(n):
        first, second = a.sample(), b.sample()
        assert_segments_equal(first, second)
        if first.initial_state is not None:
            np.testing.assert_array_equal(first.initial_state[0], second.initial_state[0])
            np.testing.assert_array_equal(first.initial_state[1], second.initial_state[1])


@pytest.mark.parametrize("make", [_recurrent_buffer, _frame_buffer])
def test_state_dict_round_trip_gives_identical_samples(make) -> None:
    buffer, other = make(seed=0), make(seed=1)
    other.load_state_dict(buffer.state_dict())
    assert_states_equal(other.state_dict(), buffer.state_dict())
    _assert_same_batches(other, buffer)
    rebuilt = type(buffer).from_state_dict(buffer.state_dict())
    _assert_same_batches(rebuilt, buffer)


def test_state_dict_is_plain_values_and_arrays() -> None:
    state = _frame_buffer(seed=0).state_dict()
    assert list(state)[:11] == [
        "n_steps", "n_envs", "obs_shape", "obs_dtype", "n_stack", "frame_shape", "n_actions",
        "state_size", "capacity", "next_idx", "num_in_buffer",
    ]  # fmt: skip
    assert state["rngs"][0]["bit_generator"] == "PCG64" and isinstance(
        state["rngs"][0]["state"]["state"], int
    )
    assert all(isinstance(state[name], int) for name in ("n_steps", "capacity", "next_idx", "num_in_buffer"))


def test_loaded_state_is_a_copy() -> None:
    """With copy=True (the default) the two buffers share no array: changing one leaves the other."""
    buffer, other = _recurrent_buffer(seed=0), _recurrent_buffer(seed=1)
    other.load_state_dict(buffer.state_dict())
    before = copy.deepcopy(buffer.state_dict())
    other.put(_recurrent_segment(np.random.default_rng(5)))
    other.final[0][0][...] = 0
    other.sample()
    assert_states_equal(buffer.state_dict(), before)


def _bad_segment_states(state: dict) -> list[tuple[dict, str]]:
    """States of another buffer of the same settings, each with one entry damaged, and the message."""
    actions = state["actions"].copy()
    actions[1, 2, 0] = 7
    final = list(state["final"])
    final[2] = (final[2][0].astype(np.int32), final[2][1])
    changes: list[tuple[dict, str]] = [
        ({"actions": state["actions"][:2]}, r"^actions is int64\[2, 5, 3\], expected int64\[4, 5, 3\]$"),
        (
            {"rewards": state["rewards"].astype(np.float64)},
            r"^rewards is float64\[4, 5, 3\], expected float32",
        ),
        ({"observations": state["observations"].tolist()}, r"^observations is list, expected float32"),
        ({"next_idx": 4}, r"^next_idx=4 outside \[0, 3\]$"),
        ({"num_in_buffer": -1}, r"^num_in_buffer=-1 outside \[0, 4\]$"),
        ({"num_in_buffer": True}, r"^num_in_buffer=True outside \[0, 4\]$"),
        ({"n_steps": 6}, r"^n_steps is 6, this buffer has n_steps=5$"),
        ({"obs_dtype": np.dtype(np.float64)}, r"^obs_dtype is dtype\('float64'\), this buffer has"),
        ({"actions": actions}, r"^actions outside \[0, 3\): 7$"),
        ({"final": final}, r"^final\[2\] is not a pair of int64\[K, 2\] indices and float32\[K, 4\]"),
        ({"final": final[:3]}, r"^final has 3 items, expected 4$"),
        ({"rngs": state["rngs"][:2]}, r"^rngs must hold 3 generator states, got list$"),
        (
            {"rngs": [{"bit_generator": "os.system"}, *state["rngs"][1:]]},
            r"^unknown bit generator 'os.system'",
        ),
    ]
    missing = {name: value for name, value in state.items() if name != "initial_h"}
    return [({**state, **change}, message) for change, message in changes] + [
        (missing, r"missing \['initial_h'\], unknown \[\]$")
    ]


def test_load_state_dict_refuses_a_bad_state_and_keeps_the_buffer() -> None:
    buffer = _recurrent_buffer(seed=0)
    good = copy.deepcopy(buffer.state_dict())
    for state, message in _bad_segment_states(_recurrent_buffer(seed=1).state_dict()):
        with pytest.raises(ValueError, match=message):
            buffer.load_state_dict(state)
        assert_states_equal(buffer.state_dict(), good)
    fresh = _recurrent_buffer(seed=0)
    _assert_same_batches(buffer, fresh)  # the generators were not touched either


def test_frame_buffer_load_state_dict_refuses_bad_heads_and_keeps_the_buffer() -> None:
    buffer = _frame_buffer(seed=0)
    good = copy.deepcopy(buffer.state_dict())
    state = _frame_buffer(seed=1, n_puts=4).state_dict()
    head = next(iter(state["heads"].values()))
    for changes, message in (
        ({"heads": {(3, 0): head}}, r"^heads key \(3, 0\) outside the buffer$"),
        (
            {"heads": {(0, 0): head[:2]}},
            r"^heads\[\(0, 0\)\] is uint8\[2, 1, 1\], expected uint8\[3, 1, 1\]$",
        ),
        ({"heads": {(0, 0, 1): head}}, "^heads hold part of the whole segment of slot 0, env 0$"),
        ({"_last_tail": head}, r"^_last_tail is uint8\[3, 1, 1\], expected uint8\[1, 3, 1, 1\]$"),
        (
            {"frame_shape": (3, 1, 1)},
            r"^frame_shape is \(3, 1, 1\), this buffer has frame_shape=\(1, 1, 1\)$",
        ),
    ):
        with pytest.raises(ValueError, match=message):
            buffer.load_state_dict({**state, **changes})
        assert_states_equal(buffer.state_dict(), good)
    buffer.load_state_dict(state)  # the undamaged state loads
    assert buffer.next_idx == 1 and buffer.num_in_buffer == 3
