#!/bin/bash
# Prints the path of the next request that has no answer yet (waits up to 9 minutes for one), or "FINISHED" when the run has ended.
R=/work/main/results/expert/locoeval_verified_v2/exchange/reconmem/live_reconmem/exchange
for i in $(seq 1 540); do
  for f in $(ls -tr $R/requests/*.md 2>/dev/null); do
    id=$(basename $f .md)
    if [ ! -e $R/answers/$id.md ] && [ ! -e $R/imported/$id.json ]; then echo "$f"; echo "write your answer to: $R/answers/$id.md"; exit 0; fi
  done
  if grep -q '^rc=' /tmp/live/run.log; then echo FINISHED; exit 0; fi
  sleep 1
done
echo "NOTHING YET (run still going); run me again"
