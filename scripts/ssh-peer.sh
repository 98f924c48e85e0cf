#!/usr/bin/env bash
# Starts an OpenSSH server on 127.0.0.1:2222 for user "bench" as the peer baseline
# (what a user would pick instead of an agent: ssh into the laptop).
# Prints the ssh config path to use: ssh -F "$CFG" peer CMD
# A copy of the shared tool (../shared/tools/ssh-peer.sh, which the bench
# prefers when it is there) for clones without it, such as CI's: keep the
# two the same (same port, directory and user, so either finds the other's
# sshd running).
set -euo pipefail
D=${SSH_PEER_DIR:-${TMPDIR:-/tmp}/outpost-sshpeer}
mkdir -p "$D" /run/sshd
command -v /usr/sbin/sshd >/dev/null || { apt-get update -qq && apt-get install -y -qq openssh-server >/dev/null; }
[ -f "$D/hostkey" ] || ssh-keygen -q -t ed25519 -N '' -f "$D/hostkey"
[ -f "$D/userkey" ] || ssh-keygen -q -t ed25519 -N '' -f "$D/userkey"
id bench >/dev/null 2>&1 || useradd -m -s /bin/sh bench
usermod -p '*' bench
install -d -o bench -m 700 /home/bench/.ssh
install -o bench -m 600 "$D/userkey.pub" /home/bench/.ssh/authorized_keys
cat > "$D/sshd_config" <<CFG
Port 2222
ListenAddress 127.0.0.1
HostKey $D/hostkey
PasswordAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
Subsystem sftp internal-sftp
UsePAM no
PidFile $D/sshd.pid
CFG
cat > "$D/sshcfg" <<CFG
Host peer
  HostName 127.0.0.1
  Port 2222
  User bench
  IdentityFile $D/userkey
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  ControlMaster auto
  ControlPath $D/cm-%r@%h:%p
  ControlPersist 600
CFG
if ! { [ -f "$D/sshd.pid" ] && kill -0 "$(cat "$D/sshd.pid")" 2>/dev/null; }; then
  /usr/sbin/sshd -f "$D/sshd_config" -E "$D/log"
  sleep 0.3
fi
ssh -F "$D/sshcfg" peer true
echo "$D/sshcfg"
