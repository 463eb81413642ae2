#!/bin/bash
# Several arms of `bench/accelerator.py run` in one device call (issue 27), so one machine start serves them all.
#
#   bash bench/accelerator_sweep.sh NAME LIMIT_S "RUN ARGS" [NAME LIMIT_S "RUN ARGS" ...]
#
# Each arm runs under `timeout LIMIT_S` and returns, under $OUT/NAME/, its model parts and meta.tar (oof.json,
# run.log, manifest.json); $OUT/sweep.log holds everything printed. The device returns at most 8 files, 64 MiB
# together, so two arms fit in one call (3 files and about 23 MiB each). Here, `accelerator.py unpack --from`
# reads each arm's folder as it came back. DEVICE and EXTRA (for example DEVICE=cpu EXTRA="--smoke 2") try the
# script on a CPU.
set -u
export PYTHONUNBUFFERED=1
: "${OUT:?OUT: the folder whose files come back}"
log=$OUT/sweep.log
{ date; nvidia-smi --query-gpu=name,memory.total --format=csv 2>/dev/null; nproc
  python3 -c "import torch,transformers,onnx,onnxruntime,numpy;print(torch.__version__,transformers.__version__,onnx.__version__,onnxruntime.__version__,numpy.__version__,torch.cuda.is_available())"
} 2>&1 | tee -a "$log"
while [ $# -ge 3 ]; do
  name=$1 limit=$2 args=$3
  shift 3
  d=$(mktemp -d "${TMPDIR:-/tmp}/arm-$name.XXXXXX")
  echo "== arm $name: $args (limit $limit s)" | tee -a "$log"
  # shellcheck disable=SC2086  # the arm's arguments are words
  timeout -k 10 "$limit" python3 bench/accelerator.py run --pack .accel/pack --out "$d" --device "${DEVICE:-cuda}" \
    ${EXTRA:-} $args 2>&1 | tee -a "$log"
  echo "== arm $name exit ${PIPESTATUS[0]}" | tee -a "$log"
  mkdir -p "$OUT/$name"
  mv "$d"/model.onnx.part* "$OUT/$name/" 2>/dev/null
  tar -C "$d" -cf "$OUT/$name/meta.tar" --exclude 'model.onnx.part*' . 2>&1 | tee -a "$log"
  ls -la "$OUT/$name" | tee -a "$log"
done
date | tee -a "$log"
