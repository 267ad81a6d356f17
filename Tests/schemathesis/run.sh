#!/usr/bin/env bash
# Checks a live `notty serve` against Resources/openapi.yaml with schemathesis (every check).
# Usage: Tests/schemathesis/run.sh PATH/TO/notty [max-examples]
# Starts the service on a free loopback port in a temporary folder and always stops it.
set -euo pipefail
notty=$(realpath "$1")
examples=${2:-25}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
export NOTTY_HOME="$work"
cd "$work"

printf 's3cret-pw\n' | "$notty" admin user add alice >/dev/null
printf 's3cret-pw\n' | "$notty" admin user add bob >/dev/null
printf 's3cret-pw\n' | "$notty" admin user add carol >/dev/null
# A team of alice's and bob's (the spec's example team name), so that the team routes reach a real
# team; and one of alice's alone, so that the on-call routes have a schedule. The webhook and the
# calendar feed are carol's (team desk), made before any fuzzing: the user routes fuzz as alice and
# may make bob an owner of ops and take alice out, or make as many hooks and feeds as one user may.
"$notty" admin team add ops --owner alice >/dev/null
"$notty" admin team add rota --owner alice >/dev/null
"$notty" admin team add desk --owner carol >/dev/null
"$notty" admin app add app.example.com --json >app.json
"$notty" serve --port 0 --publish-rate 100000 --publish-burst 100000 --log-level notice >serve.log 2>&1 &
server=$!
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*url=http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' serve.log | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "notty serve did not start:"; cat serve.log; exit 1; }
base="http://127.0.0.1:$port"

json() { python3 -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$1"; }
user_token=$(curl -sf -X POST "$base/oauth2/v2.0/token" -d grant_type=password -d username=alice -d password=s3cret-pw | json access_token)
uns_id=$(curl -sf -X POST "$base/v1/me/subscriptions" -H "Authorization: Bearer $user_token" -H 'Content-Type: application/json' \
  -d '{"targetHostName":"app.example.com"}' | json userNotificationSubscriptionId)
client_id=$(json client_id <app.json)
client_secret=$(json client_secret <app.json)
app_token=$(curl -sf -X POST "$base/oauth2/v2.0/token" -d grant_type=client_credentials -d "client_id=$client_id" -d "client_secret=$client_secret" | json access_token)
curl -sf -X POST "$base/v1/teams/ops/members" -H "Authorization: Bearer $user_token" -H 'Content-Type: application/json' -d '{"user":"bob"}' >/dev/null
curl -sf -X PUT "$base/v1/teams/rota/oncall" -H "Authorization: Bearer $user_token" -H 'Content-Type: application/json' \
  -d '{"rotation":["alice"],"shift":"1w","start":"2026-01-05 09:00","zone":"Europe/Berlin"}' >/dev/null
carol_token=$(curl -sf -X POST "$base/oauth2/v2.0/token" -d grant_type=password -d username=carol -d password=s3cret-pw | json access_token)
curl -sf -X PUT "$base/v1/teams/desk/oncall" -H "Authorization: Bearer $carol_token" -H 'Content-Type: application/json' \
  -d '{"rotation":["carol"],"shift":"1d","start":"2026-01-05 09:00","zone":"Europe/Berlin"}' >/dev/null
hook=$(curl -sf -X POST "$base/v1/me/subscriptions" -H "Authorization: Bearer $carol_token" -H 'Content-Type: application/json' \
  -d '{"targetHostName":"app.example.com","platform":"webhook"}' | json webhookUrl)
calendar=$(curl -sf -X POST "$base/v1/teams/desk/oncall/calendar" -H "Authorization: Bearer $carol_token" | json calendarUrl)
ping=$(curl -sf -X POST "$base/v1/me/heartbeats" -H "Authorization: Bearer $carol_token" -H 'Content-Type: application/json' \
  -d '{"name":"nightly","every":86400}' | json pingUrl)
# A browser's session (its cookie's token), made before any fuzzed sign-in can lock the address out.
session_token=$(curl -sf -D - -o /dev/null -X POST "$base/v1/web/session" -H "Origin: $base" -H 'Content-Type: application/json' \
  -d '{"username":"alice","password":"s3cret-pw"}' | sed -n 's/^[Ss]et-[Cc]ookie: notty_session=\([^;]*\);.*/\1/p')
[ -n "$session_token" ] || { echo "no web session"; exit 1; }

st() {
  python3 -m schemathesis.cli --config-file "$root/Resources/schemathesis.toml" run "$root/Resources/openapi.yaml" \
    --url "$base" --workers 1 --checks all --max-examples "$examples" --seed 20261121 --no-color "$@"
}
status=0
echo "== user routes"
st --include-tag user --exclude-path /v1/me/push -H "Authorization: Bearer $user_token" || status=1
echo "== publishing routes"
st --include-tag publishing --exclude-path-regex '^/v1\.0/' -H "Authorization: Bearer $app_token" -H "X-UNS-ID: $uns_id" || status=1
# The /v1.0 paths are aliases of the /beta ones: in stateful runs schemathesis would link a
# delete through one alias to a create through the other and expect the resource still there.
echo "== publishing routes (/v1.0 aliases)"
st --include-path-regex '^/v1\.0/' --phases examples,coverage,fuzzing -H "Authorization: Bearer $app_token" -H "X-UNS-ID: $uns_id" || status=1
# Signing out ends the device behind the token: so not alice's own token, but a browser's session,
# sent as a browser sends it (the cookie, from the service's own Origin).
echo "== web session"
st --include-path /v1/web/session -H "Cookie: notty_session=$session_token" -H "Origin: $base" || status=1
echo "== the incident doors (PagerDuty's events, Opsgenie's alerts and heartbeats on a hook's key)"
# Fewer examples: these are Opsgenie's and PagerDuty's shapes over paths the other groups cover.
st --include-tag incidents --max-examples 10 -H "Authorization: GenieKey ${hook##*/}" || status=1
echo "== tokens and operations"
st --include-tag tokens --include-tag operations || status=1
# Webhooks and the on-call calendar feed: a real webhook URL, so the bodies reach the parsers, and
# a real calendar URL (the spec's {token} is fixed to each).
echo "== webhooks, the calendar feed and a heartbeat's pings"
python3 - "$root/Resources/openapi.yaml" "${hook##*/}" "${calendar##*/}" "${ping##*/}" >"$work/openapi-hooks.yaml" <<'PY'
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
paths = {}
for template, token in [("/v1/hooks/{token}", sys.argv[2]), ("/v1/calendars/{token}", sys.argv[3]),
                        ("/v1/heartbeats/{token}", sys.argv[4]), ("/v1/heartbeats/{token}/fail", sys.argv[4])]:
    item = spec["paths"][template]
    for operation in item.values():
        operation["parameters"] = [p for p in operation["parameters"] if p["name"] != "token"]
    paths[template.replace("{token}", token)] = item
spec["paths"] = paths
yaml.safe_dump(spec, sys.stdout)
PY
python3 -m schemathesis.cli --config-file "$root/Resources/schemathesis.toml" run "$work/openapi-hooks.yaml" \
  --url "$base" --workers 1 --checks all --max-examples "$examples" --seed 20261121 --no-color || status=1
# Hummingbird itself logs "Error handling upgrade result" at error level for a connection whose
# head notty answered 400 and closed (schemathesis sends NUL bytes in headers): the client's
# fault, answered as it should be, so not counted here.
errors=$(grep ' error ' serve.log | grep -v 'Error handling upgrade result' || true)
if [ -n "$errors" ]; then echo "the service logged errors:"; echo "$errors"; status=1; fi
exit $status
