package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gorstar/internal/usererr"
)

// Names of the files in a Hugging Face model directory.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// Set is the tensors of a model directory seen as one: either a single model.safetensors or the
// shards listed by model.safetensors.index.json. Its methods mirror File's.
type Set struct {
	name  string // the index file, or the single file, for error messages
	files []*File
	owner map[string]*File
	names []string
}

// OpenDir opens the checkpoint in a model directory: the shards named by
// model.safetensors.index.json when that file exists, otherwise model.safetensors.
func OpenDir(dir string) (*Set, error) {
	index := filepath.Join(dir, IndexFile)
	if _, err := os.Stat(index); err == nil {
		return OpenIndex(index)
	}
	single := filepath.Join(dir, SingleFile)
	if _, err := os.Stat(single); err != nil {
		return nil, usererr.New("%s: no %s or %s", dir, SingleFile, IndexFile)
	}
	f, err := Open(single)
	if err != nil {
		return nil, err
	}
	return newSet(single, []*File{f}), nil
}

// OpenIndex opens the shards that a model.safetensors.index.json maps tensors to. Every mapped
// tensor must be present in its shard; tensors a shard holds beyond the map are ignored, as
// Hugging Face does.
func OpenIndex(path string) (*Set, error) {
	js, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil, usererr.Wrap(err)
		}
		return nil, err
	}
	var index struct {
		WeightMap map[string]*string `json:"weight_map"`
	}
	if err := json.Unmarshal(js, &index); err != nil {
		return nil, usererr.New("%s: invalid JSON: %v", path, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, usererr.New("%s: missing or empty \"weight_map\"", path)
	}
	shards := map[string]*File{}
	var files []*File
	owner := map[string]*File{}
	fail := func(err error) (*Set, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	dir := filepath.Dir(path)
	names := make([]string, 0, len(index.WeightMap))
	for name := range index.WeightMap {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		shard := index.WeightMap[name]
		if shard == nil || *shard == "" || filepath.IsAbs(*shard) || strings.Contains(*shard, "..") || strings.ContainsRune(*shard, os.PathSeparator) {
			return fail(usererr.New("%s: weight_map[%q]: want a file name in the same directory, got %s", path, name, quoteOrNull(shard)))
		}
		f, ok := shards[*shard]
		if !ok {
			f, err = Open(filepath.Join(dir, *shard))
			if err != nil {
				return fail(err)
			}
			shards[*shard] = f
			files = append(files, f)
		}
		if !f.Has(name) {
			return fail(usererr.New("%s: tensor %q not found (weight_map in %s points here)", f.path, name, filepath.Base(path)))
		}
		owner[name] = f
	}
	s := newSet(path, files)
	s.owner, s.names = owner, names
	return s, nil
}

func quoteOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

func newSet(name string, files []*File) *Set {
	s := &Set{name: name, files: files, owner: map[string]*File{}}
	for _, f := range files {
		for _, n := range f.names {
			s.owner[n] = f
			s.names = append(s.names, n)
		}
	}
	sort.Strings(s.names)
	return s
}

// Close unmaps every shard.
func (s *Set) Close() error {
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Names lists every tensor of the set, sorted.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Files lists the open shards (one for a single-file checkpoint).
func (s *Set) Files() []*File { return append([]*File(nil), s.files...) }

// Has reports whether the set holds a tensor called name.
func (s *Set) Has(name string) bool {
	_, ok := s.owner[name]
	return ok
}

func (s *Set) file(name string) (*File, error) {
	f, ok := s.owner[name]
	if !ok {
		return nil, usererr.New("%s: tensor %q not found", s.name, name)
	}
	return f, nil
}

// Info returns a tensor's dtype, shape and byte range within its shard.
func (s *Set) Info(name string) (Info, error) {
	f, err := s.file(name)
	if err != nil {
		return Info{}, err
	}
	return f.Info(name)
}

// Raw returns a tensor's bytes as a view into its shard's mapping, valid until Close.
func (s *Set) Raw(name string) ([]byte, Info, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, Info{}, err
	}
	return f.Raw(name)
}

// Float32 returns a float tensor converted to float32, and its shape.
func (s *Set) Float32(name string) ([]float32, []int, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, nil, err
	}
	return f.Float32(name)
}

// ReadFloat32 converts a float tensor into dst, which must hold exactly its elements.
func (s *Set) ReadFloat32(name string, dst []float32) error {
	f, err := s.file(name)
	if err != nil {
		return err
	}
	return f.ReadFloat32(name, dst)
}

// ReadBF16 puts a float tensor into dst as bfloat16 bits (BF16 copied, F32 and F16 rounded).
func (s *Set) ReadBF16(name string, dst []uint16) error {
	f, err := s.file(name)
	if err != nil {
		return err
	}
	return f.ReadBF16(name, dst)
}

// Int64 returns an integer tensor widened to int64, and its shape.
func (s *Set) Int64(name string) ([]int64, []int, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, nil, err
	}
	return f.Int64(name)
}
