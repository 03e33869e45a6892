#!/usr/bin/env bash
# N `weft serve` replicas on loopback ports behind nginx (Debian's, run as a
# user-space process with its own prefix, config and logs in a state
# folder): least_conn, retries on connection errors before a response
# header only, streaming unbuffered, HTTP/1.1 keep-alive to the replicas.
# docs/deploy.md explains each proxy setting and how it maps onto the
# Kubernetes deployment.
#
#   scripts/replicas.sh N                 start N replicas and the proxy,
#                                         serve until Ctrl-C, then stop all
#   scripts/replicas.sh start N DIR       the same in the background; state
#                                         (ports, pids, logs) in DIR
#   scripts/replicas.sh restart DIR I     one rolling-restart step for
#                                         replica I (0-based): out of the
#                                         proxy's rotation, SIGTERM, wait for
#                                         exit, start, wait ready, back in
#   scripts/replicas.sh kill DIR I        SIGKILL replica I (no warning)
#   scripts/replicas.sh revive DIR I      start replica I again, wait ready
#   scripts/replicas.sh stop DIR          SIGTERM every replica, stop nginx
#
# Env: WEFT (binary, default build/release/weft), MODEL (default: the
# default model), PROXY_PORT (default: a free port), SERVE_ARGS (extra
# `weft serve` flags), THREADS (per replica; default nproc/N, at least 1),
# DRAIN_TIMEOUT (seconds, default 30), DEREGISTER (1: take a replica out of
# the proxy before SIGTERM, as the Kubernetes endpoints do before the
# preStop hook ends; 0: plain SIGTERM).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WEFT="${WEFT:-$ROOT/build/release/weft}"
MODEL="${MODEL:-$ROOT/models/smollm2-135m-instruct-q4_1.gguf}"
SERVE_ARGS="${SERVE_ARGS:-}"
DRAIN_TIMEOUT="${DRAIN_TIMEOUT:-30}"
DEREGISTER="${DEREGISTER:-1}"
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"

die() { echo "replicas: $*" >&2; exit 1; }

# Free loopback TCP ports, one per line.
free_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))
EOF
}

http_status() {  # URL -> HTTP status, 000 when nothing answers
  curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" || true
}

port_of() { sed -n "$(($2 + 1))p" "$1/ports"; }
pid_of() { cat "$1/replica-$2.pid" 2>/dev/null || true; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

write_nginx_conf() {
  local dir="$1" i=0 port down
  {
    cat <<EOF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log warn;
events { worker_connections 4096; }
http {
  log_format upstreams '\$msec \$request_time \$status \$upstream_addr '
                       '"\$upstream_status" \$http_x_request_id';
  access_log $dir/nginx-access.log upstreams;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  upstream weft {
    least_conn;
EOF
    while read -r port; do
      down=""
      [ -e "$dir/replica-$i.down" ] && down=" down"
      # One failed connect takes a replica out for fail_timeout; nginx then
      # tries it again (a refused connect is retried on another replica).
      echo "    server 127.0.0.1:$port max_fails=1 fail_timeout=1s$down;"
      i=$((i + 1))
    done < "$dir/ports"
    cat <<EOF
    keepalive 64;
    keepalive_timeout 60s;
  }
  server {
    listen 127.0.0.1:$(cat "$dir/proxy_port");
    client_max_body_size 64m;
    # Bodies stay in memory: nginx's workers (nobody, when started by root)
    # need not reach the state folder.
    client_body_buffer_size 64m;
    location / {
      proxy_pass http://weft;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
      proxy_connect_timeout 2s;
      # Another replica only when no response header came back: a refused
      # or reset connection, a request sent into a kept-alive connection
      # whose replica just died. POST needs non_idempotent for that; Weft
      # sends a stream's headers as soon as the engine accepted it, so an
      # accepted stream is never re-sent (a non-streamed request has its
      # headers only at the end: one running on a replica that dies is run
      # again elsewhere). HTTP statuses (429, 503) go to the client.
      proxy_next_upstream error timeout non_idempotent;
      proxy_next_upstream_tries 0;
    }
  }
}
EOF
  } > "$dir/nginx.conf"
}

nginx_workers() {  # the master's worker pids
  local master
  master="$(cat "$1/nginx.pid" 2>/dev/null)" || return 0
  pgrep -P "$master" 2>/dev/null || true
}

# Reloads nginx and returns once every worker of the old configuration has
# stopped taking requests (it finishes the ones it holds, then exits).
reload_nginx() {
  local dir="$1" old pid i
  old="$(nginx_workers "$dir")"
  write_nginx_conf "$dir"
  "$NGINX" -p "$dir" -c "$dir/nginx.conf" -s reload 2>>"$dir/nginx-error.log"
  for i in $(seq 200); do
    local busy=0
    for pid in $old; do
      if alive "$pid" && ! tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null |
          grep -q "shutting down"; then
        busy=1
      fi
    done
    [ "$busy" = 0 ] && [ -n "$(nginx_workers "$dir")" ] && return 0
    sleep 0.05
  done
  die "nginx reload did not finish"
}

start_replica() {
  local dir="$1" i="$2" threads
  threads="$(cat "$dir/threads")"
  # shellcheck disable=SC2086
  setsid "$WEFT" serve -m "$MODEL" --host 127.0.0.1 --port "$(port_of "$dir" "$i")" \
    --threads "$threads" --drain-timeout "$DRAIN_TIMEOUT" $SERVE_ARGS \
    >>"$dir/replica-$i.log" 2>&1 < /dev/null &
  echo $! > "$dir/replica-$i.pid"
}

wait_ready() {
  local dir="$1" i="$2" n
  for n in $(seq 600); do
    [ "$(http_status "http://127.0.0.1:$(port_of "$dir" "$i")/health/ready")" = 200 ] && return 0
    alive "$(pid_of "$dir" "$i")" || die "replica $i exited; see $dir/replica-$i.log"
    sleep 0.1
  done
  die "replica $i not ready after 60 s"
}

wait_exit() {
  local pid="$1" n
  for n in $(seq $(( (DRAIN_TIMEOUT + 15) * 20 ))); do
    alive "$pid" || return 0
    sleep 0.05
  done
  die "pid $pid still running"
}

cmd_start() {
  local n="$1" dir="$2" i
  [ "$n" -ge 1 ] 2>/dev/null || die "N must be a positive number"
  [ -x "$WEFT" ] || die "no weft binary at $WEFT (make build)"
  [ -x "$NGINX" ] || die "no nginx (scripts/deps.sh installs it)"
  mkdir -p "$dir/tmp"
  if [ "$(id -u)" = 0 ]; then  # nginx's workers run as nobody
    chmod 0755 "$dir"
    chmod 1777 "$dir/tmp"
  fi
  free_ports "$n" > "$dir/ports"
  echo "${PROXY_PORT:-$(free_ports 1)}" > "$dir/proxy_port"
  echo "${THREADS:-$(( $(nproc) / n > 0 ? $(nproc) / n : 1 ))}" > "$dir/threads"
  for ((i = 0; i < n; i++)); do start_replica "$dir" "$i"; done
  for ((i = 0; i < n; i++)); do wait_ready "$dir" "$i"; done
  write_nginx_conf "$dir"
  setsid "$NGINX" -p "$dir" -c "$dir/nginx.conf" >>"$dir/nginx-error.log" 2>&1 < /dev/null &
  local url
  url="http://127.0.0.1:$(cat "$dir/proxy_port")"
  for i in $(seq 100); do
    [ "$(http_status "$url/health")" = 200 ] && break
    sleep 0.05
  done
  [ "$(http_status "$url/health")" = 200 ] || die "nginx did not start; see $dir/nginx-error.log"
  echo "$url"
}

cmd_restart() {
  local dir="$1" i="$2" pid
  if [ "$DEREGISTER" = 1 ]; then
    touch "$dir/replica-$i.down"
    reload_nginx "$dir"
  fi
  pid="$(pid_of "$dir" "$i")"
  alive "$pid" && kill -TERM "$pid"
  wait_exit "$pid"
  start_replica "$dir" "$i"
  wait_ready "$dir" "$i"
  if [ -e "$dir/replica-$i.down" ]; then
    rm -f "$dir/replica-$i.down"
    reload_nginx "$dir"
  fi
}

cmd_stop() {
  local dir="$1" f pid
  for f in "$dir"/replica-*.pid; do
    [ -e "$f" ] || continue
    pid="$(cat "$f")"
    alive "$pid" && kill -TERM "$pid"
  done
  for f in "$dir"/replica-*.pid; do
    [ -e "$f" ] && wait_exit "$(cat "$f")"
  done
  if [ -e "$dir/nginx.pid" ]; then
    "$NGINX" -p "$dir" -c "$dir/nginx.conf" -s quit 2>/dev/null || true
  fi
}

case "${1:-}" in
  start) cmd_start "$2" "$3" ;;
  restart) cmd_restart "$2" "$3" ;;
  kill) kill -KILL "$(pid_of "$2" "$3")" ;;
  revive) start_replica "$2" "$3"; wait_ready "$2" "$3" ;;
  stop) cmd_stop "$2" ;;
  ''|-h|--help) sed -n '2,26p' "$0"; exit 0 ;;
  *)
    n="$1"
    dir="$(mktemp -d /tmp/weft-replicas.XXXXXX)"
    trap 'cmd_stop "$dir"' EXIT
    url="$(cmd_start "$n" "$dir")"
    echo "replicas: $n x weft serve behind nginx at $url (state in $dir); Ctrl-C stops"
    trap 'exit 0' INT TERM
    while sleep 3600; do :; done
    ;;
esac
