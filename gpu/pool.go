package gpu

import (
	"math/bits"
	"sync"
)

// bufPool caches the device memory of freed buffers by size class, so that the model's per-op
// scratch (a bf16 copy of an operand, the attention backward's row statistics, a reduction's
// partial sums: allocated and freed on every call) does not call cuMemAlloc/hipMalloc and
// cuMemFree/hipFree, which synchronize the device, each time. A buffer freed is reusable at once:
// every op is queued on the one stream, so later work that writes the reused memory runs after
// the work that read it. The cache only grows; when the device is out of memory, Alloc returns it
// all to the driver and tries again (PyTorch's caching allocator does the same, and splits blocks,
// which this one does not).
type bufPool struct {
	mu     sync.Mutex
	free   map[int][]uint64 // device addresses by size class (bytes)
	cached int64            // bytes in free
	hits   int64
	misses int64
}

// poolClass is the bytes a request of n bytes is served with: n rounded up to 512 below 1 MiB,
// and above to one of eight steps per power of two (at most an eighth more), so that sizes that
// vary with the batch (T × C scratch) still meet a cached buffer.
func poolClass(n int) int {
	n = max(n, 512)
	if n <= 1<<20 {
		return (n + 511) &^ 511
	}
	step := 1 << (bits.Len(uint(n-1)) - 4) // an eighth of the power of two below n
	return (n + step - 1) &^ (step - 1)
}

// take returns a cached buffer of class bytes.
func (p *bufPool) take(class int) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.free[class]
	if len(list) == 0 {
		p.misses++
		return 0, false
	}
	ptr := list[len(list)-1]
	p.free[class] = list[:len(list)-1]
	p.cached -= int64(class)
	p.hits++
	return ptr, true
}

// put caches a freed buffer of class bytes.
func (p *bufPool) put(class int, ptr uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[int][]uint64{}
	}
	p.free[class] = append(p.free[class], ptr)
	p.cached += int64(class)
}

// drain empties the cache and returns what it held.
func (p *bufPool) drain() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var all []uint64
	for _, list := range p.free {
		all = append(all, list...)
	}
	p.free, p.cached = nil, 0
	return all
}

// PoolStats is the buffer cache's state: bytes held for reuse, and how many Allocs it served
// (hits) or passed to the driver (misses).
type PoolStats struct {
	CachedBytes  int64
	Hits, Misses int64
}

// PoolStats reports the device's buffer cache.
func (d *Device) PoolStats() PoolStats {
	d.pool.mu.Lock()
	defer d.pool.mu.Unlock()
	return PoolStats{CachedBytes: d.pool.cached, Hits: d.pool.hits, Misses: d.pool.misses}
}
