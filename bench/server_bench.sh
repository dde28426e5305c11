#!/usr/bin/env bash
# Server benchmark, every figure beside an anchor measured in the same run
# on this machine, over loopback only:
#
#   1. small PUTs over keep-alive, 50 connections (wrk): Hearth with
#      --fsync off beside nginx answering a fixed body (one worker, as
#      Hearth serves from one loop thread);
#   2. the same with --fsync always beside Redis with appendfsync always
#      (redis-benchmark SET, 50 clients);
#   3. one write fanned out to 10,000 server-sent event streams.
#
# Workloads 1 and 2 alternate slices of the anchor and of Hearth (5 of
# each: 2 s of wrk, or 100,000 SETs), so that the shared machine's other
# load falls on both alike; a figure is the requests over the time of all
# its slices, its p50 the slices' mean, its p99 their worst.
#
# Run as root to install nginx-light, redis-server and wrk when missing.
# SLICES, SLICE (seconds) and REDIS_SLICE (SETs) change the slices.
# HEARTH_SERVE=a command that takes PORT DATA_DIR FSYNC (default
# build/hearth-serve, from `make bench-server`).
set -euo pipefail
cd "$(dirname "$0")/.."

SLICES=${SLICES:-5}
SLICE=${SLICE:-2}
REDIS_SLICE=${REDIS_SLICE:-100000}
SERVE=${HEARTH_SERVE:-build/hearth-serve}
STREAMS=${STREAMS:-10000}

for tool in nginx redis-server redis-benchmark wrk; do
  if ! command -v "$tool" >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light \
        redis-server wrk >/dev/null
      break
    fi
    echo "missing $tool: apt-get install nginx-light redis-server wrk" >&2
    exit 1
  fi
done

. bench/bench_lib.sh

cat > "$work/put.lua" <<'EOF'
wrk.method = "PUT"
wrk.body   = '{"n":1,"s":"hello"}'
wrk.headers["Content-Type"] = "application/json"
EOF

# One slice of wrk against a URL: "requests seconds p50 p99" (ms).
wrk_slice() {
  wrk -t2 -c50 -d"${SLICE}s" --latency -s "$work/put.lua" "$1" > "$work/wrk.out"
  awk '
    function ms(v) { if (v ~ /us$/) return v/1000; if (v ~ /ms$/) return v+0; if (v ~ /s$/) return v*1000; return v }
    / requests in / { n = $1; t = $4 + 0 }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    END { printf "%d %.3f %.3f %.3f\n", n, t, p50, p99 }' "$work/wrk.out"
}

# One slice of redis-benchmark SET on a port: "requests seconds p50 -".
redis_slice() {
  redis-benchmark -p "$1" -c 50 -n "$REDIS_SLICE" -t set -d 19 -q > "$work/redis.out" 2>&1 || true
  tr '\r' '\n' < "$work/redis.out" | grep 'requests per second' | tail -1 |
    awk -v n="$REDIS_SLICE" '{
      p50 = "-"
      for (i = 1; i <= NF; i++) if ($i ~ /^p50=/) { p50 = $i; sub(/p50=/, "", p50) }
      if ($2 > 0) printf "%d %.3f %s -\n", n, n / $2, p50 }'
}

# The slices in a file, summed: "req/s p50 p99" (all requests over all
# seconds, the mean p50, the worst p99).
sum_slices() {
  awk '{ n += $1; t += $2; p += $3; k++; if ($4 != "-" && $4 + 0 > w) w = $4 + 0 }
       END { printf "%.0f %.3f %s\n", (t > 0 ? n / t : 0), (k ? p / k : 0),
                    (w ? sprintf("%.3f", w) : "-") }' "$1"
}

# alternate ANCHOR_CMD HEARTH_CMD NAME: SLICES slices of each in turn, into
# $work/NAME.anchor and $work/NAME.hearth. One long run of each, one after
# the other, saw the machine's load change in between (ratios of the same
# binaries from 0.6x to 1.3x).
alternate() {
  : > "$work/$3.anchor"
  : > "$work/$3.hearth"
  for _ in $(seq "$SLICES"); do
    $1 >> "$work/$3.anchor"
    $2 >> "$work/$3.hearth"
  done
}

row() { printf '%-34s %12s %10s %10s\n' "$@"; }

echo "Server benchmark: $(nproc) cores, anchor and Hearth in turn, $SLICES slices each, 50 connections"
row "workload" "req/s" "p50 ms" "p99 ms"

# 1. fsync off beside nginx
nginx_port=$(free_port)
mkdir -p "$work/nginx/logs"
cat > "$work/nginx.conf" <<EOF
worker_processes 1;
error_log $work/nginx/error.log;
pid $work/nginx/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx;
  server {
    listen 127.0.0.1:$nginx_port;
    location / { return 200 '{"n":1,"s":"hello"}'; }
  }
}
EOF
nginx -c "$work/nginx.conf" -p "$work/nginx" -g 'daemon off;' 2>/dev/null &
pids+=($!)
wait_port "$nginx_port"
h_port=$(free_port)
start_hearth "$h_port" off
alternate "wrk_slice http://127.0.0.1:$nginx_port/bench/k.json" \
          "wrk_slice http://127.0.0.1:$h_port/bench/k.json" off
read -r ng_rps ng_p50 ng_p99 < <(sum_slices "$work/off.anchor")
read -r h_rps h_p50 h_p99 < <(sum_slices "$work/off.hearth")
row "nginx, fixed body (anchor)" "$ng_rps" "$ng_p50" "$ng_p99"
row "hearth PUT, --fsync off" "$h_rps" "$h_p50" "$h_p99"

# 2. fsync always beside Redis appendfsync always
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work" \
  --appendonly yes --appendfsync always --save '' >/dev/null 2>&1 &
pids+=($!)
wait_port "$redis_port"
h2_port=$(free_port)
start_hearth "$h2_port" always
alternate "redis_slice $redis_port" \
          "wrk_slice http://127.0.0.1:$h2_port/bench/k.json" always
read -r r_rps r_p50 _ < <(sum_slices "$work/always.anchor")
read -r ha_rps ha_p50 ha_p99 < <(sum_slices "$work/always.hearth")
row "redis SET, appendfsync always (anchor)" "$r_rps" "$r_p50" "-"
row "hearth PUT, --fsync always" "$ha_rps" "$ha_p50" "$ha_p99"

# 3. fan-out
fan=$(build/sse-fanout "$h_port" "$STREAMS" 5 || true)

echo
awk -v a="$h_rps" -v b="$ng_rps" 'BEGIN { printf "hearth (fsync off) / nginx:    %.2fx  (goal >= 0.9)\n", a / b }'
awk -v a="$ha_rps" -v b="$r_rps" 'BEGIN { if (b > 0) printf "hearth (fsync always) / redis: %.2fx  (goal >= 1.0)\n", a / b }'
echo "$fan  (goal: all within 100 ms)"
