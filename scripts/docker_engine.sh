#!/usr/bin/env bash
# Make a Docker engine available (and the local sandbox's tools): `make docker-engine`.
#
# - An engine already answers: prints nothing, exits 0.
# - RECONMEM_NO_DOCKER=1: installs the tools only, prints that it skipped the engine, exits 0 (the
#   Docker tests then skip, also in CI). RECONMEM_DOCKER_TOOLS_ONLY=1 (`make sandbox-deps`): tools only.
# - Debian/Ubuntu, root, no engine: installs Debian's `docker.io` (plus `debootstrap` for the local
#   base image and `bubblewrap` for the local sandbox) when missing, starts `dockerd` in its own
#   session (log: $RECONMEM_DOCKERD_LOG, pid: $RECONMEM_DOCKERD_PID), waits for the socket, and
#   prints one line saying what it did. Running it again is a no-op while that engine lives.
# - Anything else (not root, no apt): one line naming what is missing, exit 1.
set -uo pipefail

LOG="${RECONMEM_DOCKERD_LOG:-/var/log/reconmem-dockerd.log}"
PIDFILE="${RECONMEM_DOCKERD_PID:-/run/reconmem-dockerd.pid}"
WAIT_S="${RECONMEM_DOCKERD_WAIT_S:-60}"
TOOLS_PKGS=(debootstrap bubblewrap)

engine_answers() {
    if command -v docker >/dev/null 2>&1; then
        timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
    else
        [ -S /var/run/docker.sock ] && command -v curl >/dev/null 2>&1 \
            && timeout 10 curl -sf --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1
    fi
}

missing_pkgs() {   # Debian packages of "$@" that are not installed
    local p out=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out+=("$p")
    done
    echo "${out[@]:-}"
}

apt_install() {     # apt_install PKG... -> 0 on success; output goes to the log
    [ "$#" -gt 0 ] || return 0
    mkdir -p "$(dirname "$LOG")"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" \
        || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"; }; } >>"$LOG" 2>&1
}

join() { local IFS=";"; echo "$*" | sed 's/;/; /g'; }

did=()
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    # shellcheck disable=SC2207
    tools=($(missing_pkgs "${TOOLS_PKGS[@]}"))
    if [ "${#tools[@]}" -gt 0 ]; then
        apt_install "${tools[@]}" && did+=("installed ${tools[*]}") \
            || { echo "docker-engine: apt-get install ${tools[*]} failed (see $LOG)"; exit 1; }
    fi
fi

if [ "${RECONMEM_DOCKER_TOOLS_ONLY:-0}" = "1" ]; then
    if [ "${#did[@]}" -gt 0 ]; then echo "sandbox-deps: $(join "${did[@]}")"; fi
    if ! command -v bwrap >/dev/null 2>&1; then
        echo "sandbox-deps: bubblewrap is not installed and could not be (needs root and apt-get)"; exit 1
    fi
    exit 0
fi

if [ "${RECONMEM_NO_DOCKER:-0}" = "1" ]; then
    echo "docker-engine: engine skipped (RECONMEM_NO_DOCKER=1); Docker tests will be skipped${did:+; $(join "${did[@]}")}"
    exit 0
fi

if engine_answers; then
    if [ "${#did[@]}" -gt 0 ]; then echo "docker-engine: engine already running; $(join "${did[@]}")"; fi
    exit 0
fi

if [ "$(id -u)" != "0" ]; then
    echo "docker-engine: no Docker engine answers and this is not root; start one (or set RECONMEM_NO_DOCKER=1)"
    exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "docker-engine: no dockerd and no apt-get (not Debian/Ubuntu); install Docker or set RECONMEM_NO_DOCKER=1"
        exit 1
    fi
    apt_install docker.io || { echo "docker-engine: apt-get install docker.io failed (see $LOG)"; exit 1; }
    did+=("installed docker.io")
fi

started=0
if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    : # our dockerd is alive but not answering yet: just wait for it below
else
    mkdir -p "$(dirname "$LOG")" "$(dirname "$PIDFILE")"
    rm -f /var/run/docker.pid
    setsid dockerd --host unix:///var/run/docker.sock >>"$LOG" 2>&1 < /dev/null &
    echo $! > "$PIDFILE"
    started=1
fi

for _ in $(seq 1 "$WAIT_S"); do
    if engine_answers; then
        if [ "$started" = 1 ]; then did+=("started dockerd (pid $(cat "$PIDFILE"), log $LOG)")
        else did+=("dockerd (pid $(cat "$PIDFILE")) came up"); fi
        echo "docker-engine: $(join "${did[@]}")"
        exit 0
    fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        echo "docker-engine: dockerd exited during start-up; last log lines:"; tail -n 5 "$LOG"
        exit 1
    fi
    sleep 1
done
echo "docker-engine: dockerd (pid $(cat "$PIDFILE")) did not answer within ${WAIT_S}s (see $LOG)"
exit 1
