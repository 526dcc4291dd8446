#!/usr/bin/env bash
# Atari on a GPU machine, in one call: the throughput benchmark, then a Pong learning run stopped after a
# time budget.
#
#   bash benchmarks/atari_gpu.sh OUT_DIR [TRAIN_SECONDS] [DEVICE]
#
# 1. benchmarks/atari_throughput.py on Pong (emulator ceiling, each sampler, ACER training with the time
#    split, SB3's A2C and PPO beside it; DQN's single env is left out for time), written to
#    OUT_DIR/atari_throughput_gpu.json;
# 2. `python -m sb3_acer.run_atari` on PongNoFrameskip-v4 with SB2's defaults (16 envs, constant learning
#    rate 7e-4, replay ratio 4, 10M steps asked for), sent SIGINT after TRAIN_SECONDS (default 430): run_atari
#    then saves the model trained so far. With the constant learning rate, a run stopped early is the first
#    part of the full run. Logs (Monitor CSV of every training game, evaluations, TensorBoard) go to
#    OUT_DIR/pong; the training log to OUT_DIR/pong.log.
#
# Plot the training games' scores afterwards with `sb3-acer plot OUT_DIR/pong/monitor --out pong.png`.
#
# A copy of the tree without its git history (the usual way onto a GPU machine) records the commit it came
# from only when told: set SB3_ACER_COMMIT to `git rev-parse HEAD` of the checkout you copied, or the
# benchmark stops before it runs.
set -u
out=${1:?usage: atari_gpu.sh OUT_DIR [TRAIN_SECONDS] [DEVICE]}
seconds=${2:-430}
device=${3:-cuda}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python=${PYTHON:-python3}

"$python" - <<'EOF'
import platform, torch
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.cuda.is_available())
if torch.cuda.is_available():
    print("gpu", torch.cuda.get_device_name(0))
EOF
nproc

timeout 150 "$python" -m benchmarks.atari_throughput --env PongNoFrameskip-v4 --sampler-steps 500 \
    --train-steps 6400 --samplers wrappers ale-vector --peers A2C PPO --device "$device" \
    --out "$out/atari_throughput_gpu.json" || echo "atari_throughput.py failed or timed out: $?"

timeout -s INT -k 60 "$seconds" "$python" -m sb3_acer.run_atari --env PongNoFrameskip-v4 --device "$device" \
    --logdir "$out/pong" --checkpoint-freq 0 --no-progress-bar 2>&1 | tee "$out/pong.log"
echo "run_atari exit status: ${PIPESTATUS[0]}"
