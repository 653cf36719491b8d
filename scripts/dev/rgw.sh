#!/usr/bin/env bash
# A throwaway Ceph object store (RADOS Gateway, S3 API) for the tests of the log replication.
#
#   scripts/dev/rgw.sh install          install the Debian packages (root; no-op when installed)
#   scripts/dev/rgw.sh start DIR PORT   start one mon, one memstore OSD and radosgw on 127.0.0.1:PORT,
#                                   with every file of the cluster under DIR; prints, as its last
#                                   lines, `export` lines to `eval` (endpoint, credentials, region)
#   scripts/dev/rgw.sh stop DIR         stop the daemons whose pid files are under DIR/run
#   scripts/dev/rgw.sh free-port        print a TCP port free on 127.0.0.1 (for PORT)
#
# The cluster is as small as Ceph allows: no ceph-mgr (nothing here needs one; the mon only warns),
# one OSD on the memstore backend (objects live in the OSD's memory, nothing touches a disk but
# logs and the mon store), pools of size 1, cephx with keys generated into DIR/keyring. Nothing is
# read from or written to /etc/ceph or /var/lib/ceph, so several clusters can run side by side
# (each picks free mon ports; the OSD takes free ones from Ceph's 6800-7300 range).
#
# Ceph 16.2 (Debian 12's 16.2.15) settings this script keeps:
#   - the monmap is made with `monmaptool --create --addv` (a msgr2 address vector) and
#     `mon host` names the v2 address, and `ms mon client mode = crc`: both are known fixes for
#     radosgw hanging at start on 16.2 (its mon session never completing). With this script's
#     cephx setup a start also succeeded with a plain `--add` map or without the crc mode (tried
#     once each); they stay as cheap insurance;
#   - pools of size 1 need `osd pool default size = 1` and `min size = 1`, and
#     `mon allow pool size one` so nothing refuses them;
#   - no ceph-mgr: the cluster's PG statistics read "unknown" (`ceph -s` shows 0 pools) and the mon
#     warns, but the OSD serves every pool; radosgw needs no mgr;
#   - the mon applies each change of the OSD map (every pool radosgw-admin and radosgw create)
#     once per `paxos propose interval`, 1 s by default; 0.1 s here cuts the start from 13 s to 3 s.
#
# Measured on the development machine (2 cores, 24 GiB, Debian 12, local package mirror):
#   install: 20 s (apt-get update + radosgw ceph-mon ceph-osd ceph-common and 60-odd dependencies,
#            no recommends); 27 s with a cold apt list cache; 0.1 s when installed
#   start:   3.5 s from `start` to the export lines, 3.7 s to the first successful PUT (mon up at
#            1 s, OSD up at 2 s, user and pools at 3 s)
#   RSS after start: ceph-mon 35 MiB, ceph-osd 45 MiB, radosgw 34 MiB (about 115 MiB together);
#            after one run of test/replication/object-store.test.mjs 35, 60, 52 MiB; after five 36, 113
#            (memstore keeps what was written), 55 MiB
#   stop:    0.5 s
set -euo pipefail

# The S3 user the tests sign with; a throwaway cluster on loopback, so fixed values are fine.
readonly S3_UID=forumtest
readonly ACCESS_KEY=forumtest
readonly SECRET_KEY=forumtestsecret
# Bound on the whole of `start` (mon, OSD, user, gateway); past it, fail with the logs' tails.
readonly START_TIMEOUT_S=${RGW_START_TIMEOUT_S:-120}
readonly EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
readonly PACKAGES=(radosgw ceph-mon ceph-osd ceph-common)

usage() {
  echo "usage: $0 install | start DIR PORT | stop DIR | free-port" >&2
  exit 2
}

# Log progress to stderr, so stdout ends with nothing but the export lines.
say() { echo "rgw.sh: $*" >&2; }

# A free TCP port on 127.0.0.1 (the kernel picks it; a race with another binder is unlikely and
# shows as a mon that does not start, reported with its log).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

cmd_install() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  # curl signs the readiness request (SigV4) in `start`.
  command -v curl >/dev/null || missing+=(curl)
  if [ ${#missing[@]} -eq 0 ]; then
    say "installed already: ${PACKAGES[*]}"
    return
  fi
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Print the last lines of every log under $DIR/log to stderr (for a failed start).
dump_logs() {
  local f
  for f in "$DIR"/log/*.log; do
    [ -e "$f" ] || continue
    echo "----- tail of $f -----" >&2
    tail -n 30 "$f" >&2
  done
}

# Report a failed start with the logs, stop what it had started (the logs stay in DIR), exit 1.
fail() {
  say "$*"
  dump_logs
  if [ "${STARTING:-0}" = 1 ]; then cmd_stop "$DIR"; fi
  exit 1
}

# Seconds left before the start deadline; fails once it has passed.
left() {
  local now
  now=$(date +%s)
  [ "$now" -lt "$DEADLINE" ] || fail "gave up after ${START_TIMEOUT_S} s: $1"
  echo $((DEADLINE - now))
}

# Retry a command (each try bounded by `timeout`) until it succeeds or the start deadline passes.
wait_for() {
  local what=$1
  shift
  local l
  while true; do
    l=$(left "$what") || exit 1
    if timeout "$((l < 10 ? l : 10))" "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
}

# A Ceph CLI call against this cluster, bounded so a missing mon cannot hang it.
ceph_() { timeout 30 ceph -c "$CONF" --connect-timeout 10 "$@"; }

cmd_start() {
  [ $# -eq 2 ] || usage
  mkdir -p "$1"
  DIR=$(cd "$1" && pwd)
  local port=$2
  [[ "$port" =~ ^[0-9]+$ ]] || fail "PORT must be a number, got '$port'"
  CONF=$DIR/ceph.conf
  DEADLINE=$(($(date +%s) + START_TIMEOUT_S))
  local t0=$SECONDS
  for b in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool ceph-authtool curl; do
    command -v "$b" >/dev/null || fail "$b not found: run 'scripts/dev/rgw.sh install' as root first"
  done
  if compgen -G "$DIR/run/*.pid" >/dev/null; then fail "$DIR/run holds pid files: stop that cluster first ($0 stop $DIR)"; fi
  # Something else answering on PORT would pass the readiness check below in radosgw's place.
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "127.0.0.1:$port is in use already"; fi
  mkdir -p "$DIR"/{mon,osd,log,run,rgw}
  STARTING=1

  local fsid osd_uuid mon_port
  fsid=$(uuidgen)
  osd_uuid=$(uuidgen)
  mon_port=$(free_port)

  # One config for every daemon and tool; $name expands per daemon (mon.a, osd.0, client.rgw).
  cat >"$CONF" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon_port]
public network = 127.0.0.0/8
keyring = $DIR/keyring
run dir = $DIR/run
pid file = $DIR/run/\$name.pid
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
mon cluster log file = $DIR/log/cluster.log
log to stderr = false
err to stderr = false
# A known fix for radosgw hanging at start on 16.2 (see the header).
ms mon client mode = crc
# One OSD: pools of one replica, placement across OSDs rather than hosts, few PGs.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
# A nearly full disk must not stop a test cluster whose objects live in memory.
mon data avail crit = 1
mon data avail warn = 2
# Each pool radosgw-admin creates is an OSD map change, which the mon commits once per interval
# (1 s by default: a 13 s start instead of 3 s).
paxos propose interval = 0.1
osd pool default pg autoscale mode = off

[mon]
mon data = $DIR/mon
mon initial members = a

[osd]
osd data = $DIR/osd
osd objectstore = memstore
# memstore's notion of capacity; objects take real memory only as they are written.
memstore device bytes = 1073741824

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$port
rgw data = $DIR/rgw
# The tests' loads are small: 64 request threads instead of 512.
rgw thread pool size = 64
EOF

  # Keys: the mon's own, the admin the CLI uses, the OSD's and the gateway's; the mon imports the
  # whole keyring at mkfs, so every daemon authenticates with its entry in $DIR/keyring.
  local kr=$DIR/keyring
  ceph-authtool --create-keyring "$kr" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool "$kr" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
  ceph-authtool "$kr" --gen-key -n osd.0 --cap mon 'allow profile osd' --cap osd 'allow *' >/dev/null
  ceph-authtool "$kr" --gen-key -n client.rgw --cap mon 'allow rw' --cap osd 'allow rwx' >/dev/null

  # The mon: a msgr2 address vector in the monmap (see the header), a fresh store, then the daemon
  # (it forks into the background and writes $DIR/run/mon.a.pid).
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$DIR/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" --keyring "$kr" >>"$DIR/log/setup.log" 2>&1 ||
    fail "ceph-mon --mkfs failed"
  ceph-mon -c "$CONF" -i a >>"$DIR/log/setup.log" 2>&1 || fail "ceph-mon did not start"
  wait_for "the mon to answer" ceph -c "$CONF" --connect-timeout 5 mon stat
  say "mon up after $((SECONDS - t0)) s (port $mon_port)"

  # The OSD: registered with the mon under a fresh uuid (id 0), its memstore formatted, started.
  local id
  id=$(ceph_ osd new "$osd_uuid") || fail "ceph osd new failed"
  [ "$id" = 0 ] || fail "expected OSD id 0, got $id"
  ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$osd_uuid" >>"$DIR/log/setup.log" 2>&1 || fail "ceph-osd --mkfs failed"
  ceph-osd -c "$CONF" -i 0 >>"$DIR/log/setup.log" 2>&1 || fail "ceph-osd did not start"
  wait_for "the OSD to come up" bash -c "ceph -c '$CONF' --connect-timeout 5 osd dump | grep -q '^osd.0 up'"
  say "osd up after $((SECONDS - t0)) s"

  # The S3 user; radosgw-admin also creates the default realm/zone and its pools on first use.
  # (`user info` first: a try cut off by its timeout may have created the user already.)
  local admin="radosgw-admin -c '$CONF' -n client.admin"
  wait_for "radosgw-admin to create the S3 user" bash -c "$admin user info --uid=$S3_UID ||
    $admin user create --uid=$S3_UID --display-name='Agent Forum tests' --access-key=$ACCESS_KEY --secret-key=$SECRET_KEY"
  say "user created after $((SECONDS - t0)) s"

  radosgw -c "$CONF" -n client.rgw >>"$DIR/log/setup.log" 2>&1 || fail "radosgw did not start"
  # Ready when a signed ListBuckets as the test user answers 200 with the user as owner: the
  # gateway listens, reaches the cluster and knows the user's key. (curl 7.88 signs no payload
  # hash for S3; RGW wants the header, so it carries the empty body's.)
  local endpoint=http://127.0.0.1:$port
  wait_for "radosgw to answer a signed S3 request on $endpoint" bash -c \
    "curl -sf --aws-sigv4 'aws:amz:us-east-1:s3' --user '$ACCESS_KEY:$SECRET_KEY' \
      -H 'x-amz-content-sha256: $EMPTY_SHA256' '$endpoint/' | grep -q '<ID>$S3_UID</ID>'"
  say "radosgw answering on $endpoint after $((SECONDS - t0)) s"

  cat <<EOF
export AWS_ENDPOINT_URL_S3=$endpoint
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=us-east-1
export FORUM_TEST_S3=rgw
EOF
  STARTING=0
}

# Whether pid $1 is alive and one of this cluster's daemons (a pid file left behind by a crashed
# daemon may name a pid since reused by an unrelated process, which must not be signalled).
is_ours() {
  local exe
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
  case "$exe" in
  */ceph-mon | */ceph-osd | */radosgw) return 0 ;;
  *) return 1 ;;
  esac
}

# Wait up to $1 tenths of a second until pid $2 is no longer one of our daemons.
wait_gone() {
  local i
  for ((i = 0; i < $1; i++)); do
    is_ours "$2" || return 0
    sleep 0.1
  done
  return 1
}

cmd_stop() {
  [ $# -eq 1 ] || usage
  [ -d "$1" ] || {
    say "no such directory: $1"
    return 0
  }
  DIR=$(cd "$1" && pwd)
  # One daemon at a time, gateway, OSD, mon: the OSD tells the mon it is going down and waits
  # for the answer (up to 5 s), so the mon stays until the OSD has gone. Each gets SIGTERM and
  # up to 30 s, then SIGKILL (a memstore OSD has nothing worth flushing) and 5 s more.
  local f pid
  for f in "$DIR/run/client.rgw.pid" "$DIR/run/osd.0.pid" "$DIR/run/mon.a.pid"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if ! [[ "$pid" =~ ^[0-9]+$ ]] || ! is_ours "$pid"; then continue; fi
    kill -TERM "$pid" 2>/dev/null || true
    wait_gone 300 "$pid" && continue
    say "pid $pid ($f) did not exit on SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone 50 "$pid" || say "pid $pid ($f) still running after SIGKILL"
  done
  rm -f "$DIR"/run/*.pid
  say "stopped the cluster under $DIR"
}

case "${1:-}" in
install) cmd_install ;;
start)
  shift
  cmd_start "$@"
  ;;
stop)
  shift
  cmd_stop "$@"
  ;;
free-port) free_port ;;
*) usage ;;
esac
