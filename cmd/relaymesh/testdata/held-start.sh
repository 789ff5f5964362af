#!/bin/sh
# held-start.sh: how fast a browser player starts on a relay the
# orchestrator has just opened, with the relay packaging held streams from
# the start (hls.package_held, the default) or on the first HTTP request.
#
#   go build -o bin/relaymesh ./cmd/relaymesh
#   sh cmd/relaymesh/testdata/held-start.sh dash|hls [held|lazy] [runs]
#
# Run from the repository's root with the dev mesh's ports free (1935-1947,
# 8080-8081). It starts `relaymesh dev`, publishes a test pattern (ffmpeg,
# 2 s GOP) to live/cam, asks the redirector for RTMP plays from a New York
# address until the orchestrator opens relay-na for the stream, waits
# DELAY seconds (default 6: later viewers come after the first ones), and
# plays relay-na's DASH manifest or HLS playlist with dash.js or hls.js in
# headless Chromium (packager/browser/run.mjs, `npm ci` first). One JSON
# line per run: start-up (ms, the player's first frame), the longest stall
# in 12 s played, and the p50 latency behind the live edge. Needs ffmpeg,
# curl, jq, node and Chromium.
set -eu
player=${1:?dash or hls}
mode=${2:-held}
runs=${3:-1}
case $player in
dash) path=dash/live/cam/manifest.mpd ;;
hls) path=hls/live/cam/index.m3u8 ;;
*) echo "player: dash or hls" >&2; exit 2 ;;
esac
cfg=""
if [ "$mode" = lazy ]; then
	cfg=$(mktemp)
	printf 'hls:\n  package_held: false\n' > "$cfg"
	cfg="--config $cfg"
fi
n=0
while [ "$n" -lt "$runs" ]; do
	n=$((n + 1))
	# shellcheck disable=SC2086
	bin/relaymesh dev $cfg --log-level warn > /dev/null 2>&1 &
	dev=$!
	sleep 6
	ffmpeg -loglevel error -re -f lavfi -i testsrc2=size=640x360:rate=25 -f lavfi -i sine=frequency=440:sample_rate=44100 \
		-c:v libx264 -preset veryfast -tune zerolatency -pix_fmt yuv420p -g 50 -b:v 1500k -c:a aac -b:a 64k \
		-t 60 -f flv rtmp://127.0.0.1:1935/live/cam &
	pub=$!
	sleep 6
	i=0
	while [ $i -lt 80 ]; do
		curl -s -o /dev/null "http://127.0.0.1:8080/play/live/cam?proto=rtmp&ip=198.51.100.10"
		if curl -s http://127.0.0.1:8080/api/v1/mesh |
			jq -e '.streams[]? | select(.app+"/"+.name=="live/cam") | .relays | index("relay-na")' > /dev/null 2>&1; then
			break
		fi
		sleep 0.25
		i=$((i + 1))
	done
	sleep "${DELAY:-6}"
	node packager/browser/run.mjs --url "http://127.0.0.1:1943/$path" --player "$player" --play 12 --start-timeout 30 |
		jq -c --arg mode "$mode" --arg player "$player" \
			'{player: $player, mode: $mode, ok: .ok, startup_ms: .startupMs, longest_stall_ms: .play.maxStallMs, latency_p50_s: .play.latency.p50}'
	kill "$pub" "$dev" 2> /dev/null || true
	wait 2> /dev/null || true
done
