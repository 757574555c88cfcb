package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"gorstar/internal/usererr"
)

// maxHeaderSize bounds the JSON header, as the reference implementation does (100 MB), so a
// corrupt length cannot make us parse gigabytes of tensor data as JSON.
const maxHeaderSize = 100 << 20

// Info describes one tensor: its element type, its shape, and where its bytes lie in the data
// section (Begin inclusive, End exclusive).
type Info struct {
	DType DType
	Shape []int
	Begin int64
	End   int64
}

// Elements is the number of elements, the product of the shape (1 for a scalar).
func (i Info) Elements() int64 {
	n := int64(1)
	for _, d := range i.Shape {
		n *= int64(d)
	}
	return n
}

// header is a parsed and validated safetensors header.
type header struct {
	tensors  map[string]Info
	names    []string // sorted
	metadata map[string]string
	dataAt   int64 // offset of the data section in the file
}

// parseHeader parses the header of a whole safetensors file held in data and checks every
// tensor's byte range against it. name is the file's name for error messages.
func parseHeader(name string, data []byte) (*header, error) {
	if len(data) < 8 {
		return nil, usererr.New("%s: truncated: %d bytes, need at least 8 for the header length", name, len(data))
	}
	n := binary.LittleEndian.Uint64(data[:8])
	if n > uint64(len(data)-8) {
		return nil, usererr.New("%s: header length %d exceeds the %d bytes after it (truncated or not a safetensors file)", name, n, len(data)-8)
	}
	if n > maxHeaderSize {
		return nil, usererr.New("%s: header length %d exceeds the %d-byte limit", name, n, maxHeaderSize)
	}
	h := &header{tensors: map[string]Info{}, dataAt: 8 + int64(n)}
	if err := h.decode(data[8 : 8+n]); err != nil {
		return nil, usererr.New("%s: header: %v", name, err)
	}
	if err := h.checkRanges(int64(len(data)) - h.dataAt); err != nil {
		return nil, usererr.New("%s: %v", name, err)
	}
	return h, nil
}

// rawInfo is one tensor's entry as written in the JSON. Pointers tell a missing field from a zero.
type rawInfo struct {
	DType       *string   `json:"dtype"`
	Shape       *[]int64  `json:"shape"`
	DataOffsets *[]uint64 `json:"data_offsets"`
}

func (h *header) decode(js []byte) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("invalid JSON: want an object, got %v", tok)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("invalid JSON: %v", err)
		}
		key := tok.(string) // object keys are always strings
		if key == "__metadata__" {
			if h.metadata != nil {
				return fmt.Errorf("duplicate key \"__metadata__\"")
			}
			h.metadata = map[string]string{}
			if err := dec.Decode(&h.metadata); err != nil {
				return fmt.Errorf("__metadata__: want an object of strings: %v", err)
			}
			continue
		}
		if _, dup := h.tensors[key]; dup {
			return fmt.Errorf("duplicate tensor %q", key)
		}
		var raw rawInfo
		if err := dec.Decode(&raw); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				return fmt.Errorf("tensor %q: field %q: want %s, got JSON %s", key, typeErr.Field, typeErr.Type, typeErr.Value)
			}
			return fmt.Errorf("invalid JSON in tensor %q: %v", key, err)
		}
		info, err := raw.validate()
		if err != nil {
			return fmt.Errorf("tensor %q: %v", key, err)
		}
		h.tensors[key] = info
		h.names = append(h.names, key)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fmt.Errorf("invalid JSON: %v", err)
	}
	// Only padding may follow the object.
	if rest := strings.TrimRight(string(js[dec.InputOffset():]), " \t\r\n\x00"); rest != "" {
		return fmt.Errorf("invalid JSON: unexpected data after the header object")
	}
	sort.Strings(h.names)
	return nil
}

func (r rawInfo) validate() (Info, error) {
	switch {
	case r.DType == nil:
		return Info{}, fmt.Errorf("missing field \"dtype\"")
	case r.Shape == nil:
		return Info{}, fmt.Errorf("missing field \"shape\"")
	case r.DataOffsets == nil:
		return Info{}, fmt.Errorf("missing field \"data_offsets\"")
	}
	dt, err := parseDType(*r.DType)
	if err != nil {
		return Info{}, err
	}
	if len(*r.DataOffsets) != 2 {
		return Info{}, fmt.Errorf("data_offsets: want [begin, end], got %d numbers", len(*r.DataOffsets))
	}
	begin, end := (*r.DataOffsets)[0], (*r.DataOffsets)[1]
	if begin > end {
		return Info{}, fmt.Errorf("data_offsets [%d, %d]: begin after end", begin, end)
	}
	if end > math.MaxInt64 {
		return Info{}, fmt.Errorf("data_offsets [%d, %d]: out of range", begin, end)
	}
	shape := make([]int, len(*r.Shape))
	bytes := uint64(dt.Size())
	for i, d := range *r.Shape {
		if d < 0 || d > math.MaxInt32 {
			return Info{}, fmt.Errorf("shape %v: dimension %d is %d", *r.Shape, i, d)
		}
		shape[i] = int(d)
		if d != 0 && bytes > math.MaxInt64/uint64(d) {
			return Info{}, fmt.Errorf("shape %v: too many elements", *r.Shape)
		}
		bytes *= uint64(d)
	}
	if bytes != end-begin {
		return Info{}, fmt.Errorf("shape %v × %s is %d bytes but data_offsets [%d, %d] span %d", shape, dt, bytes, begin, end, end-begin)
	}
	return Info{DType: dt, Shape: shape, Begin: int64(begin), End: int64(end)}, nil
}

// checkRanges verifies that every tensor lies inside the data section and that no two overlap.
// Gaps are allowed: they cost nothing to read around.
func (h *header) checkRanges(size int64) error {
	order := append([]string(nil), h.names...)
	sort.SliceStable(order, func(a, b int) bool { return h.tensors[order[a]].Begin < h.tensors[order[b]].Begin })
	var prev string
	for _, name := range order {
		t := h.tensors[name]
		if t.End > size {
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] out of range: the data section has %d bytes (file truncated?)", name, t.Begin, t.End, size)
		}
		if prev != "" && t.Begin < h.tensors[prev].End && t.Begin != t.End {
			p := h.tensors[prev]
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap tensor %q [%d, %d]", name, t.Begin, t.End, prev, p.Begin, p.End)
		}
		if t.Begin != t.End {
			prev = name
		}
	}
	return nil
}
