package dist

import (
	"encoding/binary"
	"fmt"
)

// BroadcastBytes returns root's data on every rank, whatever its length (the others pass nil):
// its length first, then the bytes.
func BroadcastBytes(c Comm, data []byte, root int) ([]byte, error) {
	n := binary.LittleEndian.AppendUint64(nil, uint64(len(data)))
	if err := c.Broadcast(n, root); err != nil {
		return nil, fmt.Errorf("broadcast length: %w", err)
	}
	buf := make([]byte, binary.LittleEndian.Uint64(n))
	copy(buf, data)
	if err := c.Broadcast(buf, root); err != nil {
		return nil, fmt.Errorf("broadcast %d bytes: %w", len(buf), err)
	}
	return buf, nil
}

// GatherBytes returns every rank's data, in rank order, on every rank; the lengths may differ.
func GatherBytes(c Comm, data []byte) ([][]byte, error) {
	lens, err := c.AllGather(binary.LittleEndian.AppendUint64(nil, uint64(len(data))))
	if err != nil {
		return nil, fmt.Errorf("gather lengths: %w", err)
	}
	size := len(lens) / 8
	longest := 0
	for r := range size {
		longest = max(longest, int(binary.LittleEndian.Uint64(lens[8*r:])))
	}
	padded := make([]byte, longest)
	copy(padded, data)
	all, err := c.AllGather(padded)
	if err != nil {
		return nil, fmt.Errorf("gather %d bytes each: %w", longest, err)
	}
	out := make([][]byte, size)
	for r := range size {
		out[r] = all[r*longest : r*longest+int(binary.LittleEndian.Uint64(lens[8*r:]))]
	}
	return out, nil
}
