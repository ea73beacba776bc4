#!/bin/sh
# Writes the secrets docker-compose.yml requires into .env beside it (mode
# 0600), each generated from /dev/urandom. A secret .env already holds is
# kept, so running it again after an upgrade only adds the new ones; to
# rotate one, delete its line and run it again (then restart what uses it).
# .env.example lists the same variables with a command for each.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
env_file=${1:-$root/.env}
umask 077
[ -e "$env_file" ] || : >"$env_file"
chmod 600 "$env_file"

hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

# has NAME: .env sets NAME to something non-empty.
has() { grep -Eq "^$1=.+" "$env_file"; }

added=""
put() {
	name=$1
	value=$2
	if has "$name"; then
		return
	fi
	# Drop an empty NAME= left from .env.example, then append the value.
	tmp="$env_file.tmp.$$"
	grep -Ev "^$name=\$" "$env_file" >"$tmp" || true
	printf '%s=%s\n' "$name" "$value" >>"$tmp"
	mv "$tmp" "$env_file"
	added="$added $name"
}

put S3_ACCESS_KEY "$(hex 10)"
put S3_SECRET_KEY "$(hex 20)"
put MIRROR_S3_ACCESS_KEY "$(hex 10)"
put MIRROR_S3_SECRET_KEY "$(hex 20)"
put TEMPORAL_DB_PASSWORD "$(hex 24)"
put REDIS_PASSWORD "$(hex 32)"
put REDIS_GATE_PASSWORD "$(hex 32)"
put CODEC_KEYS "k$(date -u +%Y%m%d):$(head -c 32 /dev/urandom | base64 | tr -d '\n')"

if [ -n "$added" ]; then
	echo "gen-env: wrote$added to $env_file (mode 0600)"
else
	echo "gen-env: $env_file already holds every secret; nothing changed"
fi
tokens=$(grep -E '^CONSOLE_TOKENS_SECRET_FILE=' "$env_file" | tail -1 | cut -d= -f2-)
tokens=${tokens:-./.data/keys/console.tokens}
case $tokens in /*) ;; *) tokens="$root/${tokens#./}" ;; esac
if [ ! -e "$tokens" ]; then
	echo "gen-env: the console needs its tokens file $tokens (name:secret[:ro] lines, readable by uid 65532); see .env.example"
fi
