package gpu

import (
	"slices"
	"testing"
)

func TestPoolClass(t *testing.T) {
	prev, classes := 0, map[int]bool{}
	for n := 0; n <= 64<<20; n += 1 + n/97 {
		c := poolClass(n)
		switch {
		case c < n || c < 512 || c%512 != 0:
			t.Fatalf("poolClass(%d) = %d: want a multiple of 512 of at least max(n, 512)", n, c)
		case n > 1<<20 && c-n > n/8:
			t.Fatalf("poolClass(%d) = %d: %d bytes more than asked, over an eighth", n, c, c-n)
		case c < prev:
			t.Fatalf("poolClass(%d) = %d, below poolClass of a smaller size (%d)", n, c, prev)
		}
		prev = c
		if n > 1<<20 {
			classes[c] = true
		}
	}
	// Above 1 MiB, eight classes per power of two: 1 MiB to 64 MiB is six octaves.
	if len(classes) > 8*6+1 {
		t.Errorf("%d classes between 1 and 64 MiB, want at most %d", len(classes), 8*6+1)
	}
	if got := poolClass(3<<20 + 1); got != 3<<20+256<<10 {
		t.Errorf("poolClass(3 MiB + 1) = %d, want 3.25 MiB", got)
	}
}

func TestBufPool(t *testing.T) {
	var p bufPool
	if _, ok := p.take(512); ok {
		t.Fatal("an empty pool served a buffer")
	}
	p.put(512, 10)
	p.put(512, 20)
	p.put(4096, 30)
	if p.cached != 512+512+4096 {
		t.Fatalf("cached %d bytes", p.cached)
	}
	if ptr, ok := p.take(512); !ok || ptr != 20 {
		t.Fatalf("take(512) = %d, %v: want the last one put, 20", ptr, ok)
	}
	if _, ok := p.take(1024); ok {
		t.Fatal("take(1024) served a buffer of another class")
	}
	all := p.drain()
	slices.Sort(all)
	if !slices.Equal(all, []uint64{10, 30}) || p.cached != 0 {
		t.Fatalf("drain() = %v, %d bytes left", all, p.cached)
	}
	if _, ok := p.take(4096); ok {
		t.Fatal("a drained pool served a buffer")
	}
	if p.hits != 1 || p.misses != 3 {
		t.Errorf("hits %d, misses %d: want 1, 3", p.hits, p.misses)
	}
}
