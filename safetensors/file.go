package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"syscall"
	"unsafe"

	"gorstar/internal/usererr"
)

// File is an open, memory-mapped safetensors file. Its methods are safe for concurrent use until
// Close, which unmaps the data: slices from Raw must not be used after it.
type File struct {
	path string
	data []byte // the whole file, mapped read-only; nil for an empty mapping
	mmap bool   // data is a mapping (release may drop its pages)
	*header
}

// Open maps the safetensors file at path and validates its header.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil, usererr.Wrap(err)
		}
		return nil, err
	}
	defer fd.Close() // the mapping outlives the descriptor
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, usererr.New("%s: is a directory, want a .safetensors file", path)
	}
	size := st.Size()
	if size < 8 {
		return nil, usererr.New("%s: truncated: %d bytes, need at least 8 for the header length", path, size)
	}
	if size > math.MaxInt {
		return nil, usererr.New("%s: %d bytes is too large to map", path, size)
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	h, err := parseHeader(path, data)
	if err != nil {
		syscall.Munmap(data)
		return nil, err
	}
	return &File{path: path, data: data, mmap: true, header: h}, nil
}

// Close unmaps the file. Calling it twice is harmless.
func (f *File) Close() error {
	if f.data == nil {
		return nil
	}
	err := syscall.Munmap(f.data)
	f.data = nil
	if err != nil {
		return fmt.Errorf("unmap %s: %w", f.path, err)
	}
	return nil
}

// Path is the file's path as given to Open.
func (f *File) Path() string { return f.path }

// Names lists the tensors in the file, sorted.
func (f *File) Names() []string { return append([]string(nil), f.names...) }

// Metadata is the header's "__metadata__" map (nil when absent). The caller must not modify it.
func (f *File) Metadata() map[string]string { return f.metadata }

// Has reports whether the file holds a tensor called name.
func (f *File) Has(name string) bool {
	_, ok := f.tensors[name]
	return ok
}

// Info returns a tensor's dtype, shape and byte range.
func (f *File) Info(name string) (Info, error) {
	t, ok := f.tensors[name]
	if !ok {
		return Info{}, usererr.New("%s: tensor %q not found", f.path, name)
	}
	t.Shape = append([]int(nil), t.Shape...)
	return t, nil
}

// Raw returns a tensor's bytes (little-endian, in its own dtype) as a view into the mapping,
// valid until Close.
func (f *File) Raw(name string) ([]byte, Info, error) {
	t, err := f.Info(name)
	if err != nil {
		return nil, Info{}, err
	}
	if f.data == nil {
		return nil, Info{}, fmt.Errorf("read %s tensor %q: file is closed", f.path, name)
	}
	return f.data[f.dataAt+t.Begin : f.dataAt+t.End], t, nil
}

// Float32 returns a float tensor converted to float32 (exactly: BF16 and F16 widen without
// rounding) and its shape.
func (f *File) Float32(name string) ([]float32, []int, error) {
	t, err := f.Info(name)
	if err != nil {
		return nil, nil, err
	}
	dst := make([]float32, t.Elements())
	if err := f.ReadFloat32(name, dst); err != nil {
		return nil, nil, err
	}
	return dst, t.Shape, nil
}

// ReadFloat32 converts a float tensor into dst, which must hold exactly its elements; loading
// into preallocated model buffers avoids a second copy.
func (f *File) ReadFloat32(name string, dst []float32) error {
	raw, t, err := f.rawOf(name, len(dst))
	if err != nil {
		return err
	}
	switch t.DType {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	default:
		return usererr.New("%s: tensor %q has dtype %s, want F32, BF16 or F16", f.path, name, t.DType)
	}
	f.release(raw)
	return nil
}

// ReadBF16 puts a float tensor into dst as bfloat16 bits, which must hold exactly its elements: a
// BF16 tensor is copied as it is (no float32 copy in between), F32 and F16 round to nearest, ties
// to even. Inference-only models load their weights this way.
func (f *File) ReadBF16(name string, dst []uint16) error {
	raw, t, err := f.rawOf(name, len(dst))
	if err != nil {
		return err
	}
	switch t.DType {
	case BF16:
		if len(dst) > 0 {
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 2*len(dst)), raw) // little-endian hosts only, as the mapping
		}
	case F32:
		for i := range dst {
			dst[i] = Float32ToBF16(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	case F16:
		for i := range dst {
			dst[i] = Float32ToBF16(F16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:])))
		}
	default:
		return usererr.New("%s: tensor %q has dtype %s, want F32, BF16 or F16", f.path, name, t.DType)
	}
	f.release(raw)
	return nil
}

// release gives back the pages of raw (a tensor that has been read into its buffer) to the page
// cache: without it every page of the mapping a load has touched stays resident until Close, so a
// load's peak would be the file on top of the model. The mapping stays valid (a read-only shared
// mapping refaults from the file).
func (f *File) release(raw []byte) {
	if len(raw) == 0 || !f.mmap {
		return
	}
	page := uintptr(os.Getpagesize())
	base := uintptr(unsafe.Pointer(&f.data[0])) // page-aligned: the mapping starts at offset 0
	start := uintptr(unsafe.Pointer(&raw[0])) &^ (page - 1)
	end := uintptr(unsafe.Pointer(&raw[len(raw)-1])) + 1
	dropPages(f.data[start-base : end-base])
}

// Int64 returns an integer tensor (I32 or I64) widened to int64, and its shape.
func (f *File) Int64(name string) ([]int64, []int, error) {
	raw, t, err := f.Raw(name)
	if err != nil {
		return nil, nil, err
	}
	dst := make([]int64, t.Elements())
	switch t.DType {
	case I32:
		for i := range dst {
			dst[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	case I64:
		for i := range dst {
			dst[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	default:
		return nil, nil, usererr.New("%s: tensor %q has dtype %s, want I32 or I64", f.path, name, t.DType)
	}
	return dst, t.Shape, nil
}

// rawOf is Raw for a tensor read into a destination of n elements, which it must hold exactly.
func (f *File) rawOf(name string, n int) ([]byte, Info, error) {
	raw, t, err := f.Raw(name)
	if err != nil {
		return nil, t, err
	}
	if int64(n) != t.Elements() {
		return nil, t, usererr.New("%s: tensor %q has shape %v (%d elements), want %d elements", f.path, name, t.Shape, t.Elements(), n)
	}
	return raw, t, nil
}
