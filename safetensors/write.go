package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"gorstar/internal/atomicfile"
)

// Tensor is one tensor to write. Give its values either as Data (float32, stored as DType, which
// must then be F32, BF16 or F16; BF16 and F16 round to nearest, ties to even) or as Raw bytes
// already encoded in DType, little-endian.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []float32
	Raw   []byte
}

// Write atomically writes tensors and optional metadata to path as a safetensors file. Tensors
// are laid out by element size, largest first, then in the order given, so every tensor starts
// at a multiple of its element size; the header is padded with spaces to a multiple of 8 bytes.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	order, err := layout(tensors)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	hdr, err := encodeHeader(order, metadata)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
		bw.Write(n[:])
		bw.Write(hdr)
		for _, t := range order {
			if err := writeData(bw, t); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	})
}

// layout checks the tensors and returns them in file order.
func layout(tensors []Tensor) ([]Tensor, error) {
	seen := map[string]bool{}
	for _, t := range tensors {
		if t.Name == "" || t.Name == "__metadata__" {
			return nil, fmt.Errorf("invalid tensor name %q", t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("duplicate tensor %q", t.Name)
		}
		seen[t.Name] = true
		if t.DType.Size() == 0 {
			return nil, fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		n := int64(1)
		for _, d := range t.Shape {
			if d < 0 {
				return nil, fmt.Errorf("tensor %q: negative dimension in shape %v", t.Name, t.Shape)
			}
			n *= int64(d)
		}
		switch {
		case t.Data != nil && t.Raw != nil:
			return nil, fmt.Errorf("tensor %q: both Data and Raw set", t.Name)
		case t.Data != nil || (t.Raw == nil && t.DType.IsFloat()):
			if !t.DType.IsFloat() {
				return nil, fmt.Errorf("tensor %q: float32 Data cannot be stored as %s", t.Name, t.DType)
			}
			if int64(len(t.Data)) != n {
				return nil, fmt.Errorf("tensor %q: shape %v has %d elements, Data has %d", t.Name, t.Shape, n, len(t.Data))
			}
		default:
			if want := n * int64(t.DType.Size()); int64(len(t.Raw)) != want {
				return nil, fmt.Errorf("tensor %q: shape %v × %s is %d bytes, Raw has %d", t.Name, t.Shape, t.DType, want, len(t.Raw))
			}
		}
	}
	order := append([]Tensor(nil), tensors...)
	sort.SliceStable(order, func(a, b int) bool { return order[a].DType.Size() > order[b].DType.Size() })
	return order, nil
}

// encodeHeader writes the JSON header: metadata first, then the tensors in data order, padded
// with spaces so that the data section starts 8-byte aligned.
func encodeHeader(order []Tensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if len(metadata) > 0 {
		md, err := json.Marshal(metadata) // map keys come out sorted: deterministic
		if err != nil {
			return nil, err
		}
		b.WriteString(`"__metadata__":`)
		b.Write(md)
	}
	var offset int64
	for i, t := range order {
		if i > 0 || len(metadata) > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(t.Name)
		b.Write(name)
		b.WriteString(`:{"dtype":"` + string(t.DType) + `","shape":[`)
		n := int64(1)
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
			n *= int64(d)
		}
		end := offset + n*int64(t.DType.Size())
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, offset, end)
		offset = end
	}
	b.WriteByte('}')
	for (8+b.Len())%8 != 0 {
		b.WriteByte(' ')
	}
	return b.Bytes(), nil
}

// writeData encodes one tensor's values in its dtype, a chunk at a time.
func writeData(w io.Writer, t Tensor) error {
	if t.Raw != nil || t.Data == nil {
		_, err := w.Write(t.Raw)
		return err
	}
	size := t.DType.Size()
	buf := make([]byte, 0, size*min(len(t.Data), 1<<16))
	for start := 0; start < len(t.Data); start += 1 << 16 {
		buf = buf[:0]
		for _, v := range t.Data[start:min(start+1<<16, len(t.Data))] {
			switch t.DType {
			case F32:
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			case BF16:
				buf = binary.LittleEndian.AppendUint16(buf, Float32ToBF16(v))
			case F16:
				buf = binary.LittleEndian.AppendUint16(buf, Float32ToF16(v))
			}
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}
