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

__all__ = ["FastRMSpropTFLike"]


class FastRMSpropTFLike(RMSpropTFLike):
    """``RMSpropTFLike`` whose plain case is batched; other settings fall back to the parent's step."""

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        plain = all(
            group["momentum"] == 0 and not group["centered"] and group["weight_decay"] == 0
            for group in self.param_groups
        )
        if not plain or closure is not None:
            return super().step(closure)
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
        return None
