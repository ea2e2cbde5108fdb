#!/usr/bin/env bash
# The cost of sharding on the host backend (issue 21): CONFIG tuned by one process and as 4 shards
# (`tune --shard I/4`, one after another), merged and finished (`tune --finish-shards 4`), REPEATS
# times, the order of the two alternating. Prints per repeat the seconds validating and timing
# candidates (the --json summaries' seconds.validate + seconds.timing) of each side and their ratio,
# the first timings and re-timings of each side, and whether the winners agree.
#
#   benchmarks/shard_overhead.sh TILETUNE CONFIG WORKDIR [REPEATS]
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 TILETUNE CONFIG WORKDIR [REPEATS]" >&2; exit 64; }
exe=$(realpath "$1") config=$(realpath "$2") work=$(realpath -m "$3") repeats=${4:-3}
tune=("$exe" tune "$config" --backend host --no-vendor --jobs 2 --json)
secs='.seconds.validate + .seconds.timing'

one() {  # the unsharded sweep into $1/full.db
  "${tune[@]}" --db "$1/full.db" > "$1/full.json" 2>"$1/full.log"
}
sharded() {  # 4 shards, merged into $1/merged.db, finished
  for i in 0 1 2 3; do "${tune[@]}" --shard "$i/4" --db "$1/shard-$i.db" > "$1/shard-$i.json" 2>"$1/shard-$i.log"; done
  "$exe" db merge "$1/merged.db" "$1"/shard-?.db > "$1/merge.log"
  "${tune[@]}" --finish-shards 4 --db "$1/merged.db" > "$1/finish.json" 2>"$1/finish.log"
}

for r in $(seq "$repeats"); do
  d=$work/$r
  rm -rf "$d" && mkdir -p "$d"
  if [ $((r % 2)) -eq 1 ]; then one "$d"; sharded "$d"; else sharded "$d"; one "$d"; fi
  parts=("$d"/shard-?.json "$d/finish.json")
  full=$(jq "$secs" "$d/full.json")
  split=$(jq -s "map($secs) | add" "${parts[@]}")
  counts() { jq -s -r 'map(.candidates) | "\(map(.measured) | add) + \(map(.remeasured) | add)"' "$@"; }
  same=no
  cmp -s <("$exe" db winners "$d/full.db" --json | jq -S '[.winners[] | {problem, kernel}]') \
         <("$exe" db winners "$d/merged.db" --json | jq -S '[.winners[] | {problem, kernel}]') && same=yes
  printf 'repeat %d (%s first): candidates %.3f s unsharded, %.3f s 4 shards + finish, ratio %.3f; timings + re-timings %s against %s; same winners: %s\n' \
    "$r" "$([ $((r % 2)) -eq 1 ] && echo unsharded || echo sharded)" "$full" "$split" "$(jq -n "$split / $full")" \
    "$(counts "${parts[@]}")" "$(counts "$d/full.json")" "$same"
done
