"""``python -m sb3_acer.zoo``: ACER in rl-baselines3-zoo, kept at its documented path; the command is
:mod:`sb3_acer.cli.zoo`, whose names this module hands on."""

from sb3_acer.cli.zoo import (
    ALGO,
    HUB_TAGS,
    MAX_METRICS_BYTES,
    MAX_YAML_BYTES,
    NET_ARCHS,
    SCRIPTS,
    TRUST_FLAG,
    TRUSTED_PACKAGES,
    LogFolderError,
    bundled_ffmpeg,
    check_log_folder,
    convert_acer_params,
    generate_metadata,
    hub_download,
    main,
    model_card,
    read_log_yaml,
    register,
    sample_acer_params,
)

__all__ = [
    "ALGO",
    "HUB_TAGS",
    "MAX_METRICS_BYTES",
    "MAX_YAML_BYTES",
    "NET_ARCHS",
    "SCRIPTS",
    "TRUSTED_PACKAGES",
    "TRUST_FLAG",
    "LogFolderError",
    "bundled_ffmpeg",
    "check_log_folder",
    "convert_acer_params",
    "generate_metadata",
    "hub_download",
    "main",
    "model_card",
    "read_log_yaml",
    "register",
    "sample_acer_params",
]

if __name__ == "__main__":
    main()
