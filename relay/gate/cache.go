package gate

import (
	"sync"
	"time"
)

// allowCache remembers hook answers that allowed, for a while, so that an
// HLS/DASH viewer reloading its playlist does not call on_play each time.
type allowCache struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	m   map[string]time.Time
}

func newAllowCache(max int, ttl time.Duration) *allowCache {
	return &allowCache{max: max, ttl: ttl, m: map[string]time.Time{}}
}

func (c *allowCache) allowed(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.m[key]
	return ok && now.Before(exp)
}

func (c *allowCache) add(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k, exp := range c.m {
			if !now.Before(exp) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= c.max {
			clear(c.m)
		}
	}
	c.m[key] = now.Add(c.ttl)
}
