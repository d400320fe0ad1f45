#!/usr/bin/env bash
# make run: the journey of a plugin from author to agent, on the samples.
# A demo curator signs the sample bundles, a fresh demo home trusts the key,
# installs them and calls a tool. Everything lives under build/demo.
set -euo pipefail
cd "$(dirname "$0")/.."

T=build/toolhost
DEMO=build/demo
export TOOLHOST_HOME="$PWD/$DEMO/home"
rm -rf "$DEMO"
mkdir -p "$DEMO/bundles"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

step "A curator creates a signing key (unencrypted: this is a demo)"
show $T curator keygen demo-curator --no-passphrase --out "$DEMO/keys" 2>/dev/null

step "The fs sample is granted one directory, read-only: the demo grants $DEMO/files"
mkdir -p "$DEMO/files/notes" "$DEMO/fs"
echo "buy milk, then mail anna@example.org" > "$DEMO/files/notes/todo.txt"  # the guard redacts the address
cp build/plugins/fs/plugin.wasm "$DEMO/fs/"
sed "s#/srv/toolhost-fs-sample#$PWD/$DEMO/files#" build/plugins/fs/plugin.json > "$DEMO/fs/plugin.json"
show $T plugin pack "$DEMO/fs" -o "$DEMO/bundles/fs.plugin"

step "The curator reviews and signs the sample bundles"
for b in build/plugins/*.plugin; do
  [ "$(basename "$b")" = fs.plugin ] || cp "$b" "$DEMO/bundles/"
done
show $T curator review "$DEMO/bundles/fs.plugin" | sed -n '1,12p'
for b in "$DEMO"/bundles/*.plugin; do
  show $T curator sign --key "$DEMO/keys/demo-curator.key" "$b"
done

step "The operator trusts the curator's public key (home: $TOOLHOST_HOME)"
show $T trust add "$DEMO/keys/demo-curator.pub"

step "Verify and install (signatures checked again at every load)"
for b in "$DEMO"/bundles/*.plugin; do
  show $T plugin verify "$b"
  show $T plugin install "$b"
done
show $T plugin list

step "An agent calls a tool: arguments are checked against the schema, the call runs sandboxed"
show $T call get_current_time '{"timezone":"Europe/Paris"}'
show $T call convert_time '{"time":"2026-11-21T12:00:00Z","to_timezone":"Asia/Tokyo"}'
show $T call read_file '{"path":"notes/todo.txt"}'

step "The sandbox holds: no file outside the grant, no host outside allowed_hosts"
show $T call read_file '{"path":"../../../../etc/passwd"}' || true
show $T call fetch_url '{"url":"http://169.254.169.254/latest/meta-data/"}' || true

step "Bad arguments are refused before any sandbox starts"
show $T call get_current_time '{"timezone":42}' || true

step "A tampered bundle is refused"
cp "$DEMO/bundles/time.plugin" "$DEMO/tampered.plugin"
printf 'X' | dd of="$DEMO/tampered.plugin" bs=1 seek=700 conv=notrunc status=none
show $T plugin verify "$DEMO/tampered.plugin" || true

step "Governance: the guard policy plugin's hook refuses a blocked host"
show $T call fetch_url '{"url":"https://blocked.example.com/"}' || true

step "An operator rule denies a tool outright"
show $T policy set 'delete_*' deny
show $T call delete_note '{"id":"1"}' || true
show $T policy unset 'delete_*'
show $T policy list

step "delete_note is destructive and needs approval: the call waits until a person approves it"
$T serve --addr 127.0.0.1:0 >"$DEMO/serve.log" 2>&1 &
SERVE_PID=$!
trap 'kill $SERVE_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$TOOLHOST_HOME/control.sock" ] && break; sleep 0.1; done
printf '$ %s &
' "$T call add_note '{\"text\":\"call the dentist\"}'"
$T call add_note '{"text":"call the dentist"}'
printf '$ %s &
' "$T call delete_note '{\"id\":\"1\"}'"
$T call delete_note '{"id":"1"}' >"$DEMO/delete.out" 2>&1 &
CALL_PID=$!
for _ in $(seq 100); do $T approvals list --json | grep -q '"id"' && break; sleep 0.1; done
show $T approvals list
ID=$($T approvals list --json | sed -n 's/.*"id": "\([0-9a-f]*\)".*/\1/p' | head -1)
show $T approvals approve "$ID"
wait $CALL_PID || true
printf '(the waiting call answers)\n'; cat "$DEMO/delete.out"
kill $SERVE_PID; wait $SERVE_PID 2>/dev/null || true
trap - EXIT

step "Every call and change is in the hash-chained audit log"
show $T audit list
show $T audit verify
show $T audit head

ADDR="${TOOLHOST_ADDR:-127.0.0.1:7411}"
if [ -n "${DEMO_NO_SERVE:-}" ]; then
  printf '\nDone (DEMO_NO_SERVE set: not serving). Try: TOOLHOST_HOME=%s %s call get_current_time %s\n' "$TOOLHOST_HOME" "$T" "'{}'"
  exit 0
fi

step "Serving the tools to agents on http://$ADDR (Ctrl-C to stop)"
cat <<EOT
While it runs, in another terminal:
  export TOOLHOST_HOME=$TOOLHOST_HOME
  curl -s -H "Authorization: Bearer \$(cat \$TOOLHOST_HOME/token)" http://$ADDR/v1/tools
  curl -s -H "Authorization: Bearer \$(cat \$TOOLHOST_HOME/token)" -d '{"arguments":{"timezone":"Asia/Tokyo"}}' http://$ADDR/v1/tools/get_current_time/call
  $T plugin list          # the CLI works through the running host

MCP client configuration (stdio), e.g. for Claude Desktop or Cursor:
  {"mcpServers": {"toolhost": {"command": "$PWD/$T", "args": ["mcp"],
                               "env": {"TOOLHOST_HOME": "$TOOLHOST_HOME"}}}}
MCP over streamable HTTP: http://$ADDR/mcp with the same bearer token.
EOT
exec $T serve --addr "$ADDR"
