"""RMSProp with TensorFlow semantics, batched over parameters.

Same update and state as SB3's ``RMSpropTFLike`` (the square average starts at ones and epsilon sits inside
the square root: ``ms <- alpha ms + (1 - alpha) g^2;  theta <- theta - lr g / sqrt(ms + eps)``), but for the
plain case ACER uses (no momentum, not centred, no weight decay) the step runs as a few ``torch._foreach``
kernels instead of a Python loop over parameters. ACER makes many small updates, where that loop dominated.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from torch.optim import optimizer as torch_optimizer

__all__ = ["FastRMSpropTFLike", "apply_gradients", "clip_grad_norm", "zero_gradients"]


def clip_grad_norm(parameters: list[torch.nn.Parameter], max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_(parameters, max_norm)``: the same global 2-norm and the same scaling
    ``grad *= min(max_norm / (norm + 1e-6), 1)``, without torch's per-call grouping of the gradients by device
    and dtype when they share one (the usual case), which costs more than the arithmetic on small networks.

    Returns:
        The total norm of the gradients before clipping.
    """
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads or len({(g.device, g.dtype) for g in grads}) > 1:
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm)
    with torch.no_grad():
        total_norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
        torch._foreach_mul_(grads, torch.clamp(max_norm / (total_norm + 1e-6), max=1.0))
    return total_norm


def zero_gradients(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.zero_grad(set_to_none=True)``, through the cheaper path for ``FastRMSpropTFLike``."""
    if isinstance(optimizer, FastRMSpropTFLike):
        optimizer.zero_gradients()
    else:
        optimizer.zero_grad(set_to_none=True)


def apply_gradients(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.step()``, through the cheaper path for ``FastRMSpropTFLike``."""
    if isinstance(optimizer, FastRMSpropTFLike):
        optimizer.apply_gradients()
    else:
        optimizer.step()


class FastRMSpropTFLike(RMSpropTFLike):
    """``RMSpropTFLike`` whose plain case is batched; other settings fall back to the parent's step."""

    def _plain(self) -> bool:
        return all(
            group["momentum"] == 0 and not group["centered"] and group["weight_decay"] == 0
            for group in self.param_groups
        )

    def _has_hooks(self) -> bool:
        return bool(
            self._optimizer_step_pre_hooks
            or self._optimizer_step_post_hooks
            or torch_optimizer._global_optimizer_pre_hooks
            or torch_optimizer._global_optimizer_post_hooks
        )

    def apply_gradients(self) -> None:
        """``step()`` without torch's per-call wrapper (a profiler record and the hook dispatch), which
        costs about as much as the update itself on small networks; with hooks registered, or settings
        other than the plain case, this is exactly ``step()``."""
        if self._has_hooks() or not self._plain():
            self.step()
            return
        with torch.no_grad():
            self._plain_step()

    def zero_gradients(self) -> None:
        """``zero_grad(set_to_none=True)`` without torch's per-call profiler record."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        if not self._plain() or closure is not None:
            return super().step(closure)
        self._plain_step()
        return None

    def _plain_step(self) -> None:
        for group in self.param_groups:
            params, grads, square_avgs = [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("RMSpropTF does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["square_avg"] = torch.ones_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                params.append(p)
                grads.append(p.grad)
                square_avgs.append(state["square_avg"])
            if not params:
                continue
            alpha = group["alpha"]
            torch._foreach_mul_(square_avgs, alpha)
            torch._foreach_addcmul_(square_avgs, grads, grads, value=1 - alpha)
            denominators = torch._foreach_add(square_avgs, group["eps"])
            torch._foreach_sqrt_(denominators)
            torch._foreach_addcdiv_(params, grads, denominators, value=-group["lr"])
