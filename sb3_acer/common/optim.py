"""ACER's optimizer: RMSProp with TensorFlow semantics batched over parameters, its set-up over the policy's
parameter groups, and the checking and loading of saved optimizer states.

:class:`FastRMSpropTFLike` has the same update and state as SB3's ``RMSpropTFLike`` (the square average
starts at ones and epsilon sits inside the square root:
``ms <- alpha ms + (1 - alpha) g^2;  theta <- theta - lr g / sqrt(ms + eps)``), but for the plain case ACER
uses (no momentum, not centred, no weight decay) the step runs as a few ``torch._foreach`` kernels instead
of a Python loop over parameters. ACER makes many small updates, where that loop dominated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from torch.optim import optimizer as torch_optimizer

from sb3_acer.common.checks.settings import check_finite

__all__ = [
    "ELEMENTWISE_OPTIMIZERS",
    "FastRMSpropTFLike",
    "apply_gradients",
    "check_optimizer_state",
    "clip_grad_norm",
    "load_optimizer_state",
    "make_optimizer",
    "parameter_groups",
    "set_learning_rate",
    "zero_gradients",
]


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
        # torch's batched kernels have no public names (torch's own clip_grad_norm_ calls them so).
        norms = torch._foreach_norm(grads)  # noqa: SLF001
        total_norm = torch.linalg.vector_norm(torch.stack(norms))
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


def _global_step_hooks() -> bool:
    """Whether a hook is registered for every optimizer's step (``register_optimizer_step_pre_hook`` or
    ``..._post_hook`` of ``torch.optim.optimizer``): torch keeps them in module-private dicts and has no
    public reader, so this adapter reads them."""
    pre = torch_optimizer._global_optimizer_pre_hooks  # noqa: SLF001
    post = torch_optimizer._global_optimizer_post_hooks  # noqa: SLF001
    return bool(pre or post)


class FastRMSpropTFLike(RMSpropTFLike):
    """``RMSpropTFLike`` whose plain case is batched; other settings fall back to the parent's step."""

    def _plain(self) -> bool:
        return all(
            group["momentum"] == 0 and not group["centered"] and group["weight_decay"] == 0
            for group in self.param_groups
        )

    def _has_hooks(self) -> bool:
        return bool(self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks or _global_step_hooks())

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
            # torch's batched kernels have no public names (torch's own foreach RMSprop calls them so).
            denominators = torch._foreach_add(square_avgs, group["eps"])  # noqa: SLF001
            torch._foreach_sqrt_(denominators)
            torch._foreach_addcdiv_(params, grads, denominators, value=-group["lr"])


#: Optimizers whose per-parameter state tensors (other than a scalar step) have their parameter's shape and
#: are finite: a loaded state is checked against that.
ELEMENTWISE_OPTIMIZERS = (
    FastRMSpropTFLike,
    RMSpropTFLike,
    torch.optim.RMSprop,
    torch.optim.Adam,
    torch.optim.AdamW,
    torch.optim.SGD,
    torch.optim.Adagrad,
    torch.optim.Adamax,
    torch.optim.NAdam,
    torch.optim.RAdam,
)


def parameter_groups(policy: torch.nn.Module, split_q: bool) -> list[list[torch.nn.Parameter]]:
    """The policy's parameters as :func:`make_optimizer` groups them: all in one group, or with ``split_q``
    the policy's and shared parameters, then the critic's own (``ACERPolicy.critic_parameters``).
    """
    if not split_q:
        return [list(policy.parameters())]
    q_ids = {id(p) for p in policy.critic_parameters()}  # type: ignore[operator]
    return [
        [p for p in policy.parameters() if id(p) not in q_ids],
        [p for p in policy.parameters() if id(p) in q_ids],
    ]


def make_optimizer(
    policy: torch.nn.Module,
    *,
    split_q: bool,
    learning_rate: float,
    policy_kwargs: dict[str, Any],
    rprop_alpha: float,
    rprop_epsilon: float,
) -> torch.optim.Optimizer:
    """The optimizer over the policy's parameters: one parameter group, or with ``split_q`` two
    (:func:`parameter_groups`), so that the critic can take ``q_lr_ratio`` times the step. A ratio of 1
    keeps SB2's single group, which model files written before ``q_lr_ratio`` existed hold.

    Args:
        policy: the policy whose parameters to optimize.
        split_q: give the critic's own parameters a group of their own.
        learning_rate: the step size of every group (until :func:`set_learning_rate`).
        policy_kwargs: the model's ``policy_kwargs``: their ``optimizer_class`` and ``optimizer_kwargs``, if
            any, replace the default :class:`FastRMSpropTFLike`.
        rprop_alpha: the default optimizer's decay.
        rprop_epsilon: the default optimizer's epsilon.
    """
    params: Any = policy.parameters()
    if split_q:
        params = [{"params": group} for group in parameter_groups(policy, split_q=True)]
    optimizer_class = policy_kwargs.get("optimizer_class")
    if optimizer_class is None:
        return FastRMSpropTFLike(params, lr=learning_rate, alpha=rprop_alpha, eps=rprop_epsilon)
    return optimizer_class(params, lr=learning_rate, **(policy_kwargs.get("optimizer_kwargs") or {}))


def set_learning_rate(optimizer: torch.optim.Optimizer, learning_rate: float, q_lr_ratio: float) -> None:
    """Give every parameter group its step: the critic's own group (the second, if any) takes
    ``q_lr_ratio`` times ``learning_rate``."""
    for index, group in enumerate(optimizer.param_groups):
        group["lr"] = learning_rate * (q_lr_ratio if index == 1 else 1.0)


def check_optimizer_state(optimizer: torch.optim.Optimizer, policy: torch.nn.Module, state: Any) -> None:
    """Raise ``ValueError`` unless ``state`` is a state dict of ``optimizer``'s kind over ``policy``'s
    parameters, in one group or two (torch's ``load_state_dict`` accepts another optimizer's, and the next
    step then fails)."""
    groups = state.get("param_groups") if isinstance(state, dict) else None
    if (
        not isinstance(groups, list)
        or not groups
        or not all(isinstance(group, dict) for group in groups)
        or not isinstance(state.get("state"), dict)
    ):
        raise ValueError("optimizer: not an optimizer state dict (with 'state' and 'param_groups')")
    if len(groups) not in (1, 2):
        raise ValueError(f"optimizer: {len(groups)} parameter groups saved; ACER's optimizer has 1 or 2")
    own = set(optimizer.param_groups[0]) - {"params"}
    unknown = sorted(set().union(*groups) - own - {"params"})
    if unknown:
        raise ValueError(
            f"optimizer: the saved state is an optimizer state with settings {unknown} unknown to this "
            f"model's {type(optimizer).__name__}: another optimizer's state cannot be loaded"
        )
    if not isinstance(optimizer, ELEMENTWISE_OPTIMIZERS):
        return  # e.g. Adafactor's factored statistics: another layout, not checked here
    # torch pairs the saved parameter ids in order with the parameters of the saved grouping (after its
    # check that the groups have the same sizes); a per-parameter tensor of these optimizers has its
    # parameter's shape, or the next step fails.
    saved_ids = [index for group in groups for index in group.get("params", [])]
    parameters = [p for group in parameter_groups(policy, split_q=len(groups) == 2) for p in group]
    shapes = dict(zip(saved_ids, (tuple(p.shape) for p in parameters), strict=False))
    for index, entries in state["state"].items():
        if not isinstance(entries, dict):
            raise ValueError(f"optimizer: the state of parameter {index} is not a dict")
        for key, value in entries.items():
            if not isinstance(value, torch.Tensor):
                continue
            check_finite(value, f"optimizer: state {index}.{key}")
            if value.dim() > 0 and index in shapes and tuple(value.shape) != shapes[index]:
                raise ValueError(
                    f"optimizer: state {index}.{key} has shape {tuple(value.shape)}, its parameter "
                    f"{shapes[index]}"
                )


def load_optimizer_state(
    optimizer: torch.optim.Optimizer,
    state: dict[str, Any],
    make_grouped: Callable[[bool], torch.optim.Optimizer],
) -> None:
    """Load an optimizer state dict saved with one parameter group or with the critic's apart (another
    ``q_lr_ratio``) into ``optimizer``: the per-parameter state moves to the same parameter in its grouping,
    and the saved settings of the first group apply to every group.

    Args:
        optimizer: the optimizer to load into.
        state: the saved state dict.
        make_grouped: builds an optimizer of the same kind over the same parameters, with the critic's
            apart (``True``) or not; it reads a state of the other grouping.
    """
    if len(state["param_groups"]) == len(optimizer.param_groups):
        optimizer.load_state_dict(state)
        return
    if len(state["param_groups"]) not in (1, 2):
        raise ValueError(
            f"optimizer: {len(state['param_groups'])} parameter groups saved; ACER's optimizer has 1 or 2"
        )
    saved = make_grouped(len(state["param_groups"]) == 2)
    saved.load_state_dict(state)
    settings = {k: v for k, v in saved.param_groups[0].items() if k != "params"}
    for group in optimizer.param_groups:
        group.update(settings)
    optimizer.state.clear()  # as load_state_dict does: the saved state replaces the current one
    for group in saved.param_groups:
        for p in group["params"]:
            if p in saved.state:
                optimizer.state[p] = saved.state[p]
