#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seeds for the three fuzz targets: every Wise Agents body of
# ../shared/vectors/wiseagents, and one valid message of each other format (Civitas JSON and
# msgpack, VOX, PenguiFlow) made from one of them by `stomp-agent-bridge translate`. Each seed
# starts with the byte its target reads first (see fuzz/fuzz_targets/*_input.rs). Run from
# anywhere; existing corpus files are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
vectors=../shared/vectors/wiseagents
if [ ! -d "$vectors" ]; then
    echo "seed.sh: no $vectors (the shared Wise Agents vectors, beside the repository)" >&2
    exit 1
fi

# seed TARGET NAME SELECTOR(hex) < body
seed() {
    mkdir -p "fuzz/corpus/$1"
    { printf "\\x$3"; cat; } > "fuzz/corpus/$1/$2"
}
translate() { cargo run --quiet --bin stomp-agent-bridge -- translate --from wiseagents "$@"; }
ask=$vectors/01_upstream_example.yaml

# envelopes: bits 0-1 framework (WA, Civitas, VOX, PenguiFlow), bit 2 response, (byte >> 3) % 3
# content type (none, JSON, msgpack).
for yaml in "$vectors"/*.yaml; do
    name=$(basename "$yaml" .yaml)
    seed envelopes "wa-$name-request" 00 < "$yaml"
    seed envelopes "wa-$name-response" 04 < "$yaml"
done
for dir in request:0 response:4; do
    d=${dir%:*} bit=${dir#*:}
    translate --to civitas --direction "$d" < "$ask" | seed envelopes "civitas-json-$d" "0$((1 | bit))"
    translate --to civitas --encoding msgpack --direction "$d" < "$ask" | seed envelopes "civitas-msgpack-$d" "1$((1 | bit))"
    translate --to vox --direction "$d" < "$ask" | seed envelopes "vox-$d" "0$((2 | bit))"
    translate --to penguiflow --direction "$d" < "$ask" | seed envelopes "penguiflow-$d" "0$((3 | bit))"
done

# pipeline: byte % 11 picks a subscription of config/bridge.toml in sorted order (0-2 the
# Civitas, PenguiFlow and VOX ingress; 3-6 /queue/request/ and 7-10 /queue/response/ for
# Indexer, Ops, Planner, WeatherAgent); bit 7 adds content-type application/msgpack.
for yaml in "$vectors"/*.yaml; do
    seed pipeline "wa-$(basename "$yaml" .yaml)-WeatherAgent" 06 < "$yaml"
done
for n in 3 4 5 6 7 8 9 10; do
    seed pipeline "wa-ask-$n" "$(printf %02x "$n")" < "$ask"
done
cfg=(--config config/bridge.toml --agent Assistant)
translate "${cfg[@]}" --to civitas < "$ask" | seed pipeline civitas-json 00
translate "${cfg[@]}" --to civitas --encoding msgpack < "$ask" | seed pipeline civitas-msgpack 84
translate "${cfg[@]}" --to penguiflow < "$ask" | seed pipeline penguiflow 01
translate "${cfg[@]}" --to vox < "$ask" | seed pipeline vox 02

# stomp_decoder: the first byte is where the rest is split into two reads.
frame() { printf '%s\n' "$@"; printf '\n'; }
message() { printf 'MESSAGE\ndestination:/queue/request/WeatherAgent\nmessage-id:m\\c1\nsubscription:1\n'; }
frame CONNECTED version:1.2 heart-beat:10000,10000 | { cat; printf '\0\n'; } | seed stomp_decoder connected 10
{ message; printf 'content-length:%d\n\n' "$(wc -c < "$ask")"; cat "$ask"; printf '\0'; } \
    | seed stomp_decoder message-length 30
{ message; printf '\n'; cat "$ask"; printf '\0\r\n\n'; } | seed stomp_decoder message-nul ff
frame RECEIPT receipt-id:7 | { cat; printf '\0'; } | seed stomp_decoder receipt 00
frame ERROR 'message:bad\cframe\\n' | { cat; printf 'detail\0'; } | seed stomp_decoder error 05

for target in envelopes pipeline stomp_decoder; do
    echo "fuzz/corpus/$target: $(find "fuzz/corpus/$target" -type f | wc -l) files"
done
