# Shared by tests/cli/test_remote.sh and bench/remote.sh (sourced, not run):
# nginx and the misbehaving test server on 127.0.0.1, stopped by stop_servers
# (call it from an EXIT trap).
#   start_nginx WWW_DIR LOG_DIR   -> $nginx_port (serves WWW_DIR)
#   start_bad MODE ROOT_DIR LOG [AFTER] -> $bad_port
server_pids=()
# The system python when there is one: a pyenv shim costs seconds per start under load.
py=$(command -v /usr/bin/python3 || command -v python3)

free_port() {
  "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start_nginx() {
  local www=$1 dir=$2 try
  mkdir -p "$dir/tmp"
  for try in 1 2 3 4 5; do
    nginx_port=$(free_port)
    cat >"$dir/nginx.conf" <<CONF
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 1024; }
http {
  access_log $dir/access.log;
  client_body_temp_path $dir/tmp;
  default_type application/octet-stream;
  sendfile on;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$nginx_port;
    root $www;
    location / { }
  }
}
CONF
    nginx -c "$dir/nginx.conf" -p "$dir" -g 'daemon off;' 2>>"$dir/error.log" &
    server_pids+=($!)
    local i
    for i in $(seq 1 100); do
      if curl -s -o /dev/null "http://127.0.0.1:$nginx_port/" 2>/dev/null; then return 0; fi
      kill -0 "${server_pids[-1]}" 2>/dev/null || break
      sleep 0.05
    done
    kill "${server_pids[-1]}" 2>/dev/null
  done
  echo "unable to start nginx: $(tail -3 "$dir/error.log")"
  return 1
}

start_bad() {
  local mode=$1 root=$2 log=$3 after=${4:-0} pf i
  pf=$(mktemp -u "${TMPDIR:-/tmp}/hpak-bad-port-XXXXXX")
  "$py" "$src_root/tests/tools/bad_http_server.py" --root "$root" --mode "$mode" --after "$after" --port-file "$pf" --log "$log" 2>>"$log.stderr" &
  server_pids+=($!)
  for i in $(seq 1 200); do
    [ -s "$pf" ] && break
    sleep 0.05
  done
  bad_port=$(cat "$pf" 2>/dev/null) || { echo "unable to start the test server"; return 1; }
  rm -f "$pf"
}

stop_servers() {
  local p
  for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${server_pids[@]}"; do wait "$p" 2>/dev/null || true; done # killed: 143 (set -e would end the trap here)
  server_pids=()
}
