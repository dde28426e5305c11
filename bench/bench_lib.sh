# bench_lib.sh - what the server benchmarks' scripts share (sourced): a
# work directory and the processes started, both gone at exit; a free
# loopback port; waiting for a port to listen; starting Hearth's server;
# a field of a key=value line.

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  exit 1
}

# start_hearth PORT FSYNC: $SERVE on PORT with a data directory of its own;
# its process id in hearth_pid.
start_hearth() {
  mkdir -p "$work/data-$2"
  "$SERVE" "$1" "$work/data-$2" "$2" > "$work/hearth-$2.log" 2>&1 &
  hearth_pid=$!
  pids+=($hearth_pid)
  wait_port "$1"
}

# field LINE KEY: the value of KEY=value in LINE.
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
