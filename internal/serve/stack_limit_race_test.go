//go:build race

package serve

// stackLimit under the race detector, whose instrumentation makes every
// frame larger: 8 KiB a viewer and some slack.
const stackLimit = 9 << 10
