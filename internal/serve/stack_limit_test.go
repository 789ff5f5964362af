//go:build !race

package serve

// stackLimit is the most stack a parked viewer's goroutine may keep: 4 KiB
// and some slack for the goroutines the test adds besides the viewers'.
const stackLimit = 5 << 10
