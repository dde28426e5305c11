#!/usr/bin/env bash
# Connections benchmark (issue 17, goal 1), loopback only, about 1 minute:
# N idle realtime sessions, each with one listen answered with its data,
# held by one Hearth server; then N idle keep-alive connections (one
# request each) held by one nginx worker. Prints each server's RSS growth
# per connection and the ratio; a final write must reach every session
# (and a final request be answered on every nginx connection).
#
# N defaults to what one server process may hold here: the open-file
# limit less the quarter Hearth keeps for its files (100,000 sessions need
# `ulimit -n` above 133,334 for the server; the clients are spread over
# processes of at most 10,000 each). N=... overrides; HEARTH_SERVE=a
# command taking PORT DATA_DIR FSYNC (default build/hearth-serve).
set -euo pipefail
cd "$(dirname "$0")/.."

SERVE=${HEARTH_SERVE:-build/hearth-serve}
limit=$(ulimit -Hn)
ulimit -n "$limit"
bound=$(( limit - (limit / 4 > 32 ? limit / 4 : 32) ))
N=${N:-$(( bound - 100 ))}
PROCS=$(( (N + 9999) / 10000 ))

. bench/bench_lib.sh

echo "Connections: $N sessions, $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "open-file limit $limit: one server process holds at most $bound connections here"

h_port=$(free_port)
start_hearth "$h_port" off
h=$(build/swarm ws "$h_port" "$N" "$PROCS" "$hearth_pid" 1) || true
echo "hearth: $h"

# nginx allocates its table of worker_connections at start: its per-
# connection cost is measured from an nginx with a small table, so that
# the table counts too.
ng_conf() { # PORT WORKER_CONNECTIONS
  cat > "$work/nginx-$2.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile $limit;
error_log $work/nginx/error.log;
pid $work/nginx/nginx-$2.pid;
events { worker_connections $2; }
http {
  access_log off;
  keepalive_timeout 600s;
  keepalive_requests 1000000;
  client_body_temp_path $work/nginx;
  server {
    listen 127.0.0.1:$1 backlog=4096;
    location / { return 200 'ok'; }
  }
}
CONF
  echo "$work/nginx-$2.conf"
}
start_nginx() { # PORT WORKER_CONNECTIONS: the worker's pid in ng_worker
  nginx -c "$(ng_conf "$1" "$2")" -p "$work/nginx" -g 'daemon off;' 2>/dev/null &
  pids+=($!)
  wait_port "$1"
  ng_worker=$(pgrep -P "${pids[-1]}" | head -1)
}
mkdir -p "$work/nginx"
small_port=$(free_port)
start_nginx "$small_port" 64
ng_base_kb=$(awk '/VmRSS/ { print $2 }' "/proc/$ng_worker/status")
ng_port=$(free_port)
start_nginx "$ng_port" $(( limit - 100 ))
n=$(build/swarm http "$ng_port" "$N" "$PROCS" "$ng_worker" 1) || true
echo "nginx:  $n rss_small_table_kb=$ng_base_kb"

hb=$(field "$h" bytes_per_conn)
nb=$(awk -v a="$(field "$n" rss1_kb)" -v b="$ng_base_kb" -v n="$N" \
  'BEGIN { printf "%.0f", (a - b) * 1024 / n }')
echo
printf 'hearth %s B per session, nginx %s B per idle keep-alive connection: %sx (goal <= 2.0x)\n' \
  "$hb" "$nb" "$(awk -v a="$hb" -v b="$nb" 'BEGIN { printf "%.2f", a / b }')"
printf 'every session got its data and the final write: %s\n' \
  "$( [ "$(field "$h" delivered | cut -d/ -f1)" = "$N" ] && echo yes || echo NO)"
if [ "$N" -lt 100000 ]; then
  echo "100,000 sessions: not measured, the open-file limit ($limit, no CAP_SYS_RESOURCE to raise it) caps one process at $bound; where the limit is higher run N=100000 make bench-connections"
  echo "(N above what the open-file limit allows is refused by the server: sessions past its bound are closed)"
fi
