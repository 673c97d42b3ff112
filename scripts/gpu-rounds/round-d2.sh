# GPU round D2: the loader benchmark with uint8 images and a pre-resized folder, then the timm logits check until the call's time is spent.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
mkdir -p python && tar xJf python.tar.xz -C python && export PYTHONPATH=$PWD/python RN_BUNDLE=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
start=$SECONDS
timeout 330 bash bench/loader-bench.sh > $OUT/loader-bench.txt 2>&1; echo "loader rc=$? in $((SECONDS - start)) s"
tar czf $OUT/loader.tgz -C $OUT loader && rm -r $OUT/loader
grep -v '^+' $OUT/loader-bench.txt | grep -E '^==|threads 16|images/s|^\{"model' | cut -c1-260 | tail -40
mkdir -p /tmp/timm && tar xJf timm.tar.xz -C /tmp/timm
$python -c "import timm; print('timm', timm.__version__)"
budget=$((500 - SECONDS))
timeout $((budget + 60)) $python ../scripts/timm-import.py check /tmp/timm $OUT/timm-check.jsonl --budget-s $budget > $OUT/timm-check.log 2>&1; echo "timm rc=$?"
echo "checked equal: $(grep -c '"equal": true' $OUT/timm-check.jsonl), not equal: $(grep -c '"equal": false' $OUT/timm-check.jsonl), not checked: $(grep -c '"equal": null' $OUT/timm-check.jsonl)"
grep '"equal": false' $OUT/timm-check.jsonl | cut -c1-300 | head
