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
# Run as root to install nginx-light, redis-server and wrk when missing.
# DURATION=seconds per load run (default 10). HEARTH_SERVE=a command that
# takes PORT DATA_DIR FSYNC (default build/hearth-serve, from `make bench`).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
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

# wrk's "Requests/sec" and the 50% / 99% latency lines, in ms.
run_wrk() {
  wrk -t2 -c50 -d"${DURATION}s" --latency -s "$work/put.lua" "$1" > "$work/wrk.out"
  awk '
    function ms(v) { if (v ~ /us$/) return v/1000; if (v ~ /ms$/) return v+0; if (v ~ /s$/) return v*1000; return v }
    /Requests\/sec/ { rps = $2 }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    END { printf "%.0f %.3f %.3f\n", rps, p50, p99 }' "$work/wrk.out"
}

row() { printf '%-34s %12s %10s %10s\n' "$@"; }

echo "Server benchmark: $(nproc) cores, ${DURATION}s per run, 50 connections"
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
read -r ng_rps ng_p50 ng_p99 < <(run_wrk "http://127.0.0.1:$nginx_port/bench/k.json")
row "nginx, fixed body (anchor)" "$ng_rps" "$ng_p50" "$ng_p99"

h_port=$(free_port)
start_hearth "$h_port" off
read -r h_rps h_p50 h_p99 < <(run_wrk "http://127.0.0.1:$h_port/bench/k.json")
row "hearth PUT, --fsync off" "$h_rps" "$h_p50" "$h_p99"

# 2. fsync always beside Redis appendfsync always
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work" \
  --appendonly yes --appendfsync always --save '' >/dev/null 2>&1 &
pids+=($!)
wait_port "$redis_port"
redis-benchmark -p "$redis_port" -c 50 -n 100000 -t set -d 19 -q > "$work/redis.out" 2>&1 || true
summary=$(tr '\r' '\n' < "$work/redis.out" | grep 'requests per second' | tail -1)
r_rps=$(echo "$summary" | awk '{printf "%.0f", $2}')
r_p50=$(echo "$summary" | grep -o 'p50=[0-9.]*' | cut -d= -f2)
row "redis SET, appendfsync always (anchor)" "$r_rps" "${r_p50:-?}" "-"

h2_port=$(free_port)
start_hearth "$h2_port" always
read -r ha_rps ha_p50 ha_p99 < <(run_wrk "http://127.0.0.1:$h2_port/bench/k.json")
row "hearth PUT, --fsync always" "$ha_rps" "$ha_p50" "$ha_p99"

# 3. fan-out
fan=$(build/sse-fanout "$h_port" "$STREAMS" 5 || true)

echo
awk -v a="$h_rps" -v b="$ng_rps" 'BEGIN { printf "hearth (fsync off) / nginx:    %.2fx  (goal >= 0.9)\n", a / b }'
awk -v a="$ha_rps" -v b="$r_rps" 'BEGIN { if (b > 0) printf "hearth (fsync always) / redis: %.2fx  (goal >= 1.0)\n", a / b }'
echo "$fan  (goal: all within 100 ms)"
