# GPU round F3 (issue 32's final run, third call): the peers in the same lease as F2: PyTorch eager and whole-step CUDA graph, JAX jit (bf16, the batch copied every step), on the six configurations.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
start=$SECONDS
OUT=$OUT/p RN_PEER_TIMEOUT=100 RN_TORCH_MODES=eager,graph bash bench/run-peers.sh > $OUT/run-peers.log 2>&1
echo "run-peers.sh: exit $? at $((SECONDS - start)) s"
cp $OUT/p/peers.jsonl $OUT/peers.jsonl
cd $OUT && tar czf logs.tgz *.log p 2>/dev/null && rm -rf *.log p; ls $OUT
