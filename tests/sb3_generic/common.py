"""What the adapted SB3 tests share: ACER's small budgets and the reasons of the expected failures.

Each ``xfail`` is strict: a case that starts to pass fails the suite, so the list of differences in
docs/guide/ecosystem.md is kept true.
"""

from __future__ import annotations

from typing import Any

#: ACER settings that replay within the tiny budgets of SB3's tests (a segment of 8 steps, replay from
#: 16 stored steps per env), where SB3 gives PPO ``n_steps=64``; the rest are ACER's defaults.
SMALL: dict[str, Any] = dict(n_steps=8, buffer_size=64, replay_start=16)

#: For the image cases: longer segments and one replayed update per segment on average, so that the
#: convolutions run a few dozen updates where ``SMALL`` would run a few hundred.
SMALL_CNN: dict[str, Any] = dict(n_steps=16, buffer_size=64, replay_start=32, replay_ratio=1)
