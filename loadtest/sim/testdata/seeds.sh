#!/bin/sh
# seeds.sh: the controller's scorecard keys over seeds and scales, per
# scenario: mean / min / max of the goal ratios (relay-seconds ÷ the
# offline minimum packed, and ÷ the same minimum under the 5-minute
# lifetime when the binary reports it; stretch ÷ oracle) and the worst
# waiting share and relays closed within 5 minutes.
#
#   go build -o bin/relaymesh ./cmd/relaymesh
#   sh loadtest/sim/testdata/seeds.sh [bin/relaymesh] > runs.jsonl
#
# Run from the repository's root. SEEDS, SCENARIOS and SCALES (full, tenth)
# override the defaults (seeds 1-5, every shipped scenario, both scales);
# FORESIGHT (stream, region or region-now) runs the controller with that diagnostic
# (relaymesh sim --foresight).
# Every run's JSON is written to stdout, one line each; the table to
# stderr. Needs jq.
set -eu
bin=${1:-bin/relaymesh}
seeds=${SEEDS:-1 2 3 4 5}
scenarios=${SCENARIOS:-spike step ramp whistle failure churn}
scales=${SCALES:-full tenth}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for s in $scenarios; do
	for sc in $scales; do
		for n in $seeds; do
			if [ "$sc" = tenth ]; then
				"$bin" sim --scenario "loadtest/scenarios/$s.yaml" --policy controller --json --quiet --seed "$n" --scale 0.1 --scale-capacity ${FORESIGHT:+--foresight "$FORESIGHT"}
			else
				"$bin" sim --scenario "loadtest/scenarios/$s.yaml" --policy controller --json --quiet --seed "$n" ${FORESIGHT:+--foresight "$FORESIGHT"}
			fi | jq -c --arg sc "$sc" '. + {scale_name: $sc}'
		done
	done
done | tee "$tmp"
jq -rs '
  def st(f): (map(f) | [add / length, min, max] | map(. * 1000 | round / 1000) | "\(.[0]) (\(.[1])-\(.[2]))");
  group_by(.scenario)[] |
  "\(.[0].scenario)\t\(length) runs\tvs packed \(st(.relay_seconds_vs_minimum_packed))" +
  (if .[0].relay_seconds_vs_minimum_lifetime then "\tvs lifetime \(st(.relay_seconds_vs_minimum_lifetime))" else "" end) +
  "\tstretch/oracle \(st(.stretch_vs_oracle))\twaiting max \(map(.waiting_share) | max)\tclosed<5m max \(map(.oscillations) | max)"
' "$tmp" >&2
