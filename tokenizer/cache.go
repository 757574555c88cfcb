package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync"
)

// wordCache remembers the ids of recently merged pieces. It is sharded to keep lock contention low
// when many goroutines encode at once, and each shard is emptied when it fills, which bounds memory
// without bookkeeping on the hot path.
type wordCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

const (
	cacheShards       = 16
	cacheShardEntries = 8192
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed()}
}

func (c *wordCache) shard(word string) *cacheShard {
	return &c.shards[maphash.String(c.seed, word)%cacheShards]
}

func (c *wordCache) get(word string) ([]int32, bool) {
	s := c.shard(word)
	s.mu.RLock()
	ids, ok := s.m[word]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(word string, ids []int32) {
	s := c.shard(word)
	stored := append([]int32(nil), ids...)
	key := strings.Clone(word) // word may point into a large text; do not keep that alive
	s.mu.Lock()
	if s.m == nil || len(s.m) >= cacheShardEntries {
		s.m = make(map[string][]int32, 256)
	}
	s.m[key] = stored
	s.mu.Unlock()
}

// reset empties the cache (benchmarks use it to measure cold encoding).
func (c *wordCache) reset() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.m = nil
		s.mu.Unlock()
	}
}
