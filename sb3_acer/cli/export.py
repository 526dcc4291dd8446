"""``sb3-acer export MODEL OUT``: write a saved model's policy as an ONNX graph whose output is
``predict(obs, deterministic=True)`` (:func:`sb3_acer.export.export_onnx`).

Everything is checked before OUT is written: the opset, OUT (a file that can be written, not MODEL
itself), the model file, the optional dependencies, and the policy (a recurrent one is refused). OUT is
replaced if it exists, atomically.
"""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

from sb3_acer.acer.acer import ACER
from sb3_acer.cli.errors import PROG, CLIError, UsageError, check_optional, one_line
from sb3_acer.cli.run_folder import check_can_create, model_file, sidecar
from sb3_acer.common.save_util.model_file import ModelFileError
from sb3_acer.export import DEFAULT_OPSET, check_opset, export_onnx, input_names, output_name

__all__ = ["add_parser", "cmd_export"]

EXPORT_EXAMPLES = f"""\
examples:
  {PROG} export logs/CartPole-v1_0/model.zip cartpole.onnx
  {PROG} export model.zip model.onnx --opset 20

The graph takes a batch of observations as the env gives them (one input per key of Dict observations)
and returns the actions of predict(obs, deterministic=True). A model trained with VecNormalize needs its
observations normalised with the statistics beside it (MODEL.vecnormalize.npz) before the graph."""


def add_parser(commands: Any) -> None:
    """Add the ``export`` command to ``commands`` (the subparsers of the ``sb3-acer`` parser)."""
    export = commands.add_parser(
        "export",
        help="write a saved model's policy as an ONNX graph",
        description="Write the policy of MODEL to OUT as an ONNX graph of predict(obs, deterministic=True).",
        epilog=EXPORT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument(
        "model",
        metavar="MODEL",
        help="model file written by save or train (.zip may be left out), or a run folder",
    )
    export.add_argument("out", metavar="OUT", help="ONNX file to write, replaced if it exists")
    export.add_argument(
        "--opset",
        type=int,
        default=None,
        metavar="N",
        help=f"ONNX opset, {DEFAULT_OPSET} or later (default {DEFAULT_OPSET})",
    )
    export.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    for module in ("onnx", "onnxscript"):
        check_optional(module, "ONNX export", "pip install 'sb3-acer[export]'")
    try:
        opset = check_opset(args.opset)
    except ValueError as error:
        raise UsageError(f"--opset: {one_line(error)}") from None
    model_path, out = pathlib.Path(args.model), pathlib.Path(args.out)
    model_path = model_path / "model.zip" if model_path.is_dir() else model_file(model_path)
    if not model_path.is_file():
        raise UsageError(f"no model file {str(model_path)!r}")
    check_can_create(out, "OUT", folder=False)
    if out.exists() and out.resolve() == model_path.resolve():
        raise UsageError(f"OUT {out} is MODEL itself: name another file")
    try:
        model = ACER.load(model_path, device="cpu")
    except (ModelFileError, OSError) as error:
        raise CLIError(f"cannot load {model_path}: {one_line(error)}") from None
    try:
        export_onnx(model, out, opset=opset)
    except ValueError as error:  # a recurrent policy
        raise CLIError(f"cannot export {model_path}: {one_line(error)}") from None
    inputs = ", ".join(input_names(model))
    print(f"wrote {out}: ONNX opset {opset}, inputs {inputs}, output {output_name(model)}")
    if model.trained_with_vec_normalize:
        print(
            "note: the model was trained with VecNormalize: normalise the observations with its statistics "
            f"({sidecar(model_path, '.vecnormalize.npz')}) before feeding the graph"
        )
    return 0
