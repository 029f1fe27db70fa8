# Sourced (after bootstrap.sh) by the scripts that need a Docker engine: the image check and
# the test run's testcontainers step.
#
#   ensure_docker_engine            an engine answers, or this installs Debian's docker.io if
#                                   dockerd is missing (root; no recommended packages, no service
#                                   started by the install) and starts dockerd with no bridge
#                                   network and no iptables rules: containers use the host's
#                                   network, every connection stays on loopback
#   stop_docker_engine_if_started   stops the dockerd this shell started, if it did
#
# The engine logs to ~/.cache/switchyard/dockerd.log. An engine that already answered (or
# DOCKER_HOST) is used as it is and never stopped.

started_dockerd_pid=""

docker_engine_say() { printf '[docker-engine] %s\n' "$*" >&2; }

ensure_docker_engine() {
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then return 0; fi
  if [[ -n "${DOCKER_HOST:-}" ]]; then
    docker_engine_say "the Docker engine at DOCKER_HOST=$DOCKER_HOST does not answer"
    return 1
  fi
  if [[ "$(id -u)" != 0 ]]; then
    docker_engine_say "no Docker engine answers, and installing or starting one needs root"
    return 1
  fi
  if ! command -v dockerd >/dev/null; then
    # docker.io's maintainer scripts would start the daemon with its defaults (a bridge network,
    # iptables rules): a policy-rc.d for the install keeps them from starting anything.
    local guard=""
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
      guard=/usr/sbin/policy-rc.d
      printf '#!/bin/sh\n# scripts/lib/docker-engine.sh: no service starts while docker.io installs\nexit 101\n' \
        >"$guard"
      chmod 0755 "$guard"
    fi
    local status=0
    ensure_debian_package dockerd docker.io --no-install-recommends || status=$?
    [[ -z "$guard" ]] || rm -f "$guard"
    ((status == 0)) || return "$status"
  fi
  local log="$SWITCHYARD_CACHE/dockerd.log"
  docker_engine_say "starting dockerd (no bridge network, no iptables rules), log in $log"
  setsid dockerd --bridge=none --iptables=false --ip6tables=false </dev/null >>"$log" 2>&1 &
  started_dockerd_pid=$!
  local deadline=$((SECONDS + 60))
  until docker info >/dev/null 2>&1; do
    if ((SECONDS >= deadline)) || ! kill -0 "$started_dockerd_pid" 2>/dev/null; then
      tail -n 30 "$log" >&2
      docker_engine_say "dockerd did not answer within 60 s"
      stop_docker_engine_if_started
      return 1
    fi
    sleep 0.5
  done
}

stop_docker_engine_if_started() {
  [[ -n "$started_dockerd_pid" ]] || return 0
  local pid="$started_dockerd_pid"
  started_dockerd_pid=""
  kill -TERM "$pid" 2>/dev/null || return 0
  local deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
  kill -KILL "$pid" 2>/dev/null || true
  # What dockerd leaves mounted after it stopped: its network namespace handle.
  if mountpoint -q /run/docker/netns/default 2>/dev/null; then umount /run/docker/netns/default || true; fi
  docker_engine_say "stopped the dockerd it started"
}
