package tokenizer

import "fmt"

// merge is the result of joining a pair of tokens: its rank (lower merges first) and new id.
type merge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpeModel merges the bytes of one pre-tokenized piece by rank.
type bpeModel struct {
	merges       map[uint64]merge
	byteID       [256]int32 // id of each byte's token, -1 when the vocabulary lacks it
	unk          int32      // -1 when none
	ignoreMerges bool       // a piece that is itself a vocabulary entry maps to it directly
	vocab        map[string]int32
	cache        *wordCache
}

func newBPEModel(vocab map[string]int32, merges mergeList, unk int32, ignoreMerges bool) (bpeModel, error) {
	m := bpeModel{merges: make(map[uint64]merge, len(merges)), unk: unk, ignoreMerges: ignoreMerges,
		vocab: vocab, cache: newWordCache()}
	for b := range m.byteID {
		id, ok := vocab[ByteToken(byte(b))]
		if !ok {
			id = -1
		}
		m.byteID[b] = id
	}
	var joined []byte
	for rank, pair := range merges {
		a, okA := vocab[pair[0]]
		b, okB := vocab[pair[1]]
		joined = append(append(joined[:0], pair[0]...), pair[1]...)
		id, okC := vocab[string(joined)]
		if !okA || !okB || !okC {
			return m, fmt.Errorf("entry %d (%q %q): token not in the vocabulary", rank, pair[0], pair[1])
		}
		key := pairKey(a, b)
		if _, dup := m.merges[key]; !dup { // the first listing wins, as in Hugging Face
			m.merges[key] = merge{rank: int32(rank), id: id}
		}
	}
	return m, nil
}

// maxCachedWord bounds the length of pieces kept in the cache: longer pieces rarely repeat.
// Pieces up to maxShortWord bytes use the quadratic merge, longer ones the heap.
const (
	maxCachedWord = 256
	maxShortWord  = 64
)

// appendWord appends the ids of one pre-tokenized piece (raw bytes) to dst.
func (m *bpeModel) appendWord(dst []int32, word string) []int32 {
	if len(word) == 1 {
		return m.appendSymbols(dst, []int32{m.byteID[word[0]]})
	}
	cacheable := len(word) <= maxCachedWord
	if cacheable {
		if ids, ok := m.cache.get(word); ok {
			return append(dst, ids...)
		}
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[byteLevelString(word)]; ok {
			return append(dst, id)
		}
	}
	start := len(dst)
	if len(word) <= maxShortWord {
		var buf [maxShortWord]int32
		dst = m.appendSymbols(dst, m.mergeShort(buf[:0], word))
	} else {
		dst = m.appendSymbols(dst, m.mergeLong(word))
	}
	if cacheable {
		m.cache.put(word, dst[start:])
	}
	return dst
}

// appendSymbols copies merged ids, replacing bytes missing from the vocabulary by the unknown
// token (or dropping them when there is none).
func (m *bpeModel) appendSymbols(dst, ids []int32) []int32 {
	for _, id := range ids {
		if id >= 0 {
			dst = append(dst, id)
		} else if m.unk >= 0 {
			dst = append(dst, m.unk)
		}
	}
	return dst
}

// rank of the pair (a, b), or noMerge.
func (m *bpeModel) lookup(a, b int32) merge {
	if a < 0 || b < 0 {
		return merge{rank: noMerge}
	}
	if mg, ok := m.merges[pairKey(a, b)]; ok {
		return mg
	}
	return merge{rank: noMerge}
}

const noMerge = int32(1<<31 - 1)

// mergeShort is the quadratic reference algorithm, fast for short pieces: repeatedly join the
// lowest-ranked adjacent pair, leftmost first. Pair ranks are kept in an array so that each join
// costs one scan and two lookups.
func (m *bpeModel) mergeShort(ids []int32, word string) []int32 {
	for i := 0; i < len(word); i++ {
		ids = append(ids, m.byteID[word[i]])
	}
	var pairBuf [maxShortWord]merge
	pairs := pairBuf[:len(ids)-1]
	for i := range pairs {
		pairs[i] = m.lookup(ids[i], ids[i+1])
	}
	for len(pairs) > 0 {
		best := 0
		for i := 1; i < len(pairs); i++ {
			if pairs[i].rank < pairs[best].rank {
				best = i
			}
		}
		if pairs[best].rank == noMerge {
			break
		}
		ids[best] = pairs[best].id
		ids = append(ids[:best+1], ids[best+2:]...)
		pairs = append(pairs[:best], pairs[best+1:]...)
		if best > 0 {
			pairs[best-1] = m.lookup(ids[best-1], ids[best])
		}
		if best < len(pairs) {
			pairs[best] = m.lookup(ids[best], ids[best+1])
		}
	}
	return ids
}

// mergeLong gives the same result as mergeShort in O(n log n) for long pieces: candidate joins sit
// in a heap ordered by (rank, position); a popped candidate whose pair has changed is skipped.
func (m *bpeModel) mergeLong(word string) []int32 {
	n := len(word)
	ids := make([]int32, n)
	prev := make([]int32, n)
	next := make([]int32, n)
	alive := make([]bool, n)
	for i := 0; i < n; i++ {
		ids[i] = m.byteID[word[i]]
		prev[i], next[i], alive[i] = int32(i-1), int32(i+1), true
	}
	next[n-1] = -1
	h := candidateHeap{}
	for i := 0; i+1 < n; i++ {
		if mg := m.lookup(ids[i], ids[i+1]); mg.rank != noMerge {
			h.push(candidate{mg.rank, int32(i), mg.id})
		}
	}
	for h.len() > 0 {
		c := h.pop()
		p := c.pos
		if !alive[p] || next[p] < 0 {
			continue
		}
		q := next[p]
		if mg := m.lookup(ids[p], ids[q]); mg.rank != c.rank || mg.id != c.id {
			continue // stale: one side was merged since this candidate was pushed
		}
		ids[p] = c.id
		alive[q] = false
		next[p] = next[q]
		if next[q] >= 0 {
			prev[next[q]] = p
		}
		if l := prev[p]; l >= 0 {
			if mg := m.lookup(ids[l], ids[p]); mg.rank != noMerge {
				h.push(candidate{mg.rank, l, mg.id})
			}
		}
		if r := next[p]; r >= 0 {
			if mg := m.lookup(ids[p], ids[r]); mg.rank != noMerge {
				h.push(candidate{mg.rank, p, mg.id})
			}
		}
	}
	out := ids[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, ids[i])
	}
	return out
}

type candidate struct{ rank, pos, id int32 }

func (a candidate) less(b candidate) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

// candidateHeap is a binary min-heap of candidates.
type candidateHeap struct{ items []candidate }

func (h *candidateHeap) len() int { return len(h.items) }

func (h *candidateHeap) push(c candidate) {
	h.items = append(h.items, c)
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.items[i].less(h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *candidateHeap) pop() candidate {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		smallest, l, r := i, 2*i+1, 2*i+2
		if l < last && h.items[l].less(h.items[smallest]) {
			smallest = l
		}
		if r < last && h.items[r].less(h.items[smallest]) {
			smallest = r
		}
		if smallest == i {
			break
		}
		h.items[i], h.items[smallest] = h.items[smallest], h.items[i]
		i = smallest
	}
	return top
}
