"""Callbacks: SB2's callable callback as an SB3 callback, and what ``learn`` turns its argument into."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback, CallbackList, ProgressBarCallback
from stable_baselines3.common.type_aliases import MaybeCallback

__all__ = ["LegacyCallback", "make_callback"]


class LegacyCallback(BaseCallback):
    """SB2's callable callback ``(locals, globals) -> bool``; only an explicit ``False`` stops training."""

    def __init__(self, callback: Callable[[dict[str, Any], dict[str, Any]], Any], verbose: int = 0) -> None:
        super().__init__(verbose)
        self.callback = callback

    def _on_step(self) -> bool:
        return self.callback(self.locals, self.globals) is not False


def make_callback(callback: MaybeCallback, progress_bar: bool = False) -> BaseCallback:
    """One SB3 callback from ``learn``'s argument: an SB3 callback, a list of them, SB2's callable
    (:class:`LegacyCallback`) or ``None``; with ``progress_bar`` SB3's progress bar is added."""
    if isinstance(callback, list):
        callback = CallbackList(callback)
    if callback is None:
        callback = CallbackList([])
    elif not isinstance(callback, BaseCallback):
        callback = LegacyCallback(callback)
    if progress_bar:
        callback = CallbackList([callback, ProgressBarCallback()])
    return callback
