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
echo "buy milk" > "$DEMO/files/notes/todo.txt"
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
