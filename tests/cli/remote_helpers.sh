# shellcheck shell=bash
# Shared by tests/cli/test_remote.sh and bench/remote.sh (sourced, not run):
# nginx and the misbehaving test server on 127.0.0.1, stopped by stop_servers
# (call it from an EXIT trap).
#   start_nginx WWW_DIR LOG_DIR   -> $nginx_port (serves WWW_DIR)
#   NGINX_TLS=1 start_nginx ...   -> the same over TLS with HTTP/2 (h2 by ALPN,
#                                    HTTP/1.1 too); CA: LOG_DIR/ca.pem (a self-signed
#                                    certificate for 127.0.0.1, made by openssl req)
# The access log (LOG_DIR/access.log) is "CONNECTION PROTOCOL REQUEST STATUS BYTES".
#   start_bad MODE ROOT_DIR LOG [AFTER [SERVER ARGS...]] -> $bad_port
#                                    (SERVER ARGS: --redirect-to URL, --log-headers,
#                                    --tls CERT KEY; see tests/tools/bad_http_server.py)
server_pids=()
# The system python when there is one: a pyenv shim costs seconds per start under load.
py=$(command -v /usr/bin/python3 || command -v python3)

free_port() {
  "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start_nginx() {
  local www=$1 dir=$2 listen_opts="" tls_conf=""
  mkdir -p "$dir/tmp"
  if [ "${NGINX_TLS:-0}" = 1 ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
      -addext subjectAltName=IP:127.0.0.1 -keyout "$dir/key.pem" -out "$dir/ca.pem" 2>"$dir/openssl.err" ||
      { echo "openssl req failed: $(cat "$dir/openssl.err")"; return 1; }
    listen_opts=" ssl http2"
    [ "${NGINX_H2:-1}" = 1 ] || listen_opts=" ssl" # NGINX_H2=0: TLS with HTTP/1.1 only
    tls_conf="ssl_certificate $dir/ca.pem; ssl_certificate_key $dir/key.pem;"
  fi
  for _ in 1 2 3 4 5; do
    nginx_port=$(free_port)
    cat >"$dir/nginx.conf" <<CONF
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 1024; }
http {
  log_format hpak '\$connection \$server_protocol "\$request" \$status \$body_bytes_sent';
  access_log $dir/access.log hpak;
  client_body_temp_path $dir/tmp;
  default_type application/octet-stream;
  sendfile on;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$nginx_port$listen_opts;
    $tls_conf
    root $www;
    location / { }
  }
}
CONF
    nginx -c "$dir/nginx.conf" -p "$dir" -g 'daemon off;' 2>>"$dir/error.log" &
    server_pids+=($!)
    for _ in $(seq 1 100); do
      if [ -n "$tls_conf" ]; then
        curl -s -o /dev/null --cacert "$dir/ca.pem" "https://127.0.0.1:$nginx_port/" 2>/dev/null && return 0
      elif curl -s -o /dev/null "http://127.0.0.1:$nginx_port/" 2>/dev/null; then return 0; fi
      kill -0 "${server_pids[-1]}" 2>/dev/null || break
      sleep 0.05
    done
    kill "${server_pids[-1]}" 2>/dev/null
  done
  echo "unable to start nginx: $(tail -3 "$dir/error.log")"
  return 1
}

start_bad() {
  local mode=$1 root=$2 log=$3 after=${4:-0} pf
  shift $(($# < 4 ? $# : 4))
  pf=$(mktemp -u "${TMPDIR:-/tmp}/hpak-bad-port-XXXXXX")
  # shellcheck disable=SC2154 # $src_root is set by the sourcing script (cli_lib.sh, bench/remote.sh)
  "$py" "$src_root/tests/tools/bad_http_server.py" --root "$root" --mode "$mode" --after "$after" --port-file "$pf" --log "$log" "$@" 2>>"$log.stderr" &
  server_pids+=($!)
  for _ in $(seq 1 200); do
    [ -s "$pf" ] && break
    sleep 0.05
  done
  # shellcheck disable=SC2034 # the result, read by the caller
  bad_port=$(cat "$pf" 2>/dev/null) || { echo "unable to start the test server"; return 1; }
  rm -f "$pf"
}

stop_servers() {
  local p
  for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${server_pids[@]}"; do wait "$p" 2>/dev/null || true; done # killed: 143 (set -e would end the trap here)
  server_pids=()
}
