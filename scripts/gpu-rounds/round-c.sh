# GPU round C: the loader benchmark, then imported mobilenet_v2 / efficientnet_b0 against PyTorch eager/graph/compile.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
start=$SECONDS
timeout 300 bash bench/loader-bench.sh > $OUT/loader-bench.txt 2>&1; echo "loader rc=$? in $((SECONDS - start)) s"
tar czf $OUT/loader.tgz -C $OUT loader && rm -r $OUT/loader
grep -v '^+' $OUT/loader-bench.txt | tail -45
for name in mobilenet_v2 efficientnet_b0; do
  timeout 90 bin/rn-run models/torch_$name.bench256.rnx --benchmark --steps 30 --warmup 10 --executor cuda-graph 2>>$OUT/bench.err | tail -1 | tee -a $OUT/bench-rn.jsonl
done
cd bench && timeout $((560 - SECONDS)) $python torch_step.py --models mobilenet_v2:256,efficientnet_b0:256 --modes eager,graph,compile --steps 30 --warmup 10 > $OUT/bench-torch.log 2>&1; echo "torch bench rc=$? at $SECONDS s"; cd ..
grep -E '^\{' $OUT/bench-torch.log | cut -c1-300; tail -3 $OUT/bench-torch.log
