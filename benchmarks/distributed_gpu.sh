#!/usr/bin/env bash
# Ray actors on a GPU machine (16 cores, one H100 or H200), in one call that fits in 10 minutes:
#
#   bash benchmarks/distributed_gpu.sh OUT_DIR [TOTAL_SECONDS] [DEVICE] [THROUGHPUT_SECONDS] [ACTOR_COUNTS] [PONG_ACTORS]
#
# 1. benchmarks/distributed.py on PongNoFrameskip-v4: the learner's cost per received segment, then the
#    synchronous loop and 1, 2, 4, 8, 14 actors (ACTOR_COUNTS, default "1 2 4 8 14") with the learner on
#    DEVICE (default cuda), each trained for THROUGHPUT_SECONDS (default 20) with SB2's run_atari settings
#    (16 games per actor: N_ENVS), agent steps/s over the last two thirds of each; written to
#    OUT_DIR/distributed_pong.json (log: OUT_DIR/distributed_pong.log);
# 2. Pong from scratch with PONG_ACTORS actors (default 14): `python -m sb3_acer.run_atari --actors ...`
#    (SB2's defaults: constant learning rate 7e-4, replay ratio 4, 10M steps asked for), sent SIGINT when
#    TOTAL_SECONDS (default 540: saving, stopping Ray and the plot take
#    up to ~30 s more) have passed since the start of this script: run_atari then saves the model
#    trained so far. The actors' training games go to OUT_DIR/pong_actors/monitor/actors.monitor.csv, the
#    curve to OUT_DIR/pong_actors.png (`sb3-acer plot`), the log to OUT_DIR/pong_actors.log.
#
# On a CPU, a check of the script with a tiny budget:
#   N_ENVS=2 bash benchmarks/distributed_gpu.sh /tmp/out 150 cpu 8 "1 2" 2
#
# A copy of the tree without its git history (the usual way onto a GPU machine) records the commit it came
# from only when told: set SB3_ACER_COMMIT to `git rev-parse HEAD` of the checkout you copied, or the
# benchmark stops before it runs.
set -u
out=${1:?usage: distributed_gpu.sh OUT_DIR [TOTAL_SECONDS] [DEVICE] [THROUGHPUT_SECONDS] [ACTOR_COUNTS] [PONG_ACTORS]}
total=${2:-540}
device=${3:-cuda}
throughput_seconds=${4:-20}
actor_counts=${5:-1 2 4 8 14}
pong_actors=${6:-14}
n_envs=${N_ENVS:-16}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the actors' processes import this checkout
python=${PYTHON:-python3}
start=$SECONDS

"$python" - <<'EOF'
import platform, torch, ray
print("python", platform.python_version(), "torch", torch.__version__, "ray", ray.__version__,
      "cuda", torch.cuda.is_available())
if torch.cuda.is_available():
    print("gpu", torch.cuda.get_device_name(0))
EOF
nproc

# shellcheck disable=SC2086  # ACTOR_COUNTS is a list of numbers
timeout -k 20 $((total / 2)) "$python" -m benchmarks.distributed --envs --atari PongNoFrameskip-v4 \
    --actor-counts 0 $actor_counts --seconds "$throughput_seconds" --n-envs "$n_envs" --repeats 10 \
    --device "$device" --out "$out/distributed_pong.json" 2>&1 | tee "$out/distributed_pong.log"
echo "distributed.py exit status: ${PIPESTATUS[0]}"

left=$((total - (SECONDS - start)))
echo "Pong from scratch with $pong_actors actors for $left s"
timeout -s INT -k 40 "$left" "$python" -m sb3_acer.run_atari --env PongNoFrameskip-v4 --device "$device" \
    --actors "$pong_actors" --envs-per-actor "$n_envs" --logdir "$out/pong_actors" --checkpoint-freq 0 \
    --eval-freq 0 --torch-threads 1 --no-progress-bar 2>&1 | tee "$out/pong_actors.log"
echo "run_atari exit status: ${PIPESTATUS[0]}"
timeout 30 "$python" -m sb3_acer plot "$out/pong_actors/monitor" --out "$out/pong_actors.png" \
    || echo "plot failed: $?"
echo "total seconds: $((SECONDS - start))"
