"""Export a feed-forward ACER policy to ONNX: :func:`export_onnx` writes a graph whose output is
``model.predict(obs, deterministic=True)``.

The graph follows Stable-Baselines3's "Exporting models" guide: an ``nn.Module`` calls the policy with
``deterministic=True``, so the observation preprocessing is part of the graph, and it then does what
``predict`` does after the network (the action's shape, and the clip of ``Box`` actions to the bounds).

- **Inputs**: the observations as the env gives them, batched: ``observation``, of shape
  ``[N, *observation_space.shape]`` and the space's dtype (``uint8`` images, ``int64`` for ``Discrete`` and
  ``MultiDiscrete``, ``int8`` for ``MultiBinary``, ``float32`` for a ``float32`` ``Box``); for ``Dict``
  observations one input per key, named by the key, in the space's order. Images are channel-first, as the
  model's observation space (SB3 transposes channel-last images with ``VecTransposeImage``). ``N`` is free.
- **Output** ``action`` (``action_`` if a key of ``Dict`` observations is ``action``):
  ``[N, *action_space.shape]``, as ``predict`` returns it: ``int64`` for
  ``Discrete``, ``MultiDiscrete`` and ``MultiBinary`` (0 or 1), the mean of a ``Box`` policy clipped to the
  action space's bounds (``float32`` for a ``float32`` ``Box``).
- **Opset** :data:`DEFAULT_OPSET` (18), the lowest that torch's exporter writes without converting the
  graph down: at opset 17 the converted graph of ``MultiDiscrete`` observations has a ``Split`` node that
  onnxruntime rejects.

A ``VecNormalize``'s statistics are not part of the policy: normalise the observations with them (as
``VecNormalize.normalize_obs`` does) before feeding the graph. Recurrent policies keep their LSTM state
outside the network and are refused.
"""

from __future__ import annotations

import io
import logging
import os
import pathlib
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from torch import nn

from sb3_acer.acer.acer import ACER
from sb3_acer.common.policies import RecurrentACERPolicy
from sb3_acer.common.save_util.model_file import write_atomically

__all__ = ["DEFAULT_OPSET", "OUTPUT_NAME", "check_opset", "export_onnx", "input_names", "output_name"]

#: The opset :func:`export_onnx` writes by default, and the lowest it takes.
DEFAULT_OPSET = 18
#: The name of the graph's output (with ``_`` appended while a key of ``Dict`` observations has it).
OUTPUT_NAME = "action"
#: The name of the graph's input, for observations that are not a ``Dict``.
OBSERVATION_NAME = "observation"
#: The batch size of the example observations the policy is traced with (torch's exporter specialises
#: sizes 0 and 1, so 2 keeps the batch dimension free).
TRACE_BATCH = 2


class DeterministicActions(nn.Module):
    """What the graph computes: ``predict(obs, deterministic=True)`` of a feed-forward policy.

    Args:
        policy: the policy, called as SB3's export guide does, ``policy(obs, deterministic=True)``.
        keys: the keys of ``Dict`` observations, in the order of the inputs; empty for other spaces.
    """

    low: th.Tensor
    high: th.Tensor

    def __init__(self, policy: BasePolicy, keys: tuple[str, ...]) -> None:
        super().__init__()
        self.policy = policy
        self.keys = keys
        space = policy.action_space
        self.action_shape = tuple(space.shape or ())
        self.clip = isinstance(space, spaces.Box)
        self.out_dtype = th.int64
        if isinstance(space, spaces.Box):
            # predict's np.clip of float32 actions to the bounds: its dtype, and the bounds in it.
            dtype = np.clip(np.zeros(space.shape, np.float32), space.low, space.high).dtype
            self.out_dtype = th.from_numpy(np.zeros(0, dtype)).dtype
            device = policy.device
            self.register_buffer(
                "low", th.as_tensor(space.low.astype(dtype), device=device), persistent=False
            )
            self.register_buffer(
                "high", th.as_tensor(space.high.astype(dtype), device=device), persistent=False
            )

    def forward(self, *observations: th.Tensor) -> th.Tensor:
        obs = dict(zip(self.keys, observations, strict=True)) if self.keys else observations[0]
        actions = self.policy(obs, deterministic=True)[0]
        actions = actions.reshape(-1, *self.action_shape)
        if self.clip:
            actions = th.clamp(actions.to(self.out_dtype), self.low, self.high)
        return actions


def check_opset(opset: object) -> int:
    """``opset`` checked (``None``: :data:`DEFAULT_OPSET`).

    Raises:
        ValueError: unless it is a whole number from :data:`DEFAULT_OPSET` to the newest opset the installed
            ``onnx`` knows.
    """
    if opset is None:
        return DEFAULT_OPSET
    newest = _newest_opset()
    if (
        not isinstance(opset, int | np.integer)
        or isinstance(opset, bool)
        or not DEFAULT_OPSET <= opset <= newest
    ):
        too_low = (
            isinstance(opset, int | np.integer) and not isinstance(opset, bool) and opset < DEFAULT_OPSET
        )
        reason = (
            f"; opset {DEFAULT_OPSET - 1} and below are refused because onnxruntime rejects the graph of "
            "MultiDiscrete observations converted down to them"
        )
        raise ValueError(
            f"opset must be a whole number from {DEFAULT_OPSET} to {newest} (the newest the installed onnx "
            f"knows), got {opset!r}" + (reason if too_low else "")
        )
    return int(opset)


def input_names(model: ACER) -> list[str]:
    """The names of the graph's inputs: the keys of ``Dict`` observations, else ``["observation"]``."""
    space = model.observation_space
    return list(space.spaces) if isinstance(space, spaces.Dict) else [OBSERVATION_NAME]


def output_name(model: ACER) -> str:
    """The name of the graph's output: :data:`OUTPUT_NAME`, ``"action"``, or ``"action_"`` (and so on) when
    an input, a key of ``Dict`` observations, is named so (ONNX names each value once)."""
    name, taken = OUTPUT_NAME, set(input_names(model))
    while name in taken:
        name += "_"
    return name


def export_onnx(model: ACER, path: str | os.PathLike[str], opset: int | None = None) -> pathlib.Path:
    """Write ``model``'s policy to ``path`` as an ONNX graph whose output is ``predict(obs,
    deterministic=True)`` (see the module's description for its inputs and output).

    The graph is checked with ``onnx.checker`` before it is written; the file is written atomically (a
    file at ``path`` is replaced, missing folders are made, as ``model.save`` does). The policy's training
    mode is left as it was.

    Args:
        model: a model with a feed-forward policy (``MlpPolicy``, ``CnnPolicy``, ``MultiInputPolicy``).
        path: the file to write, e.g. ``"model.onnx"``.
        opset: the ONNX opset (default :data:`DEFAULT_OPSET`, the lowest accepted).

    Returns:
        ``path`` as a ``pathlib.Path``.

    Raises:
        TypeError: if ``model`` is not an ``ACER`` model.
        ValueError: for a recurrent policy, or an opset out of range; nothing is written.
        ImportError: without ``onnx`` and ``onnxscript`` (``pip install "sb3-acer[export]"``).
    """
    if not isinstance(model, ACER):
        raise TypeError(f"export_onnx needs an ACER model, got {type(model).__name__}")
    policy = model.policy
    if isinstance(policy, RecurrentACERPolicy):
        raise ValueError(
            f"{type(policy).__name__} is recurrent: its LSTM state lives outside the network, and ONNX "
            "export supports only the feed-forward policies (MlpPolicy, CnnPolicy, MultiInputPolicy)"
        )
    opset = check_opset(opset)
    proto = _onnx_bytes(policy, input_names(model), output_name(model), opset)
    path = pathlib.Path(path)
    write_atomically(path, lambda file: file.write(proto))
    return path


def _newest_opset() -> int:
    onnx = _import_onnx()
    return int(onnx.defs.onnx_opset_version())


def _import_onnx() -> Any:
    """``onnx``, once ``onnxscript`` (which torch's exporter needs) is known to be there."""
    try:
        import onnx
        import onnxscript  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f"ONNX export needs onnx and onnxscript ({error.name} is missing): pip install 'sb3-acer[export]'"
        ) from None
    return onnx


def _example_observations(space: spaces.Space, device: th.device) -> th.Tensor:
    """A batch of zeros of ``space``'s shape and dtype, to trace the policy with."""
    shape = (TRACE_BATCH, *(space.shape or ()))
    return th.as_tensor(np.zeros(shape, dtype=space.dtype), device=device)


def _onnx_bytes(policy: BasePolicy, names: list[str], output: str, opset: int) -> bytes:
    """The checked ONNX graph of ``policy``'s deterministic actions, serialised."""
    onnx = _import_onnx()
    space = policy.observation_space
    keys = tuple(space.spaces) if isinstance(space, spaces.Dict) else ()
    subspaces = list(space.spaces.values()) if isinstance(space, spaces.Dict) else [space]
    examples = tuple(_example_observations(subspace, policy.device) for subspace in subspaces)
    batch = th.export.Dim("batch")
    was_training = policy.training
    try:
        with _quiet_exporter():
            program = th.onnx.export(
                DeterministicActions(policy, keys).eval(),
                examples,
                dynamo=True,
                opset_version=opset,
                input_names=names,
                output_names=[output],
                dynamic_shapes=(tuple({0: batch} for _ in examples),),  # forward's *observations
                verbose=False,
            )
    finally:
        policy.train(was_training)
    assert program is not None  # no file given: the exporter returns the program
    proto = program.model_proto
    onnx.checker.check_model(proto, full_check=True)
    buffer = io.BytesIO()
    onnx.save_model(proto, buffer)
    return buffer.getvalue()


@contextmanager
def _quiet_exporter() -> Iterator[None]:
    """torch's exporter without the notes a user cannot act on: the torchvision operators it skips (a
    logged warning), a deprecation inside ``torch.export`` (torch 2.13), and the batch dimension of ``Dict``
    observations named once for all inputs."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", r"`isinstance\(treespec, LeafSpec\)`", FutureWarning)
            warnings.filterwarnings("ignore", r"# The axis name: batch will not be used", UserWarning)
            yield
    finally:
        logger.setLevel(level)
