# shellcheck shell=bash disable=SC2034
# loadtest/bench-lib.sh -- sourced by loadtest/run-benchmarks and
# loadtest/profile-scenario so that both measure the same Release build
# against the same gateway configuration. Not a command.
#
# Needs: $root (the repository). Sets: $build, $sluiced, $load, $work (a temp
# dir removed on exit), and after start_gateway: $pid, $port, $admin_port.
# Environment: BUILD (default $root/build-bench-rel), JOBS (2), SLUICED (the
# gateway to measure; default the build's own, another one to measure a
# gateway built elsewhere with this tree's sluice-load), LOG_REQUESTS (true;
# false turns the per-request log line off, to measure what it costs).

build=${BUILD:-$root/build-bench-rel}
jobs=${JOBS:-2}
sluiced=${SLUICED:-$build/sluiced}
load=$build/sluice-load

bench_build() {
  # Same flags as loadtest/storage-bench, so all three share one Release build.
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
      "-DCMAKE_C_FLAGS=-Wno-error=maybe-uninitialized -Wno-error=format-truncation" >/dev/null
  cmake --build "$build" -j"$jobs" --target sluiced sluice-load >/dev/null
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

work=$(mktemp -d /tmp/sluice-bench.XXXXXX)
pid=
stop_gateway() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi
}
trap 'stop_gateway; rm -rf "$work"' EXIT

# The benchmark tenants: "default" unlimited (the scenarios), and for the
# noisy neighbour a flooder and six quiet tenants at 200 req/s, burst 400.
noisy_tenants=AKIDFLOOD:flood-secret
for i in 1 2 3 4 5 6; do noisy_tenants+=",AKIDQUIET$i:quiet$i-secret"; done
# The unthrottled flooder (issue 12): "hog", whose limits (the defaults
# below) never throttle it, and 23 quiet tenants u1..u23.
unthrottled_quiet=23
unthrottled_tenants=AKIDHOG:hog-secret
for i in $(seq 1 $unthrottled_quiet); do unthrottled_tenants+=",AKIDU$i:u$i-secret"; done

# The tenants: section for start_gateway: default, and flood and quiet1..6,
# or with $tenant_set "unthrottled" hog and u1..u23 instead (their limits
# are the defaults: below, which never throttle them).
tenant_set=
tenants_yaml() {
  printf 'tenants:\n  default:\n    access_key_id: default\n    secret_access_key: default\n'
  if [[ $tenant_set == unthrottled ]]; then
    printf '  hog:\n    access_key_id: AKIDHOG\n    secret_access_key: hog-secret\n'
    for i in $(seq 1 $unthrottled_quiet); do
      printf '  u%s:\n    access_key_id: AKIDU%s\n    secret_access_key: u%s-secret\n' $i $i $i
    done
    return
  fi
  printf '  flood:\n    access_key_id: AKIDFLOOD\n    secret_access_key: flood-secret\n'
  printf '    limits:\n      requests_per_second: 200\n      burst: 400\n'
  for i in 1 2 3 4 5 6; do
    printf '  quiet%s:\n    access_key_id: AKIDQUIET%s\n    secret_access_key: quiet%s-secret\n' $i $i $i
    printf '    limits:\n      requests_per_second: 200\n      burst: 400\n'
  done
}

seed_manifest= # when set, the fresh data_dir starts with this manifest (its key)
start_gateway() { # durability partitions
  stop_gateway
  rm -rf "$work/data"
  if [[ -n $seed_manifest ]]; then
    # The engine refuses a manifest whose files are missing (a lost file,
    # not a fresh start), so the seed brings the empty files a first start
    # makes before its manifest.
    mkdir -p "$work/data" && cp "$seed_manifest" "$work/data/manifest"
    : >"$work/data/catalog.db"
    for ((p = 0; p < $2; p++)); do : >"$(printf '%s/data/part-%04d.db' "$work" "$p")"; done
  fi
  port=$(free_port)
  admin_port=$(free_port)
  cat >"$work/sluice.yaml" <<YAML
listen: 127.0.0.1:$port
region: us-east-1
data_dir: $work/data
partitions: $2
shard_size: $(( $2 < 2 ? $2 : 2 ))
durability: $1
log_requests: ${LOG_REQUESTS:-true}
admin:
  listen: 127.0.0.1:$admin_port
  access_key_id: admin
  secret_access_key: admin-secret
  bearer_token: bench-token
defaults:
  limits:
    requests_per_second: 1000000
    burst: 1000000
$(tenants_yaml)
YAML
  "$sluiced" --config "$work/sluice.yaml" 2>"$work/sluiced.log" &
  pid=$!
  for _ in $(seq 1 100); do
    curl -sf --http2-prior-knowledge "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "sluiced did not start:"; cat "$work/sluiced.log"; exit 1
}

# CPU seconds every process on the machine has used so far (user, nice,
# system, irq, softirq from /proc/stat): the difference over a run shows
# what others ran on the shared cores besides the gateway and sluice-load.
machine_cpu_s() { awk -v hz="$(getconf CLK_TCK)" '/^cpu /{printf "%.2f\n", ($2+$3+$4+$7+$8)/hz}' /proc/stat; }

admin_get() { # path: the admin listener's answer, with the bench's bearer token
  curl -sf --http2-prior-knowledge -H "Authorization: Bearer bench-token" "http://127.0.0.1:$admin_port$1"
}
