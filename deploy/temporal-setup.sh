#!/bin/sh
# Creates the namespace and registers the custom search attributes the
# workflows set, on Temporal's separate services. Run by the one-shot
# temporal-setup service in docker-compose.yml; safe to run again.
#
# Without them, starting a run that sets Package or Version fails with
# "search attribute is not defined", so workers and starters wait for this.
set -eu

address=${TEMPORAL_ADDRESS:-temporal-frontend:7233}
namespace=${TEMPORAL_NAMESPACE:-default}

# NAME=TYPE pairs; deploy/compose_test.go checks this line against the
# products' contracts (internal/devstack.Products), which the dev server
# registers too.
SEARCH_ATTRIBUTES="Package=Keyword Version=Keyword MigrationJob=Keyword MigrationSourceBucket=Keyword MigrationDestBucket=Keyword Room=Keyword"

tcli() { temporal "$@" --address "$address" --namespace "$namespace"; }

# The frontend answers once history and matching have joined it; then the
# namespace, created when missing (Temporal's own server image creates none).
tries=0
until temporal operator cluster health --address "$address" >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ "$tries" -ge 90 ]; then
		echo "temporal-setup: the frontend at $address does not answer" >&2
		exit 1
	fi
	sleep 2
done
if ! tcli operator namespace describe >/dev/null 2>&1; then
	temporal operator namespace create --namespace "$namespace" --retention 168h --address "$address"
	echo "temporal-setup: created namespace $namespace (retention 168h)"
fi

# "keyword", "Keyword" and "INDEXED_VALUE_TYPE_KEYWORD" all name one type,
# depending on the CLI version printing it.
normalize() { printf '%s' "$1" | tr '[:upper:]' '[:lower:]' | sed 's/^indexed_value_type_//; s/_//g'; }

for pair in $SEARCH_ATTRIBUTES; do
	name=${pair%%=*}
	type=${pair#*=}
	if out=$(tcli operator search-attribute create --name "$name" --type "$type" 2>&1); then
		echo "temporal-setup: created search attribute $name ($type)"
		continue
	fi
	case $out in
	*[Aa]lready*exist*) echo "temporal-setup: search attribute $name already exists" ;;
	*)
		echo "temporal-setup: creating search attribute $name failed: $out" >&2
		exit 1
		;;
	esac
done

# "Already exists" is also what the server says when the name is taken with
# another type, which would break every run that sets it: check the types.
listing=$(tcli operator search-attribute list)
for pair in $SEARCH_ATTRIBUTES; do
	name=${pair%%=*}
	want=$(normalize "${pair#*=}")
	got=$(printf '%s\n' "$listing" | awk -v n="$name" '$1 == n { print $2; exit }')
	if [ -z "$got" ]; then
		echo "temporal-setup: search attribute $name is missing after creation" >&2
		exit 1
	fi
	if [ "$(normalize "$got")" != "$want" ]; then
		echo "temporal-setup: search attribute $name has type $got, the workflows need ${pair#*=}" >&2
		exit 1
	fi
done

# The frontend caches search attributes and refreshes them periodically (up
# to a minute). Wait until it accepts a query naming every attribute, so the
# schedule's first run, started right after this exits, can set them.
query=""
for pair in $SEARCH_ATTRIBUTES; do
	name=${pair%%=*}
	query="${query:+$query AND }$name = 'temporal-setup-probe'"
done
tries=0
until tcli workflow count --query "$query" >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ "$tries" -ge 60 ]; then
		echo "temporal-setup: the frontend still rejects: $query" >&2
		tcli workflow count --query "$query" >&2 || true
		exit 1
	fi
	sleep 2
done
echo "temporal-setup: search attributes ready in namespace $namespace: $SEARCH_ATTRIBUTES"
