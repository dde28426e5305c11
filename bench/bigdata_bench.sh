#!/usr/bin/env bash
# Big-data benchmark (issue 17, goal 6), loopback only: writes SIZE MB
# (default 1024) through the server as REST PUTs of 16 MB subtrees, reads
# it back whole as the export file, stops the server, then times a new
# server from its start to its first answer (a read of one small value,
# which opens the database: snapshot and log) and reads its RSS, beside
# jansson loading the export file (json_load_file) in the same run.
# About 2 minutes at 1 GB on 2 cores; SIZE=256 for a quick look. Needs
# about 3x SIZE of memory, and SIZE of disk twice over.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVE=${HEARTH_SERVE:-build/hearth-serve}
SIZE=${SIZE:-1024}
. bench/bench_lib.sh

echo "Big data: $SIZE MB, $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
port=$(free_port)
start_hearth "$port" off
t0=$(date +%s.%N)
# Subtrees of 16 MB: 40,000 children of about 400 bytes, each different.
python3 - "$port" "$SIZE" <<'PY'
import http.client, json, sys
port, size_mb = int(sys.argv[1]), int(sys.argv[2])
chunk = 0
sent = 0
while sent < size_mb * 1024 * 1024:
    body = json.dumps({
        "k%05d" % i: {"name": "user %d.%d" % (chunk, i), "n": chunk * 100000 + i,
                      "ok": i % 2 == 0, "text": ("%d-%d " % (chunk, i)) * 30,
                      "tags": {"a": i, "b": "x%d" % i}}
        for i in range(40000)}, separators=(",", ":")).encode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("PUT", "/big/c%04d.json" % chunk, body)
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit("PUT c%04d: %d" % (chunk, r.status))
    c.close()
    sent += len(body)
    chunk += 1
print("wrote %d MB in %d PUTs" % (sent // (1024 * 1024), chunk))
PY
t1=$(date +%s.%N)
curl -sf -o "$work/export.json" "http://127.0.0.1:$port/.json"
bytes=$(stat -c %s "$work/export.json")
echo "write $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; export file $((bytes / 1048576)) MB"
kill "$hearth_pid"
wait "$hearth_pid" 2>/dev/null || true
du -sm "$work/data-off" | awk '{ print "data directory " $1 " MB" }'

# A new server on the same data: start to first answer, then its RSS.
port2=$(free_port)
s0=$(date +%s.%N)
"$SERVE" "$port2" "$work/data-off" off > "$work/hearth2.log" 2>&1 &
pid2=$!
pids+=($pid2)
until curl -sf "http://127.0.0.1:$port2/big/c0000/k00000/n.json" >/dev/null 2>&1; do
  sleep 0.01
done
s1=$(date +%s.%N)
start_s=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", b - a }')
h_rss=$(awk '/VmRSS/ { print $2 }' "/proc/$pid2/status")
h_hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$pid2/status")
kill "$pid2"
wait "$pid2" 2>/dev/null || true

j=$(build/json-load "$work/export.json")
j_s=$(field "$j" load_s)
j_rss=$(field "$j" rss_kb)
j_hwm=$(field "$j" hwm_kb)
printf '%-44s %10s %12s %12s\n' "workload" "seconds" "RSS MB" "peak MB"
printf '%-44s %10s %12d %12d\n' "jansson json_load_file of the export (anchor)" "$j_s" $((j_rss / 1024)) $((j_hwm / 1024))
printf '%-44s %10s %12d %12d\n' "hearth serve: start to first answer" "$start_s" $((h_rss / 1024)) $((h_hwm / 1024))
awk -v a="$start_s" -v b="$j_s" -v r="$h_rss" -v q="$j_rss" 'BEGIN {
  printf "start / jansson load: %.2fx (goal <= 1.5x); RSS / jansson: %.2fx (goal <= 1.0x)\n", a / b, r / q }'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
